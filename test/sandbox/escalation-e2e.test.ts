// Escalation with a reviewer, through a real AgentSession and the real sandbox: a call asking to
// leave the sandbox gets a fresh review of its own; an approved one runs exactly once on the host,
// a denied one runs zero times, and a hard-denied command is never sent to the reviewer (P3, P7, P9).

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { sharedController } from "../../src/sandbox/controller.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { VERDICT } from "../helpers/review-fixtures.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

let unavailableReason: string | undefined;
before(async () => {
  const status = await sharedController().ready();
  if (status.backend !== "sandboxed") unavailableReason = status.reason;
});

const harnesses: PiHarness[] = [];
after(async () => {
  for (const h of harnesses) await h.dispose();
});

async function world(): Promise<{ h: PiHarness; judge: ReturnType<typeof fauxProvider> }> {
  const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
  const ext = (api: ExtensionAPI) => {
    api.registerProvider(judge.provider);
  };
  const h = await startPi({ extensionFactories: [ext], tools: ["read", "bash"] });
  harnesses.push(h);
  const r = await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" });
  assert.equal(r.kind, "committed");
  return { h, judge };
}

function decisions(h: PiHarness): DecisionRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

// A write outside the workspace: the sandbox would refuse it, so only a host run can make it.
const outside = (h: PiHarness) => join(h.root, "host-only.txt");

describe("P7, P9: reviewed escalations", () => {
  test("an approved escalation runs exactly once, outside the sandbox", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const { h, judge } = await world();
    judge.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    h.faux.setResponses([
      call("bash", {
        command: `echo ran >> ${outside(h)}`,
        sandbox_permissions: "require_escalated",
        justification: "the release notes live outside the workspace",
      }),
      done(),
    ]);
    await h.session.prompt(`append "ran" to ${outside(h)}`);
    assert.equal(judge.state.callCount, 1, "one fresh review");
    assert.equal(readFileSync(outside(h), "utf8"), "ran\n", "ran once, on the host");
    assert.equal(toolResults(h.session)[0]?.isError, false);
    assert.equal(decisions(h)[0]?.outcome, "allowed");
  });

  test("a denied escalation runs zero times and the model continues", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const { h, judge } = await world();
    judge.setResponses([fauxAssistantMessage(VERDICT.deny)]);
    h.faux.setResponses([
      call("bash", { command: `echo ran >> ${outside(h)}`, sandbox_permissions: "require_escalated", justification: "trust me" }),
      call("bash", { command: "echo contained > inside.txt" }),
      done(),
    ]);
    await h.session.prompt("tidy up");
    const results = toolResults(h.session);
    assert.equal(existsSync(outside(h)), false);
    assert.equal(results[0]?.isError, true);
    assert.match(results[0]!.text, /outside the sandbox/);
    assert.match(results[0]!.text, /never asked to delete/, "the reviewer's rationale reaches the model");
    assert.equal(readFileSync(join(h.cwd, "inside.txt"), "utf8"), "contained\n");
  });

  test("a hard-denied command asking to escalate is never sent to the reviewer", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const { h, judge } = await world();
    judge.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    h.faux.setResponses([call("bash", { command: "rm -rf ~", sandbox_permissions: "require_escalated", justification: "cleanup" }), done()]);
    await h.session.prompt("clean everything");
    assert.equal(judge.state.callCount, 0);
    assert.equal(toolResults(h.session)[0]?.isError, true);
  });
});
