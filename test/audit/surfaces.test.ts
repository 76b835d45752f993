// A shell command's surface class in the audit (src/audit/recorder.ts): the strictest class of the
// paths the shell analysis judged as paths (read, written, removed, run, entered with cd, redirected
// to), not of every word that might be one. `git status` and `npm test` name no path; `status` is
// no file in the workspace.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createAuditRecorder } from "../../src/audit/recorder.ts";
import { bashTemplate } from "../../src/audit/templates.ts";
import { decide, prepareGate } from "../../src/policy/gate.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { selfPaths } from "../../src/state/locations.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";
import { auditBytes, record, rowsOf, run } from "../helpers/audit-session.ts";

describe("through a real AgentSession (review-only backend, no reviewer)", () => {
  const pi = reviewOnlySessions();
  after(() => processGlobalState().setEnabled(true));

  test("a shell command's surface is the class of the paths it was judged to touch: git status and npm test name none", async () => {
    const h = await pi({ responses: [] });
    const tmp = join(h.root, "tmp");
    mkdirSync(tmp, { recursive: true });
    writeFileSync(join(h.agentDir, "auto-mode.json"), JSON.stringify({ version: 1, tmpRoot: tmp }));
    writeFileSync(join(h.cwd, "notes.txt"), "x\n");
    // Under the real home, named so that no such file exists: without a reviewer the removal is refused anyway.
    const gone = `~/pi-auto-mode-surface-test-${process.pid}-absent`;
    const commands: Array<[string, string]> = [
      ["git status", "unknown"],
      ["npm test", "unknown"],
      ["cat notes.txt", "workspace"],
      [`rm -rf ${gone}`, "home"],
      ["cat /etc/passwd", "external"],
      ["cat ~/.ssh/id_rsa", "sensitive"],
      [`cp notes.txt ${tmp}/b`, "temp"],
    ];
    const results = await run(
      h,
      commands.map(([command]) => ["bash", { command }]),
    );
    assert.equal(results.length, commands.length, JSON.stringify(results));
    assert.equal(results[3]?.isError, true, `the removal was refused: ${results[3]?.text}`);
    const rows = rowsOf(h.agentDir);
    assert.equal(
      rows.reduce((n, r) => n + r.count, 0),
      commands.length,
    );
    // `cat *` is three rows: the template is the same, the surfaces are not.
    assert.deepEqual(rows.map((r) => [r.template, r.surface]).sort(), commands.map(([c, cls]) => [bashTemplate(c), cls]).sort());
    const bytes = auditBytes(h.agentDir);
    for (const p of [h.root, "notes.txt", "passwd", "id_rsa", "surface-test", homedir()]) assert.ok(!bytes.includes(Buffer.from(p)), p);
  });
});

describe("what the recorder classifies at the flush", () => {
  for (const rules of [false, true])
    test(`only the paths the analysis judged count, by their role (${rules ? "with" : "without"} rules)`, (t) => {
      const root = realpathSync(mkdtempSync(join(tmpdir(), "audit-surfaces-")));
      t.after(() => rmSync(root, { recursive: true, force: true }));
      const agentDir = join(root, "agent");
      const home = join(root, "home");
      const cwd = join(home, "ws");
      const tmp = join(root, "tmp");
      for (const d of [cwd, tmp, join(home, ".ssh"), agentDir]) mkdirSync(d, { recursive: true });
      writeFileSync(join(cwd, "notes.txt"), "x\n");
      // A user rule makes the gate build the rule subject, whose candidates are every word: they do not decide the class.
      if (rules) writeFileSync(join(agentDir, "auto-mode.json"), JSON.stringify({ version: 1, rules: { deny: [{ command: "never-run-this" }] } }));
      const warnings: string[] = [];
      const rec = createAuditRecorder({ agentDir: () => agentDir, home, warn: (m) => warnings.push(m) });
      const gate = prepareGate({ cwd, home, agentDir, defaultTmpRoot: tmp, selfPaths: selfPaths(agentDir) });
      assert.equal(gate.judge.rulesConfigured, rules);
      const commands: Array<[string, string]> = [
        // Each its own template, so each row is one command's.
        ["git status", "unknown"],
        ["npm test", "unknown"],
        ["echo hello world", "unknown"],
        ["git log --oneline -n 5", "unknown"],
        ["cat notes.txt", "workspace"],
        ["rm -rf ~/x", "home"],
        ["head /etc/passwd", "external"],
        ["wc ~/.ssh/id_rsa", "sensitive"],
        [`cp a ${tmp}/b`, "temp"],
        // A redirection's target, a cd's, a program run by its path.
        ["echo hi > out.txt", "workspace"],
        [`sort -u notes.txt > ${tmp}/sorted`, "temp"],
        ["cd /etc && git status --short", "external"],
        ["./scripts/run.sh --fast", "workspace"],
        // A device is no surface.
        ["npm run build > /dev/null", "unknown"],
      ];
      for (const [i, [command]] of commands.entries()) {
        const judged = decide("bash", { command }, gate, "review-only");
        rec.noteCall(`c${i}`, "bash", { command });
        rec.decision(record(`c${i}`, "bash"), cwd, { subject: judged.judgement?.subject, context: gate.judge });
      }
      rec.flush();
      assert.deepEqual(warnings, []);
      const rows = rowsOf(agentDir);
      assert.equal(new Set(rows.map((r) => r.template)).size, commands.length, rows.map((r) => r.template).join(" | "));
      const byTemplate = new Map(rows.map((r) => [r.template, r.surface]));
      assert.deepEqual(
        commands.map(([c]) => [c, byTemplate.get(bashTemplate(c))]),
        commands,
      );
      const bytes = auditBytes(agentDir);
      for (const p of [root, "notes.txt", "id_rsa", "passwd", "sorted", "run.sh"]) assert.ok(!bytes.includes(Buffer.from(p)), p);
    });
});
