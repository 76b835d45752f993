// Path resolution that judges exactly the file a tool will touch.
//
// Step 1 mirrors Pi 1.6's own tools (utils/paths.js `resolvePath` and tools/path-utils.js):
// Unicode spaces become ASCII spaces, one leading "@" is dropped, "~" and "~/" expand to the
// home directory, file:// URLs become paths, and the result is resolved against the cwd.
// Step 2 follows symlinks the way the kernel will when the tool opens the path, including a
// dangling symlink whose target a write would create.

import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;
const MAX_SYMLINK_HOPS = 40;

// Pi normalizes the tool argument with Unicode spaces and "@" handled, but the cwd only with
// "~" and file:// handled (utils/paths.js `resolvePath` calls `normalizePath(baseDir)` without options).
function normalizeLikePi(input: string, home: string, isArgument: boolean): string {
  let s = isArgument ? input.replace(UNICODE_SPACES, " ") : input;
  if (isArgument && s.startsWith("@")) s = s.slice(1);
  if (s === "~") return home;
  if (s.startsWith("~/")) return join(home, s.slice(2));
  if (/^file:\/\//.test(s)) return fileURLToPath(s);
  return s;
}

/** The absolute path Pi's file tools compute for `input` (before any symlink is followed). Throws on input Pi would also reject. */
export function resolveLikePi(input: string, cwd: string, home: string): string {
  const normalized = normalizeLikePi(input, home, true);
  // Checked after normalization: a file URL can carry an encoded NUL ("%00").
  if (normalized.includes("\0")) throw new Error("path contains a NUL byte");
  const base = normalizeLikePi(cwd, home, false);
  return isAbsolute(normalized) ? resolve(normalized) : resolve(base, normalized);
}

/**
 * Pi's `read` tool falls back to macOS screenshot-name variants when the plain path is missing;
 * the gate must judge the variant Pi will actually open.
 */
export function resolveReadLikePi(input: string, cwd: string, home: string): string {
  const plain = resolveLikePi(input, cwd, home);
  if (existsSync(plain)) return plain;
  const amPm = plain.replace(/ (AM|PM)\./gi, "\u202F$1.");
  const nfd = plain.normalize("NFD");
  const curly = (p: string) => p.replace(/'/g, "\u2019");
  for (const candidate of [amPm, nfd, curly(plain), curly(nfd)]) {
    if (candidate !== plain && existsSync(candidate)) return candidate;
  }
  return plain;
}

export interface RealPath {
  /** The absolute path with every symlink on the way resolved, as far as the file system lets us see. */
  readonly real: string;
  /** Whether the full path exists now. */
  readonly exists: boolean;
}

/**
 * Resolve symlinks in an absolute, normalized path (as Pi hands it to the file system). For a
 * path that does not exist yet, walk up to the nearest existing ancestor, resolve it, and append
 * the rest; a dangling symlink on the way is followed to the target a write would create.
 * Throws where the kernel would fail too (symlink loop, a file used as a directory) and on a
 * ".." that would have to climb out of a directory that does not exist.
 */
export function resolveReal(absolute: string): RealPath {
  // lstat with throwIfNoEntry avoids exceptions on the common "new file" path (they cost ~20 µs each).
  if (lstatSync(absolute, { throwIfNoEntry: false })) {
    try {
      return { real: realpathSync.native(absolute), exists: true };
    } catch {
      // dangling symlink, loop or permission problem: resolved by the walk below
    }
  }
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    const st = lstatSync(current, { throwIfNoEntry: false });
    if (st) {
      // A symlink's relative target is relative to the directory that really holds the link,
      // which may differ from the lexical parent when an ancestor is itself a symlink.
      if (st.isSymbolicLink()) return walk(realpathSync.native(dirname(current)), [...linkTarget(current, "/"), ...rest], 1);
      const realCurrent = realpathSync.native(current);
      return { real: rest.length === 0 ? realCurrent : join(realCurrent, ...rest), exists: rest.length === 0 };
    }
    const parent = dirname(current);
    if (parent === current) return { real: absolute, exists: false };
    rest.unshift(current.slice(parent.length).replace(/^\//, ""));
    current = parent;
  }
}

/**
 * A path as a shell command's system calls see it: the kernel walks `relative` from `base`
 * component by component, so a `..` after a symlink climbs out of the link's target, not out of
 * the directory holding the link (`link-out/../etc/shadow` with link-out -> /etc is /etc/shadow).
 * Pi's file tools differ: they normalize the path lexically first (see resolveLikePi).
 */
export function resolvePhysical(base: string, relative: string): RealPath {
  const start = isAbsolute(relative) ? "/" : realpathSync.native(base);
  return walk(start, relative.split("/"), 0);
}

function linkTarget(link: string, root: string): string[] {
  const target = readlinkSync(link);
  return isAbsolute(target) ? [root, ...target.split("/")] : target.split("/");
}

/** Component by component, the way the kernel walks a path: `..` applies to the real directory reached so far. */
function walk(base: string, parts: string[], hops: number): RealPath {
  let current = base;
  let queue = parts;
  for (let i = 0; i < queue.length; i++) {
    const part = queue[i]!;
    if (part === "" || part === ".") continue;
    if (part === "/") {
      current = "/";
      continue;
    }
    if (part === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    const st = lstatSync(next, { throwIfNoEntry: false });
    if (!st) {
      const tail = queue.slice(i + 1).filter((p) => p !== "" && p !== ".");
      if (tail.includes("..")) throw new Error(`cannot resolve ".." below ${next}, which does not exist`);
      return { real: join(next, ...tail), exists: false };
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw new Error("too many levels of symbolic links");
      queue = [...linkTarget(next, "/"), ...queue.slice(i + 1)];
      i = -1;
      continue;
    }
    current = next;
  }
  return { real: current, exists: true };
}
