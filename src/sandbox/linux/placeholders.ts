// Placeholders for protected paths that do not exist yet. A bind mount needs a mount point, so
// for a missing `.codex` (or `.pi`, `AGENTS.md`, ...) we create an empty directory and bind it
// read-only: inside the sandbox the name then exists and cannot be replaced. Directories rather
// than files, because git does not list empty directories, so `git status` (inside or outside
// the sandbox) does not show them.
//
// Removing a placeholder is the delicate part: since Linux 3.18, unlinking a path that is a mount
// point in another mount namespace detaches that mount there. If one command removed the
// placeholder while another sandbox still relied on it, the second sandbox could create the
// protected path after all. So placeholders are reference counted: per lease inside this process,
// and across processes through one holder record per process in a registry shared by every
// process of the user. A placeholder is removed only when no lease anywhere holds it.
//
// Creating and removing dozens of directories per command is not free (on an ext4 mounted with
// `discard`, each rmdir measured ~2 ms), and agents run commands in bursts, so placeholders
// linger a few seconds after the last lease lets go; removal renames them aside under the
// registry lock and deletes them off the event loop.

import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";

export interface Owner {
  readonly pid: number;
  /** The process start time (clock ticks since boot), so a reused pid is not mistaken for us. */
  readonly start: string;
}

export interface Hold {
  /** Placeholders this lease relies on (created by us or shared with other holders). */
  readonly placeholders: readonly string[];
  /** Missing paths that turned out to exist by the time we looked: ordinary read-only entries. */
  readonly existing: readonly string[];
  /** Missing paths nobody can create here (read-only file system, no permission): nothing to hold. */
  readonly uncreatable: readonly string[];
}

export interface PlaceholderPool {
  acquire(missing: readonly string[]): Hold;
  /** Give back a lease's placeholders; they go once no lease holds them and the linger is over. */
  release(hold: Hold): void;
  /** Remove every placeholder no lease holds, now. Throws when cleanup fails. */
  flush(): void;
  /** Placeholders this process currently keeps (held or lingering). */
  kept(): readonly string[];
}

interface HolderRecord {
  readonly pid: number;
  readonly start: string;
  readonly placeholders: readonly string[];
}

const LOCK_STALE_MS = 5_000;
const LOCK_WAIT_MS = 6_000;
const PLACEHOLDER_MODE = 0o555;
export const DEFAULT_LINGER_MS = 5_000;
const TRASH_PREFIX = ".pi-auto-mode-trash-";

export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 22 (starttime); the command name in field 2 may hold spaces and parentheses.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

export function selfOwner(): Owner {
  return { pid: process.pid, start: processStart(process.pid) ?? "0" };
}

function alive(pid: number, start: string): boolean {
  const now = processStart(pid);
  if (now !== undefined) return now === start;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A cross-process mutex: mkdir is atomic. Everything done under it is synchronous and short. */
function withLock<T>(registry: string, fn: () => T): T {
  const lock = join(registry, "lock");
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(lock, { mode: 0o700 });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const st = statSync(lock, { throwIfNoEntry: false });
      // A holder that crashed inside the critical section leaves the lock behind.
      if (st && Date.now() - st.mtimeMs > LOCK_STALE_MS) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`the placeholder registry ${registry} stayed locked for ${LOCK_WAIT_MS} ms`);
      sleepSync(2);
    }
  }
  try {
    return fn();
  } finally {
    rmdirSync(lock);
  }
}

interface Others {
  /** Placeholders that other live processes hold. */
  readonly held: Set<string>;
  /** Placeholders named by processes that are gone. */
  readonly orphaned: Set<string>;
  /** A live holder whose record cannot be read: it may rely on anything, so nothing is removed. */
  readonly unknownLive: boolean;
}

function readOthers(registry: string, ownFile: string): Others {
  const held = new Set<string>();
  const orphaned = new Set<string>();
  let unknownLive = false;
  for (const name of readdirSync(registry)) {
    if (!name.endsWith(".json")) continue;
    const file = join(registry, name);
    if (file === ownFile) continue;
    const [pidText, startText] = name.slice(0, -".json".length).split("-");
    const pid = Number(pidText);
    let record: HolderRecord | undefined;
    try {
      record = JSON.parse(readFileSync(file, "utf8")) as HolderRecord;
    } catch {
      record = undefined;
    }
    const live = Number.isInteger(pid) && startText !== undefined && alive(pid, startText);
    if (!record || !Array.isArray(record.placeholders)) {
      if (live) unknownLive = true;
      else unlinkSync(file);
      continue;
    }
    if (live) for (const p of record.placeholders) held.add(p);
    else {
      for (const p of record.placeholders) orphaned.add(p);
      unlinkSync(file);
    }
  }
  return { held, orphaned, unknownLive };
}

function isEmptyDir(p: string): boolean {
  const st = lstatSync(p, { throwIfNoEntry: false });
  if (!st?.isDirectory()) return false;
  try {
    return readdirSync(p).length === 0;
  } catch {
    return false;
  }
}

let trashSeq = 0;

/**
 * Take a placeholder out of the way: rename it aside (cheap, atomic, under the lock) and return
 * the new name for deletion later. Undefined when there is nothing of ours to remove.
 */
function setAside(p: string): string | undefined {
  // Someone put content in it: it is not a placeholder any more, it is theirs.
  if (!isEmptyDir(p)) return undefined;
  const trash = join(dirname(p), `${TRASH_PREFIX}${process.pid}-${++trashSeq}-${basename(p)}`);
  try {
    renameSync(p, trash);
    return trash;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

function removeTrash(trash: string, original: string, sync: boolean): void {
  const putBack = () => {
    // Content arrived between the check and the rename: give it its name back if it is free.
    try {
      if (!lstatSync(original, { throwIfNoEntry: false })) renameSync(trash, original);
    } catch {
      // left under the trash name; nothing is lost
    }
  };
  if (sync) {
    try {
      rmdirSync(trash);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOTEMPTY") putBack();
    }
    return;
  }
  rmdir(trash).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOTEMPTY") putBack();
  });
}

export function ensureRegistry(registry: string): void {
  mkdirSync(registry, { recursive: true, mode: 0o700 });
}

export function createPlaceholderPool(registry: string, opts: { readonly lingerMs?: number; readonly owner?: Owner } = {}): PlaceholderPool {
  const owner = opts.owner ?? selfOwner();
  const lingerMs = opts.lingerMs ?? DEFAULT_LINGER_MS;
  // One record per pool: a process may hold several (Pi loads a module copy per session).
  const ownFile = join(registry, `${owner.pid}-${owner.start}-${randomBytes(4).toString("hex")}.json`);
  /** Placeholders in our holder record, with how many leases of ours hold each. */
  const refs = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  const writeRecord = () => {
    if (refs.size === 0) {
      try {
        unlinkSync(ownFile);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
      return;
    }
    const record: HolderRecord = { pid: owner.pid, start: owner.start, placeholders: [...refs.keys()] };
    writeFileSync(ownFile, JSON.stringify(record), { mode: 0o600 });
  };

  /** Remove what nobody holds; `sync` at exit, when nothing may be left for later. */
  const sweep = (sync: boolean) => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const idle = [...refs].filter(([, n]) => n === 0).map(([p]) => p);
    if (idle.length === 0) return;
    ensureRegistry(registry);
    const trash: Array<[string, string]> = [];
    withLock(registry, () => {
      const others = readOthers(registry, ownFile);
      for (const p of idle) {
        refs.delete(p);
        if (others.unknownLive || others.held.has(p)) continue;
        const t = setAside(p);
        if (t) trash.push([t, p]);
      }
      writeRecord();
    });
    for (const [t, p] of trash) removeTrash(t, p, sync);
  };

  return {
    acquire(missing) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      const placeholders: string[] = [];
      const existing: string[] = [];
      const uncreatable: string[] = [];
      const fresh: string[] = [];
      for (const p of missing) {
        // Ours already (held or lingering), and still there: one more lease, no file system work.
        if (refs.has(p) && lstatSync(p, { throwIfNoEntry: false })?.isDirectory()) placeholders.push(p);
        else {
          refs.delete(p);
          fresh.push(p);
        }
      }
      if (fresh.length > 0) {
        ensureRegistry(registry);
        const trash: Array<[string, string]> = [];
        withLock(registry, () => {
          const others = readOthers(registry, ownFile);
          const known = new Set([...others.held, ...others.orphaned]);
          for (const p of fresh) {
            const st = lstatSync(p, { throwIfNoEntry: false });
            if (st) {
              if (known.has(p) && st.isDirectory()) {
                refs.set(p, 0);
                placeholders.push(p);
              } else existing.push(p);
              continue;
            }
            try {
              mkdirSync(p, { mode: PLACEHOLDER_MODE });
              refs.set(p, 0);
              placeholders.push(p);
            } catch (e) {
              const code = (e as NodeJS.ErrnoException).code;
              if (code === "EEXIST") existing.push(p);
              // Nobody can create the path here, the sandboxed command included (it runs as us,
              // with fewer rights): no placeholder is needed.
              else if (code === "EROFS" || code === "EACCES" || code === "EPERM") uncreatable.push(p);
              else throw e;
            }
          }
          // Placeholders left behind by processes that died, and wanted by nobody now.
          if (!others.unknownLive)
            for (const p of others.orphaned)
              if (!others.held.has(p) && !refs.has(p)) {
                const t = setAside(p);
                if (t) trash.push([t, p]);
              }
          writeRecord();
        });
        for (const [t, p] of trash) removeTrash(t, p, false);
      }
      for (const p of placeholders) refs.set(p, (refs.get(p) ?? 0) + 1);
      return { placeholders, existing, uncreatable };
    },
    release(hold) {
      for (const p of hold.placeholders) {
        const n = refs.get(p);
        if (n !== undefined && n > 0) refs.set(p, n - 1);
      }
      if ([...refs.values()].some((n) => n > 0)) return;
      if (lingerMs <= 0) sweep(false);
      else if (!timer) {
        timer = setTimeout(() => {
          try {
            sweep(false);
          } catch {
            // Retried at the next sweep; flush (drain, exit) reports it.
          }
        }, lingerMs);
        timer.unref();
      }
    },
    flush: () => sweep(true),
    kept: () => [...refs.keys()],
  };
}
