// The judgment-engine interface. Two engines judge a call the deterministic layer sent to review:
// the chat reviewer (a model's free verdict, chat-engine.ts) and the classifier engine (a
// classifier's probabilities for fixed conditions, classifier/engine.ts). Everything around them
// is one path, engine.ts's runReview: the aggregate deadline, the bounded attempts and which
// failures are retried, the provider's credentials, the failure classes (P5), the usage and the
// per-attempt reports; the service's breaker, limiter and aborts; the binding in grants/ (P8,
// bound to the engine too); the redaction of what leaves (P11), which each engine's input
// builder does on the way out. An engine only says what it sends, to which model, and what the
// answer means.

import type { EngineLimits, ReviewJob } from "./engine.ts";
import type { ReviewerModels } from "./models.ts";
import type { ClassifierJudgement, FailureClass, ReviewEngineKind, ReviewUsage, Verdict } from "./types.ts";

/** What runReview hands an engine for one model call. */
export interface AttemptContext {
  readonly signal: AbortSignal;
  readonly timestamp: number;
  /** For the provider's own timer: behind the aggregate deadline, so a deadline reads as a timeout. */
  readonly timeoutMs: number;
  /** Used for every HTTP request of the call, so runReview sees status and Retry-After itself. */
  readonly fetch: typeof globalThis.fetch;
  /** The previous answer was out of format: this is the one retry. */
  readonly formatRetry: boolean;
}

/** How one model call ended, in the engine's reading. */
export type AttemptOutcome =
  | {
      readonly kind: "verdict";
      readonly verdict: Verdict;
      readonly usage: Partial<ReviewUsage> | undefined;
      readonly classifier?: ClassifierJudgement;
    }
  | {
      /** An answer that cannot be used; `retry` when one more call with a reminder may help. */
      readonly kind: "out-of-format";
      readonly problem: string;
      readonly retry: boolean;
      readonly usage: Partial<ReviewUsage> | undefined;
      readonly classifier?: ClassifierJudgement;
    }
  | {
      /** The provider's stop: "aborted", "error", or any reason other than a complete answer. */
      readonly kind: "stopped";
      readonly stopReason: string;
      readonly errorMessage: string | undefined;
      readonly usage: Partial<ReviewUsage> | undefined;
    };

/** One job, made ready: the input built (and bounded), the model found. */
export type PreparedReview =
  | { readonly ok: false; readonly failure: FailureClass; readonly detail: string; readonly inputTokens: number }
  | {
      readonly ok: true;
      readonly inputTokens: number;
      /**
       * What a 2xx answer the provider's client could not read means: the chat reviewer's stream
       * arrived broken (provider-error); a classifier's body lacked answers (malformed).
       */
      readonly unreadableAnswer: FailureClass;
      attempt(ctx: AttemptContext): Promise<AttemptOutcome>;
    };

export interface JudgmentEngine {
  readonly kind: ReviewEngineKind;
  /** Build the input within the budget and resolve the model: no network, never throws on bad input. */
  prepare(job: ReviewJob, models: ReviewerModels, limits: EngineLimits): PreparedReview;
}

/** An input whose mandatory part alone is over the budget: nothing is sent. */
export function overBudget(input: { readonly mandatoryTokens: number; readonly budget: number }): PreparedReview {
  return {
    ok: false,
    failure: "over-budget",
    detail: `the mandatory input needs ${input.mandatoryTokens} tokens; the budget is ${input.budget}`,
    inputTokens: 0,
  };
}
