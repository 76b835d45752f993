// Stat identities that say when a cached fact about the file system may be reused. A cache keyed
// by them never answers for a file system that changed since it was filled: every field a change
// moves is in the stamp, and a stamp taken too soon after a change is not trusted (see `settled`).

import { lstatSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";

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
  return (
    a.ino === b.ino && a.ctimeMs === b.ctimeMs && a.mtimeMs === b.mtimeMs && a.size === b.size && a.dev === b.dev && a.mode === b.mode && a.nlink === b.nlink
  );
}

/** Whether stat `st` still has stamp `s` (of the same kind). */
function matches(s: Stamp | undefined, st: Stats | undefined, identity: boolean): boolean {
  if (s === undefined || st === undefined) return s === undefined && st === undefined;
  if (st.ino !== s.ino || st.dev !== s.dev || st.mode !== s.mode) return false;
  return identity || (st.ctimeMs === s.ctimeMs && st.mtimeMs === s.mtimeMs && st.size === s.size && st.nlink === s.nlink);
}

/** Whether lstat `st` still shows the full stamp `s`. */
export function hasStamp(s: Stamp, st: Stats | undefined): boolean {
  return matches(s, st, false);
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

/**
 * Where a path that had no entry would appear: the nearest existing directory above it, with its
 * full stamp. A directory's times move whenever an entry is created, removed or renamed in it, so
 * while it keeps this (settled) stamp the path still has no entry, and nothing needs to look it up.
 */
export interface Absence {
  readonly dir: string;
  readonly stamp: Stamp;
}

/**
 * The Absence of a path found missing, or undefined when it cannot be vouched for: the directory
 * that would hold it changed too recently, cannot be read, or the path does have an entry (a
 * dangling symlink, which `stat` reports as missing; or it appeared meanwhile: it is looked up
 * again after the directory's stamp was taken, so no creation can fall between the two).
 */
export function absenceOf(path: string, now: number): Absence | undefined {
  try {
    for (let child = path, dir = dirname(path); dir !== child; child = dir, dir = dirname(dir)) {
      const st = lstatSync(dir, { throwIfNoEntry: false });
      if (!st) continue;
      if (!st.isDirectory() || !settled(st, now)) return undefined;
      if (lstatSync(path, { throwIfNoEntry: false }) !== undefined) return undefined;
      return { dir, stamp: fullStamp(st)! };
    }
  } catch {
    // EACCES, ENOTDIR: an entry may be there that this process cannot see.
  }
  return undefined;
}

/**
 * One call's lstat and stat results, each path looked up once: the preparation's caches (places,
 * configuration, repository facts) check the same directories (the home directory, the agent dir,
 * the workspace), and a call takes the file system as still while it is judged. `now` is taken
 * before any of them, for `settled`.
 */
export class StampBook {
  readonly now = Date.now();
  /** System calls made. */
  calls = 0;
  private readonly lstats = new Map<string, Stats | undefined>();
  private readonly stats = new Map<string, Stats | undefined>();

  lstat(p: string): Stats | undefined {
    if (this.lstats.has(p)) return this.lstats.get(p);
    this.calls++;
    const st = lstatOrUndefined(p);
    this.lstats.set(p, st);
    return st;
  }

  stat(p: string): Stats | undefined {
    if (this.stats.has(p)) return this.stats.get(p);
    this.calls++;
    const st = statOrUndefined(p);
    this.stats.set(p, st);
    return st;
  }

  /** What this call's lstat of `p` found, if it looked `p` up. */
  seen(p: string): Stats | undefined {
    return this.lstats.get(p);
  }

  /** Whether the directory of an Absence is still as it was, so the path still has no entry. */
  absent(a: Absence): boolean {
    return matches(a.stamp, this.lstat(a.dir), false);
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
  /** The path had no entry: checked through the directory that would hold it (see Absence). */
  readonly absence?: Absence;
}

/**
 * The stamp of `path` now. With `absentSince` (Date.now() before the look-up), a missing path is
 * stamped by its Absence when one can be vouched for.
 */
export function stampOf(
  path: string,
  follow: boolean,
  identity: boolean,
  known?: { st: Stats | undefined },
  absentSince?: number,
): { dep: Dependency; st: Stats | undefined } {
  const st = known ? known.st : follow ? statOrUndefined(path) : lstatOrUndefined(path);
  const absence = st === undefined && absentSince !== undefined ? absenceOf(path, absentSince) : undefined;
  return { dep: { path, follow, identity, stamp: identity ? identityStamp(st) : fullStamp(st), ...(absence ? { absence } : {}) }, st };
}

/** Whether every dependency still has the stamp it had; with a book, its look-ups are shared with the rest of the call. */
export function unchanged(deps: readonly Dependency[], book?: StampBook): boolean {
  for (const d of deps) {
    if (d.absence && book) {
      if (!book.absent(d.absence)) return false;
      continue;
    }
    const st = book ? (d.follow ? book.stat(d.path) : book.lstat(d.path)) : d.follow ? statOrUndefined(d.path) : lstatOrUndefined(d.path);
    if (!matches(d.stamp, st, d.identity)) return false;
  }
  return true;
}
