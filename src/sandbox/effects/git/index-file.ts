// The git index (`.git/index`), versions 2, 3 and 4, read without git. Comparing the index before
// and after a command tells whether it staged, unstaged or hid anything; `git status` rewrites the
// file too (a stat refresh), which is why `sameEntries` looks only at what such a refresh keeps.
//
// Bad data is undefined, never a guess: a wrong checksum, a short entry, a path that is not UTF-8
// (two different byte strings must not decode to one name), or a required extension we cannot
// honour (a split index keeps most entries in another file, so this file alone would mislead).

import { createHash } from "node:crypto";
import { hashLength, readFileBounded, type ObjectFormat } from "./bounded.ts";

export type IndexEntry = {
  path: string;
  /** The 32-bit mode, e.g. 0o100644, 0o120000, 0o160000 (0o40000 for a sparse-index directory). */
  mode: number;
  oid: string;
  stage: 0 | 1 | 2 | 3;
  ctimeSeconds: number;
  ctimeNanoseconds: number;
  mtimeSeconds: number;
  mtimeNanoseconds: number;
  dev: number;
  ino: number;
  uid: number;
  gid: number;
  size: number;
  assumeValid: boolean;
  /** Version 3+ extended flags: both change what `git status` reports for the path. */
  skipWorktree: boolean;
  intentToAdd: boolean;
};

export type GitIndex = { version: 2 | 3 | 4; entries: IndexEntry[] };

const MAX_INDEX_BYTES = 512 * 1024 * 1024;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

export function readIndex(path: string, format: ObjectFormat = "sha1"): GitIndex | undefined {
  const buf = readFileBounded(path, MAX_INDEX_BYTES);
  return buf && parseIndexFile(buf, format);
}

/** Parses index bytes (exported for callers that already hold them). */
export function parseIndexFile(buf: Buffer, format: ObjectFormat = "sha1"): GitIndex | undefined {
  const hl = hashLength(format);
  if (buf.length < 12 + hl || buf.toString("latin1", 0, 4) !== "DIRC") return undefined;
  const version = buf.readUInt32BE(4);
  if (version !== 2 && version !== 3 && version !== 4) return undefined;
  const end = buf.length - hl;
  const trailer = buf.subarray(end);
  // git 2.40+ may write an all-zero trailer (index.skipHash) and accepts it: so do we. The sum is
  // an integrity check, not authentication; anyone able to write the file can compute it anyway.
  if (!trailer.every((b) => b === 0) && !createHash(format).update(buf.subarray(0, end)).digest().equals(trailer)) {
    return undefined;
  }
  const count = buf.readUInt32BE(8);
  const fixed = 40 + hl + 2; // stat data, id, flags
  // Every entry takes at least `fixed` + 1 bytes: a count that cannot fit is malformed, and this
  // bounds the loop before it starts.
  if (count > (end - 12) / (fixed + 1)) return undefined;
  const entries: IndexEntry[] = [];
  let pos = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = pos;
    if (pos + fixed > end) return undefined;
    const flags = buf.readUInt16BE(pos + 40 + hl);
    const extended = (flags & 0x4000) !== 0;
    if (extended && version < 3) return undefined;
    let extra = 0;
    if (extended) {
      if (pos + fixed + 2 > end) return undefined;
      extra = buf.readUInt16BE(pos + fixed);
      if (extra & 0x9fff) return undefined; // reserved and unused bits must be zero
    }
    pos += fixed + (extended ? 2 : 0);
    let name: Buffer;
    if (version === 4) {
      // The path is the previous one minus N trailing bytes plus a NUL-terminated suffix; N uses
      // the offset encoding of pack OFS_DELTA (+1 per continuation byte).
      let c = buf[pos++];
      if (c === undefined) return undefined;
      let strip = c & 0x7f;
      while (c & 0x80) {
        if (pos - start > fixed + 12) return undefined;
        c = buf[pos++];
        if (c === undefined) return undefined;
        strip = (strip + 1) * 128 + (c & 0x7f);
      }
      if (strip > previous.length) return undefined;
      const nul = buf.indexOf(0, pos);
      if (nul < 0 || nul >= end) return undefined;
      name = Buffer.concat([previous.subarray(0, previous.length - strip), buf.subarray(pos, nul)]);
      pos = nul + 1;
    } else {
      const stated = flags & 0xfff;
      // 0xfff means "this long or longer": the NUL then ends the name.
      const nul = stated < 0xfff ? pos + stated : buf.indexOf(0, pos + 0xfff);
      if (nul < 0 || nul >= end || buf[nul] !== 0) return undefined;
      name = buf.subarray(pos, nul);
      // Entries are padded with 1..8 NULs to a multiple of 8 bytes from their start.
      const padded = start + ((nul - start + 8) & ~7);
      if (padded > end) return undefined;
      for (let k = nul; k < padded; k++) if (buf[k] !== 0) return undefined;
      pos = padded;
    }
    if ((flags & 0xfff) !== Math.min(name.length, 0xfff) || name.length === 0 || name.includes(0)) return undefined;
    let path: string;
    try {
      path = STRICT_UTF8.decode(name);
    } catch {
      return undefined;
    }
    previous = name;
    entries.push({
      path,
      mode: buf.readUInt32BE(start + 24),
      oid: buf.toString("hex", start + 40, start + 40 + hl),
      stage: ((flags >> 12) & 3) as 0 | 1 | 2 | 3,
      ctimeSeconds: buf.readUInt32BE(start),
      ctimeNanoseconds: buf.readUInt32BE(start + 4),
      mtimeSeconds: buf.readUInt32BE(start + 8),
      mtimeNanoseconds: buf.readUInt32BE(start + 12),
      dev: buf.readUInt32BE(start + 16),
      ino: buf.readUInt32BE(start + 20),
      uid: buf.readUInt32BE(start + 28),
      gid: buf.readUInt32BE(start + 32),
      size: buf.readUInt32BE(start + 36),
      assumeValid: (flags & 0x8000) !== 0,
      skipWorktree: (extra & 0x4000) !== 0,
      intentToAdd: (extra & 0x2000) !== 0,
    });
  }
  // Extensions: a 4-byte signature and a 32-bit size each, up to the trailer exactly. An upper-case
  // first letter marks an optional one (cache tree, resolve-undo, untracked cache, ...): skipped. A
  // lower-case one is required to understand the entries: only "sdir" (sparse directory entries,
  // which are already plain entries above) is understood.
  while (pos < end) {
    if (pos + 8 > end) return undefined;
    const sig = buf.toString("latin1", pos, pos + 4);
    const size = buf.readUInt32BE(pos + 4);
    if (pos + 8 + size > end) return undefined;
    const first = sig.charCodeAt(0);
    if (!(first >= 0x41 && first <= 0x5a) && sig !== "sdir") return undefined;
    pos += 8 + size;
  }
  return { version, entries };
}

/**
 * The same staged content: path, mode, id and stage of every entry, plus the flags that hide a
 * path from `git status` (assume-valid, skip-worktree) or mark it intent-to-add. Stat data and
 * extensions (cache tree, untracked cache) are what a stat refresh rewrites, so they are left out,
 * and so is the version, which any write may change (feature.manyFiles picks 4).
 */
export function sameEntries(a: GitIndex, b: GitIndex): boolean {
  if (a.entries.length !== b.entries.length) return false;
  for (let i = 0; i < a.entries.length; i++) {
    const x = a.entries[i]!;
    const y = b.entries[i]!;
    if (
      x.path !== y.path ||
      x.mode !== y.mode ||
      x.oid !== y.oid ||
      x.stage !== y.stage ||
      x.assumeValid !== y.assumeValid ||
      x.skipWorktree !== y.skipWorktree ||
      x.intentToAdd !== y.intentToAdd
    ) {
      return false;
    }
  }
  return true;
}
