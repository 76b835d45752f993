// One runtime's view of the modes: the shared global store, this runtime's requested mode, and
// the backend that runs bash. Pi-free, so the CLI and tests can drive it directly.

import type { Backend } from "../policy/types.ts";
import { effectiveMode, statusLabel, type ConfigHealth, type EffectiveMode, type ModeInputs, type RequestedMode } from "./effective.ts";
import type { GlobalStateStore } from "./global.ts";
import { initialSession, withMode, type SessionState } from "./session.ts";

export interface RuntimeState {
  readonly global: GlobalStateStore;
  session(): SessionState;
  setRequested(mode: RequestedMode): SessionState;
  /** Lifecycle changes (start, reload) also move the session revision. */
  bump(): SessionState;
  backend(): Backend;
  inputs(configHealth: ConfigHealth): ModeInputs;
  effective(configHealth: ConfigHealth): EffectiveMode;
  label(configHealth: ConfigHealth): string;
}

export function createRuntimeState(global: GlobalStateStore, backend: () => Backend): RuntimeState {
  let session = initialSession();
  const inputs = (configHealth: ConfigHealth): ModeInputs => {
    const g = global.read();
    return { enabled: g.enabled, configHealth, requested: session.requested, reviewerConfigured: g.reviewer !== undefined, backend: backend() };
  };
  return {
    global,
    session: () => session,
    setRequested(mode) {
      session = withMode(session, mode);
      return session;
    },
    bump() {
      session = withMode(session, session.requested);
      return session;
    },
    backend,
    inputs,
    effective: (h) => effectiveMode(inputs(h)),
    label: (h) => statusLabel(inputs(h)),
  };
}
