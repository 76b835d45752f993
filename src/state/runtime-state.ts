// One runtime's view of the modes: the shared global store, this runtime's requested mode, and
// the backend that runs bash. Pi-free, so the CLI and tests can drive it directly.

import type { Backend } from "../policy/types.ts";
import { effectiveMode, statusLabel, type ConfigHealth, type EffectiveMode, type ModeInputs, type RequestedMode } from "./effective.ts";
import { readEnabled, readRevision, type GlobalRead, type GlobalSnapshot, type GlobalStateStore } from "./global.ts";
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
  /**
   * What changed in the global state since this runtime last looked (another Pi's /perm-enabled,
   * /perm-auto-model or repair), said once: the caller tells the user (P12: the change applies at
   * the next gate, and it should not apply silently).
   */
  globalChange(): string | undefined;
  /** This runtime made the change itself (or has just shown it): nothing to tell it later. */
  acknowledgeGlobal(): void;
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
  let seen: GlobalRead | undefined;
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
    globalChange() {
      const now = global.peek();
      const before = seen;
      seen = now;
      return before === undefined ? undefined : describeGlobalChange(before, now);
    },
    acknowledgeGlobal() {
      seen = global.peek();
    },
  };
}

const reviewerName = (r: GlobalSnapshot["reviewer"]) =>
  r ? `${r.provider}/${r.model} (${r.engine === "classifier" ? "classifier" : `thinking ${r.thinking}`})` : undefined;

/**
 * One notice for what differs between two reads of the global state, or undefined when nothing the
 * user chose did. Worded to follow "auto mode: ", as the edge shows it.
 */
export function describeGlobalChange(before: GlobalRead, now: GlobalRead): string | undefined {
  const elsewhere = "in another Pi session of this user";
  if (now.kind === "fault")
    return before.kind === "fault"
      ? undefined
      : `its global state was found damaged (${now.fault.detail}): until /perm-repair, every call that needs review or the sandbox is denied.`;
  if (before.kind === "fault") return `its global state was repaired ${elsewhere}: ${summary(now.snapshot)}.`;
  const out: string[] = [];
  const a = before.snapshot;
  const b = now.snapshot;
  if (a.enabled !== b.enabled)
    out.push(
      b.enabled
        ? `turned on ${elsewhere}: every tool call is checked again.`
        : `turned off ${elsewhere}: tool calls are no longer checked, except the hard denies (wiping your home or a disk, auto mode's own files), which stay denied. /perm-enabled on turns it back on for every session.`,
    );
  const ra = reviewerName(a.reviewer);
  const rb = reviewerName(b.reviewer);
  if (ra !== rb)
    out.push(
      rb
        ? `the reviewer model is now ${rb}, chosen ${elsewhere}.`
        : `no reviewer model is set any more (changed ${elsewhere}): calls that need review are denied.`,
    );
  return out.length > 0 ? out.join(" ") : undefined;
}

function summary(s: GlobalSnapshot): string {
  return `auto mode ${s.enabled ? "on" : "off"}, ${reviewerName(s.reviewer) ? `reviewer ${reviewerName(s.reviewer)}` : "no reviewer"}`;
}
