// The fixed texts the model sees when a review ends without an allow. Failures say the reviewer
// was unavailable or answered out of format, never that the action was judged risky: an outage
// must not read as a risk verdict. No provider error text is ever included (it can carry
// request details, account names or quota information).

import { redact } from "../request/redact.ts";
import type { FailureClass, Verdict } from "./types.ts";
import { DENIAL_HEAD as HEAD, DO_NOT_ROUTE_AROUND } from "../policy/denial.ts";

const FAILURE_TEXT: Readonly<Record<FailureClass, string>> = {
  "not-configured": "No reviewer model is configured, so this call could not be reviewed (the user can choose one with /perm-auto-model).",
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

/** The tool result text for a call the reviewer model denied. */
export function verdictDenialText(v: Verdict): string {
  const risk = `risk ${v.risk_level}, user authorization ${v.user_authorization}`;
  return `${HEAD} The reviewer model denied this call (${risk}): ${oneLine(redact(v.rationale))} ${DO_NOT_ROUTE_AROUND}`;
}

/** The tool result text for a review that produced no verdict. */
export function failureDenialText(f: FailureClass): string {
  if (f === "paused")
    return `${HEAD} ${FAILURE_TEXT.paused} No further calls that need review will be admitted until the user sends a new message. Finish what you can without them, or stop and tell the user what is blocked. ${DO_NOT_ROUTE_AROUND}`;
  return `${HEAD} ${FAILURE_TEXT[f]} This is not a judgement of the action. ${DO_NOT_ROUTE_AROUND}`;
}

/** The tool result text when the verdict no longer matched the call right before it would run (P8). */
export function bindingDenialText(changed: string): string {
  return `${HEAD} The reviewed call was not admitted because ${changed} changed while it was being reviewed. ${DO_NOT_ROUTE_AROUND}`;
}

function oneLine(s: string): string {
  const t = s.replace(/\s+/g, " ").trim();
  return /[.!?]$/.test(t) ? t : `${t}.`;
}
