// Stat identities that say when a cached fact about the file system may be reused. A cache keyed
// by them never answers for a file system that changed since it was filled: every field a change
// moves is in the stamp, and a stamp taken too soon after a change is not trusted (see `settled`).

import { lstatSync, statSync, type Stats } from "node:fs";

/**
 * How long after a change a file's timestamps may still be the same for a second change. Linux
 * takes file times from a clock that moves once per tick (up to 10 ms); file systems that keep
 * whole seconds (or two, FAT) are recognised by a ctime on a second boundary.
 */
const FINE_MARGIN_MS = 50;
const COARSE_MARGIN_MS = 2500;

/** What a change to this entry moves: identity, type, size, content and metadata times. */
export function fullStamp(st: Stats | undefined): string {
  return st ? `${st.dev}:${st.ino}:${st.mode}:${st.nlink}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : "-";
}

/** Which object is at a path, and of which type; not what is inside it (a directory's entries change its times). */
export function identityStamp(st: Stats | undefined): string {
  return st ? `${st.dev}:${st.ino}:${st.mode}` : "-";
}

/**
 * Whether a stamp taken at `now` (Date.now() before the stat) can be told apart from any later
 * change: its ctime (which no call can set back) is older than the file system's time resolution.
 * An unsettled stamp must not let a cache skip reading the content again.
 */
export function settled(st: Stats | undefined, now: number): boolean {
  if (!st) return true;
  const margin = st.ctimeMs % 1000 === 0 ? COARSE_MARGIN_MS : FINE_MARGIN_MS;
  return st.ctimeMs < now - margin;
}

export function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

export function statOrUndefined(p: string): Stats | undefined {
  try {
    return statSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** One path a cached fact depends on, and the stamp it had when the fact was read. */
export interface Dependency {
  readonly path: string;
  /** lstat (the entry itself) or stat (what it leads to). */
  readonly follow: boolean;
  /** Only which object it is, not its times (a directory whose entries do not matter). */
  readonly identity: boolean;
  readonly stamp: string;
}

export function stampOf(path: string, follow: boolean, identity: boolean, known?: { st: Stats | undefined }): { dep: Dependency; st: Stats | undefined } {
  const st = known ? known.st : follow ? statOrUndefined(path) : lstatOrUndefined(path);
  return { dep: { path, follow, identity, stamp: identity ? identityStamp(st) : fullStamp(st) }, st };
}

/** Whether every dependency still has the stamp it had. */
export function unchanged(deps: readonly Dependency[]): boolean {
  for (const d of deps) {
    const st = d.follow ? statOrUndefined(d.path) : lstatOrUndefined(d.path);
    if ((d.identity ? identityStamp(st) : fullStamp(st)) !== d.stamp) return false;
  }
  return true;
}
