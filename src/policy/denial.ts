// Every text auto mode gives when it stops something, in one place. A text opens with one head
// line: that auto mode's automatic policy did it, not the user (P4), and its class in words a user
// knows. Then why, then the one thing that can be done next. The classes are data
// (DENIAL_CLASSES): the TUI's head, the headless summary and the tests read the same words, and a
// class that is not listed cannot be written. review/failure.ts, grants/ and sandbox/ build their
// texts here.

import type { Decision, ReasonCode } from "./types.ts";

/**
 * What kind of refusal a text is. A user tells them apart by what they can do about it: nothing
 * (hard-deny), edit their rule, choose a reviewer, approve once, retry, allow a destination.
 */
export type DenialClass =
  | "hard-deny"
  | "deny-rule"
  | "no-reviewer"
  | "reviewer-denied"
  | "reviewer-unavailable"
  | "review-paused"
  | "held-effects"
  | "network-refused"
  | "cannot-check"
  | "reissue";

export interface DenialClassWords {
  /** The head line's words after "...(not by the user): ". */
  readonly heading: string;
  /** A few words for counts (the headless summary). */
  readonly label: string;
  /** The one thing that can be done next, when the case names no narrower one. */
  readonly next: string;
  /** What the model is asked not to do (said last). */
  readonly tail: string;
}

const NO_ROUTE_AROUND = "Do not retry this action in another form or route around it";
const TELL_USER = `${NO_ROUTE_AROUND}; take a different approach, or tell the user what is blocked.`;

export const DENIAL_CLASSES: Readonly<Record<DenialClass, DenialClassWords>> = {
  // A hard deny has no next step for anyone: suggesting the user run it would be the workaround.
  "hard-deny": {
    heading: "never allowed, and nothing overrides it",
    label: "never allowed",
    next: "Nothing: no approval, rule or mode lets this run.",
    tail: `${NO_ROUTE_AROUND}; take a different approach that does not need it.`,
  },
  "deny-rule": {
    heading: "a deny rule in auto mode's configuration",
    label: "deny rule",
    next: "Only the user can change that rule (the deny list of their auto-mode.json or this project's).",
    tail: TELL_USER,
  },
  "no-reviewer": {
    heading: "needs review, and no reviewer is set",
    label: "needs review, no reviewer",
    next: "The user can choose a reviewer with /perm-auto-model, or allow this exact call once with /perm-approve.",
    tail: TELL_USER,
  },
  "reviewer-denied": {
    heading: "the reviewer judged it too risky",
    label: "judged risky",
    next: "The user can allow this exact call once with /perm-approve.",
    tail: TELL_USER,
  },
  "reviewer-unavailable": {
    heading: "the reviewer was unavailable (this is not a risk judgement)",
    label: "reviewer unavailable",
    next: "The same call may pass if tried again later; if the reviewer keeps failing, the user can check it with /perm-auto-model, or allow this exact call once with /perm-approve.",
    tail: "Do not try it in another form or route around it.",
  },
  "review-paused": {
    heading: "automatic review is paused for this turn (this is not a risk judgement)",
    label: "review paused",
    next: "Review resumes when the user sends a new message; the user can also allow this exact call once with /perm-approve.",
    tail: `Finish what you can without calls that need review, or stop and tell the user what is blocked. ${NO_ROUTE_AROUND}.`,
  },
  "held-effects": {
    heading: "the command's changes are held, not applied",
    label: "changes held",
    next: "The user can have exactly these changes applied, without running the command again, with /perm-approve (for 10 minutes).",
    tail: "Do not try to get the same effect another way; tell the user what is held.",
  },
  "network-refused": {
    heading: "network destination refused",
    label: "network refused",
    next: "The user can add the destination to sandbox.network.allow in their auto-mode.json.",
    tail: "",
  },
  "cannot-check": {
    heading: "auto mode cannot check it right now (a fault, not a risk judgement)",
    label: "cannot check",
    next: "The user can fix what is named above (pi-auto-mode doctor and /perm-enabled show auto mode's state); until then this call cannot run.",
    tail: TELL_USER,
  },
  reissue: {
    heading: "not admitted as it was issued (not a risk judgement)",
    label: "issue again",
    next: "Issue the call again as said above.",
    tail: "",
  },
};

export const DENIAL_CLASS_NAMES = Object.keys(DENIAL_CLASSES) as readonly DenialClass[];

export const POLICY_HEAD = "Blocked by auto mode's automatic policy (not by the user)";

/** The head line of a class's texts. */
export function denialHead(cls: DenialClass): string {
  return `${POLICY_HEAD}: ${DENIAL_CLASSES[cls].heading}.`;
}

const NEXT = "Next: ";

/**
 * A refusal of class `cls`: the head line, then `body` (why), then the next step (`next`, or the
 * class's own), then what the model is asked not to do.
 */
export function denial(cls: DenialClass, body: string, next?: string): string {
  const words = DENIAL_CLASSES[cls];
  const lines = [denialHead(cls), oneParagraph(body), `${NEXT}${oneParagraph(next ?? words.next)}`];
  if (words.tail) lines.push(words.tail);
  return lines.filter((l) => l !== "" && l !== NEXT).join("\n");
}

/** The class a text of ours opens with, or undefined for any other text. */
export function denialClassOf(text: string): DenialClass | undefined {
  const head = text.trimStart().split("\n", 1)[0]!.trim();
  return DENIAL_CLASS_NAMES.find((c) => head === denialHead(c));
}

/** The body of a denial text (why), for quoting it inside another one; any other text as it is. */
export function denialBody(text: string): string {
  if (denialClassOf(text) === undefined) return text.trim();
  const lines = text.trim().split("\n").slice(1);
  const next = lines.findIndex((l) => l.startsWith(NEXT));
  return (next < 0 ? lines : lines.slice(0, next)).join(" ").trim();
}

function oneParagraph(s: string): string {
  return s.replace(/\s*\n\s*/g, " ").trim();
}

/** The class of a deterministic deny, by its reason. */
export function denyClass(reason: ReasonCode): DenialClass {
  switch (reason) {
    case "user-deny-rule":
      return "deny-rule";
    case "config-fault":
    case "sandbox-unavailable":
    case "gate-error":
    case "untrusted-install":
      return "cannot-check";
    case "unsupported-input":
    case "uncontained-shell":
      return "reissue";
    default:
      // hard-deny, self-protection, and any reason a deny route gains later: never overridable.
      return "hard-deny";
  }
}

/** A call that needs a reviewer's judgment while none is set; `why` is what made review necessary. */
export function noReviewerDenial(why: string): string {
  return denial("no-reviewer", `Why it needs review: ${why.trim() || "auto mode's rules send it to review"}`);
}

/** A call the gate judged and no one may run here: its decision's own message, with what would have let it run. */
export function decisionDenial(d: Decision, configFault: boolean): string {
  if (configFault && (d.route === "review" || d.route === "sandbox"))
    return denial(
      "cannot-check",
      `Auto mode's configuration is at fault, so no call that needs review or the sandbox can run until the user fixes it (/perm-enabled shows what is wrong). ${d.message}`,
    );
  if (d.route === "review") return noReviewerDenial(d.message);
  if (d.route === "sandbox") return denial("cannot-check", `This call must run inside the OS sandbox, which is not available. ${d.message}`);
  if (d.reason === "uncontained-shell") return denial("reissue", d.message, "Run the command through the bash tool instead.");
  if (d.reason === "unsupported-input")
    return denial("reissue", d.message, "Issue the call again with input auto mode can judge (plain JSON within its limits).");
  return denial(denyClass(d.reason), d.message);
}

/** The gate threw while deciding: `detail` is already redacted and clipped. */
export function gateFailureDenial(detail: string): string {
  return denial("cannot-check", `Auto mode could not finish deciding this call (${detail || "an internal error"}), so it does not run.`);
}

/** The gate itself could not be loaded. */
export function gateLoadDenial(detail: string): string {
  return denial("cannot-check", `Auto mode could not load its gate (${detail}), so this call does not run.`);
}

/** A call judged beside another unfinished one; it can be issued again on its own. */
export function concurrentDenial(tool: string, other: { readonly tool: string; readonly mayChangeFiles: boolean }): string {
  const why = other.mayChangeFiles
    ? `the ${other.tool} call issued with it (not finished yet) may change files before this ${tool} call runs`
    : `this ${tool} call may change files the ${other.tool} call issued with it (not finished yet) was judged against`;
  return denial(
    "reissue",
    `Auto mode judges each call against the files as they are when it is judged, and ${why}, so that judgement could be stale. Nothing was run.`,
    "Issue this call again on its own, after the other call has finished.",
  );
}

/** An escalation request the gate cannot take as asked (`problem` says why). */
export function escalationInvalidDenial(problem: string): string {
  return denial("reissue", `${problem.trim().replace(/\.$/, "")}.`, "Correct the request as said above and issue it again.");
}

/**
 * An escalation that was not approved: `reason` is the denial that stopped it (any class), whose
 * class it keeps: an escalation of a hard deny is still a hard deny.
 */
export function escalationDenial(reason: string): string {
  const cls = denialClassOf(reason) ?? "cannot-check";
  const why = denialBody(reason);
  switch (cls) {
    // The command itself is denied: inside the sandbox too, so there is nothing to try there.
    case "hard-deny":
    case "deny-rule":
      return denial(cls, `This command asked to run outside the sandbox, but the command itself is denied wherever it runs: ${why} It did not run.`);
    case "reissue":
      return denial(cls, `This command asked to run outside the sandbox and was not admitted: ${why} It did not run.`);
    // The review this needed says itself that the command asked to leave the sandbox.
    case "no-reviewer":
      return denial(cls, `${why} It did not run.`, `Run it inside the sandbox without sandbox_permissions if that can work. ${DENIAL_CLASSES[cls].next}`);
    default:
      return denial(
        cls,
        `This command asked to run outside the sandbox, which needs a fresh review, and it was not approved: ${why} It did not run.`,
        `Run it inside the sandbox without sandbox_permissions if that can work. ${DENIAL_CLASSES[cls].next}`,
      );
  }
}

/** The bash tool found no ticket for the call, or two calls with one id, or another command than was judged. */
export function ticketDenial(problem: "missing" | "conflict" | "changed"): string {
  switch (problem) {
    case "missing":
      return denial("reissue", "This bash call did not pass auto mode's gate, so it does not run.");
    case "conflict":
      return denial("reissue", "Two tool calls share this id, so which one was judged is unclear; neither runs.", "Issue each call again on its own.");
    case "changed":
      return denial("reissue", "The command changed after it was judged, so it does not run.");
  }
}
