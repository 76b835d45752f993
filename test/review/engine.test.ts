// The review engine through Pi's real ModelRegistry and the faux provider: the verdict matrix,
// the format retry, which failures are retried, the deadline, aborts, and what never reaches the
// model (P5, P13).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fauxAssistantMessage, fauxThinking, fauxText, type Context } from "@earendil-works/pi-ai";
import { runReview, DEFAULT_LIMITS, type EngineLimits } from "../../src/review/engine.ts";
import { failureDenialText, verdictDenialText } from "../../src/review/failure.ts";
import { SCHEMA_REMINDER } from "../../src/review/prompt.ts";
import { THINKING_LEVELS, type FailureClass, type ReviewResult } from "../../src/review/types.ts";
import { action, fauxRegistry, JUDGE, makeRegistry, tempAgentDir, userText, VERDICT } from "../helpers/review-fixtures.ts";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

const FAST: EngineLimits = { ...DEFAULT_LIMITS, retryBaseMs: 1 };
const job = (reviewer = JUDGE) => ({
  action: action("bash", { command: "rm -rf build/cache" }),
  transcript: [{ kind: "user" as const, text: "clear build/cache" }],
  reviewer,
});
const err = (message: string) => fauxAssistantMessage([], { stopReason: "error", errorMessage: message });

function failureOf(r: ReviewResult): FailureClass | undefined {
  return r.kind === "failure" ? r.failure : undefined;
}

describe("P5: the verdict matrix through the faux provider", () => {
  test("a valid allow is a verdict after one call, with the model's usage", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    const r = await runReview(job(), piReviewerModels(registry), FAST);
    assert.equal(r.kind, "verdict");
    assert.equal(r.kind === "verdict" && r.verdict.outcome, "allow");
    assert.equal(r.attempts, 1);
    assert.ok(r.usage.input > 0 && r.usage.output > 0, "usage is reported");
    assert.ok(r.inputTokens > 0);
  });

  test("a valid deny is final: never retried", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage(VERDICT.deny), fauxAssistantMessage(VERDICT.allow)]);
    const r = await runReview(job(), piReviewerModels(registry), FAST);
    assert.equal(r.kind === "verdict" && r.verdict.outcome, "deny");
    assert.equal(faux.state.callCount, 1);
    assert.match(verdictDenialText(r.kind === "verdict" ? r.verdict : (undefined as never)), /never asked to delete/);
  });

  test("thinking blocks are ignored; only the text is the verdict", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage([fauxThinking("let me think"), fauxText(VERDICT.allow)])]);
    const r = await runReview(job(), piReviewerModels(registry), FAST);
    assert.equal(r.kind, "verdict");
  });

  test("out of format once: one retry with the fixed schema reminder, then the verdict", async () => {
    const { registry, faux } = await fauxRegistry();
    const seen: string[] = [];
    faux.setResponses([
      (ctx: Context) => (seen.push(userText(ctx)), fauxAssistantMessage("Sure! ```json\n" + VERDICT.allow + "\n```")),
      (ctx: Context) => (seen.push(userText(ctx)), fauxAssistantMessage(VERDICT.allow)),
    ]);
    const r = await runReview(job(), piReviewerModels(registry), FAST);
    assert.equal(r.kind, "verdict");
    assert.equal(r.attempts, 2);
    assert.equal(seen[0]!.includes(SCHEMA_REMINDER), false);
    assert.equal(seen[1], `${seen[0]}\n\n${SCHEMA_REMINDER}`, "the retry repeats the request and appends only the reminder");
  });

  for (const [name, reply] of [
    ["prose", "I think this is fine."],
    ["an ask outcome", '{"risk_level":"low","user_authorization":"high","outcome":"ask","rationale":"Ask first."}'],
    ["two objects", VERDICT.allow + VERDICT.allow],
    ["an extra field", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"x.","note":"y"}'],
  ] as const) {
    test(`out of format twice (${name}): malformed, two calls, denied with the out-of-format text`, async () => {
      const { registry, faux } = await fauxRegistry();
      faux.setResponses([fauxAssistantMessage(reply), fauxAssistantMessage(reply), fauxAssistantMessage(VERDICT.allow)]);
      const r = await runReview(job(), piReviewerModels(registry), FAST);
      assert.equal(failureOf(r), "malformed");
      assert.equal(faux.state.callCount, 2, "only one format retry");
      assert.match(failureDenialText("malformed"), /out of format/);
      // An outage is never a risk verdict: the text says so, and names no risk level.
      assert.match(failureDenialText("malformed"), /not a risk judgement/);
      assert.doesNotMatch(failureDenialText("malformed"), /risk (low|medium|high|critical)|too risky/i);
    });
  }

  test("an output-length stop is malformed and not retried", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage('{"risk_level":"low"', { stopReason: "length" }), fauxAssistantMessage(VERDICT.allow)]);
    const r = await runReview(job(), piReviewerModels(registry), FAST);
    assert.equal(failureOf(r), "malformed");
    assert.equal(faux.state.callCount, 1);
  });

  const RETRIED: ReadonlyArray<[string, string, FailureClass]> = [
    ["429", "429 Too Many Requests", "rate-limited"],
    ["500", "500 Internal Server Error", "provider-error"],
    ["503", "503 Service Unavailable", "provider-error"],
    ["connection", "Connection error.", "connection"],
  ];
  for (const [name, message, cls] of RETRIED) {
    test(`${name}: retried, and a later allow is used`, async () => {
      const { registry, faux } = await fauxRegistry();
      faux.setResponses([err(message), fauxAssistantMessage(VERDICT.allow)]);
      const r = await runReview(job(), piReviewerModels(registry), FAST);
      assert.equal(r.kind, "verdict");
      assert.equal(r.attempts, 2);
    });
    test(`${name}: at most 3 attempts, then ${cls}`, async () => {
      const { registry, faux } = await fauxRegistry();
      faux.setResponses([err(message), err(message), err(message), fauxAssistantMessage(VERDICT.allow)]);
      const r = await runReview(job(), piReviewerModels(registry), FAST);
      assert.equal(failureOf(r), cls);
      assert.equal(faux.state.callCount, 3);
    });
  }

  const FINAL: ReadonlyArray<[string, string, FailureClass]> = [
    ["401", "401 Unauthorized: invalid x-api-key", "auth"],
    ["403", "403 Forbidden", "auth"],
    ["404", "404 model not found", "model-unavailable"],
    ["400", "400 Bad Request: context too long", "provider-error"],
    ["unknown error", "Provider finish_reason: content_filter", "provider-error"],
  ];
  for (const [name, message, cls] of FINAL) {
    test(`${name}: never retried, ${cls}`, async () => {
      const { registry, faux } = await fauxRegistry();
      faux.setResponses([err(message), fauxAssistantMessage(VERDICT.allow)]);
      const r = await runReview(job(), piReviewerModels(registry), FAST);
      assert.equal(failureOf(r), cls);
      assert.equal(faux.state.callCount, 1);
      assert.equal(r.kind === "failure" && failureDenialText(r.failure).includes(message), false, "provider text never reaches the model");
    });
  }

  test("a failure's usage still counts", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage("nope"), fauxAssistantMessage("nope")]);
    const r = await runReview(job(), piReviewerModels(registry), FAST);
    assert.equal(r.kind, "failure");
    assert.ok(r.usage.input > 0);
  });
});

describe("P5: resolution, auth and configuration fail closed without calling a model", () => {
  test("no reviewer configured", async () => {
    const { registry, faux } = await fauxRegistry();
    const r = await runReview({ ...job(), reviewer: undefined }, piReviewerModels(registry), FAST);
    assert.equal(failureOf(r), "not-configured");
    assert.equal(faux.state.callCount, 0);
  });

  test("a model the registry does not know", async () => {
    const { registry } = await fauxRegistry();
    const r = await runReview(job({ provider: "judge", model: "nope", thinking: "off" }), piReviewerModels(registry), FAST);
    assert.equal(failureOf(r), "model-unavailable");
  });

  test("a thinking level the model does not support", async () => {
    const { registry, faux } = await fauxRegistry();
    const r = await runReview(job({ provider: "judge", model: "judge-1", thinking: "high" }), piReviewerModels(registry), FAST);
    assert.equal(failureOf(r), "model-unavailable");
    assert.equal(faux.state.callCount, 0);
  });

  test("a supported thinking level is passed as the reasoning option; the session's own level is untouched", async () => {
    const { registry, faux } = await fauxRegistry();
    let reasoning: unknown;
    faux.setResponses([(_ctx, options) => ((reasoning = options?.reasoning), fauxAssistantMessage(VERDICT.allow))]);
    const r = await runReview(job({ provider: "judge", model: "thinker", thinking: "low" }), piReviewerModels(registry), FAST);
    assert.equal(r.kind, "verdict");
    assert.equal(reasoning, "low");
    assert.deepEqual([...THINKING_LEVELS], ["off", "minimal", "low", "medium", "high", "xhigh", "max"]);
  });

  test("a provider without credentials", async () => {
    const agentDir = tempAgentDir();
    const { registry } = await makeRegistry(agentDir, {
      providers: { keyless: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "m" }] } },
    });
    const r = await runReview(job({ provider: "keyless", model: "m", thinking: "off" }), piReviewerModels(registry), FAST);
    assert.equal(failureOf(r), "auth");
    assert.equal(r.attempts, 0);
  });
});

describe("P13: the aggregate deadline and aborts", () => {
  test("a reply slower than the deadline times out", async () => {
    const { registry, faux } = await fauxRegistry({ tokensPerSecond: 5 });
    faux.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    const t0 = Date.now();
    const r = await runReview(job(), piReviewerModels(registry), { ...FAST, deadlineMs: 200 });
    assert.equal(failureOf(r), "timeout");
    assert.ok(Date.now() - t0 < 2000, "the deadline fired, not the stream's end");
    assert.match(failureDenialText("timeout"), /did not answer in time/);
  });

  test("the deadline covers the waits between attempts", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([err("503 Service Unavailable"), err("503 Service Unavailable"), fauxAssistantMessage(VERDICT.allow)]);
    const r = await runReview(job(), piReviewerModels(registry), { ...FAST, retryBaseMs: 400, deadlineMs: 500 });
    assert.equal(failureOf(r), "provider-error");
    assert.ok(r.durationMs < 500);
    assert.equal(faux.state.callCount, 2, "the second wait would pass the deadline: no third call");
  });

  test("a caller abort (Esc, shutdown, mode change) stops a pending review and is not retried", async () => {
    const { registry, faux } = await fauxRegistry({ tokensPerSecond: 5 });
    faux.setResponses([fauxAssistantMessage(VERDICT.allow), fauxAssistantMessage(VERDICT.allow)]);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort("mode changed"), 50);
    const r = await runReview(job(), piReviewerModels(registry), FAST, ctl.signal);
    assert.equal(failureOf(r), "aborted");
    assert.equal(faux.state.callCount, 1);
  });

  test("an already aborted signal never calls the model", async () => {
    const { registry, faux } = await fauxRegistry();
    const ctl = new AbortController();
    ctl.abort("esc");
    const r = await runReview(job(), piReviewerModels(registry), FAST, ctl.signal);
    assert.equal(failureOf(r), "aborted");
    assert.equal(faux.state.callCount, 0);
  });
});

describe("per-attempt reports (telemetry's review_attempt)", () => {
  test("each model call is reported once as it ends: a format retry, a 503 retry, then the verdict", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage("Sure, fine."), err("503 Service Unavailable"), fauxAssistantMessage(VERDICT.allow)]);
    const reports: import("../../src/review/engine.ts").AttemptReport[] = [];
    const r = await runReview(job(), piReviewerModels(registry), FAST, undefined, undefined, (a) => reports.push(a));
    assert.equal(r.kind, "verdict");
    assert.deepEqual(
      reports.map((a) => [a.attempt, a.status, a.failure]),
      [
        [1, "retry", "malformed"],
        [2, "retry", "provider-error"],
        [3, "verdict", undefined],
      ],
    );
    assert.ok(reports[0]!.inputTokens > 0 && reports[2]!.outputTokens > 0, "each attempt's own usage");
    assert.equal(
      reports.reduce((n, a) => n + a.inputTokens, 0),
      r.usage.input,
      "the attempts' input tokens add up to the review's",
    );
    for (const a of reports) assert.ok(a.durationMs >= 0);
  });

  test("a final failure is reported as failure with its class; a review that never calls the model reports nothing", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([err("401 Unauthorized: invalid x-api-key")]);
    const reports: import("../../src/review/engine.ts").AttemptReport[] = [];
    const r = await runReview(job(), piReviewerModels(registry), FAST, undefined, undefined, (a) => reports.push(a));
    assert.equal(failureOf(r), "auth");
    assert.deepEqual(
      reports.map((a) => [a.attempt, a.status, a.failure]),
      [[1, "failure", "auth"]],
    );
    const none: unknown[] = [];
    await runReview({ ...job(), reviewer: undefined }, piReviewerModels(registry), FAST, undefined, undefined, (a) => none.push(a));
    assert.deepEqual(none, []);
  });

  test("an observer that throws changes nothing", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage(VERDICT.deny)]);
    const r = await runReview(job(), piReviewerModels(registry), FAST, undefined, undefined, () => {
      throw new Error("listener bug");
    });
    assert.equal(r.kind === "verdict" && r.verdict.outcome, "deny");
  });
});
