// Bounded concurrency for reviews (P13). Pi prepares every call of a batch before running any,
// codemode scripts can issue calls in parallel, and several sessions can share one process: a
// slot limit keeps a burst from becoming a burst of model calls, and a queue limit keeps the
// waiting bounded too. Waiting counts against the review's deadline (the caller passes it).

export interface Limiter {
  /** A release function, or why no slot was given. */
  acquire(signal: AbortSignal, timeoutMs: number): Promise<(() => void) | "busy" | "aborted" | "timeout">;
  readonly active: number;
  readonly queued: number;
}

export function createLimiter(maxActive: number, maxQueued: number): Limiter {
  let active = 0;
  const queue: Array<() => void> = [];
  const release = () => {
    active--;
    const next = queue.shift();
    if (next) next();
  };
  const grant = (): (() => void) => {
    active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
    };
  };
  return {
    get active() {
      return active;
    },
    get queued() {
      return queue.length;
    },
    acquire(signal, timeoutMs) {
      if (signal.aborted) return Promise.resolve("aborted");
      if (active < maxActive) return Promise.resolve(grant());
      if (queue.length >= maxQueued) return Promise.resolve("busy");
      return new Promise((resolve) => {
        const wake = () => {
          cleanup();
          resolve(grant());
        };
        const leave = (why: "aborted" | "timeout") => {
          cleanup();
          const i = queue.indexOf(wake);
          if (i >= 0) queue.splice(i, 1);
          resolve(why);
        };
        const onAbort = () => leave("aborted");
        const timer = setTimeout(() => leave("timeout"), Math.max(0, timeoutMs));
        const cleanup = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        queue.push(wake);
      });
    },
  };
}

const PROCESS_KEY = Symbol.for("pi-auto-mode:review-limiter");

/** One limiter for every runtime of this process: the bound is on what the machine sends. */
export function processLimiter(): Limiter {
  const g = globalThis as { [PROCESS_KEY]?: Limiter };
  g[PROCESS_KEY] ??= createLimiter(4, 16);
  return g[PROCESS_KEY];
}
