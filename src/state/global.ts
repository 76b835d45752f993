// Global (per-user) state: the enabled flag and the reviewer choice. Behind an interface so the
// in-process store here can be replaced by the durable, cross-process store without touching
// the gate. Shared by every runtime in this process through a well-known symbol, because Pi
// loads a fresh copy of the extension module for each session.

export interface ReviewerChoice {
  readonly provider: string;
  readonly model: string;
  readonly thinking: string;
}

export interface GlobalSnapshot {
  readonly enabled: boolean;
  readonly reviewer: ReviewerChoice | undefined;
  /** Grows on every committed change; verdicts bind to it. */
  readonly revision: number;
}

export interface GlobalStateStore {
  /** The current state; cheap enough to call at every gate. */
  read(): GlobalSnapshot;
  setEnabled(enabled: boolean): GlobalSnapshot;
  setReviewer(reviewer: ReviewerChoice | undefined): GlobalSnapshot;
}

export function createMemoryGlobalState(initial: Partial<GlobalSnapshot> = {}): GlobalStateStore {
  let snap: GlobalSnapshot = { enabled: initial.enabled ?? true, reviewer: initial.reviewer, revision: initial.revision ?? 0 };
  return {
    read: () => snap,
    setEnabled(enabled) {
      snap = { ...snap, enabled, revision: snap.revision + 1 };
      return snap;
    },
    setReviewer(reviewer) {
      snap = { ...snap, reviewer, revision: snap.revision + 1 };
      return snap;
    },
  };
}

const PROCESS_KEY = Symbol.for("pi-auto-mode:global-state");

/** The store shared by every runtime of this process. */
export function processGlobalState(): GlobalStateStore {
  const g = globalThis as { [PROCESS_KEY]?: GlobalStateStore };
  g[PROCESS_KEY] ??= createMemoryGlobalState();
  return g[PROCESS_KEY];
}
