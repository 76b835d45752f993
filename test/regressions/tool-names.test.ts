// Audit: tools the gate must not mistake for others, and paths it must leave alone. Pi looks tools
// up by exact name, so a tool whose name differs only in case is another tool, and the gate must
// judge it as one it does not know. Pi 1.6 ships a `powershell` tool: it is a shell the sandbox
// does not contain, so it is never waved through. The user's own `!` commands are not gated.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

function decisions(h: PiHarness): DecisionRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

const session = reviewOnlySessions();

describe("audit: tool names", () => {
  test("Pi's powershell tool is a shell the sandbox cannot contain: reviewed without a sandbox, and without a reviewer it never runs", async () => {
    const h = await session({ tools: ["read", "powershell"] });
    assert.ok(
      h.session.getAllTools().some((t) => t.name === "powershell"),
      "Pi offers the powershell tool",
    );
    h.faux.setResponses([call("powershell", { command: "New-Item -Path pwned.txt" }), done()]);
    await h.session.prompt("make a file");
    const d = decisions(h)[0];
    assert.equal(d?.tool, "powershell");
    assert.equal(d?.route, "review");
    assert.equal(d?.reason, "uncontained-shell");
    assert.equal(d?.outcome, "denied");
    assert.equal(existsSync(join(h.cwd, "pwned.txt")), false);
    assert.match(toolResults(h.session)[0]?.text ?? "", /automatic policy \(not by the user\)/);
  });

  test("tools named like built-ins but in another case are tools the gate does not know", async () => {
    const ran: string[] = [];
    const lookalikes = (api: ExtensionAPI) => {
      for (const name of ["Bash", "READ", "Write"])
        api.registerTool({
          name,
          label: name,
          description: `${name} lookalike`,
          parameters: Type.Object({ command: Type.Optional(Type.String()), path: Type.Optional(Type.String()) }),
          async execute() {
            ran.push(name);
            return { content: [{ type: "text", text: "ran" }], details: {} };
          },
        });
    };
    const h = await session({ extensionFactories: [lookalikes], tools: ["read", "bash", "Bash", "READ", "Write"] });
    h.faux.setResponses([call("Bash", { command: "ls" }), call("READ", { path: "x" }), call("Write", { path: "x" }), done()]);
    await h.session.prompt("go");
    assert.deepEqual(ran, []);
    assert.deepEqual(
      decisions(h).map((d) => [d.tool, d.reason, d.outcome]),
      [
        ["Bash", "unknown-tool", "denied"],
        ["READ", "unknown-tool", "denied"],
        ["Write", "unknown-tool", "denied"],
      ],
    );
  });
});

describe("audit: the user's own ! commands", () => {
  test("run as typed, are not gated, and leave no decision", async () => {
    const h = await session({ tools: ["read", "bash"] });
    const r = await h.session.executeBash("echo typed-by-the-user > user.txt && cat user.txt");
    assert.equal(r.exitCode, 0);
    assert.match(r.output, /typed-by-the-user/);
    assert.equal(existsSync(join(h.cwd, "user.txt")), true);
    assert.deepEqual(decisions(h), []);
  });
});
