// Where a path lies, from the gate's point of view: inside the writable roots or not, protected,
// an identity secret, a persistence location, a raw device, or this extension's own state.
// The lists themselves are data (data/paths.json); this module only expands and matches them.

import { existsSync, lstatSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, resolve, sep } from "node:path";
import pathData from "./data/paths.json" with { type: "json" };
import { PathFacts } from "../request/paths.ts";

export interface PlacesInput {
  /** The session's working directory: the workspace root. */
  readonly workspace: string;
  /** The one temporary writable root outside the workspace. */
  readonly tmpRoot: string;
  readonly home: string;
  /** Pi's agent directory (PI_CODING_AGENT_DIR or ~/.pi/agent). */
  readonly agentDir: string;
  /** This extension's own files (config, state); writing them would disable the gate. */
  readonly selfPaths: readonly string[];
}

export interface Places {
  readonly workspace: string; // real
  readonly workspaceLexical: string;
  readonly tmpRoot: string; // real
  readonly home: string;
  readonly homeReal: string;
  readonly agentDir: string;
  /** Real git directories that a `.git` file or symlink in the workspace points to. */
  readonly gitDirs: readonly string[];
  readonly identitySecrets: readonly string[];
  readonly persistence: readonly string[];
  readonly selfProtected: readonly string[];
}

/** The real form of a location, also when it does not exist yet but an ancestor is a symlink. */
function realOr(p: string, facts: PathFacts = new PathFacts()): string {
  try {
    return facts.real(resolve(p)).real;
  } catch {
    return resolve(p);
  }
}

/** Both the lexical and the real form of a listed location, so either spelling matches. */
function expand(entries: readonly string[], home: string, agentDir: string, selfPaths: readonly string[], facts: PathFacts, workspace: string): string[] {
  const out = new Set<string>();
  for (const entry of entries) {
    const bases =
      entry === "@state"
        ? selfPaths
        : entry.startsWith("~")
          ? [join(home, entry.slice(1))]
          : entry.startsWith("@agent")
            ? [join(agentDir, entry.slice("@agent".length))]
            : entry.startsWith("@workspace")
              ? [join(workspace, entry.slice("@workspace".length))]
              : [entry];
    for (const b of bases) {
      out.add(resolve(b));
      out.add(realOr(b, facts));
    }
  }
  return [...out];
}

/** The git directory a `.git` file (worktree, submodule) or symlink points to, if any. */
function linkedGitDir(workspace: string): string[] {
  const dotGit = join(workspace, ".git");
  try {
    const st = lstatSync(dotGit);
    if (st.isSymbolicLink()) return [realOr(dotGit)];
    if (!st.isFile()) return [];
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, "utf8"));
    if (!m?.[1]) return [];
    const gitDir = realOr(isAbsolute(m[1]) ? m[1] : join(workspace, m[1]));
    const dirs = [gitDir];
    // A worktree's git dir names the shared repository in `commondir`; hooks and config live there.
    const commonFile = join(gitDir, "commondir");
    if (existsSync(commonFile)) {
      const common = readFileSync(commonFile, "utf8").trim();
      if (common) dirs.push(realOr(isAbsolute(common) ? common : join(gitDir, common)));
    }
    return dirs;
  } catch {
    return [];
  }
}

export function buildPlaces(input: PlacesInput): Places {
  const home = resolve(input.home);
  const agentDir = resolve(input.agentDir);
  // One set of path facts for the whole build: the listed locations share their ancestors.
  const facts = new PathFacts();
  return {
    workspace: realOr(input.workspace, facts),
    workspaceLexical: resolve(input.workspace),
    tmpRoot: realOr(input.tmpRoot, facts),
    home,
    homeReal: realOr(home, facts),
    agentDir,
    gitDirs: linkedGitDir(input.workspace),
    identitySecrets: expand(pathData.identitySecrets, home, agentDir, input.selfPaths, facts, input.workspace),
    persistence: expand(pathData.persistence, home, agentDir, input.selfPaths, facts, input.workspace),
    // Pi loads auto mode through its package lists: the user's settings and the project's, whose entry replaces the user's.
    selfProtected: expand(pathData.selfProtected, home, agentDir, input.selfPaths, facts, input.workspace),
  };
}

/** relative(parent, child) for a normalized `child` that isWithin `parent`, without resolving either again. */
export function below(parent: string, child: string): string {
  if (child === parent) return "";
  return child.slice(parent.endsWith(sep) ? parent.length : parent.length + 1);
}

/** True when `child` is `parent` or below it. `/ws-evil` is not inside `/ws`. */
export function isWithin(parent: string, child: string): boolean {
  if (child === parent) return true;
  const prefix = parent.endsWith(sep) ? parent : parent + sep;
  return child.startsWith(prefix);
}

const lower = (s: string) => s.toLowerCase();
const PROTECTED_NAMES = new Set(pathData.protectedNames.map(lower));
const PROTECTED_FILES = new Set(pathData.protectedFileNames.map(lower));
const PROTECTED_SEQUENCES = pathData.protectedSequences.map((seq) => seq.map(lower));
const RAW_DEVICES = pathData.rawDevices.map((r) => new RegExp(r));
const HARMLESS_DEVICES = pathData.harmlessDevices.map((r) =>
  r.startsWith("^") ? new RegExp(r) : new RegExp(`^${r.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`),
);
const REGENERABLE = new Set(pathData.regenerableDirs.map(lower));

// Spellings other file systems treat as the same name: HFS+ ignores these code points
// (".g\u200Cit" opens ".git", CVE-2014-9390), and Windows drops trailing dots and spaces.
const IGNORABLE = /[\u200C-\u200F\u202A-\u202E\u206A-\u206F\uFEFF]/g;
const fold = (part: string) => lower(part.replace(IGNORABLE, "")).replace(/[. ]+$/, "");

/**
 * A bounded memo for pure string functions the gate calls on every path (no file system behind
 * them, so nothing can go stale): cleared whole when full.
 */
export function memo<T>(fn: (s: string) => T, size = 4096): (s: string) => T {
  const cache = new Map<string, T>();
  return (s) => {
    let v = cache.get(s);
    if (v === undefined && !cache.has(s)) {
      v = fn(s);
      if (cache.size >= size) cache.clear();
      cache.set(s, v);
    }
    return v as T;
  };
}

/** Whether a path relative to a writable root names or lies under a protected entry. */
export const protectedComponent = memo(protectedComponentOf);

function protectedComponentOf(rel: string): string | undefined {
  if (rel === "" || rel.startsWith("..")) return undefined;
  const parts = rel.split(sep).map(fold);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (PROTECTED_NAMES.has(part)) return parts.slice(0, i + 1).join("/");
    if (PROTECTED_FILES.has(part)) return parts.slice(0, i + 1).join("/");
    for (const seq of PROTECTED_SEQUENCES) {
      if (seq.every((s, j) => parts[i + j] === s)) return parts.slice(0, i + seq.length).join("/");
    }
  }
  return undefined;
}

export function isRegenerableName(name: string): boolean {
  return REGENERABLE.has(lower(name));
}

// Every listed device lies below /dev or /proc (paths.json): other paths need no pattern tested.
const DEVICE_AREA = /^\/(dev|proc)\//;

export function isRawDevice(p: string): boolean {
  return DEVICE_AREA.test(p) && RAW_DEVICES.some((r) => r.test(p));
}

export function isHarmlessDevice(p: string): boolean {
  return DEVICE_AREA.test(p) && HARMLESS_DEVICES.some((r) => r.test(p));
}

/**
 * A list of locations as sets, for the questions asked of every path: is it at or below an entry
 * (look its ancestors up: as many look-ups as it has components, not one comparison per entry),
 * and does it hold one (it is an entry or an ancestor of one). Entries in the list that are not
 * in normal form (a trailing "/") are matched by the plain comparison, as before.
 */
interface ListIndex {
  readonly entries: ReadonlySet<string>;
  readonly ancestors: ReadonlySet<string>;
  /** Entries that are not absolute normalized paths: compared one by one (isWithin). */
  readonly odd: readonly string[];
}

const normal = (p: string) => p === "/" || (p.startsWith("/") && !p.endsWith("/") && !p.includes("//"));

function indexOf(list: readonly string[]): ListIndex {
  const entries = new Set<string>();
  const ancestors = new Set<string>();
  const odd: string[] = [];
  for (const e of list) {
    if (!normal(e)) {
      odd.push(e);
      continue;
    }
    entries.add(e);
    for (let q = e; q !== "/"; ) {
      q = q.slice(0, q.lastIndexOf("/")) || "/";
      ancestors.add(q);
    }
  }
  return { entries, ancestors, odd };
}

const indexCache = new WeakMap<readonly string[], ListIndex>();
function listIndex(list: readonly string[]): ListIndex {
  let index = indexCache.get(list);
  if (!index) indexCache.set(list, (index = indexOf(list)));
  return index;
}

/** isWithin(entry, p) for some entry of the list. */
function underIndexed(index: ListIndex, p: string): boolean {
  if (index.odd.some((entry) => isWithin(entry, p))) return true;
  if (!normal(p)) return [...index.entries].some((entry) => isWithin(entry, p));
  for (let q = p; ; q = q.slice(0, q.lastIndexOf("/")) || "/") {
    if (index.entries.has(q)) return true;
    if (q === "/") return false;
  }
}

/** isWithin(p, entry) for some entry of the list: `p` holds a listed location. */
function holdsIndexed(index: ListIndex, p: string): boolean {
  if (index.odd.some((entry) => isWithin(p, entry))) return true;
  if (!normal(p)) return [...index.entries].some((entry) => isWithin(p, entry));
  return index.entries.has(p) || index.ancestors.has(p);
}

const underAny = (list: readonly string[], p: string) => underIndexed(listIndex(list), p);

/** A whole path with every component folded: how a case-insensitive, HFS+-style file system compares names. */
const foldPath = memo((p: string) => p.split(sep).map(fold).join(sep));
const foldedCache = new WeakMap<readonly string[], readonly string[]>();
/** Under a listed location under any spelling a case-insensitive file system treats as the same. */
function underAnyFolded(list: readonly string[], p: string): boolean {
  let folded = foldedCache.get(list);
  if (!folded) foldedCache.set(list, (folded = list.map(foldPath)));
  return underIndexed(listIndex(folded), foldPath(p));
}

/** Where a write to this path lands. `lexical` is the path before symlinks, `real` after. */
export type WriteTarget =
  | { readonly kind: "self" }
  | { readonly kind: "raw-device" }
  | { readonly kind: "harmless-device" }
  | { readonly kind: "protected"; readonly entry: string }
  | { readonly kind: "persistence" }
  | { readonly kind: "inside"; readonly root: "workspace" | "tmp"; readonly rel: string }
  /** An existing file with other hard links: writing it may change a file outside the roots. */
  | { readonly kind: "hardlinked" }
  | { readonly kind: "outside" };

/** How a caller that already looked paths up tells a regular file's link count (symlinks followed); statSync otherwise. */
export interface StatSource {
  fileLinks(p: string): number | undefined;
}

export function classifyWrite(places: Places, lexical: string, real: string, facts?: StatSource): WriteTarget {
  const target = placeOfWrite(places, lexical, real);
  // The one fact of the file system in the answer: looked up at every call (facts live for one call).
  if (target.kind === "inside" && hasOtherHardLinks(real, facts)) return HARDLINKED;
  return target;
}

const HARDLINKED: WriteTarget = Object.freeze({ kind: "hardlinked" });

/**
 * A bounded memo, per Places value, of a function of the places and a path's two spellings that
 * reads nothing else: no file system behind it (what the places were read from is checked by
 * their own cache, gate.ts, and a changed file system gives new Places, hence a new memo), so
 * nothing in it can go stale. Cleared whole when full. The answers are frozen: they are shared.
 */
function memoByPlaces<T>(fn: (places: Places, lexical: string, real: string) => T, size = 4096): (places: Places, lexical: string, real: string) => T {
  const caches = new WeakMap<Places, { n: number; readonly byReal: Map<string, Map<string, T>> }>();
  return (places, lexical, real) => {
    let c = caches.get(places);
    if (c === undefined) caches.set(places, (c = { n: 0, byReal: new Map() }));
    let byLexical = c.byReal.get(real);
    if (byLexical === undefined) {
      if (c.n >= size) {
        c.byReal.clear();
        c.n = 0;
      }
      c.byReal.set(real, (byLexical = new Map()));
    }
    let v = byLexical.get(lexical);
    if (v === undefined && !byLexical.has(lexical)) {
      v = fn(places, lexical, real);
      if (typeof v === "object" && v !== null) Object.freeze(v);
      byLexical.set(lexical, v);
      c.n++;
    }
    return v as T;
  };
}

/** Where a write lands as the places and the two spellings alone tell (an `inside` is checked for hard links after). */
const placeOfWrite = memoByPlaces((places: Places, lexical: string, real: string): WriteTarget => {
  // Most paths have no symlink on the way: one spelling to test, not two.
  const both = lexical === real ? [real] : [lexical, real];
  if (both.some((p) => underAnyFolded(places.selfProtected, p))) return { kind: "self" };
  if (both.some(isHarmlessDevice)) return { kind: "harmless-device" };
  if (both.some(isRawDevice)) return { kind: "raw-device" };
  if (places.gitDirs.some((g) => isWithin(g, real))) return { kind: "protected", entry: ".git" };
  const roots: Array<["workspace" | "tmp", string]> = [
    ["workspace", places.workspace],
    ["tmp", places.tmpRoot],
  ];
  for (const [name, root] of roots) {
    if (!isWithin(root, real)) continue;
    const rel = below(root, real);
    const lexRel = isWithin(places.workspaceLexical, lexical) ? below(places.workspaceLexical, lexical) : "";
    const entry = protectedComponent(rel) ?? protectedComponent(lexRel);
    if (entry) return { kind: "protected", entry };
    return { kind: "inside", root: name, rel };
  }
  if (both.some((p) => underAny(places.persistence, p))) return { kind: "persistence" };
  return { kind: "outside" };
});

/** Reading this path reads an identity secret (keys, tokens, credentials). */
/** A process's environment (`/proc/self/environ`, `/proc/1/task/1/environ`): it holds the agent's API keys. */
const PROCESS_ENVIRONMENT = /^\/proc\/(\d+|self|thread-self)(\/task\/\d+)?\/environ$/;

export const isIdentitySecret = memoByPlaces((places: Places, lexical: string, real: string): boolean => {
  if (PROCESS_ENVIRONMENT.test(real) || (lexical !== real && PROCESS_ENVIRONMENT.test(lexical))) return true;
  return underAnyFolded(places.identitySecrets, real) || (lexical !== real && underAnyFolded(places.identitySecrets, lexical));
});

/** Whether `p` is or holds (is an ancestor of) some location of the list. */
export function holdsAny(list: readonly string[], p: string): boolean {
  return holdsIndexed(listIndex(list), p);
}

/** A recursive read of this directory would read identity secrets below it. */
export function containsIdentitySecret(places: Places, lexical: string, real: string): boolean {
  const index = listIndex(places.identitySecrets);
  return holdsIndexed(index, real) || (lexical !== real && holdsIndexed(index, lexical));
}

function hasOtherHardLinks(p: string, facts: StatSource | undefined): boolean {
  if (facts) return (facts.fileLinks(p) ?? 1) > 1;
  try {
    const st = statSync(p, { throwIfNoEntry: false });
    return st?.isFile() === true && st.nlink > 1;
  } catch {
    return false;
  }
}
