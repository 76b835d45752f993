// The fixed texts the model sees when a review ends without an allow. Failures say the reviewer
// was unavailable or answered out of format, never that the action was judged risky: an outage
// must not read as a risk verdict. No provider error text is ever included (it can carry
// request details, account names or quota information). The words of each class and the texts'
// shape are policy/denial.ts's.

import { redact } from "../request/redact.ts";
import type { FailureClass, Verdict } from "./types.ts";
import { denial, type DenialClass, noReviewerDenial } from "../policy/denial.ts";

const FAILURE_TEXT: Readonly<Record<FailureClass, string>> = {
  "not-configured": "No reviewer model is configured, so this call could not be reviewed.",
  "model-unavailable": "The configured reviewer model is not available (unknown model or unsupported thinking level), so this call could not be reviewed.",
  auth: "The reviewer model's provider has no usable credentials, so this call could not be reviewed.",
  "over-budget": "This call is too large for the reviewer's input limit, so it was not sent for review.",
  "rate-limited": "The reviewer model's provider is rate limiting requests, so this call could not be reviewed.",
  connection: "The reviewer model could not be reached, so this call could not be reviewed.",
  "provider-error": "The reviewer model's provider returned an error, so this call could not be reviewed.",
  timeout: "The reviewer model did not answer in time, so this call could not be reviewed.",
  aborted: "The review was cancelled (interrupted, or the mode or reviewer changed), so this call was not admitted.",
  malformed: "The reviewer model answered out of format, so its answer could not be used.",
  paused: "Automatic review is paused for the rest of this turn after repeated denials.",
  busy: "Too many reviews are already waiting, so this call could not be reviewed.",
  internal: "The reviewer failed internally, so this call could not be reviewed.",
};

export function failureText(f: FailureClass): string {
  return FAILURE_TEXT[f];
}

/** Where a failure's next step is narrower than its class's. */
const FAILURE_NEXT: Partial<Readonly<Record<FailureClass, string>>> = {
  "model-unavailable": "The user can choose an available reviewer with /perm-auto-model, or allow this exact call once with /perm-approve.",
  auth: "The user can give the reviewer's provider credentials (/login) or choose another reviewer with /perm-auto-model, or allow this exact call once with /perm-approve.",
  "over-budget": "Smaller calls may fit; the user can raise reviewer.maxInputTokens in their auto-mode.json, or allow this exact call once with /perm-approve.",
  // Not overridable (grants/overrides.ts): a retry is all there is.
  internal: "The same call may pass if tried again; if it keeps failing, the user can check the reviewer with /perm-auto-model.",
  aborted: "Issue the call again if it is still needed.",
};

function failureClass(f: FailureClass): DenialClass {
  switch (f) {
    case "not-configured":
      return "no-reviewer";
    case "paused":
      return "review-paused";
    // The user pressed Esc or changed the mode or reviewer: nothing was judged.
    case "aborted":
      return "reissue";
    default:
      return "reviewer-unavailable";
  }
}

/** The tool result text for a call the reviewer model denied. */
export function verdictDenialText(v: Verdict): string {
  const risk = `risk ${v.risk_level}, user authorization ${v.user_authorization}`;
  // A critical verdict is never on the approval list (grants/overrides.ts); break glass is the one way past it.
  const next =
    v.risk_level === "critical"
      ? "A critical verdict cannot be approved: only /perm-break-glass overrides it, where the user's configuration allows break glass."
      : undefined;
  return denial("reviewer-denied", `The reviewer's rationale (${risk}): ${oneLine(redact(v.rationale))}`, next);
}

/** The tool result text for a review that produced no verdict; `why` is what sent the call to review. */
export function failureDenialText(f: FailureClass, why?: string): string {
  if (f === "not-configured" && why !== undefined) return noReviewerDenial(why);
  if (f === "paused")
    return denial("review-paused", `${FAILURE_TEXT.paused} No further calls that need review will be admitted until the user sends a new message.`);
  return denial(failureClass(f), FAILURE_TEXT[f], FAILURE_NEXT[f]);
}

/** The tool result text when the verdict no longer matched the call right before it would run (P8). */
export function bindingDenialText(changed: string): string {
  return denial(
    "reissue",
    `The reviewed call was not admitted because ${changed} changed while it was being reviewed.`,
    "Issue the call again if it is still needed: it is judged afresh.",
  );
}

function oneLine(s: string): string {
  const t = s.replace(/\s+/g, " ").trim();
  return /[.!?]$/.test(t) ? t : `${t}.`;
}
