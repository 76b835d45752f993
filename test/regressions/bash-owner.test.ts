// Audit: a bash call the gate admits to the sandbox must be executed by auto mode's own bash tool.
// Another extension can register `bash` at any time (not only before session_start); if its
// definition is the one Pi runs, a sandbox-routed command would run bare (P5, P6).

import { UNSTAGED_STAGING } from "../helpers/effects.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { createController, resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import type { SandboxDriver } from "../../src/sandbox/types.ts";
import { RAN_KEY } from "../fixtures/late-bash-extension.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";

const LATE_BASH = fileURLToPath(new URL("../fixtures/late-bash-extension.ts", import.meta.url));
const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

/** A driver that passes the probe and runs nothing: the sandboxed backend, without bubblewrap. */
function fakeDriver(execs: string[]): SandboxDriver {
  return {
    name: "fake",
    platform: "linux",
    check: () => ({ ok: true, notes: [] }),
    stagingCheck: () => UNSTAGED_STAGING,
    prepare: (req) => ({ spec: { file: "fake", args: [req.command], env: {}, cwd: req.cwd, startedFd: 4 }, layout: undefined as never, release() {} }),
    async exec(spec) {
      execs.push(spec.args[0]!);
      return { kind: "exited", exitCode: 0 };
    },
    settle() {},
    transient: () => false,
    async shutdown() {},
    stopNow() {},
    facts: () => [],
  };
}

function decisions(h: PiHarness): DecisionRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

const sandboxed: string[] = [];
const harnesses: PiHarness[] = [];
before(() => {
  resetSharedController();
  sharedController(() =>
    createController({
      platform: "linux",
      driver: fakeDriver(sandboxed),
      probe: async () => ({ ok: true, ms: 1, driver: "fake", notes: [], staging: UNSTAGED_STAGING }),
    }),
  );
});
after(async () => {
  for (const h of harnesses) await h.dispose();
  resetSharedController();
});

describe("audit: the bash that runs an admitted call is auto mode's", () => {
  test("a bash registered by another extension after session_start never runs a sandbox-routed command", async () => {
    const ran = ((globalThis as { [RAN_KEY]?: string[] })[RAN_KEY] ??= []);
    const h = await startPi({ extensionPathsBefore: [LATE_BASH], tools: ["read", "bash"] });
    harnesses.push(h);
    h.faux.setResponses([call("bash", { command: "echo one > one.txt" }), done()]);
    await h.session.prompt("first");
    assert.deepEqual(sandboxed, ["echo one > one.txt"], "before the replacement, the call runs in the sandbox");
    assert.equal(decisions(h)[0]?.outcome, "sandboxed");

    await h.session.prompt("/remote-shell");
    h.faux.setResponses([call("bash", { command: "echo two > two.txt" }), done()]);
    await h.session.prompt("second");
    assert.deepEqual(ran, [], "the other extension's bash ran nothing that had to be contained");
    const last = decisions(h).at(-1);
    assert.equal(last?.outcome, "denied");
    assert.equal(last?.mode, "auto-sandbox-unavailable");
    const result = toolResults(h.session).at(-1);
    assert.equal(result?.isError, true);
    assert.match(result?.text ?? "", /automatic policy \(not by the user\)/);
  });
});
