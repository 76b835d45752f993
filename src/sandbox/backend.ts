// Which backend a platform and a probe verdict give, and the controller protocol's number: what
// is known before the controller (and the drivers and probe it brings) is loaded.

import type { SandboxController } from "./controller.ts";
import type { BackendStatus, ProbeResult } from "./types.ts";

/** Copies of this package that share one controller in a process must speak the same protocol. */
export const CONTROLLER_PROTOCOL = 1;

/** The backend for a platform and a probe verdict (pure; the truth table is tested). */
export function selectBackend(platform: string, probe: ProbeResult | undefined | "pending"): BackendStatus {
  if (platform !== "linux" && platform !== "darwin") return { backend: "review-only", reason: `no OS sandbox on ${platform}: every shell command is reviewed` };
  if (probe === undefined || probe === "pending") return { backend: "unavailable", reason: "the sandbox probe has not finished" };
  if (!probe.ok) return { backend: "unavailable", reason: probe.reason };
  if (!probe.staging.available)
    return {
      backend: "sandboxed-unstaged",
      reason: `${probe.driver}, probe passed ${probe.cached ? "(remembered from an earlier run)" : `in ${probe.ms} ms`}; the workspace cannot be staged (${probe.staging.reason}), so commands write it in place`,
    };
  return {
    backend: "sandboxed",
    reason: `${probe.driver} over a staged workspace (${probe.staging.how}), probe passed ${probe.cached ? "(remembered from an earlier run)" : `in ${probe.ms} ms`}`,
  };
}

/** A controller that only ever refuses: what a second, incompatible copy of this package gets, or one whose sandbox cannot load. */
export function refusingController(reason: string): SandboxController {
  const s: BackendStatus = { backend: "unavailable", reason };
  return {
    protocol: CONTROLLER_PROTOCOL,
    ready: async () => s,
    status: () => s,
    probeResult: () => undefined,
    attach() {},
    detach: async () => ({ ok: true }),
    run: async () => ({ kind: "refused", reason }),
    drain: async () => ({ ok: true }),
    activeLeases: () => 0,
    owners: () => [],
    subscribe: () => () => {},
    facts: () => [reason],
  };
}
