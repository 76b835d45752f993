// Folders only this user can reach, made in places other accounts can write (the system temp dir).
// A name there (`/tmp/pi-auto-mode-<uid>`) can be taken first by anyone: as a symlink it points our
// writes anywhere, as a folder of theirs (or one open to all) they read and seed what we keep in
// it. So a folder is used only when it is a real directory (lstat: a symlink is never followed),
// ours, with no group or other bits, and no folder above it lets another account rename it away
// and put something else in its place (writable by others without the sticky bit, or not owned
// by us or root). Nothing here follows a symlink or changes a mode it has not checked the owner of.

import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  type Stats,
} from "node:fs";
import { dirname, join, resolve } from "node:path";

const uid = (): number | undefined => (typeof process.geteuid === "function" ? process.geteuid() : undefined);

/** Why `dir` is not a private folder of ours as it stands (lstat), or undefined when it is. */
export function privateDirProblem(dir: string, st: Stats | undefined = lstatOrUndefined(dir)): string | undefined {
  if (!st) return `${dir} does not exist`;
  if (st.isSymbolicLink()) return `${dir} is a symbolic link (to ${linkTarget(dir)}, owned by uid ${st.uid}), not a folder`;
  if (!st.isDirectory()) return `${dir} is not a folder`;
  const me = uid();
  if (me !== undefined && st.uid !== me) return `${dir} belongs to uid ${st.uid}, not to you (uid ${me})`;
  if ((st.mode & 0o077) !== 0) return `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)})`;
  return ancestorProblem(dir);
}

/**
 * Why another account could replace `dir` through a folder above it, or undefined. Each folder on
 * the way, as spelled and as resolved, must belong to us or root and, if others can write it, be
 * sticky (only an entry's owner can rename it there, as in /tmp).
 */
export function ancestorProblem(dir: string): string | undefined {
  const me = uid();
  const seen = new Set<string>();
  const check = (p: string): string | undefined => {
    for (let d = dirname(p); !seen.has(d); d = dirname(d)) {
      seen.add(d);
      const st = lstatOrUndefined(d);
      if (!st) return `${d} does not exist`;
      if (st.uid !== 0 && st.uid !== me) return `${d}, a folder above ${dir}, belongs to uid ${st.uid}, who can replace what is in it`;
      if (!st.isSymbolicLink() && (st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0)
        return `other users can replace what is in ${d} (mode ${(st.mode & 0o777).toString(8)}, not sticky), a folder above ${dir}`;
      if (d === dirname(d)) break;
    }
    return undefined;
  };
  return check(resolve(dir)) ?? check(join(realOr(dirname(resolve(dir))), "x"));
}

export type PrivateDir = { readonly ok: true; readonly path: string; readonly tightened?: number } | { readonly ok: false; readonly reason: string };

/**
 * `dir` as a private folder of ours: made with mode 0700 if missing (its parent must exist), or
 * the one there. One of ours with group or other bits is closed to 0700 through a descriptor
 * opened without following a symlink, once it is known to be ours (`tightened`: the old mode).
 */
export function ensurePrivateDir(dir: string): PrivateDir {
  const above = ancestorProblem(dir);
  if (above) return { ok: false, reason: above };
  try {
    // Not recursive: an intermediate symlink would be followed. EEXIST leaves whatever is there to the checks.
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") return { ok: false, reason: `${dir} cannot be made: ${(e as Error).message}` };
  }
  const st = lstatOrUndefined(dir);
  const problem = privateDirProblem(dir, st);
  if (!problem) return { ok: true, path: dir };
  if (!st?.isDirectory() || st.uid !== uid() || (st.mode & 0o077) === 0) return { ok: false, reason: problem };
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const now = fstatSync(fd);
    if (now.ino !== st.ino || now.dev !== st.dev || now.uid !== uid()) return { ok: false, reason: `${dir} changed while it was checked` };
    fchmodSync(fd, 0o700);
  } catch (e) {
    return { ok: false, reason: `${problem}, and it cannot be closed to mode 700: ${(e as Error).message}` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const after = privateDirProblem(dir);
  return after ? { ok: false, reason: after } : { ok: true, path: dir, tightened: st.mode & 0o777 };
}

/** A fresh private folder in `parent` (mkdtemp: a new name, mode 0700, never one that existed). */
export function freshPrivateDir(parent: string, prefix: string): PrivateDir {
  const above = ancestorProblem(join(parent, prefix));
  if (above) return { ok: false, reason: above };
  try {
    const dir = mkdtempSync(join(parent, prefix));
    const problem = privateDirProblem(dir);
    return problem ? { ok: false, reason: problem } : { ok: true, path: dir };
  } catch (e) {
    return { ok: false, reason: `a private folder cannot be made in ${parent}: ${(e as Error).message}` };
  }
}

/**
 * Removes a folder of ours and everything in it, whatever a command left there: folders it made
 * read-only are opened for the owner first (lstat: a symlink is removed, never followed).
 */
export function removePrivateDir(dir: string): void {
  const me = uid();
  const open = (d: string) => {
    const st = lstatOrUndefined(d);
    if (!st?.isDirectory() || (me !== undefined && st.uid !== me)) return;
    if ((st.mode & 0o700) !== 0o700) {
      let fd: number | undefined;
      try {
        fd = openSync(d, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
        fchmodSync(fd, 0o700);
      } catch {
        // rmSync below says what could not be removed
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    }
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) open(join(d, n));
  };
  open(dir);
  rmSync(dir, { recursive: true, force: true });
}

function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

function linkTarget(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return "?";
  }
}

function realOr(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}
