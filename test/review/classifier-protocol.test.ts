// pi-ai's real classifier client through Pi's ModelRegistry, against loopback servers speaking
// typesafe-system-one (typesafe/jev-latest) and openai-decisions (openai/gpt-6-luna), registered
// through models.json (test/helpers/classifier-models.ts). What this pins down is what the
// classifier engine builds on: answers round-trip per question type, and every failure —
// an error status, a reset, a malformed body, a missing answer — comes back as a result with
// stopReason "error" (never a rejection, never partial answers); a hang ends only by the
// caller's signal (stopReason "aborted") or timeoutMs (an "error", retried by pi-ai unless
// maxRetries is 0); 429 and 5xx are retried inside pi-ai by default (maxRetries 2).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ClassifierContext, ClassifierModel, ClassifierResult } from "@earendil-works/pi-ai";
import type { ClassifierServer, ClassifierStep } from "../helpers/classifier-servers.ts";
import { JEV, LUNA, OPENAI_KEY, TYPESAFE_KEY, useClassifierServers } from "../helpers/classifier-models.ts";

const env = useClassifierServers();

const CONTEXT: ClassifierContext = {
  state: { action: { tool: "bash", command: "rm -rf build/cache" }, reasons: ["destructive"] },
  questions: {
    in_scope: { type: "bool", instructions: "Does the call stay inside the workspace?", criteria: { true: "it stays inside", false: "it reaches outside" } },
    risk: { type: "score", instructions: "How much damage could it do?", criteria: ["none", "some", "severe"] },
    kind: { type: "choice", instructions: "What kind of call is it?", criteria: { read: "reads only", write: "writes files", exec: "runs code" } },
  },
};

const BOOL_ONLY: ClassifierContext = {
  state: { action: { tool: "bash", command: "ls" } },
  questions: { in_scope: CONTEXT.questions.in_scope! },
};

interface Side {
  readonly name: string;
  readonly server: () => ClassifierServer;
  readonly model: () => ClassifierModel<string>;
  readonly path: string;
  readonly key: string;
  readonly label: string;
}

const SIDES: readonly Side[] = [
  {
    name: "typesafe-system-one",
    server: () => env.typesafe,
    model: () => env.reg.registry.findOfType("classifier", JEV.provider, JEV.model)!,
    path: "/v1/systemone",
    key: TYPESAFE_KEY,
    label: "System One API",
  },
  {
    name: "openai-decisions",
    server: () => env.decisions,
    model: () => env.reg.registry.findOfType("classifier", LUNA.provider, LUNA.model)!,
    path: "/v1/decisions",
    key: OPENAI_KEY,
    label: "OpenAI Decisions",
  },
];

async function classify(
  side: Side,
  steps: readonly ClassifierStep[],
  opts: { context?: ClassifierContext; maxRetries?: number; signal?: AbortSignal; timeoutMs?: number; fallback?: ClassifierStep } = {},
): Promise<{ r: ClassifierResult; calls: number; ms: number }> {
  const srv = side.server();
  srv.script(steps, opts.fallback);
  const n0 = srv.received.length;
  const t0 = Date.now();
  const r = await env.reg.registry.classify(side.model(), opts.context ?? CONTEXT, {
    maxRetries: opts.maxRetries ?? 0,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
  });
  return { r, calls: srv.received.length - n0, ms: Date.now() - t0 };
}

const OK: ClassifierStep = { kind: "answer", otherwise: 0.99, answers: { risk: { score: 0.1 }, kind: { choice: "write" } } };

function assertFailed(r: ClassifierResult, message: RegExp): void {
  assert.equal(r.stopReason, "error", JSON.stringify(r));
  assert.deepEqual(r.answers, {}, "a failed classification carries no partial answers");
  assert.match(r.errorMessage ?? "", message);
}

test("models.json moves Pi's own classifier entries onto the loopback servers", () => {
  for (const side of SIDES) {
    const m = side.model();
    assert.ok(m, `${side.name}: findOfType found the classifier`);
    assert.equal(m.type, "classifier");
    assert.equal(m.api, side.name);
    assert.equal(m.baseUrl, side.server().baseUrl);
  }
  // A classifier is not a chat model: the reviewer's chat lookup must not find it.
  assert.equal(
    env.reg.registry.getAll().some((m) => m.provider === JEV.provider && m.id === JEV.model),
    false,
  );
  assert.equal(env.reg.registry.findOfType("classifier", JEV.provider, "no-such-model"), undefined);
});

for (const side of SIDES) {
  describe(`${side.name}: pi-ai's client against the loopback server`, () => {
    test("bool, score and choice answers round-trip; one POST with bearer auth; usage reported", async () => {
      const { r, calls } = await classify(side, [
        {
          kind: "answer",
          answers: {
            in_scope: 0.8125,
            risk: { score: 0.25, confidence: 0.75 },
            kind: { choice: "exec", probabilities: { read: 0.125, write: 0.25, exec: 0.625 } },
          },
          usage: { input: 321, output: 3 },
        },
      ]);
      assert.equal(r.stopReason, "stop", r.errorMessage);
      assert.equal(calls, 1);
      assert.deepEqual(r.answers.in_scope, { type: "bool", probability: 0.8125 });
      assert.deepEqual(r.answers.risk, { type: "score", score: 0.25, confidence: 0.75 });
      assert.deepEqual(r.answers.kind, { type: "choice", choice: "exec", probabilities: { read: 0.125, write: 0.25, exec: 0.625 }, confidence: 0.9 });
      assert.equal(r.usage?.input, 321);
      assert.equal(r.usage?.output, 3);
      const sent = side.server().received.at(-1)!;
      assert.equal(sent.method, "POST");
      assert.equal(sent.path, side.path);
      assert.equal(sent.headers.authorization, `Bearer ${side.key}`);
      assert.equal(sent.headers["content-type"], "application/json");
      assert.equal(sent.body?.model, side.model().id);
      assert.deepEqual(sent.state, CONTEXT.state, "the state arrives as sent");
      assert.deepEqual(Object.keys(sent.questions).sort(), ["in_scope", "kind", "risk"]);
      // The wire's own type names: System One's bool is "noul", Decisions' is "predicate".
      assert.equal(sent.questions.in_scope?.type, side.name === "typesafe-system-one" ? "noul" : "predicate");
    });

    test("probabilities at the edges (0 and 1) are kept exactly", async () => {
      for (const p of [0, 1]) {
        const { r } = await classify(side, [{ kind: "answer", answers: { in_scope: p } }], { context: BOOL_ONLY });
        assert.deepEqual(r.answers.in_scope, { type: "bool", probability: p });
      }
    });

    test("a missing answer for one question fails the whole result", async () => {
      const { r } = await classify(side, [{ ...OK, omit: ["risk"] }]);
      assertFailed(r, new RegExp(`${side.label} did not return an answer for risk`));
    });

    test("an answer of the wrong type, or a probability that is not a number, fails the result", async () => {
      const wrongType =
        side.name === "typesafe-system-one" ? { type: "score", score: 0.5, confidence: 1 } : { name: "in_scope", type: "score", score: 0.5, confidence: 1 };
      assertFailed(
        (await classify(side, [{ ...OK, raw: { in_scope: wrongType } }])).r,
        new RegExp(`${side.label} did not return a (bool|predicate) answer for in_scope`),
      );
      const notANumber = side.name === "typesafe-system-one" ? { type: "noul", noul: "0.9" } : { name: "in_scope", type: "predicate", probability: "0.9" };
      assertFailed(
        (await classify(side, [{ ...OK, raw: { in_scope: notANumber } }])).r,
        new RegExp(`${side.label} returned an invalid probability for in_scope`),
      );
    });

    test("malformed bodies: not JSON, a JSON array, answers of the wrong shape", async () => {
      assertFailed((await classify(side, [{ kind: "body", body: '{"answers": {"in_scope": ' }])).r, /JSON/);
      assertFailed((await classify(side, [{ kind: "body", body: "[1, 2]" }])).r, new RegExp(`${side.label} returned an unexpected response`));
      const wrongShape = side.name === "typesafe-system-one" ? '{"answers": [1]}' : '{"answers": {"in_scope": 1}}';
      assertFailed((await classify(side, [{ kind: "body", body: wrongShape }])).r, new RegExp(`${side.label} returned an unexpected response`));
      // An empty 200 body is not an answer either.
      assertFailed((await classify(side, [{ kind: "body", body: "" }])).r, /JSON/);
    });

    test("429 and 500 with maxRetries 0: one request, an error result naming the status", async () => {
      for (const status of [429, 500, 503]) {
        const { r, calls } = await classify(side, [{ kind: "status", status }], { fallback: OK });
        assertFailed(r, new RegExp(`${side.label} error \\(${status}\\)`));
        assert.equal(calls, 1, `${status} was not retried`);
      }
    });

    test("401 is never retried, even with retries allowed", async () => {
      const { r, calls } = await classify(side, [{ kind: "status", status: 401 }], { maxRetries: 2, fallback: OK });
      assertFailed(r, /\(401\)/);
      assert.equal(calls, 1);
    });

    test("the provider's error body reaches errorMessage (so it must never be shown to the model as is)", async () => {
      const { r } = await classify(side, [{ kind: "status", status: 500, body: '{"error":{"message":"quota for account acct-SECRET-42 exhausted"}}' }]);
      assertFailed(r, /acct-SECRET-42/);
    });

    test("by default pi-ai itself retries 429 and 5xx (maxRetries 2): three requests for one classify", async () => {
      const srv = side.server();
      srv.script(
        [
          { kind: "status", status: 429 },
          { kind: "status", status: 500 },
        ],
        OK,
      );
      const n0 = srv.received.length;
      const r = await env.reg.registry.classify(side.model(), CONTEXT);
      assert.equal(r.stopReason, "stop", r.errorMessage);
      assert.equal(srv.received.length - n0, 3);
    });

    test("a Retry-After over maxRetryDelayMs fails at once instead of waiting", async () => {
      const srv = side.server();
      srv.script([{ kind: "status", status: 429, headers: { "retry-after": "30" } }], OK);
      const n0 = srv.received.length;
      const t0 = Date.now();
      const r = await env.reg.registry.classify(side.model(), CONTEXT, { maxRetries: 2, maxRetryDelayMs: 1000 });
      assertFailed(r, /Server requested 30s retry delay/);
      assert.equal(srv.received.length - n0, 1);
      assert.ok(Date.now() - t0 < 1000);
    });

    test("a connection reset is an error result and is not retried by pi-ai", async () => {
      const { r, calls } = await classify(side, [{ kind: "reset" }], { maxRetries: 2, fallback: OK });
      assertFailed(r, /fetch failed/);
      assert.equal(calls, 1);
    });

    test("a hang is cut by the caller's abort signal within its deadline: stopReason aborted", async () => {
      const srv = side.server();
      const { r, calls, ms } = await classify(side, [{ kind: "hang" }], { signal: AbortSignal.timeout(300), fallback: OK });
      assert.equal(r.stopReason, "aborted", JSON.stringify(r));
      assert.deepEqual(r.answers, {});
      assert.equal(calls, 1);
      assert.ok(ms >= 280 && ms < 2000, `ended after ${ms} ms`);
      // The client closed the connection: the server holds nothing afterwards.
      const until = Date.now() + 2000;
      while (srv.pending() > 0 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
      assert.equal(srv.pending(), 0);
    });

    test("a hang under timeoutMs is an error (TimeoutError), and pi-ai retries it when allowed", async () => {
      const once = await classify(side, [{ kind: "hang" }], { timeoutMs: 250, fallback: OK });
      assertFailed(once.r, /Request timed out after 250ms/);
      assert.equal(once.calls, 1);
      assert.ok(once.ms < 2000);
      // With one retry the second attempt is answered: a timeout counts as retryable.
      const retried = await classify(side, [{ kind: "hang" }], { timeoutMs: 250, maxRetries: 1, fallback: OK });
      assert.equal(retried.r.stopReason, "stop", retried.r.errorMessage);
      assert.equal(retried.calls, 2);
    });

    test("an already aborted signal sends nothing", async () => {
      const c = new AbortController();
      c.abort();
      const { r, calls } = await classify(side, [OK], { signal: c.signal });
      assert.equal(r.stopReason, "aborted");
      assert.equal(calls, 0);
    });
  });
}

test("a chat model handed to classify is an error result, not a request", async () => {
  const chat = env.reg.registry.find("openai", "gpt-6-luna");
  assert.ok(chat, "gpt-6-luna also exists as a chat model");
  const n0 = env.decisions.received.length;
  const r = await env.reg.registry.classify(chat as unknown as ClassifierModel<string>, CONTEXT);
  assert.equal(r.stopReason, "error");
  assert.equal(env.decisions.received.length, n0);
});
