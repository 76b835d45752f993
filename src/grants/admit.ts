// From a `review` route to an admission: bind, review, check the binding again, admit or deny.
// Pi-free: the tool-call gate passes in what it read from Pi (the transcript, the model
// registry, the abort signal) and a function that re-reads the binding facts.

import { isSandboxed, type Decision } from "../policy/types.ts";
import type { CanonicalRequest } from "../request/canonical.ts";
import { redact } from "../request/redact.ts";
import { clipHead } from "../review/budget.ts";
import { escapeHidden } from "./action-view.ts";
import { bindingChange, type BindingNow, type ReviewBinding } from "./binding.ts";
import type { EngineLimits, ReviewerModels } from "../review/engine.ts";
import { bindingDenialText, failureDenialText, verdictDenialText } from "../review/failure.ts";
import type { ActionForReview } from "../review/input.ts";
import type { ReviewService } from "../review/service.ts";
import type { TranscriptItem } from "../review/transcript.ts";
import { type ConditionRecord, reviewerLabel, verdictAdmits, ZERO_USAGE, type ReviewResult } from "../review/types.ts";

export interface ReviewCall {
  readonly toolCallId: string;
  readonly parentToolCallId: string | undefined;
  readonly request: CanonicalRequest;
  /** The deterministic decision that routed the call to review. */
  readonly decision: Decision;
  readonly transcript: readonly TranscriptItem[];
}

export interface AdmitEnv {
  readonly service: ReviewService;
  readonly models: ReviewerModels;
  readonly signal: AbortSignal | undefined;
  /** Re-read global state, session state and backend, and re-canonicalize the call as it is now. */
  readonly bindingNow: () => Promise<BindingNow>;
  /** The user's configured reviewer limits (budget, deadline), read at this gate. */
  readonly limits?: Partial<EngineLimits>;
  /** Shows the current check (a status line when a UI exists); text is already redacted. */
  readonly status?: (text: string) => void;
  /**
   * Asks the user once about an uncertain classifier judgment (P4's one exception): given only
   * when a UI exists. The engine asks for it only when the user's own configuration opted in.
   */
  readonly confirm?: ConfirmUncertain;
}

/** What the user is shown when asked about an uncertain judgment; true allows the call once. */
export interface UncertainQuestion {
  readonly target: string;
  readonly reviewer: string;
  readonly conditions: readonly ConditionRecord[];
  readonly rationale: string;
}
export type ConfirmUncertain = (q: UncertainQuestion, signal: AbortSignal | undefined) => Promise<boolean>;

/** The one question about an uncertain judgment: the user's answer decides; no answer, an error or an abort denies. */
async function confirmOnce(review: ReviewResult & { kind: "verdict" }, env: AdmitEnv, target: string): Promise<ReviewResult> {
  const c = review.classifier!;
  const settle = (allowed: boolean, note: string): ReviewResult => ({
    ...review,
    verdict: { ...review.verdict, outcome: allowed ? "allow" : "deny", rationale: `${review.verdict.rationale} ${note}` },
    classifier: { ...c, confirmation: allowed ? "asked-allowed" : env.confirm ? "asked-denied" : "not-asked" },
  });
  if (!env.confirm || env.signal?.aborted) return settle(false, "No one could be asked, so it is denied.");
  let yes = false;
  try {
    yes =
      (await env.confirm(
        { target, reviewer: review.reviewer ? reviewerLabel(review.reviewer) : "none", conditions: c.conditions, rationale: review.verdict.rationale },
        env.signal,
      )) === true;
  } catch {
    yes = false;
  }
  if (env.signal?.aborted) yes = false;
  return settle(yes, yes ? "The user allowed it when asked." : "The user did not allow it when asked.");
}

/**
 * The result of a review route. `run` says how an admitted call runs: a reviewer's allow never
 * removes containment (P7), so a bash call under the sandboxed backend still runs sandboxed.
 */
export type ReviewAdmission =
  | { readonly kind: "admit"; readonly run: "direct" | "sandbox"; readonly review: ReviewResult; readonly binding: ReviewBinding }
  | {
      readonly kind: "deny";
      readonly text: string;
      readonly review: ReviewResult | undefined;
      readonly binding: ReviewBinding | undefined;
      readonly changed: string | undefined;
    };

export function actionForReview(call: ReviewCall): ActionForReview {
  return {
    canonical: call.request.canonical,
    tool: call.request.tool,
    input: call.request.input,
    paths: call.request.paths,
    gateReason: call.decision.reason,
    gateNote: call.decision.message,
    toolCallId: call.toolCallId,
    parentToolCallId: call.parentToolCallId,
  };
}

/**
 * A short, redacted name for what is being checked: the command's first line, the path or the
 * tool, hidden characters escaped (no ESC or CR reaches a terminal from it). A list that shows it
 * says what it leaves out (action-view.ts compactNote); an approval shows the whole action.
 */
export function targetSummary(request: CanonicalRequest): string {
  const input = request.input as Record<string, unknown> | null;
  const command = request.tool === "bash" && typeof input?.command === "string" ? input.command.split("\n")[0]! : undefined;
  const what = command ?? request.paths[0]?.raw ?? "";
  return clipHead(escapeHidden(redact(`${request.tool}${what ? ` ${what}` : ""}`)), 80);
}

export function outcomeLine(r: ReviewResult): string {
  const tokens = r.usage.totalTokens || r.usage.input + r.usage.output;
  const cost = r.usage.cost.total > 0 ? ` · $${r.usage.cost.total.toFixed(4)}` : "";
  const took = `${(r.durationMs / 1000).toFixed(1)} s`;
  const extra = r.attempts > 1 ? ` · ${r.attempts} calls` : "";
  if (r.kind === "verdict") {
    const word = verdictAdmits(r.verdict) ? "allowed" : "denied";
    return `${word} (${r.verdict.risk_level} risk): ${clipHead(r.verdict.rationale, 120)} · ${tokens} tokens${cost} · ${took}${extra}`;
  }
  return `not reviewed (${r.failure}) · ${tokens} tokens${cost} · ${took}${extra}`;
}

export async function reviewAndAdmit(call: ReviewCall, env: AdmitEnv): Promise<ReviewAdmission> {
  const before = await env.bindingNow();
  const target = targetSummary(call.request);
  const reviewer = before.reviewer;
  const job = { action: actionForReview(call), transcript: call.transcript, reviewer, canConfirm: env.confirm !== undefined };
  const refuse = (text: string, failure: "not-configured" | "internal"): ReviewAdmission => ({
    kind: "deny",
    text,
    review: { kind: "failure", failure, detail: text, reviewer, usage: ZERO_USAGE, attempts: 0, inputTokens: 0, durationMs: 0 },
    binding: undefined,
    changed: undefined,
  });
  // Nothing to bind a verdict to: no model is asked.
  if (before.hash !== call.request.hash) return refuse(bindingDenialText("the call's arguments"), "internal");
  if (!reviewer) return refuse(failureDenialText("not-configured", call.decision.message), "not-configured");
  // Global state turned faulty after the gate read it: nothing trustworthy to bind to.
  if (before.globalRevision === undefined) return refuse(bindingDenialText("the auto-mode settings"), "internal");
  const binding: ReviewBinding = {
    hash: call.request.hash,
    reviewer,
    endpoint: before.endpoint,
    globalRevision: before.globalRevision,
    sessionRevision: before.sessionRevision,
    backend: before.backend,
  };
  env.status?.(redact(`auto-mode: reviewing ${target} · ${reviewerLabel(reviewer)}`));
  let review = await env.service.review(job, env.models, env.signal, env.limits);
  if (review.kind === "verdict" && review.classifier?.confirmation === "pending") review = await confirmOnce(review, env, target);
  env.status?.(redact(`auto-mode: ${target} ${outcomeLine(review)}`));
  if (review.kind === "failure") return { kind: "deny", text: failureDenialText(review.failure, call.decision.message), review, binding, changed: undefined };
  if (!verdictAdmits(review.verdict)) return { kind: "deny", text: verdictDenialText(review.verdict), review, binding, changed: undefined };
  // The linearization point: the verdict is checked against the world as it is now.
  const changed = bindingChange(binding, await env.bindingNow());
  if (changed) return { kind: "deny", text: bindingDenialText(changed), review, binding, changed };
  // An allow never removes containment (P7): a bash call under a sandboxed backend runs sandboxed.
  const run = call.request.tool === "bash" && isSandboxed(binding.backend) ? "sandbox" : "direct";
  return { kind: "admit", run, review, binding };
}
