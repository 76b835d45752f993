// The file operations durable state uses, behind a narrow interface so tests can record their
// order and inject failures at any step. Everything is synchronous on purpose: a commit's
// critical section is one synchronous run, so nothing else (a model call, a spawn, a UI dialog)
// can run in this process while the lock is held.

import * as fs from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { TEMP_SUFFIX, type ArtifactRead } from "./artifacts.ts";

/** The parts of a stat that change whenever a file is replaced or rewritten. */
export interface FileKey {
  readonly ino: number;
  /** The type bits too: a FIFO or a symlink swapped in for the file is a change even on a reused inode. */
  readonly mode: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

export type StatResult = { readonly kind: "absent" } | { readonly kind: "file"; readonly key: FileKey } | { readonly kind: "error"; readonly message: string };

export interface DurableFs {
  /** The entry at `path` itself (a symlink is not followed). */
  stat(path: string): StatResult;
  /**
   * Read a whole regular file through one descriptor, with the key of exactly what was read.
   * Anything else at `path` (a FIFO, socket, device, directory, symlink) is unreadable, never opened
   * in a way that could block.
   */
  readFile(path: string, maxBytes: number): { read: ArtifactRead; key: StatResult };
  mkdirp(path: string, mode: number): void;
  readdir(path: string): string[];
  /** Create a new file exclusively (O_CREAT|O_EXCL) with `mode`. */
  openNew(path: string, mode: number): number;
  /** Open a directory for fsync. */
  openDir(path: string): number;
  write(fd: number, data: string): void;
  /** Set atime and mtime, in seconds since the epoch. */
  futimes(fd: number, seconds: number): void;
  fsync(fd: number): void;
  close(fd: number): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
}

const keyOf = (st: fs.Stats): FileKey => ({ ino: st.ino, mode: st.mode, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });

// Windows has neither flag (and no FIFOs that open(2) would block on); 0 leaves them out there.
const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = fs.constants.O_NONBLOCK ?? 0;
const O_DIRECTORY = fs.constants.O_DIRECTORY ?? 0;
/**
 * How every state file is opened for reading: a symlink is refused by the kernel (ELOOP), and a
 * FIFO swapped in after the type check still cannot block the open (without O_NONBLOCK an open
 * of a FIFO waits for a writer, in a synchronous call no signal handler or timer can interrupt).
 */
export const READ_FLAGS = fs.constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
/** A directory opened for fsync: anything else there fails instead of blocking. */
export const DIR_FLAGS = fs.constants.O_RDONLY | O_DIRECTORY | O_NONBLOCK;

/** What a non-regular entry is, for the fault's message. */
export function typeName(st: fs.Stats | fs.BigIntStats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isDirectory()) return "a directory";
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "of an unknown type";
}

export const notRegular = (st: fs.Stats | fs.BigIntStats): string => `not a regular file (${typeName(st)})`;

export const nodeDurableFs: DurableFs = {
  stat(path) {
    try {
      const st = fs.lstatSync(path, { throwIfNoEntry: false });
      return st === undefined ? { kind: "absent" } : { kind: "file", key: keyOf(st) };
    } catch (e) {
      return { kind: "error", message: (e as NodeJS.ErrnoException).code ?? (e as Error).message };
    }
  },
  readFile(path, maxBytes) {
    const unreadable = (message: string, key: StatResult) => ({ read: { kind: "unreadable" as const, message }, key });
    // The type is checked before the open, so nothing but a regular file is ever opened; the
    // flags and the fstat below cover an entry swapped in between.
    let before: fs.Stats | undefined;
    try {
      before = fs.lstatSync(path, { throwIfNoEntry: false });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      return unreadable(code, { kind: "error", message: code });
    }
    if (before === undefined) return { read: { kind: "absent" }, key: { kind: "absent" } };
    if (!before.isFile()) return unreadable(notRegular(before), { kind: "file", key: keyOf(before) });
    let fd: number;
    try {
      fd = fs.openSync(path, READ_FLAGS);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { read: { kind: "absent" }, key: { kind: "absent" } };
      const message = code === "ELOOP" ? "not a regular file (a symbolic link)" : (code ?? (e as Error).message);
      return unreadable(message, { kind: "error", message: code ?? "" });
    }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) return unreadable(notRegular(st), { kind: "file", key: keyOf(st) });
      // One byte more than allowed, so an oversized file is seen as oversized rather than cut.
      const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
      let n = 0;
      while (n < buf.length) {
        const got = fs.readSync(fd, buf, n, buf.length - n, n);
        if (got === 0) break;
        n += got;
      }
      return { read: { kind: "text", text: buf.toString("utf8", 0, n) }, key: { kind: "file", key: keyOf(st) } };
    } catch (e) {
      return unreadable((e as NodeJS.ErrnoException).code ?? (e as Error).message, { kind: "error", message: "read" });
    } finally {
      fs.closeSync(fd);
    }
  },
  mkdirp(path, mode) {
    fs.mkdirSync(path, { recursive: true, mode });
  },
  readdir: (path) => fs.readdirSync(path),
  openNew: (path, mode) => fs.openSync(path, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | O_NOFOLLOW, mode),
  openDir: (path) => fs.openSync(path, DIR_FLAGS),
  write(fd, data) {
    const buf = Buffer.from(data, "utf8");
    let off = 0;
    while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off);
  },
  futimes: (fd, seconds) => fs.futimesSync(fd, seconds, seconds),
  fsync: (fd) => fs.fsyncSync(fd),
  close: (fd) => fs.closeSync(fd),
  rename: (from, to) => fs.renameSync(from, to),
  unlink: (path) => fs.unlinkSync(path),
};

export function sameKey(a: StatResult, b: StatResult): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "absent") return true;
  // An error is never "unchanged": it is looked at again every time.
  if (a.kind === "error" || b.kind === "error") return false;
  const x = a.key;
  const y = (b as { key: FileKey }).key;
  return x.ino === y.ino && x.mode === y.mode && x.size === y.size && x.mtimeMs === y.mtimeMs && x.ctimeMs === y.ctimeMs;
}

/** Which step of publishing one artifact failed, for messages and tests. */
export type PublishStep = "create" | "write" | "sync" | "rename";

export class PublishError extends Error {
  readonly step: PublishStep;
  readonly file: string;
  constructor(step: PublishStep, file: string, cause: unknown) {
    super(`could not ${step === "create" ? "create a temporary file for" : step} ${file}: ${(cause as Error).message ?? String(cause)}`);
    this.step = step;
    this.file = file;
  }
}

export function tempName(file: string): string {
  return `.${file}.${process.pid}.${randomBytes(6).toString("hex")}${TEMP_SUFFIX}`;
}

/**
 * Replace `dir/file` with `text`, atomically and durably: a mode-0600 temp file in the same
 * directory, written, stamped, synced, then renamed over the target, then a best-effort sync of
 * the directory so the rename itself survives a crash. `stamp` (the revision) becomes the file's
 * mtime, so two different revisions never share a stat key even within one clock tick.
 * `stillHeld` is asked right before the rename: a lock lost to staleness must not publish.
 * `thenSyncDir: false` leaves the directory sync to the caller (who does it after releasing the lock).
 */
export function publishFile(fsx: DurableFs, dir: string, file: string, text: string, stamp: number, stillHeld: () => boolean, thenSyncDir = true): void {
  const tmp = join(dir, tempName(file));
  let fd: number;
  try {
    fd = fsx.openNew(tmp, 0o600);
  } catch (e) {
    throw new PublishError("create", file, e);
  }
  let step: PublishStep = "write";
  try {
    try {
      fsx.write(fd, text);
      fsx.futimes(fd, stamp);
      step = "sync";
      fsx.fsync(fd);
    } finally {
      fsx.close(fd);
    }
    step = "rename";
    if (!stillHeld()) throw new Error("the state lock was lost (held past its stale time)");
    fsx.rename(tmp, join(dir, file));
  } catch (e) {
    removeQuietly(fsx, tmp);
    throw new PublishError(step, file, e);
  }
  if (thenSyncDir) syncDir(fsx, dir);
}

/** Best effort: some platforms and file systems cannot fsync a directory; the rename still happened. */
export function syncDir(fsx: DurableFs, dir: string): void {
  let fd: number | undefined;
  try {
    fd = fsx.openDir(dir);
    fsx.fsync(fd);
  } catch {
    // ignored on purpose, see above
  } finally {
    if (fd !== undefined) {
      try {
        fsx.close(fd);
      } catch {
        // nothing left to do
      }
    }
  }
}

export function removeQuietly(fsx: DurableFs, path: string): void {
  try {
    fsx.unlink(path);
  } catch {
    // already gone, or not ours to remove; a later commit sweeps it
  }
}

/**
 * Remove temp files that crashed writers left behind: in the state dir every dot-file temp, in a
 * shared dir (the anchor's) only those that start with `prefix`. Only ever called with the lock held.
 */
export function sweepTemps(fsx: DurableFs, dir: string, prefix = "."): string[] {
  let names: string[];
  try {
    names = fsx.readdir(dir);
  } catch {
    return [];
  }
  const temps = names.filter((n) => n.startsWith(prefix) && n.endsWith(TEMP_SUFFIX));
  for (const t of temps) removeQuietly(fsx, join(dir, t));
  return temps;
}
