// The review engine: one action in, a verdict or a failure class out (P5, P13). Which model is
// asked and what its answer means is the judgment engine's (engine-types.ts: the chat reviewer,
// or the classifier engine); everything below is the same for both.
//
// - One aggregate deadline covers model resolution, auth, every attempt and every wait.
// - At most `maxAttempts` model calls. Only connection failures, 429 and temporary 5xx are
//   retried, after a short backoff or the provider's Retry-After when that is at most 5 s and
//   still inside the deadline. A valid verdict (deny included), an abort, a timeout, an auth or
//   model error is never retried. A reply out of format gets one retry with a fixed reminder.
// - Pi's model calls return errors instead of throwing: anything but a clean `stop` with exactly
//   one verdict object is a failure, and every failure denies.
//
// HTTP status and Retry-After are observed through the `fetch` option that pi-ai's HTTP
// adapters accept, so the decision to retry rests on what actually happened on the wire, not on
// the wording of an error message. Adapters that do not use `fetch` fall back to the message.

import { redact } from "../request/redact.ts";
import { clipHead, DEFAULT_BUDGET, type TokenBudget } from "./budget.ts";
import { chatEngine } from "./chat-engine.ts";
import type { ClassifierSettings } from "./classifier/conditions.ts";
import { classifierEngine } from "./classifier/engine.ts";
import type { JudgmentEngine } from "./engine-types.ts";
import type { ActionForReview } from "./input.ts";
import type { ReviewerModels } from "./models.ts";
import type { TranscriptItem } from "./transcript.ts";
import {
  addUsage,
  engineOf,
  ZERO_USAGE,
  type ClassifierJudgement,
  type FailureClass,
  type ReviewEngineKind,
  type ReviewerId,
  type ReviewResult,
  type ReviewUsage,
} from "./types.ts";

export type { ReviewerModels } from "./models.ts";

export interface EngineLimits {
  readonly budget: TokenBudget;
  readonly deadlineMs: number;
  readonly maxAttempts: number;
  /** First backoff when the provider names no Retry-After; doubles per retry. */
  readonly retryBaseMs: number;
  /** A provider asking for a longer wait than this is treated as unavailable. */
  readonly maxRetryAfterMs: number;
  /** The classifier engine's thresholds and opt-in, from the user's configuration only. */
  readonly classifier?: ClassifierSettings;
}

export const DEFAULT_LIMITS: EngineLimits = {
  budget: DEFAULT_BUDGET,
  deadlineMs: 90_000,
  maxAttempts: 3,
  retryBaseMs: 500,
  maxRetryAfterMs: 5000,
};

export interface ReviewJob {
  readonly action: ActionForReview;
  readonly transcript: readonly TranscriptItem[];
  readonly reviewer: ReviewerId | undefined;
  /** The user can be asked now about an uncertain classifier judgment (a UI, and the opt-in). */
  readonly canConfirm?: boolean;
}

/** The engine that judges for a reviewer: its engine field picks it (P8 binds verdicts to it). */
export const ENGINES: Readonly<Record<ReviewEngineKind, JudgmentEngine>> = { chat: chatEngine, classifier: classifierEngine };

export interface EngineClock {
  now(): number;
}

const SYSTEM_CLOCK: EngineClock = { now: () => Date.now() };

/** How one model call of a review ended (telemetry): numbers and classes only, never its text. */
export interface AttemptReport {
  /** 1 for the first call. */
  readonly attempt: number;
  /** "retry": this call failed and another one follows. */
  readonly status: "verdict" | "retry" | "failure";
  readonly failure?: FailureClass;
  readonly durationMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** Told each model call as it ends; whatever it throws is ignored. */
export type OnAttempt = (report: AttemptReport) => void;

/** Temporary server conditions: worth one more try. */
const TEMPORARY_5XX = new Set([500, 502, 503, 504, 529]);

interface HttpObservation {
  requested: boolean;
  status: number | undefined;
  retryAfterMs: number | undefined;
  /** The request or the response body failed below HTTP (reset, refused, DNS...). */
  transportError: boolean;
}

function parseRetryAfter(headers: Headers, now: number): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && Number.isFinite(Number.parseFloat(ms))) return Math.max(0, Number.parseFloat(ms));
  const ra = headers.get("retry-after");
  if (ra === null) return undefined;
  const seconds = Number(ra.trim());
  if (ra.trim() !== "" && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(ra);
  // An unreadable Retry-After is not a permission to retry at once: treat it as too long.
  return Number.isFinite(date) ? Math.max(0, date - now) : Number.POSITIVE_INFINITY;
}

/** A fetch that records what happened, for the retry decision. The request itself is unchanged. */
function observingFetch(obs: HttpObservation, clock: EngineClock): typeof globalThis.fetch {
  return async (input, init) => {
    obs.requested = true;
    let res: Response;
    try {
      res = await globalThis.fetch(input, init);
    } catch (e) {
      if (!init?.signal?.aborted) obs.transportError = true;
      throw e;
    }
    obs.status = res.status;
    obs.retryAfterMs = parseRetryAfter(res.headers, clock.now());
    if (!res.ok || !res.body) return res;
    // Pass the body through unchanged, noting whether it broke off (a reset mid-stream) as
    // opposed to arriving whole but unreadable (a provider fault, not worth retrying).
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const r = await reader.read();
          if (r.done) controller.close();
          else controller.enqueue(r.value);
        } catch (e) {
          if (!init?.signal?.aborted) obs.transportError = true;
          controller.error(e);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

interface Classified {
  readonly failure: FailureClass;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
}

function classifyStatus(status: number): Classified | undefined {
  if (status === 429) return { failure: "rate-limited", retryable: true, retryAfterMs: undefined };
  if (TEMPORARY_5XX.has(status)) return { failure: "provider-error", retryable: true, retryAfterMs: undefined };
  if (status === 401 || status === 403) return { failure: "auth", retryable: false, retryAfterMs: undefined };
  if (status === 404) return { failure: "model-unavailable", retryable: false, retryAfterMs: undefined };
  if (status >= 400) return { failure: "provider-error", retryable: false, retryAfterMs: undefined };
  return undefined;
}

/** Why an error answer failed, and whether another attempt may help. */
export function classifyError(message: string, obs: HttpObservation | undefined): Classified {
  if (obs?.requested) {
    if (obs.transportError) return { failure: "connection", retryable: true, retryAfterMs: undefined };
    const byStatus = obs.status === undefined ? undefined : classifyStatus(obs.status);
    if (byStatus) return { ...byStatus, retryAfterMs: byStatus.retryable ? obs.retryAfterMs : undefined };
    // A 2xx answer that ended in an error: the stream arrived but was not a valid reply.
    if (obs.status !== undefined) return { failure: "provider-error", retryable: false, retryAfterMs: undefined };
  }
  // No HTTP seen (an adapter without `fetch`, or a failure before the request): the message.
  if (/provider is not configured|no api key|api key (is )?(missing|invalid)|unauthori[sz]ed|authentication/i.test(message))
    return { failure: "auth", retryable: false, retryAfterMs: undefined };
  const status = /^\s*(\d{3})\b|\((\d{3})\)|\bstatus(?: code)?:? (\d{3})\b/i.exec(message);
  const code = status ? Number(status[1] ?? status[2] ?? status[3]) : undefined;
  const byStatus = code === undefined ? undefined : classifyStatus(code);
  if (byStatus) return byStatus;
  if (/connection error|econnreset|econnrefused|enotfound|etimedout|epipe|socket hang up|fetch failed|network error|terminated/i.test(message))
    return { failure: "connection", retryable: true, retryAfterMs: undefined };
  return { failure: "provider-error", retryable: false, retryAfterMs: undefined };
}

const ABORTED = Symbol("aborted");

/**
 * Review one action. Never throws: a bug becomes the `internal` failure, which denies.
 * `signal` is the caller's: Esc (ctx.signal), session shutdown, a mode or reviewer change.
 */
export async function runReview(
  job: ReviewJob,
  models: ReviewerModels,
  limits: EngineLimits = DEFAULT_LIMITS,
  signal?: AbortSignal,
  clock: EngineClock = SYSTEM_CLOCK,
  onAttempt?: OnAttempt,
): Promise<ReviewResult> {
  const started = clock.now();
  const deadlineAt = started + limits.deadlineMs;
  const ctl = new AbortController();
  let cause: "deadline" | "caller" | undefined;
  const timer = setTimeout(() => {
    cause ??= "deadline";
    ctl.abort();
  }, limits.deadlineMs);
  const onCaller = () => {
    cause ??= "caller";
    ctl.abort();
  };
  if (signal?.aborted) onCaller();
  else signal?.addEventListener("abort", onCaller, { once: true });

  let usage: ReviewUsage = ZERO_USAGE;
  let attempts = 0;
  let inputTokens = 0;
  const reviewer = job.reviewer;
  // The model call in progress, reported once when it ends (a failure while one is open is its end).
  let open: { started: number; usage: Partial<ReviewUsage> | undefined } | undefined;
  const ended = (status: AttemptReport["status"], failure?: FailureClass) => {
    const a = open;
    open = undefined;
    if (!a || !onAttempt) return;
    try {
      onAttempt({
        attempt: attempts,
        status,
        ...(failure ? { failure } : {}),
        durationMs: clock.now() - a.started,
        inputTokens: a.usage?.input ?? 0,
        outputTokens: a.usage?.output ?? 0,
      });
    } catch {
      // An observer never changes a review.
    }
  };
  const fail = (failure: FailureClass, detail: string, classifier?: ClassifierJudgement): ReviewResult => {
    ended("failure", failure);
    return {
      kind: "failure",
      failure,
      detail: clipHead(redact(detail), 300),
      reviewer,
      usage,
      attempts,
      inputTokens,
      durationMs: clock.now() - started,
      ...(classifier ? { classifier } : {}),
    };
  };
  const stopped = (): ReviewResult =>
    cause === "deadline" ? fail("timeout", `no verdict within ${limits.deadlineMs} ms`) : fail("aborted", `cancelled: ${String(signal?.reason ?? "aborted")}`);
  /** Wait for `p`, or stop waiting when the deadline passes or the caller aborts. */
  const bounded = <T>(p: Promise<T>): Promise<T | typeof ABORTED> =>
    ctl.signal.aborted
      ? Promise.resolve(ABORTED)
      : new Promise((resolve, reject) => {
          const onAbort = () => resolve(ABORTED);
          ctl.signal.addEventListener("abort", onAbort, { once: true });
          p.then(
            (v) => {
              ctl.signal.removeEventListener("abort", onAbort);
              resolve(v);
            },
            (e: unknown) => {
              ctl.signal.removeEventListener("abort", onAbort);
              reject(e);
            },
          );
        });
  const sleep = (ms: number) => bounded(new Promise<void>((r) => setTimeout(r, ms)));

  try {
    if (!reviewer) return fail("not-configured", "no reviewer model is configured");
    const prepared = ENGINES[engineOf(reviewer)].prepare(job, models, limits);
    inputTokens = prepared.inputTokens;
    if (!prepared.ok) return fail(prepared.failure, prepared.detail);
    if (ctl.signal.aborted) return stopped();
    const auth = await bounded(models.getProviderAuth(reviewer.provider));
    if (auth === ABORTED) return stopped();
    if (auth === undefined) return fail("auth", `provider ${reviewer.provider} has no credentials`);

    let formatRetry = false;
    let backoffs = 0;
    while (attempts < limits.maxAttempts) {
      if (ctl.signal.aborted) return stopped();
      attempts++;
      open = { started: clock.now(), usage: undefined };
      const obs: HttpObservation = { requested: false, status: undefined, retryAfterMs: undefined, transportError: false };
      const ctx = {
        timestamp: clock.now(),
        signal: ctl.signal,
        // The SDK's own timer stays behind ours, so a deadline reads as a timeout, not an error.
        timeoutMs: Math.max(1, deadlineAt - clock.now()) + 1000,
        fetch: observingFetch(obs, clock),
        formatRetry,
      };
      const msg = await bounded(Promise.resolve().then(() => prepared.attempt(ctx)));
      if (msg === ABORTED) return stopped();
      usage = addUsage(usage, msg.usage);
      open.usage = msg.usage;
      if (ctl.signal.aborted) return stopped();
      if (msg.kind === "verdict") {
        ended("verdict");
        return {
          kind: "verdict",
          verdict: msg.verdict,
          reviewer,
          usage,
          attempts,
          inputTokens,
          durationMs: clock.now() - started,
          ...(msg.classifier ? { classifier: msg.classifier } : {}),
        };
      }
      if (msg.kind === "out-of-format") {
        if (msg.retry && !formatRetry && attempts < limits.maxAttempts) {
          ended("retry", "malformed");
          formatRetry = true;
          continue;
        }
        return fail("malformed", msg.problem, msg.classifier);
      }
      if (msg.stopReason === "aborted") return fail("aborted", "the provider reported the request as aborted");
      if (msg.stopReason !== "error") return fail("malformed", `the reply ended with stop reason ${msg.stopReason}`);
      const seen = classifyError(msg.errorMessage ?? "", obs);
      // A complete 2xx answer the client could not read: what that means is the engine's to say.
      const unreadable = obs.requested && !obs.transportError && obs.status !== undefined && obs.status < 300 && seen.failure === "provider-error";
      const c = unreadable ? { failure: prepared.unreadableAnswer, retryable: false, retryAfterMs: undefined } : seen;
      const detail = `${c.failure}${obs.status === undefined ? "" : ` (HTTP ${obs.status})`}: ${msg.errorMessage ?? "no error message"}`;
      if (!c.retryable || attempts >= limits.maxAttempts) return fail(c.failure, detail);
      if (c.retryAfterMs !== undefined && c.retryAfterMs > limits.maxRetryAfterMs)
        return fail(c.failure, `${detail}; Retry-After ${Math.round(c.retryAfterMs)} ms is longer than ${limits.maxRetryAfterMs} ms`);
      const wait = c.retryAfterMs ?? limits.retryBaseMs * 2 ** backoffs++;
      if (clock.now() + wait >= deadlineAt) return fail(c.failure, `${detail}; waiting ${Math.round(wait)} ms would pass the deadline`);
      ended("retry", c.failure);
      if ((await sleep(wait)) === ABORTED) return stopped();
    }
    return fail("internal", "attempt loop ended without a result");
  } catch (e) {
    return fail("internal", e instanceof Error ? e.message : String(e));
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onCaller);
  }
}
