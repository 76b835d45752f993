// Audit: failures inside the gate, and the words a denial uses. Pi blocks a call whose tool_call
// handler throws, with the error's message as the tool result; the model must still read that
// automatic policy stopped it (P4), and the message must not carry a secret out (P11).

import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionToolContext, ExtensionUIContext } from "@earendil-works/pi-coding-agent";
import { createAdmissionBook } from "../src/sandbox/admission.ts";
import { createController, resetSharedController, sharedController } from "../src/sandbox/controller.ts";
import { createSandboxedBashTool } from "../src/tools/bash.ts";
import { startPi, toolResults, type PiHarness } from "./helpers/pi-session.ts";
import { recordingUi } from "./helpers/ui.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);
const TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

const harnesses: PiHarness[] = [];
before(() => {
  resetSharedController();
  sharedController(() => createController({ platform: "review-only-test-platform" }));
});
after(async () => {
  for (const h of harnesses) await h.dispose();
  resetSharedController();
});

describe("audit: a failure inside the gate denies in auto mode's words", () => {
  test("a status line that throws (with a secret in its message) denies the call with a redacted policy text", async () => {
    const rec = recordingUi();
    const ui = { ...rec.ui, setStatus: () => { throw new Error(`status line broke near ${TOKEN}`); } } as ExtensionUIContext;
    const h = await startPi({ uiContext: ui, mode: "rpc", tools: ["read", "ls"] });
    harnesses.push(h);
    h.faux.setResponses([call("ls", {}), done()]);
    await h.session.prompt("list");
    const r = toolResults(h.session)[0];
    assert.equal(r?.isError, true);
    assert.match(r?.text ?? "", /automatic policy \(not by the user\)/);
    assert.doesNotMatch(r?.text ?? "", /ghp_/);
  });

  test("the bash tool's own refusals say automatic policy, not the user", async () => {
    const tool = createSandboxedBashTool({ controller: () => createController({ platform: "win32" }), admissions: createAdmissionBook(), settings: () => ({}) });
    await assert.rejects(
      tool.execute("never-gated", { command: "ls" } as never, undefined, undefined, { cwd: tmpdir() } as unknown as ExtensionToolContext),
      /automatic policy \(not by the user\).*did not pass auto mode's gate/,
    );
  });
});
