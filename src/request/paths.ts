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

function normalizeLikePi(input: string, home: string, stripAt: boolean): string {
  let s = input.replace(UNICODE_SPACES, " ");
  if (stripAt && s.startsWith("@")) s = s.slice(1);
  if (s === "~") return home;
  if (s.startsWith("~/")) return join(home, s.slice(2));
  if (/^file:\/\//.test(s)) return fileURLToPath(s);
  return s;
}

/** The absolute path Pi's file tools compute for `input` (before any symlink is followed). Throws on input Pi would also reject. */
export function resolveLikePi(input: string, cwd: string, home: string): string {
  if (input.includes("\0")) throw new Error("path contains a NUL byte");
  const normalized = normalizeLikePi(input, home, true);
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
 * Resolve symlinks in an absolute, normalized path. For a path that does not exist yet, walk up
 * to the nearest existing ancestor, resolve it, and append the rest; a dangling symlink on the
 * way is followed to the target it would create.
 */
export function resolveReal(absolute: string, hops = 0): RealPath {
  if (hops > MAX_SYMLINK_HOPS) throw new Error("too many levels of symbolic links");
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
      if (st.isSymbolicLink()) {
        const target = resolve(dirname(current), readlinkSync(current));
        return resolveReal(join(target, ...rest), hops + 1);
      }
      let realCurrent = current;
      try {
        realCurrent = realpathSync.native(current);
      } catch {
        realCurrent = current;
      }
      return { real: rest.length === 0 ? realCurrent : join(realCurrent, ...rest), exists: rest.length === 0 };
    }
    const parent = dirname(current);
    if (parent === current) return { real: absolute, exists: false };
    rest.unshift(current.slice(parent.length).replace(/^\//, ""));
    current = parent;
  }
}
