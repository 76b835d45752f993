// What a sandboxed command may write, and what it must not touch, for one workspace. Platform
// neutral: the Linux backend turns it into bind mounts, the macOS backend into a Seatbelt
// profile. The protected names come from the gate's own data (src/policy/data/paths.json), so
// the sandbox and the gate protect the same things.

import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync, type Dirent } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { minimatch } from "minimatch";
import pathData from "../policy/data/paths.json" with { type: "json" };
import { isWithin, type Places } from "../policy/places.ts";
import data from "./data/sandbox.json" with { type: "json" };
import { RequestError } from "./types.ts";

export interface LayoutInput {
  /** The gate's view of the places (workspace, temporary root, home, secrets, ...). */
  readonly places: Places;
  /** Extra protected globs from the configuration (absolute). */
  readonly protectedGlobs: readonly string[];
  /** Paths of our own that must stay read-only if they lie inside a writable root. */
  readonly ownPaths: readonly string[];
  readonly maxDepth?: number;
  readonly maxDirs?: number;
}

export interface MaskedPath {
  readonly path: string;
  readonly kind: "dir" | "file";
}

export interface SandboxLayout {
  readonly workspace: string;
  readonly tmpRoot: string;
  /** Writable roots, outermost first. */
  readonly writable: readonly string[];
  /** Existing protected paths inside the writable roots, outermost first. */
  readonly readOnly: readonly string[];
  /** Protected paths inside the writable roots that do not exist yet: each needs a placeholder. */
  readonly missing: readonly string[];
  /** Identity secrets that exist: shown empty and read-only. */
  readonly masked: readonly MaskedPath[];
  /** How much of the writable roots the scan for nested protected entries covered. */
  readonly scan: { readonly dirs: number; readonly truncated: boolean };
}

export class LayoutError extends RequestError {}

const lower = (s: string) => s.toLowerCase();
const NAMES = new Set([...pathData.protectedNames, ...pathData.protectedFileNames].map(lower));
const SEQUENCES = pathData.protectedSequences.map((s) => s.map(lower));
const REGENERABLE = new Set(pathData.regenerableDirs.map(lower));
/** Canonical spellings of the protected entries a workspace root gets, existing or not. */
export const ROOT_ENTRIES: readonly string[] = [...pathData.protectedNames, ...pathData.protectedFileNames, ...pathData.protectedSequences.map((s) => s.join("/"))];

function lexists(p: string): boolean {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false; // ENOTDIR and the like: not there
  }
}

function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/**
 * What keeps `p` from being created: the first missing component below its deepest existing
 * ancestor (a placeholder goes there), or, when that ancestor is not a directory, the ancestor
 * itself (bound read-only, it cannot be swapped for a directory).
 */
function blocker(p: string): { readonly kind: "missing" | "existing"; readonly path: string } | undefined {
  let cur = p;
  let missing: string | undefined;
  for (;;) {
    let st;
    try {
      st = lstatSync(cur, { throwIfNoEntry: false });
    } catch {
      st = undefined; // ENOTDIR: a file on the way; keep walking up to it
    }
    if (st) return missing === undefined ? undefined : st.isDirectory() ? { kind: "missing", path: missing } : { kind: "existing", path: cur };
    missing = cur;
    const parent = dirname(cur);
    if (parent === cur) return undefined;
    cur = parent;
  }
}

/** The git directories a `.git` file points to (worktrees, submodules), with their common dir. */
function gitDirsOf(dotGitFile: string): string[] {
  try {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGitFile, "utf8"));
    if (!m?.[1]) return [];
    const gitDir = resolve(dirname(dotGitFile), m[1]);
    const out = [gitDir];
    const common = join(gitDir, "commondir");
    if (existsSync(common)) {
      const c = readFileSync(common, "utf8").trim();
      if (c) out.push(resolve(gitDir, c));
    }
    return out.flatMap((d) => realOrUndefined(d) ?? []);
  } catch {
    return [];
  }
}

/** Drop paths that lie inside another path of the list; sort outermost first. */
function outermost(paths: Iterable<string>): string[] {
  const sorted = [...new Set(paths)].sort((a, b) => a.length - b.length || a.localeCompare(b));
  const out: string[] = [];
  for (const p of sorted) if (!out.some((q) => isWithin(q, p))) out.push(p);
  return out;
}

export function computeLayout(input: LayoutInput): SandboxLayout {
  const { places } = input;
  const workspace = places.workspace;
  const tmpRoot = places.tmpRoot;
  for (const [what, p] of [
    ["workspace", workspace],
    ["temporary root", tmpRoot],
  ] as const) {
    if (!isAbsolute(p) || p === sep) throw new LayoutError(`the ${what} ${p} cannot be a writable root`);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st?.isDirectory()) throw new LayoutError(`the ${what} ${p} is not a directory`);
  }
  const writable = outermost([workspace, tmpRoot]);
  // Both roots stay listed even when one holds the other: each is bound on its own.
  const writableAll = [...new Set([workspace, tmpRoot])].sort((a, b) => a.length - b.length);
  const inWritable = (p: string) => writable.some((w) => isWithin(w, p));

  const readOnly = new Set<string>();
  const missing = new Set<string>();
  const protect = (p: string) => {
    // A protected entry that is a symlink: the link itself lives in a writable directory and
    // cannot be mounted over, so protect where it points (when that is writable at all).
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isSymbolicLink()) {
      const real = realOrUndefined(p);
      if (real && inWritable(real)) readOnly.add(real);
      return;
    }
    readOnly.add(p);
    if (st.isFile() && lower(p.slice(p.lastIndexOf(sep) + 1)) === ".git") for (const g of gitDirsOf(p)) if (inWritable(g)) readOnly.add(g);
  };

  // 1. The workspace root: every protected entry, existing or not.
  for (const entry of ROOT_ENTRIES) {
    const p = join(workspace, entry);
    if (lexists(p)) protect(p);
    else {
      const m = blocker(p);
      if (m && isWithin(workspace, m.path) && m.path !== workspace) (m.kind === "missing" ? missing : readOnly).add(m.path);
    }
  }
  for (const g of places.gitDirs) if (inWritable(g)) readOnly.add(g);

  // 2. Protected entries that already exist deeper down (nested repositories, a package's .pi).
  const scan = scanRoots(writableAll, input, protect);

  // 3. Home-directory files that configure or run code later, and our own files, when a writable
  //    root holds them (a workspace at or above the home directory).
  const secrets = new Set(places.identitySecrets);
  for (const p of [...places.persistence, ...places.selfProtected, ...places.identitySecrets, ...input.ownPaths]) {
    if (!inWritable(p) || writable.includes(p)) continue;
    if (lexists(p)) {
      if (!secrets.has(p)) protect(p);
    } else {
      const m = blocker(p);
      if (m && inWritable(m.path) && !writable.includes(m.path)) (m.kind === "missing" ? missing : readOnly).add(m.path);
    }
  }

  // 4. Identity secrets anywhere: readable by nobody in the sandbox.
  const masked = new Map<string, MaskedPath>();
  for (const s of places.identitySecrets) {
    const real = realOrUndefined(s);
    if (!real || masked.has(real)) continue;
    // Masking a folder that holds a writable root would hide the workspace itself.
    if (writableAll.some((w) => isWithin(real, w))) continue;
    const st = statSync(real, { throwIfNoEntry: false });
    if (!st) continue;
    masked.set(real, { path: real, kind: st.isDirectory() ? "dir" : "file" });
  }
  for (const m of masked.keys()) readOnly.delete(m);

  const ro = outermost(readOnly);
  const covered = (p: string) => ro.some((r) => isWithin(r, p)) || [...masked.keys()].some((m) => isWithin(m, p));
  return {
    workspace,
    tmpRoot,
    writable: writableAll,
    readOnly: ro,
    missing: outermost([...missing].filter((m) => !covered(m))),
    masked: [...masked.values()].sort((a, b) => a.path.length - b.path.length),
    scan,
  };
}

function scanRoots(roots: readonly string[], input: LayoutInput, protect: (p: string) => void): { dirs: number; truncated: boolean } {
  const maxDepth = input.maxDepth ?? data.scan.maxDepth;
  const maxDirs = input.maxDirs ?? data.scan.maxDirs;
  const globs = input.protectedGlobs;
  const userProtected = (p: string) => globs.some((g) => minimatch(p, g, { dot: true }) || minimatch(p, `${g}/**`, { dot: true }));
  let dirs = 0;
  let truncated = false;
  const seen = new Set<string>();
  // Breadth first, so a bound on the directory count cuts the deepest levels, not a whole subtree.
  let level: Array<{ dir: string; parts: string[] }> = roots.map((r) => ({ dir: r, parts: [] }));
  for (let depth = 0; depth <= maxDepth && level.length > 0; depth++) {
    const next: Array<{ dir: string; parts: string[] }> = [];
    for (const { dir, parts } of level) {
      if (seen.has(dir)) continue;
      seen.add(dir);
      if (++dirs > maxDirs) {
        truncated = true;
        return { dirs: dirs - 1, truncated };
      }
      let entries: Dirent[];
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries) {
        const full = join(dir, e.name);
        const name = lower(e.name);
        const path = [...parts, name];
        if (NAMES.has(name) || SEQUENCES.some((s) => s.length <= path.length && s.every((x, i) => path[path.length - s.length + i] === x)) || (globs.length > 0 && userProtected(full))) {
          protect(full);
          continue;
        }
        if (!e.isDirectory() || REGENERABLE.has(name)) continue;
        if (depth < maxDepth) next.push({ dir: full, parts: path });
      }
    }
    level = next;
  }
  if (level.length > 0) truncated = true;
  return { dirs, truncated };
}

/** A relative form for messages. */
export function describe(layout: SandboxLayout, p: string): string {
  return isWithin(layout.workspace, p) ? relative(layout.workspace, p) || "." : p;
}
