// What a sandboxed command may write, and what it must not touch, for one workspace. Platform
// neutral: the Linux backend turns it into bind mounts, the macOS backend into a Seatbelt
// profile. The protected names come from the gate's own data (src/policy/data/paths.json), so
// the sandbox and the gate protect the same things.

import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync, type Dirent, type Stats } from "node:fs";
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
  /** How long a scan of the writable roots is reused (ms). */
  readonly scanCacheMs?: number;
  /**
   * Roots mounted copy-on-write for the command (the workspace, a git dir outside it). Inside them
   * nothing is scanned for and no placeholder is made: whatever the command changes under a
   * protected name is judged by name when it ends (effects/). Existing protected entries stay
   * read-only; of a git dir only the parts that configure or run code do, so git can commit.
   */
  readonly staged?: readonly string[];
  /** Unstaged, for a reviewed git command: the workspace's git dir is writable but its code-running parts. */
  readonly gitWritable?: boolean;
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
  /** Staged roots (mounted copy-on-write), outermost first. */
  readonly staged: readonly string[];
  /** Code-running git files that do not exist and cannot get a placeholder: removed after the command if it made them. */
  readonly forbidden: readonly string[];
}

export class LayoutError extends RequestError {}

const lower = (s: string) => s.toLowerCase();
const NAMES = new Set([...pathData.protectedNames, ...pathData.protectedFileNames].map(lower));
const SEQUENCES = pathData.protectedSequences.map((s) => s.map(lower));
const REGENERABLE = new Set(pathData.regenerableDirs.map(lower));
/** Canonical spellings of the protected entries a workspace root gets, existing or not. */
export const ROOT_ENTRIES: readonly string[] = [
  ...pathData.protectedNames,
  ...pathData.protectedFileNames,
  ...pathData.protectedSequences.map((s) => s.join("/")),
];

function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}

function safeLstat(p: string): Stats | undefined {
  try {
    return lstatSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined; // ENOTDIR: a file on the way
  }
}

/**
 * An empty directory where a protected path belongs may be a placeholder of ours or of another
 * process (the placeholder pool decides); it never counts as the real thing. Otherwise a second
 * command would bind it as an ordinary entry without holding it, and the first command's cleanup
 * would remove it under the second.
 */
function vacant(p: string): boolean {
  const st = safeLstat(p);
  if (!st) return true;
  if (!st.isDirectory()) return false;
  try {
    return readdirSync(p).length === 0;
  } catch {
    return false;
  }
}

/**
 * Where a placeholder keeps `p` (below `root`) from being created: its topmost component that is
 * missing or vacant; or, when the nearest non-vacant ancestor is a file, that file (bound
 * read-only, it cannot be swapped for a directory). Undefined when `p` exists for real.
 */
function blocker(p: string, root: string): { readonly kind: "missing" | "existing"; readonly path: string } | undefined {
  let cur = p;
  let candidate: string | undefined;
  while (cur !== root && isWithin(root, cur)) {
    if (!vacant(cur)) {
      if (candidate === undefined) return undefined;
      return safeLstat(cur)?.isDirectory() ? { kind: "missing", path: candidate } : { kind: "existing", path: cur };
    }
    candidate = cur;
    cur = dirname(cur);
  }
  return candidate === undefined ? undefined : { kind: "missing", path: candidate };
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
  // The temporary root is bound writable in place: only while it is ours and no one else can write
  // it (a command can chmod its own TMPDIR; a folder of another account is theirs to seed). It is
  // real here (places.ts), so this looks at the folder itself, never through a symlink.
  const tmpSt = lstatSync(tmpRoot);
  const me = typeof process.geteuid === "function" ? process.geteuid() : undefined;
  if (me !== undefined && tmpSt.uid !== me) throw new LayoutError(`the temporary root ${tmpRoot} belongs to uid ${tmpSt.uid}, not to you (uid ${me})`);
  if ((tmpSt.mode & 0o022) !== 0)
    throw new LayoutError(`the temporary root ${tmpRoot} is writable by other users (mode ${(tmpSt.mode & 0o777).toString(8)}): chmod 700 it`);
  const writable = outermost([workspace, tmpRoot]);
  // Both roots stay listed even when one holds the other: each is bound on its own.
  const writableAll = [...new Set([workspace, tmpRoot])].sort((a, b) => a.length - b.length);
  const inWritable = (p: string) => writable.some((w) => isWithin(w, p));

  const readOnly = new Set<string>();
  const missing = new Set<string>();
  const forbidden = new Set<string>();
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

  const staged = outermost((input.staged ?? []).filter((r) => r !== sep && isAbsolute(r)));
  const inStaged = (p: string) => staged.some((r) => isWithin(r, p));
  // A git dir that is staged keeps only its code-running parts read-only: git writes the rest.
  const protectGitDir = (g: string) => {
    const list = inStaged(g) ? data.staging.gitReadOnly : [...data.staging.gitReadOnly, ...data.staging.gitReadOnlyInPlace];
    for (const rel of list)
      for (const p of expandOneLevel(g, rel)) {
        if (lstatSync(p, { throwIfNoEntry: false })) readOnly.add(p);
        // Written in place, a missing hooks/ or info/ must not be creatable; staged, it is judged when the command ends.
        else if (!inStaged(g) && lstatSync(dirname(p), { throwIfNoEntry: false })?.isDirectory()) {
          if (data.staging.gitReadOnlyDirs.includes(rel)) missing.add(p);
          else forbidden.add(p);
        }
      }
  };
  const protectOrStage = (p: string) => {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory() && (inStaged(p) || input.gitWritable) && lower(p.slice(p.lastIndexOf(sep) + 1)) === ".git") protectGitDir(p);
    else protect(p);
  };

  const rootOf = (p: string) => writable.find((w) => isWithin(w, p))!;
  const guard = (p: string) => {
    // Staged: a protected name the command creates is held when it ends; nothing to block now.
    if (inStaged(p)) {
      if (!vacant(p)) protectOrStage(p);
      return;
    }
    const m = blocker(p, rootOf(p));
    if (m === undefined) protect(p);
    else (m.kind === "missing" ? missing : readOnly).add(m.path);
  };

  // 1. The workspace root: every protected entry, existing or not.
  for (const entry of ROOT_ENTRIES) {
    const p = join(workspace, entry);
    if (input.gitWritable && entry === ".git" && !vacant(p)) protectOrStage(p);
    else guard(p);
  }
  for (const g of places.gitDirs) {
    if (staged.some((r) => isWithin(r, g)) || (input.gitWritable && inWritable(g))) protectGitDir(g);
    else if (inWritable(g)) readOnly.add(g);
  }

  // 3. (before 2, so the scan below knows which empty directories are placeholders) Home-directory files that configure or run code later, and our own files, when a writable
  //    root holds them (a workspace at or above the home directory).
  const secrets = new Set(places.identitySecrets);
  for (const p of [...places.persistence, ...places.selfProtected, ...places.identitySecrets, ...input.ownPaths]) {
    if (!inWritable(p) || writable.includes(p)) continue;
    if (!vacant(p)) {
      if (!secrets.has(p)) protect(p);
    } else guard(p);
  }

  // 2. Protected entries that already exist deeper down (nested repositories, a package's .pi).
  //    The scan also sees the placeholders settled above; those stay placeholders.
  const scanned = writableAll.filter((w) => !inStaged(w));
  const { found, scan } = scanned.length > 0 ? cachedScan(scanned, input) : { found: [], scan: { dirs: 0, truncated: false } };
  const ownGit = join(workspace, ".git");
  for (const p of found) if (!missing.has(p) && !inStaged(p) && !(input.gitWritable && p === ownGit)) protect(p);

  // 4. Identity secrets anywhere: readable by nobody in the sandbox.
  const masked = new Map<string, MaskedPath>(cachedMasks(places.identitySecrets, writableAll, input.scanCacheMs).map((m) => [m.path, m]));
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
    staged,
    forbidden: [...forbidden],
  };
}

/** `a/*\/b` patterns of the git read-only list: `*` stands for each existing entry of that level. */
function expandOneLevel(base: string, rel: string): string[] {
  let paths = [base];
  for (const part of rel.split("/")) {
    if (part !== "*") {
      paths = paths.map((p) => join(p, part));
      continue;
    }
    paths = paths.flatMap((p) => {
      try {
        return readdirSync(p).map((n) => join(p, n));
      } catch {
        return [];
      }
    });
  }
  return paths;
}

const masksCache = new Map<string, { readonly at: number; readonly masks: readonly MaskedPath[] }>();

/** The identity secrets that exist, as real paths (some 60 realpath calls, so reused like a scan). */
function cachedMasks(secrets: readonly string[], writable: readonly string[], ttl: number = SCAN_CACHE_MS): readonly MaskedPath[] {
  const key = JSON.stringify([secrets, writable]);
  const now = Date.now();
  const hit = masksCache.get(key);
  if (hit && now - hit.at < ttl) return hit.masks;
  const masks = new Map<string, MaskedPath>();
  for (const s of secrets) {
    const real = realOrUndefined(s);
    if (!real || masks.has(real)) continue;
    // Masking a folder that holds a writable root would hide the workspace itself.
    if (writable.some((w) => isWithin(real, w))) continue;
    const st = statSync(real, { throwIfNoEntry: false });
    if (!st) continue;
    masks.set(real, { path: real, kind: st.isDirectory() ? "dir" : "file" });
  }
  const result = [...masks.values()];
  masksCache.delete(key);
  masksCache.set(key, { at: now, masks: result });
  while (masksCache.size > SCAN_CACHE_SIZE) masksCache.delete(masksCache.keys().next().value!);
  return result;
}

interface ScanResult {
  /** Protected entries found below the roots; checked again (protect lstat's them) at every use. */
  readonly found: readonly string[];
  readonly scan: { readonly dirs: number; readonly truncated: boolean };
}

// A big workspace takes tens of milliseconds to scan, and agents run commands in bursts: reuse a
// scan for a few seconds. What it finds is what existed before the agent's recent commands, which
// is what needs protecting (a repository the agent itself just made holds nothing of the user's).
const SCAN_CACHE_MS = 5_000;
const SCAN_CACHE_SIZE = 32;
const scans = new Map<string, { readonly at: number; readonly result: ScanResult }>();

function cachedScan(roots: readonly string[], input: LayoutInput): ScanResult {
  const ttl = input.scanCacheMs ?? SCAN_CACHE_MS;
  const key = JSON.stringify([roots, input.protectedGlobs, input.maxDepth, input.maxDirs]);
  const now = Date.now();
  const hit = scans.get(key);
  if (hit && now - hit.at < ttl) return hit.result;
  const found: string[] = [];
  const scan = scanRoots(roots, input, (p) => found.push(p));
  const result = { found, scan };
  scans.delete(key);
  scans.set(key, { at: now, result });
  while (scans.size > SCAN_CACHE_SIZE) scans.delete(scans.keys().next().value!);
  return result;
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
        if (
          NAMES.has(name) ||
          SEQUENCES.some((s) => s.length <= path.length && s.every((x, i) => path[path.length - s.length + i] === x)) ||
          (globs.length > 0 && userProtected(full))
        ) {
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
