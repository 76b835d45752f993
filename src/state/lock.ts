// The cross-process lock around durable state: proper-lockfile (the lock Pi itself uses), a
// directory created with mkdir, refreshed while held and taken over once it is older than its
// stale time, so a writer killed with -9 blocks the others for at most that long.
//
// The critical section is a synchronous function: while it runs, this process cannot call a
// model, spawn a process or wait for UI, so the lock is never held across any of those.

import lockfile from "proper-lockfile";

export interface LockTiming {
  /** A lock whose holder stopped refreshing it for this long is taken over (proper-lockfile's floor is 2000). */
  readonly staleMs: number;
  /** How long to wait for the lock before giving up; more than staleMs so a dead holder is outwaited. */
  readonly waitMs: number;
}

export const DEFAULT_LOCK_TIMING: LockTiming = { staleMs: 10_000, waitMs: 15_000 };

export type Locked<T> =
  | { readonly kind: "held"; readonly value: T }
  /** Another holder kept the lock for the whole wait. */
  | { readonly kind: "busy" }
  | { readonly kind: "error"; readonly message: string };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Run `critical` while holding the lock directory `lockPath`. `critical` gets `stillHeld()` to
 * ask right before each publish: proper-lockfile reports a lock lost to staleness asynchronously,
 * and a writer that lost it must not publish.
 */
export async function withLock<T>(lockPath: string, timing: LockTiming, critical: (stillHeld: () => boolean) => T): Promise<Locked<T>> {
  const deadline = Date.now() + timing.waitMs;
  let compromised = false;
  let release: () => Promise<void>;
  for (let attempt = 0; ; attempt++) {
    try {
      release = await lockfile.lock(lockPath, {
        lockfilePath: lockPath,
        realpath: false,
        stale: timing.staleMs,
        retries: 0,
        // The package's default throws from a timer, which would take the whole Pi process down.
        onCompromised: () => {
          compromised = true;
        },
      });
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ELOCKED") return { kind: "error", message: `cannot take the state lock ${lockPath}: ${code ?? (e as Error).message}` };
      if (Date.now() >= deadline) return { kind: "busy" };
      // Short, growing, jittered waits: commits take milliseconds, so most waits end at once.
      const base = Math.min(50, 2 * 1.5 ** attempt);
      await sleep(Math.min(base * (0.5 + Math.random()), Math.max(1, deadline - Date.now())));
    }
  }
  try {
    const value = critical(() => !compromised);
    if (value instanceof Promise) throw new Error("a critical section under the state lock must be synchronous");
    return { kind: "held", value };
  } finally {
    await release().catch(() => {
      // Already released because it was compromised; the next holder owns the directory now.
    });
  }
}
