// The vocabulary of global (per-user) state: the enabled flag, the reviewer choice, the
// revision, and what a read or a commit can come back with. Pure data and total helpers.

/** Pi's thinking levels (pi-agent-core's ThinkingLevel), spelled out so the core never imports Pi. */
export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];

export interface ReviewerChoice {
  readonly provider: string;
  readonly model: string;
  readonly thinking: ThinkingLevel;
  /** Absent: the chat reviewer; "classifier": the classifier engine (its thinking is "off"). */
  readonly engine?: "classifier";
}

export interface GlobalSnapshot {
  readonly enabled: boolean;
  readonly reviewer: ReviewerChoice | undefined;
  /** Grows on every committed change, also across faults and repairs; verdicts bind to it. */
  readonly revision: number;
}

/** What the first run (nothing written yet) means: on, no reviewer, revision 0. */
export const DEFAULT_SNAPSHOT: GlobalSnapshot = { enabled: true, reviewer: undefined, revision: 0 };

/**
 * Why stored state cannot be trusted. Anything but a complete, well-formed, consistent set of
 * artifacts is a fault: torn or partial state is never read as a config the user didn't choose.
 */
export type FaultCode =
  /** Some of the three artifacts (config, primary and recovery watermark) exist, not all. */
  | "partial"
  /** An artifact exists but cannot be read (permissions, a directory in its place, I/O error). */
  | "unreadable"
  /** A watermark is not exactly what this extension writes (truncated, edited, wrong type). */
  | "malformed-watermark"
  /** Both watermarks are well formed but differ: a publish stopped between them. */
  | "unequal-watermarks"
  /** The config claims a revision the watermarks never reached. */
  | "watermark-below-config"
  /** The config names a schema version this code does not know. */
  | "unknown-schema"
  /** The config is not exactly what this extension writes. */
  | "malformed-config"
  /** The stored revision is below one this process, or the anchor beside the state dir, has already seen: state was rolled back or deleted. */
  | "rolled-back"
  /** The config is not the one the anchor records (another revision, or other bytes): see artifacts.ts. */
  | "anchor-mismatch";

export interface StateFault {
  readonly code: FaultCode;
  readonly detail: string;
  /**
   * The greatest surviving valid watermark or config revision (and what this process saw):
   * a repair writes above it. Undefined when neither watermark is valid, so no safe floor exists.
   */
  readonly floor: number | undefined;
  /** The config, when it survived intact: a repair keeps what the user chose. */
  readonly survivor: GlobalSnapshot | undefined;
}

export type GlobalRead =
  | { readonly kind: "missing"; readonly snapshot: GlobalSnapshot }
  | { readonly kind: "ok"; readonly snapshot: GlobalSnapshot }
  | { readonly kind: "fault"; readonly fault: StateFault };

/** A change an explicit user command asks for; absent fields keep their value. */
export interface GlobalChange {
  readonly enabled?: boolean;
  /** `null` removes the reviewer. */
  readonly reviewer?: ReviewerChoice | null;
}

/** Whether a commit may write over a Fault. Only explicit user commands repair. */
export type FaultPolicy = "refuse-fault" | "repair-fault";

export type CommitResult =
  | { readonly kind: "committed"; readonly snapshot: GlobalSnapshot; readonly repaired: StateFault | undefined }
  /** `repair()` on healthy state: nothing was written. */
  | { readonly kind: "unchanged"; readonly read: GlobalRead }
  /** The state is at fault and this commit may not, or cannot safely, repair it. */
  | { readonly kind: "refused"; readonly fault: StateFault; readonly unrepairable: boolean }
  /** Nothing or only part was published; the stored state is what `read()` now says. */
  | { readonly kind: "failed"; readonly message: string };

export interface GlobalStateStore {
  /** Where the state lives, for messages ("" for an in-memory store). */
  readonly location: string;
  /**
   * The current state, re-read cheaply: a stat of each artifact, a parse only when one changed.
   * A fault seen while a commit may be in flight is confirmed under the lock before it is reported.
   */
  read(): Promise<GlobalRead>;
  /** The last state `read()` or a commit saw, without I/O (for the status line). */
  peek(): GlobalRead;
  /** Commit a change under the cross-process lock. Never rejects: failures are results. */
  commit(change: GlobalChange, policy: FaultPolicy): Promise<CommitResult>;
  /** Rewrite faulted state above every surviving revision, keeping a surviving config. */
  repair(): Promise<CommitResult>;
  /** An explicit user command: turns auto mode on or off, repairing a Fault. */
  setEnabled(enabled: boolean): Promise<CommitResult>;
  /** An explicit user command: sets or removes the reviewer, repairing a Fault. */
  setReviewer(reviewer: ReviewerChoice | undefined): Promise<CommitResult>;
}

/** Effective enabled flag: a Fault cannot say the gate is off, so it counts as on. */
export function readEnabled(r: GlobalRead): boolean {
  return r.kind === "fault" ? true : r.snapshot.enabled;
}

export function readRevision(r: GlobalRead): number | undefined {
  return r.kind === "fault" ? undefined : r.snapshot.revision;
}

export function applyChange(base: GlobalSnapshot, change: GlobalChange, revision: number): GlobalSnapshot {
  return {
    enabled: change.enabled ?? base.enabled,
    reviewer: change.reviewer === undefined ? base.reviewer : (change.reviewer ?? undefined),
    revision,
  };
}
