// Where the effects machinery keeps its durable files, under auto mode's own folder in Pi's agent
// dir (no tool call may write there): the intent journals of applies in progress, the undo store,
// and a lock per workspace so two Pi processes never apply into the same workspace at once.
//
// Every file here is read through readStoreText and written through a temp file created
// exclusively: a FIFO, a socket or a device where one of them belongs must never block this
// process (an open of a FIFO waits for the other end inside a synchronous call, which no timer or
// signal handler can interrupt), and a symlink must never be followed out of the folder.

import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  utimesSync,
  writeSync,
} from "node:fs";
import { hostname } from "node:os";
import lockfile from "proper-lockfile";
import { DIR_FLAGS, notRegular, READ_FLAGS } from "../../state/durable-fs.ts";
import { withLock, type Locked } from "../../state/lock.ts";
import { dirname, join } from "node:path";
import type { EffectStore } from "./store-paths.ts";

export { type EffectStore, effectStore } from "./store-paths.ts";

/** A stable short name for a workspace (its real path). */
export function workspaceKey(workspace: string): string {
  return createHash("sha256").update(workspace).digest("hex").slice(0, 16);
}

export function undoDirOf(store: EffectStore, workspace: string): string {
  return join(store.undoRoot, workspaceKey(workspace));
}

export function lockPathOf(store: EffectStore, workspace: string): string {
  return join(store.lockDir, `${workspaceKey(workspace)}.lock`);
}

export function ensureDir(p: string): void {
  mkdirSync(p, { recursive: true, mode: 0o700 });
}

/**
 * The text of a regular file of the store. Anything else at `path` throws without being opened in
 * a way that could block; so does a file over `maxBytes` (no bound when omitted).
 */
export function readStoreText(path: string, maxBytes = Number.MAX_SAFE_INTEGER): string {
  const before = lstatSync(path);
  if (!before.isFile()) throw new Error(`${path} is ${notRegular(before)}`);
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ELOOP") throw new Error(`${path} is not a regular file (a symbolic link)`);
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${path} is ${notRegular(st)}`);
    if (st.size > maxBytes) throw new Error(`${path} is larger than ${maxBytes} bytes`);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.alloc(Math.max(4096, Math.min(st.size - total + 1, 1 << 20)));
      const got = readSync(fd, buf, 0, buf.length, null);
      if (got === 0) break;
      total += got;
      if (total > maxBytes) throw new Error(`${path} is larger than ${maxBytes} bytes`);
      chunks.push(got === buf.length ? buf : buf.subarray(0, got));
    }
    return Buffer.concat(chunks, total).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Write `text` to a new file at `tmp`, mode 0600. A leftover at that name (a crashed
 * writer's, or anything else) is removed first: opened exclusively and without following a
 * symlink, the write can never land in a FIFO or outside the folder.
 */
function writeNew(tmp: string, text: string, sync: boolean): void {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW;
  let fd: number;
  try {
    fd = openSync(tmp, flags, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    rmSync(tmp, { recursive: true, force: true });
    fd = openSync(tmp, flags, 0o600);
  }
  try {
    const buf = Buffer.from(text, "utf8");
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    if (sync) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Write a file durably: a temp file, fsync, rename, fsync of the folder. */
export function writeDurable(path: string, text: string): void {
  ensureDir(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeNew(tmp, text, true);
  renameSync(tmp, path);
  fsyncDir(dirname(path));
}

export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, DIR_FLAGS);
    fsyncSync(fd);
  } catch {
    // some file systems refuse fsync on a directory; the rename is still atomic
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// The workspace lock. proper-lockfile's lock (src/state/lock.ts) is refreshed by a timer, and a
// lock whose mtime is older than its stale time is taken over. Two things that does not fit here:
// - An apply is one synchronous section that can run longer than the stale time (thousands of
//   files, a copy across file systems); no timer fires meanwhile. So the section beats the lock
//   itself: `beat()` sets its mtime every couple of seconds. (proper-lockfile checks the mtime it
//   set only at its next refresh, which the release right after the section cancels.)
// - A process killed with -9 leaves its lock fresh for up to the stale time, so the start-up repair
//   right after a crash would skip the journal (and then the dead run's staged files are deleted:
//   the apply could never be finished). So the holder also records who it is beside the lock:
//   pid, the process's start time, pid namespace and host, and which lock directory (inode and
//   birth time) it holds. A lock whose recorded holder is dead is broken at once; one whose holder
//   is alive is never taken over, however old its mtime; without a record, the stale time decides.

export const LOCK_STALE_MS = 60_000;
const BEAT_MS = 2_000;

interface LockOwner {
  readonly pid: number;
  readonly start: string;
  readonly pidns: string;
  readonly host: string;
  readonly ino: string;
  readonly birth: string;
}

const ownerPathOf = (lockPath: string) => `${lockPath}.owner`;

function procStart(pid: number): string {
  try {
    // Field 22 of /proc/<pid>/stat, after the parenthesized command name (which may hold spaces).
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    return s.slice(s.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

let myPidns: string | undefined;
function pidNamespace(): string {
  if (myPidns === undefined) {
    try {
      myPidns = readlinkSync("/proc/self/ns/pid");
    } catch {
      myPidns = "";
    }
  }
  return myPidns;
}

function lockDirId(lockPath: string): { ino: string; birth: string } | undefined {
  const st = lstatSync(lockPath, { bigint: true, throwIfNoEntry: false });
  return st?.isDirectory() ? { ino: String(st.ino), birth: String(st.birthtimeNs) } : undefined;
}

function readOwner(lockPath: string): LockOwner | undefined {
  try {
    const o = JSON.parse(readStoreText(ownerPathOf(lockPath), 4096)) as LockOwner;
    return typeof o.pid === "number" ? o : undefined;
  } catch {
    return undefined;
  }
}

/** Say that this process holds the lock directory now at `lockPath`. */
function claimLock(lockPath: string): LockOwner | undefined {
  const id = lockDirId(lockPath);
  if (!id) return undefined;
  const owner: LockOwner = { pid: process.pid, start: procStart(process.pid), pidns: pidNamespace(), host: hostname(), ...id };
  const tmp = `${ownerPathOf(lockPath)}.${process.pid}.tmp`;
  try {
    // Not synced: the record only matters while this process lives.
    writeNew(tmp, JSON.stringify(owner), false);
    renameSync(tmp, ownerPathOf(lockPath));
    return owner;
  } catch {
    rmSync(tmp, { force: true });
    return undefined; // without a record, the stale time decides
  }
}

/** After the release: take the record back if it is still ours (another holder may have written its own). */
function disclaimLock(lockPath: string, mine: LockOwner | undefined): void {
  if (!mine) return;
  const o = readOwner(lockPath);
  if (o && o.pid === mine.pid && o.ino === mine.ino && o.birth === mine.birth) rmSync(ownerPathOf(lockPath), { force: true });
}

export type LockHolder = "none" | "alive" | "dead" | "unknown";

/** Who holds the lock at `lockPath`, as far as the holder's record tells. */
export function lockHolder(lockPath: string): LockHolder {
  const id = lockDirId(lockPath);
  if (!id) return "none";
  const o = readOwner(lockPath);
  // A record of another lock directory (this one was made after it), or of a process this one
  // cannot see: the stale time decides.
  if (!o || o.ino !== id.ino || o.birth !== id.birth || o.host !== hostname() || o.pidns !== pidNamespace()) return "unknown";
  try {
    process.kill(o.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ESRCH") return "dead";
    return "alive";
  }
  // The pid may have been reused by another process since.
  const start = procStart(o.pid);
  return o.start !== "" && start !== "" && start !== o.start ? "dead" : "alive";
}

/**
 * Only a directory is a lock (see src/state/lock.ts): anything else under the lock's name is
 * removed, so it is neither waited out nor mistaken for a holder. Never a directory: rmSync without
 * `recursive` refuses one, so a real lock made meanwhile by another process stays.
 */
function clearNonLock(lockPath: string): void {
  const st = lstatSync(lockPath, { throwIfNoEntry: false });
  if (!st || st.isDirectory()) return;
  try {
    rmSync(lockPath, { force: true });
  } catch {
    // a directory now: someone's lock
  }
}

function breakDeadLock(lockPath: string): void {
  rmSync(ownerPathOf(lockPath), { force: true });
  try {
    rmdirSync(lockPath);
  } catch {
    // taken meanwhile by someone who found it dead too: theirs now
  }
}

/** A function that keeps the lock fresh while a long synchronous section runs. */
function beater(lockPath: string): () => void {
  let last = Date.now();
  return () => {
    const now = Date.now();
    if (now - last < BEAT_MS) return;
    last = now;
    try {
      utimesSync(lockPath, now / 1000, now / 1000);
    } catch {
      // gone: nothing to keep fresh
    }
  };
}

// The sync half of proper-lockfile 4.1.2 (index.js), which src/state/proper-lockfile.d.ts leaves out.
const lockSync = (lockfile as unknown as { lockSync(file: string, options: Record<string, unknown>): () => void }).lockSync;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Whether to try for the lock now: no live holder (a dead one's lock broken, anything else under its name cleared). */
function mayTakeLock(lockPath: string): boolean {
  clearNonLock(lockPath);
  const holder = lockHolder(lockPath);
  if (holder === "dead") breakDeadLock(lockPath);
  return holder !== "alive";
}

/**
 * Run `critical` (synchronous) under the workspace's lock, waiting at most `waitMs` for it.
 * `critical` gets `beat`, to call often during long work.
 */
export async function withWorkspaceLock<T>(store: EffectStore, workspace: string, waitMs: number, critical: (beat: () => void) => T): Promise<Locked<T>> {
  ensureDir(store.lockDir);
  const lockPath = lockPathOf(store, workspace);
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    if (mayTakeLock(lockPath)) {
      let mine: LockOwner | undefined;
      let r: Locked<T>;
      try {
        r = await withLock(lockPath, { staleMs: LOCK_STALE_MS, waitMs: 0 }, () => {
          mine = claimLock(lockPath);
          return critical(beater(lockPath));
        });
      } finally {
        disclaimLock(lockPath, mine);
      }
      if (r.kind !== "busy") return r;
    }
    if (Date.now() >= deadline) return { kind: "busy" };
    await sleep(Math.min(50, 2 * 1.5 ** attempt) * (0.5 + Math.random()));
  }
}

/** The same, for callers that cannot wait asynchronously (undo): a short wait, blocking. */
export function withWorkspaceLockSync<T>(store: EffectStore, workspace: string, waitMs: number, critical: (beat: () => void) => T): Locked<T> {
  ensureDir(store.lockDir);
  const lockPath = lockPathOf(store, workspace);
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    if (mayTakeLock(lockPath)) {
      let release: (() => void) | undefined;
      try {
        release = lockSync(lockPath, { lockfilePath: lockPath, realpath: false, stale: LOCK_STALE_MS, onCompromised: () => {} });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== "ELOCKED") return { kind: "error", message: `cannot take the workspace lock ${lockPath}: ${code ?? (e as Error).message}` };
      }
      if (release) {
        let mine: LockOwner | undefined;
        try {
          mine = claimLock(lockPath);
          return { kind: "held", value: critical(beater(lockPath)) };
        } finally {
          try {
            release();
          } catch {
            // released already (compromised)
          }
          disclaimLock(lockPath, mine);
        }
      }
    }
    if (Date.now() >= deadline) return { kind: "busy" };
    sleepSync(Math.min(50, 2 * 1.5 ** attempt) * (0.5 + Math.random()));
  }
}
