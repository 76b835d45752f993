// The real HTTP path: a loopback server speaking OpenAI chat completions (streaming SSE),
// registered through a models.json custom provider, so Pi's registry and pi-ai's real OpenAI
// client run end to end. Valid allow and deny, 429 with and without Retry-After, 500, a
// connection reset, a response that never ends, a malformed body, a slow stream (P5, P13).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_LIMITS, runReview, type EngineLimits } from "../../src/review/engine.ts";
import { failureDenialText } from "../../src/review/failure.ts";
import { REVIEWER_SYSTEM_PROMPT } from "../../src/review/prompt.ts";
import type { FailureClass, ReviewResult } from "../../src/review/types.ts";
import type { Step } from "../helpers/openai-loopback.ts";
import { action, useLoopbackRegistry, VERDICT } from "../helpers/review-fixtures.ts";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

const env = useLoopbackRegistry();

const LIMITS: EngineLimits = { ...DEFAULT_LIMITS, retryBaseMs: 20, deadlineMs: 5000 };
const job = () => ({
  action: action("bash", { command: "rm -rf build/cache" }),
  transcript: [{ kind: "user" as const, text: "clear build/cache" }],
  reviewer: { provider: "loop", model: "judge", thinking: "off" as const },
});

async function review(steps: readonly Step[], limits: Partial<EngineLimits> = {}): Promise<{ r: ReviewResult; calls: number; ms: number }> {
  env.lb.script(steps);
  const n0 = env.lb.received.length;
  const t0 = Date.now();
  const r = await runReview(job(), piReviewerModels(env.reg.registry), { ...LIMITS, ...limits });
  return { r, calls: env.lb.received.length - n0, ms: Date.now() - t0 };
}

const failure = (r: ReviewResult): FailureClass | undefined => (r.kind === "failure" ? r.failure : undefined);

describe("the real HTTP path (OpenAI chat completions over loopback)", () => {
  test("a valid allow: one request, no tools, our prompt, usage and cost from the provider", async () => {
    const { r, calls } = await review([{ kind: "verdict", text: VERDICT.allow, usage: { prompt: 1000, completion: 40 } }]);
    assert.equal(r.kind === "verdict" && r.verdict.outcome, "allow");
    assert.equal(calls, 1);
    const sent = env.lb.received.at(-1)!;
    assert.equal(sent.path, "/v1/chat/completions");
    assert.equal(sent.body.tools, undefined, "no tools in the request");
    assert.equal(sent.body.messages?.[0]?.content, REVIEWER_SYSTEM_PROMPT);
    assert.equal(sent.body.messages?.length, 2);
    assert.equal(r.usage.input, 1000);
    assert.equal(r.usage.output, 40);
    // models.json prices the model at $3 / $15 per million tokens.
    assert.ok(Math.abs(r.usage.cost.total - (1000 * 3 + 40 * 15) / 1e6) < 1e-12);
  });

  test("a valid deny: final, not retried", async () => {
    const { r, calls } = await review([
      { kind: "verdict", text: VERDICT.deny },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(r.kind === "verdict" && r.verdict.outcome, "deny");
    assert.equal(calls, 1);
  });

  test("429 with a short Retry-After: waits that long, then retries", async () => {
    const { r, calls, ms } = await review([
      { kind: "status", status: 429, headers: { "retry-after": "1" } },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(r.kind, "verdict");
    assert.equal(calls, 2);
    assert.ok(ms >= 950, `waited ${ms} ms`);
  });

  test("429 with a Retry-After over 5 s: denied at once, rate-limited", async () => {
    const { r, calls, ms } = await review([
      { kind: "status", status: 429, headers: { "retry-after": "30" } },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(failure(r), "rate-limited");
    assert.equal(calls, 1);
    assert.ok(ms < 2000);
    assert.match(failureDenialText("rate-limited"), /rate limiting/);
  });

  test("429 with a Retry-After past the deadline: denied at once", async () => {
    const { r, calls } = await review(
      [
        { kind: "status", status: 429, headers: { "retry-after": "3" } },
        { kind: "verdict", text: VERDICT.allow },
      ],
      { deadlineMs: 1000 },
    );
    assert.equal(failure(r), "rate-limited");
    assert.equal(calls, 1);
  });

  test("429 without Retry-After: backoff and retry, at most 3 attempts", async () => {
    const { r, calls } = await review([
      { kind: "status", status: 429 },
      { kind: "status", status: 429 },
      { kind: "status", status: 429 },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(failure(r), "rate-limited");
    assert.equal(calls, 3);
  });

  test("500: retried, and a later verdict is used", async () => {
    const { r, calls } = await review([
      { kind: "status", status: 500 },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(r.kind, "verdict");
    assert.equal(calls, 2);
  });

  test("500 three times: provider-error after 3 attempts", async () => {
    const { r, calls } = await review([
      { kind: "status", status: 500 },
      { kind: "status", status: 502 },
      { kind: "status", status: 503 },
    ]);
    assert.equal(failure(r), "provider-error");
    assert.equal(calls, 3);
  });

  test("401: an auth error is never retried", async () => {
    const { r, calls } = await review([
      { kind: "status", status: 401 },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(failure(r), "auth");
    assert.equal(calls, 1);
  });

  test("a connection reset: retried as a connection failure", async () => {
    const { r, calls } = await review([{ kind: "reset" }, { kind: "verdict", text: VERDICT.allow }]);
    assert.equal(r.kind, "verdict");
    assert.equal(calls, 2);
    const all = await review([{ kind: "reset" }, { kind: "reset" }, { kind: "reset" }]);
    assert.equal(failure(all.r), "connection");
    assert.equal(all.calls, 3);
  });

  test("a response that never ends: the deadline fires", async () => {
    const { r, calls, ms } = await review([{ kind: "hang" }], { deadlineMs: 400 });
    assert.equal(failure(r), "timeout");
    assert.equal(calls, 1);
    assert.ok(ms >= 380 && ms < 2000, `took ${ms} ms`);
  });

  test("a malformed body: a provider error, denied, not retried", async () => {
    const { r, calls } = await review([{ kind: "malformed" }, { kind: "verdict", text: VERDICT.allow }]);
    assert.equal(failure(r), "provider-error");
    assert.equal(calls, 1);
  });

  test("a verdict out of format over HTTP gets the one format retry", async () => {
    const { r, calls } = await review([
      { kind: "verdict", text: "```json\n" + VERDICT.allow + "\n```" },
      { kind: "verdict", text: VERDICT.allow },
    ]);
    assert.equal(r.kind, "verdict");
    assert.equal(calls, 2);
    assert.match(JSON.stringify(env.lb.received.at(-1)!.body.messages?.[1]?.content), /not in the required format/);
  });

  test("a slow stream inside the deadline still gives its verdict", async () => {
    const { r, ms } = await review([{ kind: "verdict", text: VERDICT.allow, chunks: 8, chunkDelayMs: 60 }], { deadlineMs: 3000 });
    assert.equal(r.kind === "verdict" && r.verdict.outcome, "allow");
    assert.ok(ms >= 400);
  });

  test("a slow stream past the deadline times out", async () => {
    const { r } = await review([{ kind: "verdict", text: VERDICT.allow, chunks: 8, chunkDelayMs: 100 }], { deadlineMs: 300 });
    assert.equal(failure(r), "timeout");
  });
});
