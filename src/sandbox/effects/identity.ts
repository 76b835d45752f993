// Which version of a file system entry this is, cheaply: inode, size, modification and change
// times in nanoseconds. The change time cannot be set from user space, so an entry whose identity
// still matches has not been touched since it was read. Strings, so it survives JSON and IPC.

import { lstatSync, type BigIntStats } from "node:fs";

export interface Identity {
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
  /** The file type bits of the mode, so a file replaced by a directory of the same inode is seen. */
  readonly type: number;
}

export function identityOf(st: BigIntStats): Identity {
  return { ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs), ctimeNs: String(st.ctimeNs), type: Number(st.mode & 0o170000n) };
}

/** The identity of what is at `p` now, or null when nothing is. */
export function identityAt(p: string): Identity | null {
  try {
    const st = lstatSync(p, { bigint: true, throwIfNoEntry: false });
    return st ? identityOf(st) : null;
  } catch {
    return null;
  }
}

export function sameIdentity(a: Identity | null, b: Identity | null): boolean {
  if (a === null || b === null) return a === b;
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.type === b.type;
}

/** Changed after the run started: its change time is later than the start marker's. */
export function changedSince(id: Identity, startCtimeNs: bigint): boolean {
  return BigInt(id.ctimeNs) > startCtimeNs;
}

/**
 * The same inode with the same content stamps, whatever its change time: a rename moves an entry
 * and sets its ctime, so a staged file renamed into place is recognized by this, not by identity.
 */
export function sameInode(a: Identity | null, b: Identity | null): boolean {
  if (a === null || b === null) return a === b;
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.type === b.type;
}
