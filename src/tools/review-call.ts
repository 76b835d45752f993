// The Pi edge of the reviewer: what the tool-call gate hands to review/ for a call routed to
// `review`. Reads the session transcript, Pi's model registry and the abort signal from the
// context, re-reads the binding facts right before admission, shows the current check in the
// check widget, owes the reviewer's usage to the call's result, and keeps a redacted record.

import type { ExtensionContext, ToolCallEvent } from "@earendil-works/pi-coding-agent";
import type { HeldReviewer } from "../sandbox/effects/settle.ts";
import { denialBody } from "../policy/denial.ts";
import { buildRequest } from "../request/canonical.ts";
import type { GateResult } from "../policy/gate.ts";
import type { Decision } from "../policy/types.ts";
import type { CanonicalRequest } from "../request/canonical.ts";
import { reviewAndAdmit, targetSummary, type ReviewAdmission, type UncertainQuestion } from "../grants/admit.ts";
import { redact } from "../request/redact.ts";
import { PROMPT_SHA256 } from "../review/prompt.ts";
import type { EngineLimits } from "../review/engine.ts";
import type { ReviewService } from "../review/service.ts";
import { transcriptFromEntries, type UserProvenanceOf } from "../review/transcript.ts";
import {
  type ClassifierJudgement,
  engineOf,
  type ReviewEngineKind,
  reviewerLabel,
  verdictAdmits,
  ZERO_USAGE,
  type FailureClass,
  type ReviewerId,
  type ReviewResult,
  type ReviewUsage,
  type Verdict,
} from "../review/types.ts";
import type { UsageLedger } from "../review/usage-ledger.ts";
import { piReviewerModels, reviewerEndpoint } from "./reviewer-models.ts";
import { readEnabled, readRevision } from "../state/global.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import type { CheckWidget } from "../ui/check-widget.ts";
import type { Decided, ReviewSummary } from "../ui/checks.ts";

export const REVIEW_ENTRY_TYPE = "pi-auto-mode/review";

/** The redacted record of one review, kept as a custom session entry (never sent to the model). */
export interface ReviewRecord {
  readonly toolCallId: string;
  readonly hash: string;
  readonly reviewer: ReviewerId | undefined;
  readonly admitted: boolean;
  readonly run: "direct" | "sandbox" | null;
  readonly verdict: Verdict | null;
  readonly failure: FailureClass | null;
  /** Redacted, for the user; never shown to the model. */
  readonly detail: string | null;
  /** What changed between review and admission, when that denied the call (P8). */
  readonly bindingChanged: string | null;
  readonly usage: ReviewUsage;
  readonly attempts: number;
  readonly inputTokens: number;
  readonly durationMs: number;
  readonly promptSha256: string;
  readonly at: number;
  /** Which engine judged: the chat reviewer or the classifier (null when no reviewer was set). */
  readonly engine?: ReviewEngineKind | null;
  /**
   * The classifier engine's conditions: each one's probability, thresholds and band, the one that
   * decided, whether the user's request cleared it, and any confirmation (null for the chat engine).
   */
  readonly classifier?: ClassifierJudgement | null;
}

export interface ReviewGateCall {
  readonly event: Pick<ToolCallEvent, "toolCallId" | "parentToolCallId">;
  readonly ctx: ExtensionContext;
  readonly request: CanonicalRequest;
  readonly decision: Decision;
  /** The gate's decision for the call as its input is now (for the binding check). */
  readonly rejudge: () => GateResult;
  /** The user's configured reviewer limits, read with the rest of the configuration at this gate. */
  readonly limits?: Partial<EngineLimits>;
}

export type ReviewHook = (call: ReviewGateCall) => Promise<ReviewAdmission>;

export interface ReviewHookDeps {
  readonly runtime: RuntimeState;
  readonly service: ReviewService;
  readonly ledger: UsageLedger;
  readonly record: (r: ReviewRecord) => void;
  /** Shows the review while it runs and its outcome (the TUI's check widget). */
  readonly checks?: CheckWidget;
  /** Who wrote each user message (user-provenance.ts): only what the user typed is intent (P10). */
  readonly provenanceOf: UserProvenanceOf;
}

export function createReviewHook(deps: ReviewHookDeps): ReviewHook {
  return async ({ event, ctx, request, decision, rejudge, limits }) => {
    // The widget shows a review from the moment the model is asked, not for a call refused before
    // (no reviewer, a changed binding): the gate's record shows those as denials.
    let check: number | undefined;
    const service: ReviewService = {
      limits: deps.service.limits,
      review: (job, models, signal, overrides) => {
        if (deps.checks && job.reviewer)
          check = deps.checks.beginReview(ctx, event.toolCallId, {
            subject: targetSummary(request),
            route: decision.route,
            reason: decision.reason,
            reviewer: reviewerLabel(job.reviewer),
          });
        return deps.service.review(job, models, signal, overrides);
      },
      abortAll: (reason) => deps.service.abortAll(reason),
      newTurn: () => deps.service.newTurn(),
      breaker: () => deps.service.breaker(),
      pending: () => deps.service.pending(),
    };
    const admission = await reviewAndAdmit(
      {
        toolCallId: event.toolCallId,
        parentToolCallId: event.parentToolCallId,
        request,
        decision,
        transcript: transcriptFromEntries(ctx.sessionManager.getBranch(), deps.provenanceOf),
      },
      {
        service,
        models: piReviewerModels(ctx.modelRegistry),
        signal: ctx.signal,
        // The one dialog an action decision may open (P4): only with a UI; the engine asks for it
        // only when the user's own configuration set review.classifier.confirmUncertain.
        ...(ctx.hasUI ? { confirm: (q: UncertainQuestion, signal: AbortSignal | undefined) => askUncertain(ctx, q, signal) } : {}),
        ...(limits ? { limits } : {}),
        bindingNow: async () => {
          const g = await deps.runtime.global.read();
          const now = rejudge();
          const reviewer = g.kind === "fault" ? undefined : g.snapshot.reviewer;
          return {
            hash: now.decision.route === "review" ? now.request?.hash : undefined,
            reviewer,
            endpoint: await reviewerEndpoint(ctx.modelRegistry, reviewer),
            globalRevision: readRevision(g),
            sessionRevision: deps.runtime.session().revision,
            backend: deps.runtime.backend(),
            auto: readEnabled(g) && deps.runtime.session().requested === "auto",
          };
        },
      },
    );
    const review = admission.review;
    if (check !== undefined && review) deps.checks?.endReview(ctx, check, reviewedCheck(admission, review, decision));
    if (review) deps.ledger.add(event.toolCallId, review.usage);
    deps.record({
      toolCallId: event.toolCallId,
      hash: request.hash,
      reviewer: review?.reviewer,
      admitted: admission.kind === "admit",
      run: admission.kind === "admit" ? admission.run : null,
      verdict: review?.kind === "verdict" ? review.verdict : null,
      failure: review?.kind === "failure" ? review.failure : null,
      detail: review?.kind === "failure" ? review.detail : null,
      bindingChanged: admission.kind === "deny" ? (admission.changed ?? null) : null,
      usage: review?.usage ?? ZERO_USAGE,
      attempts: review?.attempts ?? 0,
      inputTokens: review?.inputTokens ?? 0,
      durationMs: review?.durationMs ?? 0,
      promptSha256: PROMPT_SHA256,
      at: Date.now(),
      engine: review?.reviewer ? engineOf(review.reviewer) : null,
      classifier: review?.classifier ?? null,
    });
    return admission;
  };
}

/** The one question about an uncertain classifier judgment, with every condition shown. */
function askUncertain(ctx: ExtensionContext, q: UncertainQuestion, signal: AbortSignal | undefined): Promise<boolean> {
  const lines = q.conditions.map(
    (c) =>
      `  ${c.id} (${c.severity}): ${c.probability === null ? "no answer" : c.probability.toFixed(2)} → ${c.band} (satisfied ≥ ${c.satisfiedAt}, rejected ≤ ${c.rejectedAt})`,
  );
  const message = redact([`${q.target}`, `The classifier ${q.reviewer} is uncertain about this call:`, ...lines, "", "Allow it to run once?"].join("\n"));
  return ctx.ui.confirm("auto mode: allow this call?", message, signal ? { signal } : undefined);
}

/** A review's outcome as the check widget shows it. */
function reviewedCheck(admission: ReviewAdmission, review: ReviewResult, decision: Decision): Decided {
  const summary: ReviewSummary = {
    reviewer: review.reviewer ? reviewerLabel(review.reviewer) : "none",
    ...(review.kind === "verdict"
      ? { verdict: verdictAdmits(review.verdict) ? "allow" : "deny", risk: review.verdict.risk_level, rationale: review.verdict.rationale }
      : { failure: review.failure }),
    tokens: review.usage.totalTokens || review.usage.input + review.usage.output,
    costUsd: review.usage.cost.total,
    durationMs: review.durationMs,
  };
  const denied = admission.kind === "deny";
  return {
    route: decision.route,
    reason: decision.reason,
    outcome: admission.kind === "admit" ? (admission.run === "sandbox" ? "sandboxed" : "allowed") : "denied",
    message: denied ? denialBody(admission.text) : decision.message,
    review: summary,
    ...(denied && admission.changed ? { note: `not admitted: ${admission.changed} changed during the review` } : {}),
  };
}

/**
 * The reviewer for a staged command's held effects: the same review path (budget, deadline,
 * breaker, binding, redaction, usage, record) with the action being "apply these effects of this
 * command", so the verdict is bound to exactly that summary (P8).
 */
export function heldEffectsReviewer(
  hook: ReviewHook,
  call: { readonly toolCallId: string; readonly ctx: ExtensionContext; readonly home: string },
): HeldReviewer {
  return {
    review: async ({ command, summary }) => {
      const built = buildRequest("bash", { command, held_effects: summary }, call.ctx.cwd, call.home);
      if (!built.ok) return { allow: false, rationale: `the held effects cannot be put to the reviewer (${built.reason})` };
      const decision: Decision = {
        route: "review",
        reason: "held-effects",
        message: `The command already ran on a staged copy of the workspace. Applying its effects would: ${summary}`,
      };
      const request = built.request;
      const admission = await hook({
        event: { toolCallId: call.toolCallId, parentToolCallId: undefined },
        ctx: call.ctx,
        request,
        decision,
        rejudge: () => ({ request, judgement: undefined, decision }),
      });
      if (admission.kind === "admit") return { allow: true, rationale: admission.review.kind === "verdict" ? admission.review.verdict.rationale : "approved" };
      const noReviewer = admission.review?.kind === "failure" && admission.review.failure === "not-configured";
      return { allow: false, rationale: denialBody(admission.text), ...(noReviewer ? { noReviewer: true } : {}) };
    },
  };
}
