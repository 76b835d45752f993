// One runtime's view of the modes: the shared global store, this runtime's requested mode, and
// the backend that runs bash. Pi-free, so the CLI and tests can drive it directly.

import type { Backend } from "../policy/types.ts";
import { effectiveMode, statusLabel, type ConfigHealth, type EffectiveMode, type ModeInputs, type RequestedMode } from "./effective.ts";
import { readEnabled, readRevision, type GlobalRead, type GlobalStateStore } from "./global.ts";
import { initialSession, nextSessionRevision, withMode, type SessionState } from "./session.ts";

/** The health of the user's auto-mode.json; the state's own health comes from the store. */
export type UserConfigHealth = Exclude<ConfigHealth, "state-fault">;

/** What a verdict binds to besides the action and the reviewer (P8). */
export interface Revisions {
  /** The global state's revision; undefined while it is at fault (nothing can bind to it). */
  readonly global: number | undefined;
  readonly session: number;
}

export interface RuntimeState {
  readonly global: GlobalStateStore;
  session(): SessionState;
  setRequested(mode: RequestedMode): SessionState;
  /** Lifecycle changes (start, reload, shutdown, tree) also move the session revision. */
  bump(): SessionState;
  backend(): Backend;
  /** From the last global read: the gate awaits `global.read()` before deciding. */
  inputs(userConfig: UserConfigHealth): ModeInputs;
  effective(userConfig: UserConfigHealth): EffectiveMode;
  label(userConfig: UserConfigHealth): string;
  revisions(): Revisions;
}

export function modeInputs(g: GlobalRead, userConfig: UserConfigHealth, requested: RequestedMode, backend: Backend): ModeInputs {
  return {
    enabled: readEnabled(g),
    configHealth: g.kind === "fault" ? "state-fault" : userConfig,
    requested,
    reviewerConfigured: g.kind !== "fault" && g.snapshot.reviewer !== undefined,
    backend,
  };
}

export function createRuntimeState(global: GlobalStateStore, backend: () => Backend): RuntimeState {
  let session = initialSession(nextSessionRevision());
  const inputs = (userConfig: UserConfigHealth): ModeInputs => modeInputs(global.peek(), userConfig, session.requested, backend());
  return {
    global,
    session: () => session,
    setRequested(mode) {
      session = withMode(session, mode, nextSessionRevision());
      return session;
    },
    bump() {
      session = withMode(session, session.requested, nextSessionRevision());
      return session;
    },
    backend,
    inputs,
    effective: (h) => effectiveMode(inputs(h)),
    label: (h) => statusLabel(inputs(h)),
    revisions: () => ({ global: readRevision(global.peek()), session: session.revision }),
  };
}
