// Global (per-user) state: the enabled flag and the reviewer choice, shared by every Pi process
// of the user (P12). The vocabulary is in snapshot.ts, the durable cross-process store in
// durable-store.ts; an in-memory store is kept here for tests. Stores are shared by every runtime
// of a process through a well-known symbol, because Pi loads a fresh copy of the extension
// module for each session.

import { resolve } from "node:path";
import { createDurableGlobalState } from "./durable-store.ts";
import { agentDirFromEnv } from "./locations.ts";
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

export * from "./snapshot.ts";

/** A store without persistence, for tests of code that only needs the interface. */
export function createMemoryGlobalState(initial: Partial<GlobalSnapshot> = {}): GlobalStateStore & { inject(r: GlobalRead): void } {
  let current: GlobalRead = { kind: initial.revision ? "ok" : "missing", snapshot: { ...DEFAULT_SNAPSHOT, ...initial } };
  let highest = initial.revision ?? 0;
  const commit = async (change: GlobalChange, policy: FaultPolicy): Promise<CommitResult> => {
    let base = DEFAULT_SNAPSHOT;
    let repaired: StateFault | undefined;
    if (current.kind === "fault") {
      if (policy === "refuse-fault" || current.fault.floor === undefined)
        return { kind: "refused", fault: current.fault, unrepairable: current.fault.floor === undefined };
      base = current.fault.survivor ?? DEFAULT_SNAPSHOT;
      highest = Math.max(highest, current.fault.floor);
      repaired = current.fault;
    } else base = current.snapshot;
    highest += 1;
    const snapshot = applyChange(base, change, highest);
    current = { kind: "ok", snapshot };
    return { kind: "committed", snapshot, repaired };
  };
  return {
    location: "",
    read: async () => current,
    peek: () => current,
    commit,
    repair: async () => (current.kind === "fault" ? commit({}, "repair-fault") : { kind: "unchanged", read: current }),
    setEnabled: (enabled) => commit({ enabled }, "repair-fault"),
    setReviewer: (reviewer) => commit({ reviewer: reviewer ?? null }, "repair-fault"),
    inject(r) {
      current = r;
    },
  };
}

// Versioned: an older copy of this package in the same process kept a different shape here.
const PROCESS_KEY = Symbol.for("pi-auto-mode:global-state-stores/1");

/** The store shared by every runtime of this process for one agent dir. */
export function processGlobalState(agentDir: string = agentDirFromEnv()): GlobalStateStore {
  const g = globalThis as { [PROCESS_KEY]?: Map<string, GlobalStateStore> };
  const stores = (g[PROCESS_KEY] ??= new Map());
  agentDir = resolve(agentDir);
  let store = stores.get(agentDir);
  if (!store) {
    store = createDurableGlobalState({ agentDir });
    stores.set(agentDir, store);
  }
  return store;
}

/**
 * A store that follows Pi's agent dir at every call, the way Pi itself resolves it (the
 * environment can name another agent dir, as the SDK tests do).
 */
export function followingGlobalState(agentDir: () => string): GlobalStateStore {
  const s = () => processGlobalState(agentDir());
  return {
    get location() {
      return s().location;
    },
    read: () => s().read(),
    peek: () => s().peek(),
    commit: (change, policy) => s().commit(change, policy),
    repair: () => s().repair(),
    setEnabled: (enabled) => s().setEnabled(enabled),
    setReviewer: (reviewer) => s().setReviewer(reviewer),
  };
}
