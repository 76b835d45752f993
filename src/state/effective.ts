// The effective mode: a total function of everything that decides it, so the status line can
// never claim more protection than the gate gives (P2, P16).

import type { Backend } from "../policy/types.ts";

export type RequestedMode = "auto" | "unrestricted";
/**
 * Whether the configuration can be trusted. `fault`: the user's auto-mode.json is invalid (the
 * enabled flag is still known). `state-fault`: the durable global state is damaged, so even the
 * enabled flag is unknown and the gate stays on (P5, P12).
 */
export type ConfigHealth = "ok" | "fault" | "state-fault";
export const CONFIG_HEALTHS: readonly ConfigHealth[] = ["ok", "fault", "state-fault"];

export type EffectiveMode = "off" | "unrestricted" | "auto-config-fault" | "auto-sandbox-unavailable" | "auto-review-only" | "auto";

export interface ModeInputs {
  readonly enabled: boolean;
  readonly configHealth: ConfigHealth;
  readonly requested: RequestedMode;
  readonly reviewerConfigured: boolean;
  readonly backend: Backend;
}

export const STATUS_LABELS: Readonly<Record<EffectiveMode, string>> = {
  off: "Off",
  unrestricted: "Unrestricted",
  "auto-config-fault": "Auto (configuration fault)",
  "auto-sandbox-unavailable": "Auto (sandbox unavailable)",
  "auto-review-only": "Auto (review-only)",
  auto: "Auto",
};

export function effectiveMode(m: ModeInputs): EffectiveMode {
  // Damaged global state cannot say the gate is off: a torn write must never read as "off".
  if (m.configHealth === "state-fault") return "auto-config-fault";
  if (!m.enabled) return "off";
  // A broken configuration outranks an unrestricted request: the user cannot be sure what they chose.
  if (m.configHealth === "fault") return "auto-config-fault";
  if (m.requested === "unrestricted") return "unrestricted";
  if (m.backend === "unavailable") return "auto-sandbox-unavailable";
  if (m.backend === "review-only") return "auto-review-only";
  return "auto";
}

export function statusLabel(m: ModeInputs): string {
  const mode = effectiveMode(m);
  const label = STATUS_LABELS[mode];
  // A sandbox that writes the workspace in place judges no command's effects: say so.
  const unstaged = mode === "auto" && m.backend === "sandboxed-unstaged" ? " · not staged" : "";
  return m.enabled && m.requested === "auto" && !m.reviewerConfigured && m.configHealth === "ok" ? `${label}${unstaged} · no reviewer` : `${label}${unstaged}`;
}
