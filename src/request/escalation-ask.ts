// A bash call may ask to leave the sandbox: `sandbox_permissions: "require_escalated"` with a
// `justification`. Such a call always gets a fresh review of its own (never a cached or shared
// verdict), through the one review path, and if allowed it runs exactly once on the host (P7, P9):
// grants/admit-call.ts. This reads what the input asks for.

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
