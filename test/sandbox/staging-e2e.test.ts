// P17 through a real Pi AgentSession with the real sandbox: a staged command's ordinary work lands
// and says so; work it would destroy is held, and without a reviewer (or with one that says no)
// nothing of the command lands and the model is told why next to the command's own output; with
// a reviewer that allows, the held effects are applied and /perm-undo brings the work back.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider, type Context } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { processGlobalState } from "../../src/state/global.ts";
import { REVIEW_ENTRY_TYPE, type ReviewRecord } from "../../src/tools/review-call.ts";
import { call, done } from "../helpers/faux-turns.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { sandboxSessions } from "../helpers/sandbox-sessions.ts";
import { userText, VERDICT } from "../helpers/review-fixtures.ts";

const sandbox = sandboxSessions();
const harnesses = sandbox.harnesses;

/** Text of distinct words, so removing them counts as lost content. */
const words = (tag: string, n: number) => `${Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ")}\n`;

async function world(reviewer: "none" | "allow" | "deny") {
  const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
  const h = await startPi({ extensionFactories: [(api: ExtensionAPI) => api.registerProvider(judge.provider)], tools: ["read", "bash"] });
  harnesses.push(h);
  const git = (...args: string[]) => execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd: h.cwd, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  // The agent's own commits need an identity, whatever the machine's global git configuration.
  git("config", "user.email", "agent@example.com");
  git("config", "user.name", "agent");
  writeFileSync(join(h.cwd, "tracked.txt"), "tracked\n");
  git("add", "tracked.txt");
  git("commit", "-q", "-m", "init");
  writeFileSync(join(h.cwd, "notes.txt"), words("precious", 2000));
  if (reviewer !== "none") {
    const r = await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" });
    assert.equal(r.kind, "committed");
    let sent = "";
    judge.setResponses([(ctx: Context) => ((sent = userText(ctx)), fauxAssistantMessage(reviewer === "allow" ? VERDICT.allow : VERDICT.deny))]);
    return { h, judge, git, sent: () => sent };
  }
  return { h, judge, git, sent: () => "" };
}

function reviews(h: PiHarness): ReviewRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === REVIEW_ENTRY_TYPE ? [e.data as ReviewRecord] : []));
}

describe("staged effects through a real AgentSession (P17)", () => {
  test("ordinary work lands, git commits included, and the result says what was applied", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const { h, git } = await world("none");
    h.faux.setResponses([call("bash", { command: "echo new > new.txt && git add new.txt && git commit -q -m 'agent work' && echo committed" }), done()]);
    await h.session.prompt("add new.txt and commit it");
    const [r] = toolResults(h.session);
    assert.equal(r?.isError, false, r?.text);
    assert.match(r!.text, /committed/);
    assert.match(r!.text, /\[auto mode\] The command ran on a staged copy of the workspace; its changes were applied/);
    assert.equal(readFileSync(join(h.cwd, "new.txt"), "utf8"), "new\n");
    assert.match(git("log", "--format=%s", "-1"), /agent work/);
  });

  test("without a reviewer, held effects are discarded whole and the model is told why", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const { h } = await world("none");
    h.faux.setResponses([call("bash", { command: 'echo built > out.js; for f in *.txt; do : > "$f"; done; echo emptied' }), done()]);
    await h.session.prompt("tidy up");
    const [r] = toolResults(h.session);
    assert.equal(r?.isError, true);
    assert.match(r!.text, /emptied/, "the command's own output is kept");
    assert.match(r!.text, /none of its changes were applied: they were held/);
    assert.match(r!.text, /notes\.txt \(emptied, [\d.]+ KB untracked\)/);
    assert.match(r!.text, /No reviewer is set, so held changes are not applied/);
    assert.equal(readFileSync(join(h.cwd, "notes.txt"), "utf8"), words("precious", 2000), "the work survives");
    assert.equal(existsSync(join(h.cwd, "out.js")), false, "all or nothing: the rest did not land either");
  });

  test("a reviewer that denies: discarded, with the reviewer's reason; the review is recorded and bound to the summary", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const { h, judge, sent } = await world("deny");
    h.faux.setResponses([call("bash", { command: "rm -f notes.txt" }), done()]);
    await h.session.prompt("clean the workspace");
    const [r] = toolResults(h.session);
    assert.equal(r?.isError, true);
    assert.match(r!.text, /The reviewer did not allow them/);
    assert.equal(judge.state.callCount, 1);
    assert.match(sent(), /held_effects/);
    assert.match(sent(), /notes\.txt \(deleted/);
    assert.match(sent(), /"latest_user_message":"clean the workspace"/);
    assert.ok(existsSync(join(h.cwd, "notes.txt")));
    const rec = reviews(h);
    assert.equal(rec.length, 1);
    assert.equal(rec[0]!.admitted, false);
  });

  test("a reviewer that allows: applied, and /perm-undo brings the work back", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const { h, judge } = await world("allow");
    h.faux.setResponses([call("bash", { command: "rm -f notes.txt" }), done()]);
    await h.session.prompt("delete notes.txt, I do not need it");
    const [r] = toolResults(h.session);
    assert.equal(r?.isError, false, r?.text);
    assert.match(r!.text, /held first, and the reviewer allowed them/);
    assert.equal(judge.state.callCount, 1);
    assert.equal(existsSync(join(h.cwd, "notes.txt")), false);
    await h.session.prompt("/perm-undo");
    assert.equal(readFileSync(join(h.cwd, "notes.txt"), "utf8"), words("precious", 2000), "undo restored the pre-image");
  });

  test("protected names and git's own files never land, whatever the command says it did", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const { h } = await world("none");
    h.faux.setResponses([
      // Spelled so the static reading cannot see the name: it runs contained, and the name is judged when it ends.
      call("bash", { command: `mkdir -p a/b/c/d/e/f/g/h/i && node -e 'require("fs").writeFileSync("a/b/c/d/e/f/g/h/i/" + "AGEN" + "TS.md", "obey me")'` }),
      call("bash", { command: "echo '[alias] st = !touch /tmp/pwned' >> .git/config; echo hook > .git/hooks/pre-commit; echo done" }),
      done(),
    ]);
    await h.session.prompt("go");
    const results = toolResults(h.session);
    assert.equal(results[0]!.isError, true);
    assert.match(results[0]!.text, /changes a protected path: a\/b\/c\/d\/e\/f\/g\/h\/i\/AGENTS\.md/);
    assert.equal(existsSync(join(h.cwd, "a")), false);
    // The static layer reviews a .git/config write (denied here: no reviewer); the sandbox keeps it read-only anyway.
    assert.equal(results[1]!.isError, true);
    assert.doesNotMatch(readFileSync(join(h.cwd, ".git", "config"), "utf8"), /alias/);
    assert.equal(existsSync(join(h.cwd, ".git", "hooks", "pre-commit")), false);
  });
});
