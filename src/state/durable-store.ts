// Durable global state (P12): one private state dir under Pi's agent dir holding three
// artifacts, and the revision anchor beside it (see artifacts.ts), written atomically under a
// cross-process lock, re-read at every gate by a stat of each (a parse only when one changed),
// classified as Missing, Ok or Fault. Revisions only grow: a commit writes above the watermark, a
// repair above every surviving valid watermark, config revision or anchor and above what this
// process has already seen.

import { join } from "node:path";
import {
  ARTIFACT_FILES,
  classify,
  LOCK_NAME,
  PUBLISH_ORDER,
  serializeAnchor,
  serializeConfig,
  serializeWatermark,
  type ArtifactName,
  type ArtifactRead,
  type Classification,
} from "./artifacts.ts";
import { nodeDurableFs, publishFile, sameKey, sweepTemps, syncDir, type DurableFs, type StatResult } from "./durable-fs.ts";
import { ANCHOR_FILE, STATE_DIR_NAME } from "./locations.ts";
import { DEFAULT_LOCK_TIMING, withLock, type LockTiming } from "./lock.ts";
import {
  applyChange,
  DEFAULT_SNAPSHOT,
  type CommitResult,
  type FaultPolicy,
  type GlobalChange,
  type GlobalRead,
  type GlobalSnapshot,
  type GlobalStateStore,
  type StateFault,
} from "./snapshot.ts";

export interface DurableStoreOptions {
  readonly agentDir: string;
  /** Instrumented in tests; node:fs otherwise. */
  readonly fs?: DurableFs;
  readonly lock?: Partial<LockTiming>;
}

export interface DurableGlobalState extends GlobalStateStore {
  /** The state dir. */
  readonly dir: string;
  /** The synchronous part of `read()`: stat, and parse only when something changed. No lock. */
  check(): GlobalRead;
}

const MAX_ARTIFACT_BYTES = 4096;

type Stored = ArtifactName | "anchor";
type Keys = Readonly<Record<Stored, StatResult>>;

interface Cache {
  readonly keys: Keys;
  readonly read: GlobalRead;
  /** A fault is only reported as settled after a look under the lock: a commit may have been in flight. */
  readonly confirmed: boolean;
}

/** Internal: `repair-only` writes nothing unless the state is at fault. */
type Intent = FaultPolicy | "repair-only";

export function createDurableGlobalState(opts: DurableStoreOptions): DurableGlobalState {
  const fsx = opts.fs ?? nodeDurableFs;
  const timing: LockTiming = { ...DEFAULT_LOCK_TIMING, ...opts.lock };
  const dir = join(opts.agentDir, STATE_DIR_NAME);
  const paths: Readonly<Record<Stored, string>> = {
    config: join(dir, ARTIFACT_FILES.config),
    primary: join(dir, ARTIFACT_FILES.primary),
    recovery: join(dir, ARTIFACT_FILES.recovery),
    anchor: join(opts.agentDir, ANCHOR_FILE),
  };
  const lockPath = join(dir, LOCK_NAME);

  /** The highest watermark this process has seen in a healthy read or written itself. */
  let seen = 0;
  let cache: Cache | undefined;
  let last: GlobalRead = { kind: "missing", snapshot: DEFAULT_SNAPSHOT };
  /** Commits of this process run one after another; other processes are kept out by the lock. */
  let queue: Promise<unknown> = Promise.resolve();

  // Reverse publish order: a reader that sees a new anchor then sees a config and watermarks at
  // least as new, and one that sees a new config sees watermarks at least as new.
  const READ_ORDER: readonly Stored[] = ["anchor", "config", "primary", "recovery"];

  function load(): { reads: Record<Stored, ArtifactRead>; keys: Keys } {
    const reads = {} as Record<Stored, ArtifactRead>;
    const keys = {} as Record<Stored, StatResult>;
    for (const a of READ_ORDER) {
      const r = fsx.readFile(paths[a], MAX_ARTIFACT_BYTES);
      reads[a] = r.read;
      keys[a] = r.key;
    }
    return { reads, keys };
  }

  function classifyNow(): { c: Classification; keys: Keys } {
    const { reads, keys } = load();
    const c = classify(reads, seen, reads.anchor);
    if (c.kind === "ok") seen = Math.max(seen, c.watermark);
    return { c, keys };
  }

  function remember(keys: Keys | undefined, read: GlobalRead, confirmed: boolean): GlobalRead {
    cache = keys ? { keys, read, confirmed } : undefined;
    last = read;
    return read;
  }

  function check(): GlobalRead {
    if (cache) {
      let same = true;
      for (const a of READ_ORDER) {
        if (!sameKey(fsx.stat(paths[a]), cache.keys[a])) {
          same = false;
          break;
        }
      }
      if (same) return cache.read;
    }
    const { c, keys } = classifyNow();
    return remember(keys, toRead(c), c.kind !== "fault");
  }

  async function read(): Promise<GlobalRead> {
    const r = check();
    if (r.kind !== "fault" || cache?.confirmed) return r;
    // Unequal watermarks or a partial set are also what a reader sees in the middle of a commit:
    // look again while holding the lock, when no commit can be in flight.
    const locked = await withLock(lockPath, timing, () => {
      const { c, keys } = classifyNow();
      return remember(keys, toRead(c), true);
    }).catch((e: unknown) => ({ kind: "error" as const, message: (e as Error).message }));
    // Without the lock the fault stands (fail closed) and the next read tries again.
    return locked.kind === "held" ? locked.value : r;
  }

  function critical(change: GlobalChange, intent: Intent, stillHeld: () => boolean): CommitResult {
    sweepTemps(fsx, dir);
    sweepTemps(fsx, opts.agentDir, `.${ANCHOR_FILE}.`);
    const { c, keys } = classifyNow();
    let base: GlobalSnapshot;
    let floor: number;
    let repaired: StateFault | undefined;
    switch (c.kind) {
      case "missing":
        if (intent === "repair-only") return { kind: "unchanged", read: remember(keys, toRead(c), true) };
        base = DEFAULT_SNAPSHOT;
        floor = 0;
        break;
      case "ok":
        if (intent === "repair-only") return { kind: "unchanged", read: remember(keys, toRead(c), true) };
        base = c.snapshot;
        floor = c.watermark;
        break;
      case "fault":
        remember(keys, toRead(c), true);
        if (intent === "refuse-fault" || c.fault.floor === undefined) return { kind: "refused", fault: c.fault, unrepairable: c.fault.floor === undefined };
        base = c.fault.survivor ?? DEFAULT_SNAPSHOT;
        floor = c.fault.floor;
        repaired = c.fault;
        break;
    }
    const revision = Math.max(floor, seen) + 1;
    const next = applyChange(base, change, revision);
    try {
      for (const a of PUBLISH_ORDER) {
        const text = a === "config" ? serializeConfig(next) : serializeWatermark(revision);
        // The last directory sync (the config's rename) runs after the lock is released: the
        // watermarks were made durable before the config became visible, which is the order
        // that matters, and the next holder's own directory syncs cover this rename as well.
        publishFile(fsx, dir, ARTIFACT_FILES[a], text, revision, stillHeld, a !== PUBLISH_ORDER.at(-1));
      }
    } catch (e) {
      // What is stored now (old state, or a fault if a watermark got through) is read afresh.
      remember(undefined, last, false);
      return { kind: "failed", message: (e as Error).message };
    }
    // Last, after the watermarks are durable, so the anchor is never ahead of them (its directory
    // is synced after the release, with the config's).
    try {
      publishFile(fsx, opts.agentDir, ANCHOR_FILE, serializeAnchor(revision, serializeConfig(next)), revision, stillHeld, false);
    } catch (e) {
      // The change itself is stored; the anchor lags, which reads as a fault until the next commit.
      seen = Math.max(seen, revision);
      remember(undefined, last, false);
      return { kind: "failed", message: `the change was saved, but the revision anchor ${paths.anchor} could not be written: ${(e as Error).message}` };
    }
    seen = Math.max(seen, revision);
    // The next read parses once; caching keys from a later stat could pair another writer's files with this snapshot.
    remember(undefined, { kind: "ok", snapshot: next }, true);
    return { kind: "committed", snapshot: next, repaired };
  }

  function commitWith(change: GlobalChange, intent: Intent): Promise<CommitResult> {
    const run = async (): Promise<CommitResult> => {
      try {
        fsx.mkdirp(dir, 0o700);
        const locked = await withLock(lockPath, timing, (stillHeld) => critical(change, intent, stillHeld));
        switch (locked.kind) {
          case "held":
            // The config's rename is made durable before the commit is reported.
            if (locked.value.kind === "committed") {
              syncDir(fsx, dir);
              syncDir(fsx, opts.agentDir);
            }
            return locked.value;
          case "busy":
            return {
              kind: "failed",
              message: `another Pi process held the auto-mode state lock (${lockPath}) for ${Math.round(timing.waitMs / 1000)} s; nothing was changed`,
            };
          case "error":
            return { kind: "failed", message: `${locked.message}; nothing was changed` };
        }
      } catch (e) {
        return { kind: "failed", message: (e as Error).message };
      }
    };
    const result = queue.then(run, run);
    queue = result;
    return result;
  }

  return {
    dir,
    location: dir,
    check,
    read,
    peek: () => last,
    commit: (change, policy) => commitWith(change, policy),
    repair: () => commitWith({}, "repair-only"),
    setEnabled: (enabled) => commitWith({ enabled }, "repair-fault"),
    setReviewer: (reviewer) => commitWith({ reviewer: reviewer ?? null }, "repair-fault"),
  };
}

function toRead(c: Classification): GlobalRead {
  switch (c.kind) {
    case "missing":
      return { kind: "missing", snapshot: DEFAULT_SNAPSHOT };
    case "ok":
      return { kind: "ok", snapshot: c.snapshot };
    case "fault":
      return { kind: "fault", fault: c.fault };
  }
}
