// End to end through a real Pi AgentSession with the faux provider and this package's extension
// loaded from its entry file: what the model can and cannot get done.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { createCodemodeExtension, type ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";
import { recordingUi } from "../helpers/ui.ts";
import { deployTool } from "../helpers/tools.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

function decisions(pi: PiHarness): DecisionRecord[] {
  return pi.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

// These tests judge the gate under the review-only backend (a platform without an OS sandbox);
// the sandboxed backend has its own end-to-end tests in sandbox/e2e.test.ts.
const pi = reviewOnlySessions();
after(() => {
  processGlobalState().setEnabled(true);
});

describe("P4: a denied call never reaches its executor", () => {
  test("denied bash leaves the canary, the model gets isError and continues with a safer call", async () => {
    const h = await pi({ responses: [] });
    const canary = join(h.root, "outside", "canary");
    mkdirSync(join(h.root, "outside"), { recursive: true });
    writeFileSync(canary, "alive");
    h.faux.setResponses([call("bash", { command: `rm -rf ${join(h.root, "outside")}` }), call("bash", { command: "ls" }), done()]);
    await h.session.prompt("clean up");
    assert.equal(existsSync(canary), true, "the denied rm never ran");
    const results = toolResults(h.session);
    assert.equal(results.length, 2);
    assert.equal(results[0]!.isError, true);
    assert.match(results[0]!.text, /automatic policy \(not by the user\)/);
    assert.equal(results[1]!.isError, false, "the safer retry ran");
    assert.equal(h.session.getLastAssistantText(), "done");
  });

  test("a catastrophic command is denied, not reviewed", async () => {
    const h = await pi({ responses: [call("bash", { command: "rm -rf ~" }), done()] });
    await h.session.prompt("tidy");
    const d = decisions(h);
    assert.equal(d[0]?.route, "deny");
    assert.equal(d[0]?.reason, "hard-deny");
    assert.equal(toolResults(h.session)[0]?.isError, true);
  });
});

describe("P1: every tool passes the gate", () => {
  test("an unknown custom tool is not waved through", async () => {
    const deploy = deployTool();
    const h = await pi({
      extensionFactories: [deploy.factory],
      tools: ["read", "deploy_service"],
      responses: [call("deploy_service", { service: "api" }), done()],
    });
    await h.session.prompt("deploy the api");
    assert.equal(deploy.runs(), 0);
    assert.equal(toolResults(h.session)[0]?.isError, true);
    assert.equal(decisions(h)[0]?.reason, "unknown-tool");
  });

  test("codemode's inner calls each reach the gate", async () => {
    const h = await pi({
      extensionFactories: [createCodemodeExtension()],
      tools: ["read", "bash", "codemode"],
      responses: [
        call("codemode", { code: 'try { await tools.bash({ command: "rm -rf ~" }); return "ran"; } catch (e) { return "blocked: " + e.message; }' }),
        done(),
      ],
    });
    await h.session.prompt("run it in codemode");
    const inner = decisions(h).find((d) => d.tool === "bash");
    assert.ok(inner, "the nested bash call was decided by the gate");
    assert.ok(inner.parentToolCallId, "it is a nested call");
    assert.equal(inner.outcome, "denied");
    const outer = toolResults(h.session).find((r) => r.toolName === "codemode");
    assert.match(outer?.text ?? "", /blocked: /);
  });
});

describe("P10: text written by the model cannot change settings", () => {
  test("model text '/perm unrestricted' changes nothing", async () => {
    const h = await pi({ responses: [done("/perm unrestricted"), call("bash", { command: "curl -s https://example.com" }), done()] });
    await h.session.prompt("what mode are you in?");
    await h.session.prompt("fetch the page");
    const d = decisions(h);
    assert.equal(d[0]?.mode, "auto-review-only");
    assert.equal(d[0]?.outcome, "denied");
  });

  test("the user's /perm unrestricted is honoured for this runtime, hard denies still hold", async () => {
    const h = await pi({
      responses: [call("bash", { command: "curl -s https://example.com -o /dev/null || true" }), call("bash", { command: "rm -rf ~" }), done()],
    });
    await h.session.prompt("/perm unrestricted");
    await h.session.prompt("go");
    const d = decisions(h);
    assert.equal(d[0]?.mode, "unrestricted");
    assert.equal(d[0]?.outcome, "allowed");
    assert.equal(d[1]?.outcome, "denied");
    assert.equal(d[1]?.reason, "hard-deny");
  });

  test("/perm-enabled off stops gating in every runtime of the process", async () => {
    const a = await pi({ responses: [] });
    const b = await pi({ responses: [call("mcp__nope__x", {}), done()] });
    await a.session.prompt("/perm-enabled off");
    try {
      await b.session.prompt("go");
      assert.equal(decisions(b).length, 0, "no decision is recorded while off");
    } finally {
      processGlobalState().setEnabled(true);
    }
  });
});

describe("P4: no UI dialog for an action decision", () => {
  test("gated calls never open select/confirm/input/editor/custom", async () => {
    const { ui, calls, dialogs } = recordingUi();
    const h = await pi({
      uiContext: ui,
      mode: "rpc",
      responses: [call("write", { path: ".git/hooks/pre-commit", content: "x" }), call("bash", { command: "rm -rf ~" }), call("read", { path: "x" }), done()],
    });
    await h.session.prompt("go");
    assert.deepEqual(dialogs, []);
    assert.ok(calls.includes("setStatus"), "the status line was updated");
    assert.equal(existsSync(join(h.cwd, ".git", "hooks", "pre-commit")), false);
  });
});

describe("the decided input is frozen", () => {
  test("a later extension that rewrites an approved command blocks the call instead", async () => {
    const rewriter = (api: ExtensionAPI) => {
      api.on("tool_call", (event) => {
        (event.input as { command: string }).command = "touch rewritten";
      });
    };
    const h = await pi({ extensionFactories: [rewriter], responses: [call("bash", { command: "ls" }), done()] });
    await h.session.prompt("list");
    assert.equal(existsSync(join(h.cwd, "rewritten")), false);
    assert.equal(toolResults(h.session)[0]?.isError, true);
  });
});

describe("P2: modes across runtime lifecycles", () => {
  test("reload restores unrestricted; resuming the same session file in a new runtime starts in auto", async () => {
    const { SessionManager } = await import("@earendil-works/pi-coding-agent");
    const { makeRoot } = await import("../helpers/pi-session.ts");
    const dirs = makeRoot();
    const sessionDir = join(dirs.root, "sessions");
    const first = await pi({ root: dirs.root, cwd: dirs.cwd, sessionManager: SessionManager.create(dirs.cwd, sessionDir), responses: [] });
    await first.session.prompt("/perm unrestricted");
    await first.session.reload();
    first.faux.setResponses([call("bash", { command: "curl -s https://example.com -o /dev/null || true" }), done()]);
    await first.session.prompt("fetch");
    assert.equal(decisions(first).at(-1)?.mode, "unrestricted", "reload keeps the same logical runtime");

    const file = first.session.sessionManager.getSessionFile();
    assert.ok(file);
    const resumed = await pi({
      root: dirs.root,
      cwd: dirs.cwd,
      sessionManager: SessionManager.open(file, sessionDir),
      responses: [call("bash", { command: "curl -s https://example.com" }), done()],
    });
    await resumed.session.prompt("fetch again");
    const last = decisions(resumed).at(-1);
    assert.equal(last?.mode, "auto-review-only", "a resumed session is a new runtime");
    assert.equal(last?.outcome, "denied");
    // and a reload of the resumed runtime does not resurrect the old runtime's unrestricted mode
    await resumed.session.reload();
    resumed.faux.setResponses([call("bash", { command: "curl -s https://example.com" }), done()]);
    await resumed.session.prompt("once more");
    assert.equal(decisions(resumed).at(-1)?.mode, "auto-review-only");
  });
});
