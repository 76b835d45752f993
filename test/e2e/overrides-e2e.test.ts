// P14 through a real Pi AgentSession (faux model, the real sandbox): a call denied for want of a
// reviewer, /perm-approve 1, the agent's exact retry runs once inside the sandbox, and a second
// identical call is denied again; /perm-denials lists the denial; the approval is recorded in the
// session and the retry's decision says who approved it.

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { APPROVAL_MESSAGE_TYPE, GRANT_ENTRY_TYPE, type GrantEntry } from "../../src/commands/overrides.ts";
import { call, done } from "../helpers/faux-turns.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { sandboxSessions } from "../helpers/sandbox-sessions.ts";

const sandbox = sandboxSessions();
const harnesses = sandbox.harnesses;

const custom = <T>(h: PiHarness, type: string): T[] =>
  h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === type ? [e.data as T] : []));

describe("P14: /perm-approve through a real AgentSession", () => {
  test("denied for want of a reviewer, approved once, the exact retry runs in the sandbox, the next identical call is denied", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const notes: string[] = [];
    const h = await startPi({
      tools: ["read", "bash"],
      mode: "print",
    });
    harnesses.push(h);
    // `kill -0 $$` routes to review (it signals a process); in the sandbox it only checks the shell itself.
    const retry = { command: "kill -0 $$ && echo alive" };
    h.faux.setResponses([call("bash", retry), done("denied")]);
    await h.session.prompt("check the shell");
    assert.match(toolResults(h.session)[0]!.text, /reviewer/i, "denied for want of a reviewer");

    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string | Uint8Array) => (notes.push(String(s)), true)) as typeof process.stdout.write;
    try {
      await h.session.prompt("/perm-denials");
    } finally {
      process.stdout.write = write;
    }
    assert.match(notes.join(""), /1\. bash kill -0 \$\$ && echo alive — no reviewer is configured/);

    h.faux.setResponses([call("bash", retry), done("retried")]);
    await h.session.prompt("/perm-approve 1");
    await h.session.waitForIdle();
    const results = toolResults(h.session);
    assert.equal(results.length, 2, "the approval started a turn and the agent retried");
    assert.equal(results[1]!.isError, false, results[1]!.text);
    assert.match(results[1]!.text, /alive/);
    const decisions = custom<DecisionRecord>(h, DECISION_ENTRY_TYPE);
    assert.equal(decisions.at(-1)?.outcome, "sandboxed", "the retry ran in the sandbox");
    assert.equal(decisions.at(-1)?.approvedBy, "user");
    const grants = custom<GrantEntry>(h, GRANT_ENTRY_TYPE);
    assert.equal(grants.length, 1);
    assert.equal(grants[0]!.kind, "human-approval");
    assert.equal(grants[0]!.hash, decisions.at(-1)?.hash, "the grant was for exactly the call that ran");
    assert.ok(
      h.session.messages.some((m) => m.role === "custom" && m.customType === APPROVAL_MESSAGE_TYPE),
      "the agent was told to retry",
    );

    h.faux.setResponses([call("bash", retry), done("again")]);
    await h.session.prompt("once more");
    const last = toolResults(h.session).at(-1)!;
    assert.equal(last.isError, true, "a second identical call is denied again");
    assert.equal(custom<DecisionRecord>(h, DECISION_ENTRY_TYPE).at(-1)?.outcome, "denied");
  });

  test("held staged effects are listed, and approving applies them as they were, without running the command again", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const h = await startPi({ tools: ["read", "bash"], mode: "print" });
    harnesses.push(h);
    const precious = `${Array.from({ length: 2000 }, (_, i) => `precious${i}`).join(" ")}\n`;
    writeFileSync(join(h.cwd, "notes.txt"), precious);
    h.faux.setResponses([call("bash", { command: 'echo built > out.js; for f in *.txt; do : > "$f"; done; echo emptied' }), done("held")]);
    await h.session.prompt("tidy up");
    const [held] = toolResults(h.session);
    assert.match(held!.text, /none of its changes were applied: they were held/);
    assert.match(held!.text, /\/perm-approve/);
    assert.equal(readFileSync(join(h.cwd, "notes.txt"), "utf8"), precious, "held, not applied");

    h.faux.setResponses([done("noted")]);
    await h.session.prompt("/perm-approve 1");
    await h.session.waitForIdle();
    assert.equal(toolResults(h.session).length, 1, "the command did not run again");
    assert.equal(readFileSync(join(h.cwd, "notes.txt"), "utf8"), "", "the kept changes were applied");
    assert.equal(existsSync(join(h.cwd, "out.js")), true);
    const grants = custom<GrantEntry>(h, GRANT_ENTRY_TYPE);
    assert.equal(grants.at(-1)?.kind, "held-effects-approval");
    assert.equal(grants.at(-1)?.applied, 2);
  });
});
