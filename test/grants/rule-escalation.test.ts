// An allow rule never means "no sandbox" (issue 14, P7): a call it covers still runs staged in
// the sandbox. Only a rule that says `"unsandboxed": true` approves running outside, and only for
// a call that asks to (`sandbox_permissions: "require_escalated"`), once, without the reviewer;
// protected paths and writes outside the writable roots still need review. Through the Pi-free gate.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type CallRecord, createCallGate, type GateOutcome } from "../../src/grants/admit-call.ts";
import { createTicketBook } from "../../src/grants/tickets.ts";
import { USER_CONFIG_FILE } from "../../src/policy/config/load.ts";
import { createMemoryGlobalState } from "../../src/state/global.ts";
import { createRuntimeState } from "../../src/state/runtime-state.ts";

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function world(rules: unknown) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pam-rule-escalation-")));
  made.push(root);
  const ws = join(root, "ws");
  const agentDir = join(root, "agent");
  mkdirSync(join(ws, ".git"), { recursive: true });
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(join(agentDir, USER_CONFIG_FILE), JSON.stringify({ version: 1, rules }));
  const runtime = createRuntimeState(createMemoryGlobalState({ revision: 1 }), () => "sandboxed");
  const tickets = createTicketBook();
  const gate = createCallGate({ runtime, agentDir: () => agentDir, tickets });
  const records: CallRecord[] = [];
  let n = 0;
  const run = (command: string, escalate: boolean): Promise<GateOutcome> =>
    gate(
      {
        toolCallId: `c${++n}`,
        parentToolCallId: undefined,
        toolName: "bash",
        input: escalate ? { command, sandbox_permissions: "require_escalated", justification: "needs the docker socket" } : { command },
        cwd: ws,
      },
      { record: (r) => records.push(r) },
    );
  const ticket = () => {
    const t = tickets.take(`c${n}`);
    return t.kind === "admitted" ? (t.ticket.placement === "host" ? `host ${t.ticket.why}` : `sandbox ${t.ticket.workspace}`) : t.kind;
  };
  return { run, records, ticket };
}

describe("an allow rule and the sandbox", () => {
  test("a plain allow rule: the call runs staged, and an escalation still needs a reviewer", async () => {
    const w = world({ allow: [{ command: "docker *" }] });
    assert.equal((await w.run("docker ps", false)).kind, "run-sandboxed");
    assert.equal(w.ticket(), "sandbox staged");
    const out = await w.run("docker ps", true);
    assert.equal(out.kind, "deny", "no reviewer, and the rule does not say unsandboxed");
    assert.equal(w.ticket(), "missing");
  });

  test("unsandboxed: the escalation the rule covers runs once on the host, without review; the plain call stays staged", async () => {
    const w = world({ allow: [{ command: "docker *", unsandboxed: true }] });
    assert.equal((await w.run("docker ps", false)).kind, "run-sandboxed", "without the ask it stays in the sandbox");
    assert.equal(w.ticket(), "sandbox staged");
    assert.equal((await w.run("docker ps", true)).kind, "run-on-host-once");
    assert.equal(w.ticket(), "host escalation-approved");
    const r = w.records.at(-1)!;
    assert.deepEqual([r.reason, r.outcome], ["user-allow-rule", "allowed"]);
    assert.match(r.message, /outside the sandbox: the user's allow rule with "unsandboxed": true/);
  });

  test("unsandboxed opens no protected path, no write outside the roots, no command it does not cover", async () => {
    const w = world({ allow: [{ command: "docker *", unsandboxed: true }, { command: "echo *" }], deny: [{ command: "docker rm *" }] });
    for (const command of ["docker ps > .git/hooks/pre-commit", "docker ps > ~/out", "docker ps && echo done", "docker rm -f x", "rm -rf ~"]) {
      const out = await w.run(command, true);
      assert.equal(out.kind, "deny", command);
      assert.equal(w.ticket(), "missing", command);
    }
  });
});
