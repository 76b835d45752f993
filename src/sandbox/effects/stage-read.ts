// The one way the host reads a path a sandboxed command could have made (P18): its upper layer,
// the merged view, git's files in the stage, and the lower files a judgement compares them with.
// A command controls the type of every entry it leaves: a FIFO where a file is expected blocks a
// plain open() for ever (and with it Pi's whole process), a symlink to /dev/zero makes a plain read
// endless, a folder symlinked elsewhere lists another tree. So every open here is O_NOFOLLOW and
// O_NONBLOCK, only a regular file is read, and only up to a size bound; a folder is listed only
// when it is one itself. test/sandbox/judge-bounds.test.ts checks that the host-side readers of the
// stage read through nothing else.

import { closeSync, constants, type Dirent, fstatSync, lstatSync, openSync, readdirSync, readSync } from "node:fs";

/** Bounds of the reads the judgement makes of small files (git's state files, a `.git` link). */
export const SMALL_FILE_BYTES = 1 << 20;

/**
 * A regular file opened for reading without following a symlink and without blocking (a FIFO
 * opens at once and is then refused by type), with its size; undefined for anything else or
 * larger than `maxBytes`. The caller closes the fd.
 */
export function openRegular(path: string, maxBytes = Number.POSITIVE_INFINITY): { readonly fd: number; readonly size: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (st.isFile() && st.size <= maxBytes) return { fd, size: st.size };
  } catch {
    // closed below
  }
  closeSync(fd);
  return undefined;
}

/**
 * The whole content of a regular file, at most `maxBytes`; undefined for anything else (missing,
 * a symlink, a FIFO, a device, a folder, too large, growing while read).
 */
export function readFileBounded(path: string, maxBytes: number): Buffer | undefined {
  const f = openRegular(path, maxBytes);
  if (!f) return undefined;
  try {
    const buf = Buffer.allocUnsafe(f.size);
    let got = 0;
    while (got < f.size) {
      const n = readSync(f.fd, buf, got, f.size - got, got);
      if (n <= 0) return undefined;
      got += n;
    }
    // A file that grew while we read it is being written: not a state to judge.
    if (readSync(f.fd, Buffer.allocUnsafe(1), 0, 1, got) !== 0) return undefined;
    return buf;
  } catch {
    return undefined;
  } finally {
    closeSync(f.fd);
  }
}

/** A regular file's content as UTF-8 text, at most `maxBytes` (default 1 MiB); undefined as for readFileBounded. */
export function readTextBounded(path: string, maxBytes = SMALL_FILE_BYTES): string | undefined {
  return readFileBounded(path, maxBytes)?.toString("utf8");
}

/**
 * The names in a folder that is one itself (a symlink to a folder is not listed: it would list
 * another tree). Throws as readdirSync does (ENOTDIR for anything that is not a folder). Listing
 * never blocks: the kernel opens a folder with O_DIRECTORY, which refuses a FIFO before opening it.
 */
export function listDir(path: string): string[];
export function listDir(path: string, opts: { readonly encoding: "buffer" }): Buffer[];
export function listDir(path: string, opts: { readonly withFileTypes: true }): Dirent[];
export function listDir(path: string, opts?: { readonly encoding?: "buffer"; readonly withFileTypes?: true }): string[] | Buffer[] | Dirent[] {
  if (!lstatSync(path).isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a folder (or a symlink to one): ${path}`), { code: "ENOTDIR" });
  if (opts?.encoding === "buffer") return readdirSync(path, { encoding: "buffer" });
  if (opts?.withFileTypes) return readdirSync(path, { withFileTypes: true });
  return readdirSync(path);
}
