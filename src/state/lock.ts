// The cross-process lock around durable state: a directory created with mkdir (the protocol of
// proper-lockfile, which Pi itself uses and older copies of this extension use, so they exclude
// each other), taken over once its mtime is older than its stale time, so a writer killed with -9
// blocks the others for at most that long.
//
// The critical section is a synchronous function, run in the same synchronous turn as the mkdir
// that takes the lock and the rmdir that releases it: while the lock is held this process cannot
// call a model, spawn a process, wait for UI, or even wait for its own event loop, so the lock is
// held exactly as long as the section's own work.
//
// Waiters line up. Polling alone is unfair: under contention whoever happens to poll right after a
// release wins, and a waiter can lose round after round (8 processes committing back to back gave
// a p99 of over a second). So a waiter that finds the lock held leaves a ticket beside it, a
// dot-file named after the time it started waiting, and only the oldest live ticket tries the lock
// (every millisecond); the others look every few milliseconds whether they are first yet. A
// newcomer that sees tickets lines up behind them instead of trying first. Tickets only order who
// tries: the mkdir alone decides who holds the lock, so a ticket that is wrong, lost or left by a
// dead process can cost time, never exclusion. A ticket is dead when its process is gone or when
// it was not refreshed for the stale time (a waiter touches its ticket while it waits); the first
// waiter behind a dead ticket removes it.
//
// Taking over a stale lock renames it aside first, and only removes what it moved if that is still
// the very directory it found stale (same inode, birth and mtime); otherwise another waiter took it
// over meanwhile and the move is undone. A holder asks `stillHeld()` before each publish: the lock
// directory must still be the one it created (and it is kept fresh if the section runs long).
//
// Only a directory is a lock: every holder of this protocol makes one with mkdir. Anything else
// under the lock's name (a file, a FIFO, a socket, a symlink, even one to a directory) was put there
// by something else, so it is taken over at once instead of being waited out as a held lock.
// Everything here looks at the entry itself (lstat), never through a symlink.

import { lstatSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, unlinkSync, utimesSync, writeFileSync, type BigIntStats } from "node:fs";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";

export interface LockTiming {
  /** A lock whose holder stopped refreshing it for this long is taken over (at least 2000, proper-lockfile's floor). */
  readonly staleMs: number;
  /** How long to wait for the lock before giving up; more than staleMs so a dead holder is outwaited. 0: one attempt. */
  readonly waitMs: number;
}

export const DEFAULT_LOCK_TIMING: LockTiming = { staleMs: 10_000, waitMs: 15_000 };

export type Locked<T> =
  | { readonly kind: "held"; readonly value: T }
  /** Another holder kept the lock for the whole wait. */
  | { readonly kind: "busy" }
  | { readonly kind: "error"; readonly message: string };

/** How often the first waiter tries the lock, and how often the others look whether they are first. */
export const HEAD_POLL_MS = 1;
export const QUEUE_POLL_MS = 4;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// A process that exits inside a critical section (process.exit) removes the locks it holds, as
// proper-lockfile does; one killed outright leaves them to go stale.
const held = new Map<string, DirId>();
let exitHook = false;
function hold(lockPath: string, id: DirId): void {
  held.set(lockPath, id);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const [p, id] of held) release(p, id);
  });
}

/** Remove the lock directory if it is still the one this holder made: after a takeover it is someone else's. */
function release(lockPath: string, mine: DirId | undefined): void {
  const now = statQuiet(lockPath);
  if (!mine || !now || !sameId(idOf(now), mine)) return;
  try {
    rmdirSync(lockPath);
  } catch {
    // removed meanwhile by a takeover; the next holder owns the name now
  }
}

/** Which directory this is: mtime and ctime change when a holder refreshes it, these never do. */
interface DirId {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly birth: bigint;
}

const idOf = (st: BigIntStats): DirId => ({ dev: st.dev, ino: st.ino, birth: st.birthtimeNs });
const sameId = (a: DirId, b: DirId) => a.dev === b.dev && a.ino === b.ino && a.birth === b.birth;

function statQuiet(path: string): BigIntStats | undefined {
  try {
    return lstatSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

const ticketPrefix = (lockPath: string) => `.${basename(lockPath)}.wait.`;

/** Tickets sort by name: the microsecond the wait began, then pid and a random tie-breaker. */
function ticketName(lockPath: string): string {
  const us = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
  return `${ticketPrefix(lockPath)}${us.toString().padStart(17, "0")}.${process.pid}.${randomBytes(4).toString("hex")}`;
}

function pidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: alive, someone else's.
    return (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Whether a live ticket comes before `mine` (or any, without one). Dead tickets found on the way are removed. */
function someoneAhead(dir: string, lockPath: string, mine: string | undefined, staleMs: number): boolean {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return false;
  }
  const prefix = ticketPrefix(lockPath);
  const ahead = names.filter((n) => n.startsWith(prefix) && (mine === undefined || n < mine)).sort();
  for (const name of ahead) {
    const pid = Number(name.slice(prefix.length).split(".")[1]);
    const path = join(dir, name);
    const st = statQuiet(path);
    if (!st) continue; // gone meanwhile
    const fresh = Number(st.mtimeMs) >= Date.now() - staleMs;
    if (fresh && pidAlive(pid)) return true;
    try {
      unlinkSync(path);
    } catch {
      // removed by another waiter already
    }
  }
  return false;
}

type Attempt<T> =
  | { readonly kind: "held"; readonly value: T }
  | { readonly kind: "locked" }
  | { readonly kind: "again" }
  | { readonly kind: "error"; readonly message: string };

/**
 * Take a lock found stale: rename it aside, and remove it only if it is still the directory judged
 * stale. Returns whether the caller should try mkdir again right away.
 */
function takeOver(lockPath: string, found: BigIntStats): boolean {
  const aside = join(dirname(lockPath), `.${basename(lockPath)}.stale.${process.pid}.${randomBytes(4).toString("hex")}`);
  try {
    renameSync(lockPath, aside);
  } catch {
    return true; // gone already (released or taken over): try again
  }
  const moved = statQuiet(aside);
  if (moved && sameId(idOf(moved), idOf(found)) && moved.mtimeNs === found.mtimeNs) {
    rmSync(aside, { recursive: true, force: true });
    return true;
  }
  // Not the lock judged stale (another waiter took that over and holds this one, or its holder just
  // refreshed it): put it back unless someone made a new lock meanwhile. A holder whose directory
  // is not back checks that before it publishes, and gives up.
  if (statQuiet(lockPath) === undefined) {
    try {
      renameSync(aside, lockPath);
      return false;
    } catch {
      // fall through: removed below
    }
  }
  rmSync(aside, { recursive: true, force: true });
  return false;
}

/**
 * Run `critical` while holding the lock directory `lockPath`. `critical` gets `stillHeld()` to
 * ask right before each publish: a holder whose lock was taken over (it ran past the stale time)
 * must not publish.
 */
export async function withLock<T>(lockPath: string, timing: LockTiming, critical: (stillHeld: () => boolean) => T): Promise<Locked<T>> {
  const staleMs = Math.max(2000, timing.staleMs);
  const dir = dirname(lockPath);
  const deadline = Date.now() + Math.max(0, timing.waitMs);
  let ticket: string | undefined;
  let touched = 0;

  const attempt = (): Attempt<T> => {
    for (let tries = 0; tries < 3; tries++) {
      try {
        mkdirSync(lockPath);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== "EEXIST") return { kind: "error", message: `cannot take the state lock ${lockPath}: ${code ?? (e as Error).message}` };
        const found = statQuiet(lockPath);
        if (found === undefined) continue; // released between the mkdir and the stat
        if (found.isDirectory() && Number(found.mtimeMs) >= Date.now() - staleMs) return { kind: "locked" };
        if (!takeOver(lockPath, found)) return { kind: "locked" };
        continue;
      }
      return { kind: "held", value: holding() };
    }
    return { kind: "again" };
  };

  // Runs right after the mkdir succeeded, in the same synchronous turn, and releases before returning.
  const holding = (): T => {
    const st = statQuiet(lockPath);
    const mine = st && idOf(st);
    let fresh = Date.now();
    if (ticket !== undefined) {
      removeTicket(dir, ticket);
      ticket = undefined;
    }
    if (mine) hold(lockPath, mine);
    const stillHeld = (): boolean => {
      const now = statQuiet(lockPath);
      if (!mine || !now || !sameId(idOf(now), mine)) return false;
      // A long section keeps its lock from looking stale.
      if (Date.now() - fresh > staleMs / 4) {
        try {
          const t = Date.now() / 1000;
          utimesSync(lockPath, t, t);
          fresh = Date.now();
        } catch {
          return false;
        }
      }
      return true;
    };
    try {
      const value = critical(stillHeld);
      if (value instanceof Promise) {
        value.catch(() => {});
        throw new Error("a critical section under the state lock must be synchronous");
      }
      return value;
    } finally {
      held.delete(lockPath);
      release(lockPath, mine);
    }
  };

  try {
    for (;;) {
      const ahead = someoneAhead(dir, lockPath, ticket, staleMs);
      if (!ahead) {
        const r = attempt();
        if (r.kind === "held" || r.kind === "error") return r;
      }
      if (Date.now() >= deadline) return { kind: "busy" };
      if (ticket === undefined) {
        ticket = ticketName(lockPath);
        if (!writeTicket(dir, ticket)) ticket = undefined; // without a ticket this waiter just polls
        touched = Date.now();
      } else if (Date.now() - touched > staleMs / 4) {
        // Still waiting: keep the ticket fresh (or put it back if a waiter took it for dead).
        if (!touchTicket(dir, ticket)) writeTicket(dir, ticket);
        touched = Date.now();
      }
      await sleep(Math.min(ahead ? QUEUE_POLL_MS : HEAD_POLL_MS, Math.max(1, deadline - Date.now())));
    }
  } finally {
    if (ticket !== undefined) removeTicket(dir, ticket);
  }
}

function writeTicket(dir: string, name: string): boolean {
  try {
    writeFileSync(join(dir, name), "", { flag: "wx", mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

function touchTicket(dir: string, name: string): boolean {
  try {
    const t = Date.now() / 1000;
    utimesSync(join(dir, name), t, t);
    return true;
  } catch {
    return false;
  }
}

function removeTicket(dir: string, name: string): void {
  try {
    unlinkSync(join(dir, name));
  } catch {
    // taken for dead and removed by another waiter
  }
}
