// The part of proper-lockfile 4.1.2 used here: by src/sandbox/effects, tests and benches (src/state/lock.ts
// speaks its protocol without it). The package ships no types and @types/proper-lockfile is not a
// dependency; these signatures follow its index.js.

declare module "proper-lockfile" {
  interface LockOptions {
    /** Milliseconds after which an unrefreshed lock is taken over (the package enforces >= 2000). */
    stale?: number;
    /** How often the holder refreshes the lock's mtime (default stale / 2, at least 1000). */
    update?: number;
    /** Resolve the locked file with realpath (it must exist then). */
    realpath?: boolean;
    retries?: number;
    /** Where the lock directory goes (default `${file}.lock`). */
    lockfilePath?: string;
    /** Called when the lock was lost; the default throws from a timer. */
    onCompromised?: (err: Error) => void;
  }
  interface ProperLockfile {
    lock(file: string, options?: LockOptions): Promise<() => Promise<void>>;
  }
  const lockfile: ProperLockfile;
  export default lockfile;
}
