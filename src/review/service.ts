// One runtime's reviewer: the engine plus what spans reviews. The per-turn breaker, the shared
// concurrency limit (waiting counts against the deadline), and the registry of pending reviews
// so a session shutdown, a mode or reviewer change can abort them all.

import { breakerMessage, CLOSED, recordReview, type BreakerState } from "./breaker.ts";
import { DEFAULT_LIMITS, runReview, type EngineLimits, type OnAttempt, type ReviewerModels, type ReviewJob } from "./engine.ts";
import { processLimiter, type Limiter } from "./limiter.ts";
import { verdictAdmits, ZERO_USAGE, type FailureClass, type ReviewResult } from "./types.ts";

export interface ReviewServiceOptions {
  readonly limits?: Partial<EngineLimits>;
  readonly limiter?: Limiter;
  readonly now?: () => number;
  /** Told each reviewer model call as it ends (telemetry); it never changes a review. */
  readonly onAttempt?: OnAttempt;
}

export interface ReviewService {
  readonly limits: EngineLimits;
  /** `overrides` are the user's configured limits at the time of this review. */
  review(job: ReviewJob, models: ReviewerModels, signal: AbortSignal | undefined, overrides?: Partial<EngineLimits>): Promise<ReviewResult>;
  /** Abort every pending review of this runtime (shutdown, mode or reviewer change). */
  abortAll(reason: string): void;
  /** A new user turn: the breaker starts closed again. */
  newTurn(): void;
  breaker(): BreakerState;
  pending(): number;
}

/** Failures that say nothing about the model's proposals do not move the breaker. */
const NOT_COUNTED: ReadonlySet<FailureClass> = new Set(["aborted", "paused", "busy", "not-configured"]);

export function createReviewService(opts: ReviewServiceOptions = {}): ReviewService {
  const base: EngineLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const limiter = opts.limiter ?? processLimiter();
  const now = opts.now ?? (() => Date.now());
  const pending = new Set<AbortController>();
  let breaker: BreakerState = CLOSED;

  const failure = (job: ReviewJob, failure: FailureClass, detail: string, started: number): ReviewResult => ({
    kind: "failure",
    failure,
    detail,
    reviewer: job.reviewer,
    usage: ZERO_USAGE,
    attempts: 0,
    inputTokens: 0,
    durationMs: now() - started,
  });

  return {
    limits: base,
    breaker: () => breaker,
    pending: () => pending.size,
    newTurn() {
      breaker = CLOSED;
    },
    abortAll(reason) {
      for (const c of pending) c.abort(reason);
    },
    async review(job, models, signal, overrides) {
      const limits: EngineLimits = { ...base, ...overrides };
      const started = now();
      if (breaker.tripped) return failure(job, "paused", breakerMessage(breaker.tripped), started);
      const ctl = new AbortController();
      const onCaller = () => ctl.abort(signal?.reason ?? "interrupted");
      if (signal?.aborted) onCaller();
      else signal?.addEventListener("abort", onCaller, { once: true });
      pending.add(ctl);
      let result: ReviewResult;
      try {
        const slot = await limiter.acquire(ctl.signal, limits.deadlineMs);
        if (slot === "busy") result = failure(job, "busy", `${limiter.active} reviews running and ${limiter.queued} waiting`, started);
        else if (slot === "aborted") result = failure(job, "aborted", `cancelled: ${String(ctl.signal.reason ?? "aborted")}`, started);
        else if (slot === "timeout") result = failure(job, "timeout", "no review slot within the deadline", started);
        else {
          try {
            // The wait for a slot already spent part of the one aggregate deadline.
            const left = Math.max(1, limits.deadlineMs - (now() - started));
            result = await runReview(job, models, { ...limits, deadlineMs: left }, ctl.signal, undefined, opts.onAttempt);
            result = { ...result, durationMs: now() - started };
          } finally {
            slot();
          }
        }
      } finally {
        pending.delete(ctl);
        signal?.removeEventListener("abort", onCaller);
      }
      // An uncertain classifier judgment the user is about to be asked about is the user's to
      // decide: it moves the breaker neither way (the breaker stops a model probing the reviewer,
      // and here a person answers each probe).
      if (result.kind === "verdict" && result.classifier?.confirmation === "pending") return result;
      if (result.kind === "verdict") breaker = recordReview(breaker, !verdictAdmits(result.verdict));
      else if (!NOT_COUNTED.has(result.failure)) breaker = recordReview(breaker, true);
      return result;
    },
  };
}
