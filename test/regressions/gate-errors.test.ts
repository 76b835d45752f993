// Audit: failures inside the gate, and the words a denial uses. Pi blocks a call whose tool_call
// handler throws, with the error's message as the tool result; the model must still read that
// automatic policy stopped it (P4), and the message must not carry a secret out (P11).

import { testEffects } from "../helpers/effects.ts";
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI, ExtensionToolContext, ExtensionUIContext } from "@earendil-works/pi-coding-agent";
import { processGlobalState } from "../../src/state/global.ts";
import { createTicketBook } from "../../src/grants/tickets.ts";
import { createController } from "../../src/sandbox/controller.ts";
import { createSandboxedBashTool } from "../../src/tools/bash.ts";
import { toolResults } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";
import { recordingUi } from "../helpers/ui.ts";
import { DEFAULT_LIMITS, runReview } from "../../src/review/engine.ts";
import { createReviewService } from "../../src/review/service.ts";
import { action, fauxRegistry, JUDGE, VERDICT } from "../helpers/review-fixtures.ts";
import { deployTool } from "../helpers/tools.ts";
import { piReviewerModels, type PiModelRegistry } from "../../src/tools/reviewer-models.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);
const TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

const session = reviewOnlySessions();

describe("audit: a failure inside the gate denies in auto mode's words", () => {
  test("a status line that throws (with a secret in its message) denies the call with a redacted policy text", async () => {
    const rec = recordingUi();
    let broken = false;
    const ui = {
      ...rec.ui,
      setStatus: (key: string, text: string | undefined) => {
        if (broken) throw new Error(`status line broke near ${TOKEN}`);
        rec.ui.setStatus(key, text);
      },
    } as ExtensionUIContext;
    const h = await session({ uiContext: ui, mode: "rpc", tools: ["read", "ls"] });
    broken = true;
    h.faux.setResponses([call("ls", {}), done()]);
    await h.session.prompt("list");
    const r = toolResults(h.session)[0];
    assert.equal(r?.isError, true);
    assert.match(r?.text ?? "", /automatic policy \(not by the user\)/);
    assert.doesNotMatch(r?.text ?? "", /ghp_/);
  });

  test("the bash tool's own refusals say automatic policy, not the user", async () => {
    const tool = createSandboxedBashTool({
      controller: () => createController({ platform: "win32" }),
      admissions: createTicketBook(),
      settings: () => ({}),
      effects: testEffects(),
    });
    await assert.rejects(
      tool.execute("never-gated", { command: "ls" } as never, undefined, undefined, { cwd: tmpdir() } as unknown as ExtensionToolContext),
      /automatic policy \(not by the user\).*\n.*did not pass auto mode's gate/,
    );
  });
});

describe("audit: the reviewer's Pi edges fail closed", () => {
  const job = () => ({
    action: action("bash", { command: "rm -rf build/cache" }),
    transcript: [{ kind: "user" as const, text: "clear build/cache" }],
    reviewer: JUDGE,
  });

  test("a model registry that throws (find, auth or stream) is a failure that denies, never an allow", async () => {
    const { registry } = await fauxRegistry();
    const broken: Array<[string, PiModelRegistry]> = [
      [
        "find",
        {
          find: () => {
            throw new Error(`registry down ${TOKEN}`);
          },
          getProviderAuth: (p) => registry.getProviderAuth(p),
          streamSimple: (m, c, o) => registry.streamSimple(m, c, o),
        },
      ],
      [
        "auth",
        {
          find: (p, m) => registry.find(p, m),
          getProviderAuth: () => Promise.reject(new Error("auth store locked")),
          streamSimple: (m, c, o) => registry.streamSimple(m, c, o),
        },
      ],
      [
        "stream",
        {
          find: (p, m) => registry.find(p, m),
          getProviderAuth: (p) => registry.getProviderAuth(p),
          streamSimple: () => {
            throw new Error("no stream");
          },
        },
      ],
    ];
    for (const [what, models] of broken) {
      const r = await runReview(job(), piReviewerModels(models), { ...DEFAULT_LIMITS, deadlineMs: 2_000 });
      assert.equal(r.kind, "failure", what);
      assert.equal(r.kind === "failure" && r.failure, "internal", what);
      assert.doesNotMatch(r.kind === "failure" ? r.detail : "", /ghp_/, what);
    }
  });

  test("an already aborted signal (Esc before the gate ran) denies without asking the model", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    const ctl = new AbortController();
    ctl.abort("esc");
    const r = await createReviewService().review(job(), piReviewerModels(registry), ctl.signal);
    assert.equal(r.kind === "failure" && r.failure, "aborted");
    assert.equal(faux.state.callCount, 0);
  });
});

describe("audit: the session ends while a review is pending", () => {
  test("session_shutdown aborts the review; the reviewed call never runs", async () => {
    const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
    const deploy = deployTool();
    const runs = deploy.calls;
    const ext = (api: ExtensionAPI) => {
      api.registerProvider(judge.provider);
      deploy.factory(api);
    };
    const h = await session({ extensionFactories: [ext], tools: ["read", "deploy_service"] });
    await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" });
    let signal: AbortSignal | undefined;
    judge.setResponses([
      async (_ctx, options) => {
        signal = options?.signal;
        await h.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
        return fauxAssistantMessage(VERDICT.allow);
      },
    ]);
    h.faux.setResponses([fauxAssistantMessage([fauxToolCall("deploy_service", { service: "api" })], { stopReason: "toolUse" }), done()]);
    await h.session.prompt("deploy the api");
    assert.equal(signal?.aborted, true, "the reviewer's request saw the shutdown");
    assert.deepEqual(runs, []);
    const r = toolResults(h.session)[0];
    assert.equal(r?.isError, true);
    assert.match(r?.text ?? "", /automatic policy \(not by the user\)/);
  });
});
