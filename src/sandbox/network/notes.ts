// What a tool result says about the network after a sandboxed command, so the model is not left
// with a bare DNS or connection error: which destinations the proxy refused and why, what the
// user can do, and, for a failed command that needed the network in a sandbox without any, that
// there was no route at all.

import { DENIAL_CLASSES, denialHead } from "../../policy/denial.ts";
import type { NetReport, RefusalKind } from "../../policy/network/types.ts";

const ESCALATE = 'Or call bash again with sandbox_permissions "require_escalated" and a justification to run this command outside the sandbox after a review.';

const WHY: Readonly<Record<RefusalKind, string>> = {
  unlisted: "not in sandbox.network.allow",
  denied: "named by sandbox.network.deny",
  address: "it resolves to an address the sandbox never connects to",
  "review-denied": "the reviewer did not allow it",
  malformed: "the request to the proxy was malformed",
  unresolved: "the name could not be resolved",
  unreachable: "it could not be reached",
  limit: "the run opened too many connections",
};

const MAX_LISTED = 8;

/** Refused by the allowlist, the deny list, the address rule or a review: a denial, not a failure of the far side. */
export const byPolicy = (r: { readonly kind: RefusalKind }): boolean =>
  r.kind === "unlisted" || r.kind === "denied" || r.kind === "address" || r.kind === "review-denied";

/** The note for a finished run, or "" when there is nothing to say. */
export function networkNote(opts: {
  readonly report: NetReport | undefined;
  /** The run had a proxy at all (an allow list, staged). */
  readonly networkOn: boolean;
  /** The command ended with a failure. */
  readonly failed: boolean;
  /** The gate judged the command to need the network. */
  readonly needsNetwork: boolean;
}): string {
  const refused = opts.report?.refused ?? [];
  if (refused.length > 0) {
    // The proxy's detail only where it adds something (which address class, what failed).
    const detailed = (r: (typeof refused)[number]) =>
      r.detail && r.kind !== "unlisted" && r.kind !== "denied" && r.kind !== "review-denied" ? `: ${r.detail}` : "";
    const listed = refused.slice(0, MAX_LISTED).map((r) => `${hostPort(r.host, r.port)} (${WHY[r.kind]}${detailed(r)})`);
    const more = refused.length > MAX_LISTED ? `, and ${refused.length - MAX_LISTED} more` : "";
    const policy = refused.some(byPolicy);
    const what = `The sandbox's network proxy refused: ${listed.join("; ")}${more}.`;
    // Only a policy refusal is the class's: a name that does not resolve is no allowlist matter.
    if (!policy) return `[auto mode] ${what}`;
    return [denialHead("network-refused"), what, `Next: ${DENIAL_CLASSES["network-refused"].next} ${ESCALATE}`].join("\n");
  }
  if (opts.failed && opts.needsNetwork && !opts.networkOn)
    return [
      denialHead("network-refused"),
      "This command ran in a sandbox with no network at all (no route to any host; sandbox.network.allow is empty or the machine cannot give a sandbox network). A network error above is that, not the remote side.",
      'Next: The user can list destinations in sandbox.network.allow in their auto-mode.json; or call bash again with sandbox_permissions "require_escalated" and a justification.',
    ].join("\n");
  return "";
}

function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
