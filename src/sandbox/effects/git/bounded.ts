// What every git file reader here shares: the object id formats, and a bounded read of one file
// that a hostile repository cannot turn into an endless or blocking one. Small on purpose: the
// refs and the index are read after every command that touched a repository, the object store
// only when history is judged.

import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

export type ObjectFormat = "sha1" | "sha256";

export function hashLength(format: ObjectFormat): number {
  return format === "sha256" ? 32 : 20;
}

const HEX40 = /^[0-9a-f]{40}$/;
const HEX64 = /^[0-9a-f]{64}$/;

export function isOid(value: string, format: ObjectFormat): boolean {
  return (format === "sha256" ? HEX64 : HEX40).test(value);
}

/**
 * The whole content of a regular file, at most `maxBytes`; undefined for anything else. O_NOFOLLOW
 * and O_NONBLOCK because a hostile repository can put a symlink to /dev/zero or a FIFO where a
 * file should be: the first would make us read forever, the second would block forever.
 */
export function readFileBounded(path: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > maxBytes) return undefined;
    const buf = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) {
      const n = readSync(fd, buf, got, st.size - got, got);
      if (n <= 0) return undefined;
      got += n;
    }
    // A file that grew while we read it is being written: not a state to judge.
    if (readSync(fd, Buffer.allocUnsafe(1), 0, 1, got) !== 0) return undefined;
    return buf;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
