// Per-runtime state: the requested mode and a revision that grows on every mode or lifecycle
// change. Every runtime starts in `auto`; only a reload of the same runtime restores the mode it
// was in (P2). That mode is handed from the instance a reload shuts down to the one it starts, in
// this process, never read back from the session: a `pi-auto-mode/mode` entry is a record of a
// change, and any extension can append one (pi.appendEntry), or copy an old one.

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

/** The mode a runtime was in when its instance shut down, for the instance a reload starts. */
export interface CarriedMode {
  readonly sessionId: string;
  readonly mode: RequestedMode;
}

/**
 * The mode a starting runtime takes. Only `reload` continues the same logical runtime, and then
 * only with the mode its previous instance handed over for this very session; every other start,
 * and a reload with nothing handed over, is fresh.
 */
export function restoredMode(reason: SessionStartReason, carried: CarriedMode | undefined, sessionId: string): RequestedMode {
  return reason === "reload" && carried?.sessionId === sessionId ? carried.mode : "auto";
}

/**
 * Hands a runtime's mode across a reload. A reload loads the extension's modules afresh, so the
 * hand-off lives in the process, keyed by the object that stays for the runtime's life (Pi's
 * session manager) and taken once. Other extensions can write session entries through Pi's API;
 * this they could reach only by code aimed at auto mode's own internals, which no API relays.
 */
export interface ModeHandoff {
  /** The instance shuts down (before a reload or for good): what a reload should continue. */
  leave(runtime: object, carried: CarriedMode): void;
  /** The instance a reload starts takes what was left, once. */
  take(runtime: object): CarriedMode | undefined;
}

const HANDOFF_KEY = Symbol.for("pi-auto-mode:mode-handoff");

export function modeHandoff(): ModeHandoff {
  const g = globalThis as { [HANDOFF_KEY]?: ModeHandoff };
  const existing = g[HANDOFF_KEY];
  if (existing) return existing;
  const left = new WeakMap<object, CarriedMode>();
  const handoff: ModeHandoff = Object.freeze({
    leave: (runtime: object, carried: CarriedMode) => void left.set(runtime, { sessionId: carried.sessionId, mode: carried.mode }),
    take: (runtime: object) => {
      const c = left.get(runtime);
      left.delete(runtime);
      return c;
    },
  });
  // Not replaceable: a later load finds this one, not one another extension put there.
  Object.defineProperty(globalThis, HANDOFF_KEY, { value: handoff, writable: false, configurable: false, enumerable: false });
  return handoff;
}
