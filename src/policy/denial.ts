// Every text a denied call gives the model, in one place: each starts by saying it was automatic
// policy, not the user, and most end by telling the model not to rephrase its way around it. The
// review engine's own texts (review/failure.ts) use the same head and tail with its failure classes.

import type { Decision } from "./types.ts";

export const DENIAL_HEAD = "Denied by auto mode's automatic policy (not by the user).";
export const DO_NOT_ROUTE_AROUND =
  "Do not retry this action in another form or route around it; take a different approach, or ask the user to run it themselves.";

export function denial(body: string): string {
  return `${DENIAL_HEAD} ${body.trim()} ${DO_NOT_ROUTE_AROUND}`;
}

/** The body of a denial text, for quoting it inside another one. */
export function denialBody(text: string): string {
  let t = text.trim();
  if (t.startsWith(DENIAL_HEAD)) t = t.slice(DENIAL_HEAD.length);
  if (t.trimEnd().endsWith(DO_NOT_ROUTE_AROUND)) t = t.trimEnd().slice(0, -DO_NOT_ROUTE_AROUND.length);
  return t.trim();
}

/** A call the gate judged and no one may run here: its decision's own message, with what would have let it run. */
export function decisionDenial(d: Decision, configFault: boolean): string {
  if (configFault && (d.route === "review" || d.route === "sandbox"))
    return denial(
      `Auto mode's configuration is at fault, so no call that needs review or the sandbox can run until the user fixes it (/perm-enabled shows what is wrong). ${d.message}`,
    );
  if (d.route === "review")
    return denial(`This call needs a reviewer model's judgment and no reviewer is configured yet (the user can set one with /perm-auto-model). ${d.message}`);
  if (d.route === "sandbox") return denial(`This call must run inside the OS sandbox, which is not available. ${d.message}`);
  return denial(d.message);
}

/** The gate threw while deciding: `detail` is already redacted and clipped. */
export function gateFailureDenial(detail: string): string {
  return denial(`Auto mode could not finish deciding this call (${detail || "an internal error"}), so it does not run.`);
}

/** The gate itself could not be loaded. */
export function gateLoadDenial(detail: string): string {
  return denial(`Auto mode could not load its gate (${detail}), so this call does not run.`);
}

/** A call judged beside another unfinished one; it can be issued again on its own. */
export function concurrentDenial(tool: string, other: { readonly tool: string; readonly mayChangeFiles: boolean }): string {
  const why = other.mayChangeFiles
    ? `the ${other.tool} call issued with it (not finished yet) may change files before this ${tool} call runs`
    : `this ${tool} call may change files the ${other.tool} call issued with it (not finished yet) was judged against`;
  return `${DENIAL_HEAD} Auto mode judges each call against the files as they are when it is judged, and ${why}, so that judgement could be stale. Nothing was run. Issue this call again on its own, after the other call has finished.`;
}

/** An escalation request the gate cannot take as asked (`problem` says why). */
export function escalationInvalidDenial(problem: string): string {
  return `${DENIAL_HEAD} ${problem}.`;
}

/** An escalation the fresh review did not approve; `reason` is that review's denial. */
export function escalationDenial(reason: string): string {
  return `${DENIAL_HEAD} This command asked to run outside the sandbox, which needs a fresh review, and it was not approved: ${denialBody(reason)} It did not run. Run it inside the sandbox without sandbox_permissions if that can work, or ask the user to run it.`;
}

/** The bash tool found no ticket for the call, or two calls with one id, or another command than was judged. */
export function ticketDenial(problem: "missing" | "conflict" | "changed"): string {
  switch (problem) {
    case "missing":
      return `${DENIAL_HEAD} This bash call did not pass auto mode's gate, so it does not run.`;
    case "conflict":
      return `${DENIAL_HEAD} Two tool calls share this id, so which one was judged is unclear; neither runs.`;
    case "changed":
      return `${DENIAL_HEAD} The command changed after it was judged, so it does not run.`;
  }
}
