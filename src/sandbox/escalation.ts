// A bash call may ask to leave the sandbox: `sandbox_permissions: "require_escalated"` with a
// `justification`. Such a call always gets a fresh review of its own (never a cached or shared
// verdict), and if allowed it runs exactly once on the host (P7, P9). The reviewer model lands
// in a later issue; until then `NO_REVIEWER` denies every escalation with a reason that says so.

import type { Decision } from "../policy/types.ts";

export type SandboxPermissions = "use_default" | "require_escalated";
export const SANDBOX_PERMISSIONS: readonly SandboxPermissions[] = ["use_default", "require_escalated"];

export const MAX_JUSTIFICATION = 2000;

export type EscalationAsk =
  | { readonly kind: "default" }
  | { readonly kind: "escalated"; readonly justification: string }
  | { readonly kind: "invalid"; readonly problem: string };

/** What a bash call's input asks for. Pi validates the schema first; this is the fail-closed second look. */
export function escalationAsk(input: unknown): EscalationAsk {
  if (typeof input !== "object" || input === null) return { kind: "default" };
  const { sandbox_permissions: perm, justification } = input as Record<string, unknown>;
  if (perm === undefined || perm === "use_default") {
    if (justification !== undefined && typeof justification !== "string") return { kind: "invalid", problem: "justification must be a string" };
    return { kind: "default" };
  }
  if (perm !== "require_escalated")
    return { kind: "invalid", problem: `sandbox_permissions must be "use_default" or "require_escalated", not ${JSON.stringify(perm)}` };
  if (typeof justification !== "string" || justification.trim() === "")
    return { kind: "invalid", problem: 'sandbox_permissions "require_escalated" needs a justification: say why this command must run outside the sandbox' };
  if (justification.length > MAX_JUSTIFICATION) return { kind: "invalid", problem: `the justification is longer than ${MAX_JUSTIFICATION} characters` };
  return { kind: "escalated", justification: justification.trim() };
}

export interface EscalationRequest {
  readonly toolCallId: string;
  readonly command: string;
  readonly justification: string;
  readonly cwd: string;
  /** The canonical request hash the verdict is bound to. */
  readonly requestHash: string | undefined;
  /** What the deterministic gate said about the command itself. */
  readonly decision: Decision;
}

export type EscalationVerdict = { readonly outcome: "allow"; readonly rationale: string } | { readonly outcome: "deny"; readonly rationale: string };

/** The seam the reviewer plugs into. */
export interface EscalationReviewer {
  /** A fresh verdict for exactly this request; never reused for another call. */
  review(request: EscalationRequest, signal?: AbortSignal): Promise<EscalationVerdict>;
}

export const NO_REVIEWER: EscalationReviewer = {
  review: async () => ({
    outcome: "deny",
    rationale: "Running outside the sandbox needs a reviewer model's approval, and no reviewer is configured yet (the user can set one with /perm-auto-model).",
  }),
};

export type EscalationResult = { readonly admitted: true; readonly rationale: string } | { readonly admitted: false; readonly reason: string };

/**
 * Review one escalation. Anything but an explicit allow denies (P5): a thrown error, a malformed
 * verdict, a deterministic deny of the command itself (no reviewer may override it, P3).
 */
export async function reviewEscalation(request: EscalationRequest, reviewer: EscalationReviewer, signal?: AbortSignal): Promise<EscalationResult> {
  if (request.decision.route === "deny") return { admitted: false, reason: request.decision.message };
  let verdict: EscalationVerdict;
  try {
    verdict = await reviewer.review(request, signal);
  } catch (e) {
    return {
      admitted: false,
      reason: `The escalation review failed (${(e as Error)?.message ?? String(e)}), so the command does not run outside the sandbox.`,
    };
  }
  if (verdict?.outcome === "allow" && typeof verdict.rationale === "string") return { admitted: true, rationale: verdict.rationale };
  const why = typeof verdict?.rationale === "string" && verdict.outcome === "deny" ? verdict.rationale : "The reviewer gave no valid verdict.";
  return { admitted: false, reason: why };
}
