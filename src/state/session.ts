// Per-runtime state: the requested mode and a revision that grows on every mode or lifecycle
// change. Every runtime starts in `auto`; only a reload of the same runtime restores what a
// custom session entry recorded (P2).

import type { RequestedMode } from "./effective.ts";

export const MODE_ENTRY_TYPE = "pi-auto-mode/mode";

export type SessionStartReason = "startup" | "reload" | "new" | "resume" | "fork";

export interface ModeEntry {
  readonly mode: RequestedMode;
}

export interface SessionState {
  readonly requested: RequestedMode;
  /** Grows on every mode or lifecycle change; verdicts bind to it (P8). */
  readonly revision: number;
}

export function initialSession(revision: number): SessionState {
  return { requested: "auto", revision };
}

/** A mode change or lifecycle event; `revision` must come from a sequence that only grows. */
export function withMode(s: SessionState, mode: RequestedMode, revision: number): SessionState {
  return { requested: mode, revision: Math.max(revision, s.revision + 1) };
}

const SEQUENCE_KEY = Symbol.for("pi-auto-mode:session-revision");

/**
 * The next session revision of this process. One sequence for every runtime of the process, so a
 * revision seen by one runtime (or by the instance a reload replaced) never comes back in another.
 */
export function nextSessionRevision(): number {
  const g = globalThis as { [SEQUENCE_KEY]?: number };
  g[SEQUENCE_KEY] = (g[SEQUENCE_KEY] ?? 0) + 1;
  return g[SEQUENCE_KEY];
}

export function isModeEntry(data: unknown): data is ModeEntry {
  return typeof data === "object" && data !== null && ((data as ModeEntry).mode === "auto" || (data as ModeEntry).mode === "unrestricted");
}

/**
 * The mode a starting runtime takes. Entries are the custom entries of the active branch, oldest
 * first. Only `reload` continues the same logical runtime; every other start is fresh.
 */
export function restoredMode(reason: SessionStartReason, entries: readonly { customType: string; data?: unknown }[]): RequestedMode {
  if (reason !== "reload") return "auto";
  let mode: RequestedMode = "auto";
  for (const e of entries) if (e.customType === MODE_ENTRY_TYPE && isModeEntry(e.data)) mode = e.data.mode;
  return mode;
}
