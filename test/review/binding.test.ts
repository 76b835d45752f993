// P8 binding races through the real tool-call gate and review hook (faux reviewer): anything
// that changes between the review and the admission denies the call. Also P7 (an allow keeps
// containment) and P13's bounded concurrency.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fauxAssistantMessage } from "@earendil-works/pi-ai";
import type { ExtensionContext, ToolCallEvent } from "@earendil-works/pi-coding-agent";
import type { Backend } from "../../src/policy/types.ts";
import { reviewAndAdmit } from "../../src/grants/admit.ts";
import { createLimiter } from "../../src/review/limiter.ts";
import { createReviewService } from "../../src/review/service.ts";
import { createUsageLedger } from "../../src/review/usage-ledger.ts";
import { createMemoryGlobalState } from "../../src/state/global.ts";
import { createRuntimeState } from "../../src/state/runtime-state.ts";
import { createReviewHook, type ReviewRecord } from "../../src/tools/review-call.ts";
import { createToolCallGate } from "../../src/tools/tool-call-gate.ts";
import { loopbackModels, startLoopback } from "../helpers/openai-loopback.ts";
import { fauxRegistry, JUDGE, makeRegistry, request, storedAsTyped, tempAgentDir, VERDICT } from "../helpers/review-fixtures.ts";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

async function setup(opts: { backend?: () => Backend } = {}) {
  const { registry, faux, agentDir } = await fauxRegistry();
  const cwd = join(agentDir, "..", "work");
  mkdirSync(cwd, { recursive: true });
  const global = createMemoryGlobalState({ reviewer: JUDGE, revision: 1 });
  const runtime = createRuntimeState(global, opts.backend ?? (() => "review-only"));
  const service = createReviewService({ limiter: createLimiter(4, 16) });
  const ledger = createUsageLedger();
  const records: ReviewRecord[] = [];
  const gate = createToolCallGate({
    runtime,
    agentDir: () => agentDir,
    record: () => {},
    review: createReviewHook({ runtime, service, ledger, record: (r) => records.push(r), provenanceOf: storedAsTyped }),
  });
  const ctx = {
    cwd,
    hasUI: false,
    ui: { setStatus() {} },
    sessionManager: { getBranch: () => [{ type: "message", message: { role: "user", content: "deploy the api" } }] },
    modelRegistry: registry,
    signal: undefined,
  } as unknown as ExtensionContext;
  const event = (input: Record<string, unknown>, id = "call-1"): ToolCallEvent =>
    ({ type: "tool_call", toolCallId: id, toolName: "deploy_service", input }) as ToolCallEvent;
  return { registry, faux, agentDir, global, runtime, service, ledger, records, gate, ctx, event };
}

describe("P8: a verdict binds to the action, the reviewer and the revisions", () => {
  test("no change: the reviewed allow is admitted, and the admitted input is frozen", async () => {
    const s = await setup();
    s.faux.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    const e = s.event({ service: "api" });
    const r = await s.gate(e, s.ctx);
    assert.equal(r, undefined, "admitted");
    assert.equal(s.records[0]?.admitted, true);
    assert.throws(() => {
      (e.input as Record<string, unknown>).service = "prod";
    }, TypeError);
    assert.ok(s.ledger.take("call-1")!.input > 0, "usage is owed to the call's result");
  });

  test("argument mutation while the review is pending denies the call", async () => {
    const s = await setup();
    const e = s.event({ service: "api" });
    s.faux.setResponses([
      () => {
        (e.input as Record<string, unknown>).service = "prod-db";
        return fauxAssistantMessage(VERDICT.allow);
      },
    ]);
    const r = await s.gate(e, s.ctx);
    assert.equal(r?.block, true);
    assert.match(r!.reason!, /the call's arguments changed while it was being reviewed/);
    assert.equal(s.records[0]?.bindingChanged, "the call's arguments");
  });

  test("a mode flip auto -> unrestricted -> auto while pending denies (the session revision moved)", async () => {
    const s = await setup();
    s.faux.setResponses([
      () => {
        s.runtime.setRequested("unrestricted");
        s.runtime.setRequested("auto");
        return fauxAssistantMessage(VERDICT.allow);
      },
    ]);
    const r = await s.gate(s.event({ service: "api" }), s.ctx);
    assert.equal(r?.block, true);
    assert.match(r!.reason!, /the permission mode changed/);
  });

  test("a flip to unrestricted that is still in effect at admission also denies the reviewed call", async () => {
    const s = await setup();
    s.faux.setResponses([() => (s.runtime.setRequested("unrestricted"), fauxAssistantMessage(VERDICT.allow))]);
    const r = await s.gate(s.event({ service: "api" }), s.ctx);
    assert.equal(r?.block, true);
  });

  test("a reviewer change while pending denies", async () => {
    const s = await setup();
    s.faux.setResponses([
      async () => {
        await s.global.setReviewer({ ...JUDGE, model: "thinker", thinking: "low" });
        return fauxAssistantMessage(VERDICT.allow);
      },
    ]);
    const r = await s.gate(s.event({ service: "api" }), s.ctx);
    assert.match(r!.reason!, /the reviewer model changed/);
  });

  test("any other global commit while pending denies (revision moved)", async () => {
    const s = await setup();
    s.faux.setResponses([
      async () => {
        await s.global.setEnabled(true);
        return fauxAssistantMessage(VERDICT.allow);
      },
    ]);
    const r = await s.gate(s.event({ service: "api" }), s.ctx);
    assert.match(r!.reason!, /the auto-mode settings changed/);
  });

  test("a backend change while pending denies", async () => {
    let backend: Backend = "review-only";
    const s = await setup({ backend: () => backend });
    s.faux.setResponses([() => ((backend = "unavailable"), fauxAssistantMessage(VERDICT.allow))]);
    const r = await s.gate(s.event({ service: "api" }), s.ctx);
    assert.match(r!.reason!, /the sandbox backend changed/);
  });

  test("a reviewed deny is never admitted, whatever happens after", async () => {
    const s = await setup();
    s.faux.setResponses([fauxAssistantMessage(VERDICT.deny)]);
    const r = await s.gate(s.event({ service: "api" }), s.ctx);
    assert.equal(r?.block, true);
    assert.equal(s.records[0]?.verdict?.outcome, "deny");
  });
});

describe("P7: a reviewer's allow never removes containment", () => {
  test("an allowed bash call under the sandboxed backend is admitted to run in the sandbox", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage(VERDICT.allow), fauxAssistantMessage(VERDICT.allow)]);
    const service = createReviewService({ limiter: createLimiter(4, 16) });
    for (const [tool, input, backend, run] of [
      ["bash", { command: "git push origin main" }, "sandboxed", "sandbox"],
      ["bash", { command: "git push origin main" }, "review-only", "direct"],
    ] as const) {
      const req = request(tool, input);
      const a = await reviewAndAdmit(
        { toolCallId: "c", parentToolCallId: undefined, request: req, decision: { route: "review", reason: "network", message: "pushes" }, transcript: [] },
        {
          service,
          models: piReviewerModels(registry),
          signal: undefined,
          bindingNow: async () => ({ hash: req.hash, reviewer: JUDGE, endpoint: undefined, globalRevision: 1, sessionRevision: 1, backend, auto: true }),
        },
      );
      assert.equal(a.kind, "admit");
      assert.equal(a.kind === "admit" && a.run, run);
    }
  });
});

describe("P13: bounded concurrency", () => {
  test("reviews beyond the slots wait, beyond the queue are refused, and waiting counts against the deadline", async () => {
    const { registry, faux } = await fauxRegistry();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    faux.setResponses([async () => (await gate, fauxAssistantMessage(VERDICT.allow)), fauxAssistantMessage(VERDICT.allow)]);
    // Two runtimes share one process-wide limiter of one slot and a queue of one.
    const limiter = createLimiter(1, 1);
    const slow = createReviewService({ limiter, limits: { deadlineMs: 5000 } });
    const quick = createReviewService({ limiter, limits: { deadlineMs: 200 } });
    const job = {
      action: {
        canonical: request("deploy_service", { service: "x" }).canonical,
        tool: "deploy_service",
        input: { service: "x" },
        paths: [],
        gateReason: "unknown-tool",
        gateNote: "",
        toolCallId: "c",
        parentToolCallId: undefined,
      },
      transcript: [],
      reviewer: JUDGE,
    };
    const first = slow.review(job, piReviewerModels(registry), undefined);
    await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    const second = quick.review(job, piReviewerModels(registry), undefined);
    const third = await quick.review(job, piReviewerModels(registry), undefined);
    assert.equal(third.kind === "failure" && third.failure, "busy", "the queue holds one");
    const secondResult = await second;
    assert.equal(secondResult.kind === "failure" && secondResult.failure, "timeout", "waiting for a slot used up the deadline");
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(faux.state.callCount, 1, "only one model call was ever in flight");
    release();
    const firstResult = await first;
    assert.equal(firstResult.kind, "verdict");
  });
});

describe("P8: a verdict binds to the reviewer's endpoint as Pi resolves it", () => {
  // Issue 23 item 6: models.json holds the reviewer's endpoint. Rewritten while a review is
  // pending (and picked up by Pi's registry, as any provider registration or /model does), the
  // verdict came from one endpoint and the next review would go to another: it must not hold.
  async function loopSetup() {
    const lb = await startLoopback();
    const other = await startLoopback();
    const { registry, agentDir } = await makeRegistry(tempAgentDir(), loopbackModels(lb.baseUrl));
    const cwd = join(agentDir, "..", "work");
    mkdirSync(cwd, { recursive: true });
    const reviewer = { provider: "loop", model: "judge", thinking: "off" } as const;
    const global = createMemoryGlobalState({ reviewer, revision: 1 });
    const runtime = createRuntimeState(global, () => "review-only");
    const records: ReviewRecord[] = [];
    const gate = createToolCallGate({
      runtime,
      agentDir: () => agentDir,
      record: () => {},
      review: createReviewHook({
        runtime,
        service: createReviewService({ limiter: createLimiter(4, 16) }),
        ledger: createUsageLedger(),
        record: (r) => records.push(r),
        provenanceOf: storedAsTyped,
      }),
    });
    const ctx = {
      cwd,
      hasUI: false,
      ui: { setStatus() {} },
      sessionManager: { getBranch: () => [{ type: "message", message: { role: "user", content: "deploy the api" } }] },
      modelRegistry: registry,
      signal: undefined,
    } as unknown as ExtensionContext;
    const event = { type: "tool_call", toolCallId: "call-1", toolName: "deploy_service", input: { service: "api" } } as ToolCallEvent;
    return { lb, other, registry, agentDir, records, gate, ctx, event, close: async () => (await lb.close(), await other.close()) };
  }

  async function until(cond: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(cond(), "timed out waiting");
  }

  test("models.json rewritten to another endpoint while the review is pending voids the allow", async () => {
    const s = await loopSetup();
    try {
      let release!: () => void;
      s.lb.script([{ kind: "verdict", text: VERDICT.allow, after: new Promise<void>((r) => (release = r)) }]);
      const pending = s.gate(s.event, s.ctx);
      await until(() => s.lb.received.length === 1);
      writeFileSync(join(s.agentDir, "models.json"), JSON.stringify(loopbackModels(s.other.baseUrl)));
      await s.registry.refresh();
      release();
      const r = await pending;
      assert.equal(r?.block, true, "the verdict from the old endpoint is not admitted");
      assert.match(r!.reason!, /the reviewer's endpoint changed/);
      assert.equal(s.records[0]?.bindingChanged, "the reviewer's endpoint");
      assert.equal(s.other.received.length, 0);
    } finally {
      await s.close();
    }
  });

  test("models.json rewritten with the same endpoint (another model added) keeps the verdict", async () => {
    const s = await loopSetup();
    try {
      let release!: () => void;
      s.lb.script([{ kind: "verdict", text: VERDICT.allow, after: new Promise<void>((r) => (release = r)) }]);
      const pending = s.gate(s.event, s.ctx);
      await until(() => s.lb.received.length === 1);
      const models = loopbackModels(s.lb.baseUrl) as { providers: { loop: { models: unknown[] } } };
      models.providers.loop.models.push({ id: "extra", cost: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } });
      writeFileSync(join(s.agentDir, "models.json"), JSON.stringify(models));
      await s.registry.refresh();
      release();
      assert.equal(await pending, undefined, "admitted: where the reviewer's requests go did not change");
    } finally {
      await s.close();
    }
  });
});
