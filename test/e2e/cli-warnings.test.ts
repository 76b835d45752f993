// The `pi-auto-mode` command prints what it was asked for and nothing of Node's: reading the audit
// loads node:sqlite, which Node 22 still flags experimental on first use; that notice is silenced in
// bin/pi-auto-mode.js (Pi silences it too), while any other warning still prints as Node would.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { AuditStore, auditDir } from "../../src/audit/store.ts";
import { runCli } from "../helpers/cli.ts";

const root = mkdtempSync(join(tmpdir(), "pam-cli-warnings-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("pi-auto-mode audit over a real store: the report on stdout, nothing on stderr", async () => {
  const agentDir = join(root, "agent");
  const ws = join(root, "ws");
  mkdirSync(ws, { recursive: true });
  const store = AuditStore.open({ dir: auditDir(agentDir), onWarning: (m) => assert.fail(m) });
  store.record({ at: Date.now(), tool: "bash", template: "git status", surface: "workspace", route: "sandbox", reason: "read-only", outcome: "ran" });
  store.flush();
  store.close();
  const r = await runCli(["audit", "--scope", "all"], { cwd: ws, env: { PI_CODING_AGENT_DIR: agentDir, HOME: root } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /1 decisions?: 1 ran/);
  assert.equal(r.stderr, "");
});

test("any other warning still prints", async () => {
  // Emitted a tick after start, so the command's own listener (not Node's) is the one that prints it.
  const preload = "data:text/javascript,setTimeout(()=>process.emitWarning('a-test-warning','TestWarning'),0)";
  const r = await runCli(["--version"], { cwd: root, env: { NODE_OPTIONS: `--import=${preload}` } });
  assert.match(r.stderr, /\(node:\d+\) TestWarning: a-test-warning/);
});
