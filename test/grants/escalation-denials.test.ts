// The class an escalation's denial names, through the Pi-free gate: a command that asks to leave
// the sandbox keeps the class of what stopped it. Want of a reviewer says so; damaged global state
// (the gate then reviews nothing) says it is a fault, not that no reviewer is set; a hard-denied
// command stays a hard deny and never suggests asking the user.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createCallGate, type GateOutcome } from "../../src/grants/admit-call.ts";
import { createTicketBook } from "../../src/grants/tickets.ts";
import { denialClassOf } from "../../src/policy/denial.ts";
import { createMemoryGlobalState, type GlobalStateStore } from "../../src/state/global.ts";
import { createRuntimeState } from "../../src/state/runtime-state.ts";
import { JUDGE } from "../helpers/review-fixtures.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pam-esc-denials-")));
const ws = join(root, "ws");
const agentDir = join(root, "agent");
mkdirSync(ws, { recursive: true });
mkdirSync(agentDir, { recursive: true });
after(() => rmSync(root, { recursive: true, force: true }));

async function escalate(global: GlobalStateStore, command: string): Promise<string> {
  const runtime = createRuntimeState(global, () => "sandboxed");
  await global.read();
  const gate = createCallGate({ runtime, agentDir: () => agentDir, tickets: createTicketBook() });
  const out: GateOutcome = await gate(
    {
      toolCallId: "c1",
      parentToolCallId: undefined,
      toolName: "bash",
      input: { command, sandbox_permissions: "require_escalated", justification: "needs the host's docker socket" },
      cwd: ws,
    },
    { record: () => {} },
  );
  assert.equal(out.kind, "deny");
  return (out as { text: string }).text;
}

describe("an escalation's denial keeps the class of what stopped it", () => {
  test("no reviewer set: needs review, and the way back into the sandbox", async () => {
    const t = await escalate(createMemoryGlobalState({ revision: 1 }), "docker ps");
    assert.equal(denialClassOf(t), "no-reviewer", t);
    assert.match(t, /asks to run outside the sandbox/);
    assert.match(t, /\nNext: The user can choose a reviewer with \/perm-auto-model/);
  });

  test("damaged global state: a fault, not the want of a reviewer", async () => {
    const global = createMemoryGlobalState({ reviewer: JUDGE, revision: 2 });
    global.inject({ kind: "fault", fault: { code: "torn" as never, detail: "the config is torn", floor: 2, survivor: undefined } });
    const t = await escalate(global, "docker ps");
    assert.equal(denialClassOf(t), "cannot-check", t);
    assert.doesNotMatch(t, /no reviewer is set/);
  });

  test("a hard-denied command: a hard deny wherever it would run", async () => {
    const t = await escalate(createMemoryGlobalState({ reviewer: JUDGE, revision: 1 }), "rm -rf ~");
    assert.equal(denialClassOf(t), "hard-deny", t);
    assert.match(t, /denied wherever it runs/);
    assert.doesNotMatch(t, /ask the user|\/perm-approve/);
  });
});
