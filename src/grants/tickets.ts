// The hand-over from the gate (tool_call) to the bash tool's execute: where an admitted call runs.
// The gate decides, the tool only obeys, and only once: an admission is taken, never read twice,
// so a call can never be executed a second time on the strength of one decision (P9).

import type { Backend } from "../policy/types.ts";
import type { SandboxScope, WorkspaceAccess } from "./types.ts";

/** Inside the OS sandbox, or on the host through Pi's ordinary local backend. */
export type Placement = "sandbox" | "host";

/**
 * Why a call may run on the host; closed, so the audit and tests can list every way out. Under a
 * sandboxed backend only an approved escalation does (P7).
 */
export type HostReason = "gate-off" | "unrestricted" | "review-only" | "escalation-approved";

export type Admission =
  | { readonly placement: "sandbox"; readonly command: string; readonly scope: SandboxScope; readonly backend: Backend; readonly workspace: WorkspaceAccess }
  | { readonly placement: "host"; readonly command: string; readonly why: HostReason; readonly backend: Backend };

export type Taken = { readonly kind: "admitted"; readonly admission: Admission } | { readonly kind: "missing" } | { readonly kind: "conflict" };

export interface AdmissionBook {
  admit(toolCallId: string, admission: Admission): void;
  take(toolCallId: string): Taken;
  size(): number;
}

/** Admissions a blocked or abandoned call never takes must not pile up. */
const MAX_PENDING = 512;

export function createAdmissionBook(): AdmissionBook {
  const pending = new Map<string, Admission | "conflict">();
  return {
    admit(id, admission) {
      // Two calls with one id (a provider bug) would make "which one was judged" ambiguous.
      pending.set(id, pending.has(id) ? "conflict" : admission);
      while (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value!);
    },
    take(id) {
      const a = pending.get(id);
      pending.delete(id);
      if (a === undefined) return { kind: "missing" };
      if (a === "conflict") return { kind: "conflict" };
      return { kind: "admitted", admission: a };
    },
    size: () => pending.size,
  };
}
