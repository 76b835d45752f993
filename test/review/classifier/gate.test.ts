// P3 for the classifier engine, through the Pi-free gate: hard denies and the user's deny rules
// are decided before any engine is asked, so the classifier never sees them and no answer of its
// can admit them; a call routed to review does reach it, with the user's settings from their
// auto-mode.json.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createCallGate, type ReviewAsk } from "../../../src/grants/admit-call.ts";
import { reviewAndAdmit } from "../../../src/grants/admit.ts";
import { createTicketBook } from "../../../src/grants/tickets.ts";
import { conditions } from "../../../src/review/classifier/conditions.ts";
import { createLimiter } from "../../../src/review/limiter.ts";
import type { ClassifierCall, ReviewerModels } from "../../../src/review/models.ts";
import { createReviewService } from "../../../src/review/service.ts";
import type { ReviewerId } from "../../../src/review/types.ts";
import { createMemoryGlobalState } from "../../../src/state/global.ts";
import { createRuntimeState } from "../../../src/state/runtime-state.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pam-classifier-gate-")));
const ws = join(root, "ws");
const agentDir = join(root, "agent");
mkdirSync(ws, { recursive: true });
mkdirSync(agentDir, { recursive: true });
after(() => rmSync(root, { recursive: true, force: true }));
writeFileSync(
  join(agentDir, "auto-mode.json"),
  JSON.stringify({
    version: 1,
    rules: { deny: [{ command: "git push *", reason: "never push from here" }] },
    review: { classifier: { thresholds: { local_scope: { satisfied: 0.5, rejected: 0.1 } } } },
  }),
);

const JEV: ReviewerId = { provider: "typesafe", model: "jev-latest", thinking: "off", engine: "classifier" };
const data = conditions();
if (data.kind !== "ok") throw new Error(data.problem);
const IDS = [...data.data.conditions.map((c) => c.id), data.data.intent.id];
// An answer that would allow anything: every condition satisfied, the user asking for it.
const ALLOW_ALL = Object.fromEntries(IDS.map((id) => [id, { type: "bool", probability: 1 }]));

async function run(command: string) {
  const calls: ClassifierCall[] = [];
  const models: ReviewerModels = {
    find: () => undefined,
    getProviderAuth: async () => ({ apiKey: "k" }),
    complete: async () => {
      throw new Error("the chat model is never asked");
    },
    findClassifier: (provider, id) => ({ provider, id, thinkingLevels: ["off"] }),
    classify: async (_m, call) => (calls.push(call), { stopReason: "stop", answers: ALLOW_ALL }),
  };
  const global = createMemoryGlobalState({ reviewer: JEV, revision: 1 });
  await global.read();
  const runtime = createRuntimeState(global, () => "review-only");
  const gate = createCallGate({ runtime, agentDir: () => agentDir, tickets: createTicketBook() });
  const service = createReviewService({ limiter: createLimiter(4, 16) });
  const limitsSeen: unknown[] = [];
  const review = (ask: ReviewAsk) => {
    limitsSeen.push(ask.limits);
    return reviewAndAdmit(
      {
        toolCallId: "c1",
        parentToolCallId: undefined,
        request: ask.request,
        decision: ask.decision,
        transcript: [{ kind: "user", text: `please run ${command}` }],
      },
      {
        service,
        models,
        signal: undefined,
        ...(ask.limits ? { limits: ask.limits } : {}),
        bindingNow: async () => {
          const now = ask.rejudge();
          return {
            hash: now.decision.route === "review" ? now.request?.hash : undefined,
            reviewer: JEV,
            endpoint: undefined,
            globalRevision: 1,
            sessionRevision: runtime.session().revision,
            backend: "review-only",
            auto: true,
          };
        },
      },
    );
  };
  const out = await gate({ toolCallId: "c1", parentToolCallId: undefined, toolName: "bash", input: { command }, cwd: ws }, { record: () => {}, review });
  return { out, calls, limitsSeen };
}

describe("P3: the classifier engine is never asked about a hard deny or a user deny rule", () => {
  test("a hard-deny target: denied, the classifier never called, even though it would allow anything", async () => {
    const r = await run("rm -rf ~");
    assert.equal(r.out.kind, "deny");
    assert.equal(r.calls.length, 0);
  });

  test("a user deny rule: denied, the classifier never called", async () => {
    const r = await run("git push --force origin feature/x");
    assert.equal(r.out.kind, "deny");
    assert.equal(r.calls.length, 0);
  });

  test("a call the deterministic layer routes to review reaches the classifier, with the user's thresholds", async () => {
    const r = await run("curl -fsSL https://example.com/install.sh -o install.sh");
    assert.equal(r.calls.length, 1, "the review route is judged by the classifier");
    assert.notEqual(r.out.kind, "deny");
    assert.deepEqual((r.limitsSeen[0] as { classifier?: unknown }).classifier, { thresholds: { local_scope: { satisfied: 0.5, rejected: 0.1 } } });
  });
});
