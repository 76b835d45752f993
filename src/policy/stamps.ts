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

/** The stat fields a stamp keeps (numbers, compared as they are: no text is built on the hot path). */
export interface Stamp {
  readonly dev: number;
  readonly ino: number;
  readonly mode: number;
  readonly nlink: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

/** What a change to this entry moves: identity, type, links, size, content and metadata times; undefined when missing. */
export function fullStamp(st: Stats | undefined): Stamp | undefined {
  return st ? { dev: st.dev, ino: st.ino, mode: st.mode, nlink: st.nlink, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs } : undefined;
}

/** Which object is at a path, and of which type; not what is inside it (a directory's entries change its times). */
export function identityStamp(st: Stats | undefined): Stamp | undefined {
  return st ? { dev: st.dev, ino: st.ino, mode: st.mode, nlink: 0, size: 0, mtimeMs: 0, ctimeMs: 0 } : undefined;
}

export function sameStamp(a: Stamp | undefined, b: Stamp | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.ino === b.ino && a.ctimeMs === b.ctimeMs && a.mtimeMs === b.mtimeMs && a.size === b.size && a.dev === b.dev && a.mode === b.mode && a.nlink === b.nlink;
}

/** Whether stat `st` still has stamp `s` (of the same kind). */
function matches(s: Stamp | undefined, st: Stats | undefined, identity: boolean): boolean {
  if (s === undefined || st === undefined) return s === undefined && st === undefined;
  if (st.ino !== s.ino || st.dev !== s.dev || st.mode !== s.mode) return false;
  return identity || (st.ctimeMs === s.ctimeMs && st.mtimeMs === s.mtimeMs && st.size === s.size && st.nlink === s.nlink);
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
  readonly stamp: Stamp | undefined;
}

export function stampOf(path: string, follow: boolean, identity: boolean, known?: { st: Stats | undefined }): { dep: Dependency; st: Stats | undefined } {
  const st = known ? known.st : follow ? statOrUndefined(path) : lstatOrUndefined(path);
  return { dep: { path, follow, identity, stamp: identity ? identityStamp(st) : fullStamp(st) }, st };
}

/** Whether every dependency still has the stamp it had. */
export function unchanged(deps: readonly Dependency[]): boolean {
  for (const d of deps) {
    const st = d.follow ? statOrUndefined(d.path) : lstatOrUndefined(d.path);
    if (!matches(d.stamp, st, d.identity)) return false;
  }
  return true;
}
