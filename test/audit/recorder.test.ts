// The audit in the decision path (src/audit/recorder.ts, wired in extension.ts): what a real
// AgentSession's decisions leave in the store, that nothing is written on the decision path, the
// configuration's switches, and the database's bytes scanned for every secret of a corpus.

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, mkdirSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { auditDir, AuditStore, DATABASE_FILE, type DailyRow } from "../../src/audit/store.ts";
import { createAuditRecorder, FLUSH_DELAY_MS, MAX_BUFFERED } from "../../src/audit/recorder.ts";
import type { CallRecord } from "../../src/grants/admit-call.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { type PiHarness, toolResults } from "../helpers/pi-session.ts";
import { VERDICT } from "../helpers/review-fixtures.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });

/** Runs one prompt of tool calls, then shuts the session down (which flushes the audit). */
async function run(h: PiHarness, calls: Array<[string, Parameters<typeof fauxToolCall>[1]]>) {
  h.faux.setResponses([...calls.map(([n, a]) => call(n, a)), fauxAssistantMessage([fauxText("done")])]);
  await h.session.prompt("go");
  const results = toolResults(h.session);
  await h.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
  return results;
}

/** The store's rows, read through a connection of the test's own. */
function rowsOf(agentDir: string): DailyRow[] {
  const warnings: string[] = [];
  const store = AuditStore.open({ dir: auditDir(agentDir), onWarning: (m) => warnings.push(m) });
  const rows = store.rows();
  store.close();
  assert.deepEqual(warnings, []);
  return rows;
}

describe("through a real AgentSession (review-only backend)", () => {
  const pi = reviewOnlySessions();
  after(() => processGlobalState().setEnabled(true));

  test("each decision is counted: templates, surfaces, outcomes, the reviewer's tokens and time; the project only as its HMAC", async () => {
    const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
    const h = await pi({ extensionFactories: [(api: ExtensionAPI) => api.registerProvider(judge.provider)], responses: [] });
    assert.equal((await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" })).kind, "committed");
    judge.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    writeFileSync(join(h.cwd, "notes.txt"), "x\n");
    const results = await run(h, [
      ["bash", { command: "rm -rf ~" }],
      ["bash", { command: "ls -la" }],
      ["read", { path: "notes.txt" }],
      ["write", { path: `${h.root}/outside/out.txt`, content: "x" }],
    ]);
    assert.deepEqual(
      results.map((r) => r.isError),
      [true, false, false, false],
      JSON.stringify(results),
    );
    const rows = rowsOf(h.agentDir);
    const shape = rows.map((r) => [r.tool, r.template, r.surface, r.route, r.reason, r.outcome, r.count]).sort();
    assert.deepEqual(shape, [
      ["bash", "ls -la", "unknown", "allow", "read-only", "ran", 1],
      ["bash", "rm -rf *", "unknown", "deny", "hard-deny", "denied", 1],
      ["read", "", "workspace", "allow", "read-only", "ran", 1],
      ["write", "", "external", "review", "outside-writable-roots", "ran", 1],
    ]);
    const reviewed = rows.find((r) => r.tool === "write")!;
    assert.ok(reviewed.reviewerTokens > 0, "the reviewer's tokens");
    assert.ok(rows.filter((r) => r.tool !== "write").every((r) => r.reviewerTokens === 0 && r.reviewMs === 0));
    assert.equal(new Set(rows.map((r) => r.project)).size, 1);
    assert.match(rows[0]!.project, /^[0-9a-f]{32}$/);
    const bytes = Buffer.concat(readdirSync(auditDir(h.agentDir)).map((f) => readFileSync(join(auditDir(h.agentDir), f))));
    for (const s of [h.cwd, h.root, "notes.txt", "out.txt"]) assert.ok(!bytes.includes(Buffer.from(s)), s);
  });

  test("audit.enabled false in the user's file: no audit folder is made", async () => {
    const h = await pi({ responses: [] });
    writeFileSync(join(h.agentDir, "auto-mode.json"), JSON.stringify({ version: 1, audit: { enabled: false } }));
    const results = await run(h, [["bash", { command: "ls" }]]);
    assert.equal(results[0]?.isError, false);
    assert.equal(existsSync(auditDir(h.agentDir)), false);
  });

  test("a project that turns the audit off: none of its decisions is stored", async () => {
    const h = await pi({ responses: [] });
    mkdirSync(join(h.cwd, ".pi"), { recursive: true });
    writeFileSync(join(h.cwd, ".pi", "auto-mode.json"), JSON.stringify({ version: 1, audit: { enabled: false } }));
    const results = await run(h, [
      ["bash", { command: "ls" }],
      ["bash", { command: "rm -rf ~" }],
    ]);
    assert.deepEqual(
      results.map((r) => r.isError),
      [false, true],
    );
    assert.equal(existsSync(join(auditDir(h.agentDir), DATABASE_FILE)), false);
  });

  test("redaction: a corpus of commands and paths with secrets, URLs and assignments leaves none of them in the database or its WAL", async () => {
    const h = await pi({ responses: [] });
    const secrets = [
      "hunter2Qz",
      "ghp_Qz0123456789abcdefghijklmnop",
      "sk-ant-Qzabcdefghijklmnopqrstu",
      "QzPathSegment",
      "QzValue42",
      "example-host.Qz",
      "AKIAQZ1234567890ABCD",
      "Bearer tokQz77",
    ];
    const corpus: Array<[string, Parameters<typeof fauxToolCall>[1]]> = [
      ["bash", { command: "curl -u admin:hunter2Qz https://example-host.Qz/api" }],
      ["bash", { command: "GITHUB_TOKEN=ghp_Qz0123456789abcdefghijklmnop gh pr list" }],
      ["bash", { command: "echo sk-ant-Qzabcdefghijklmnopqrstu" }],
      ["bash", { command: "cat /srv/QzPathSegment/config.json" }],
      ["bash", { command: "grep --token QzValue42 notes" }],
      ["bash", { command: "AWS_ACCESS_KEY_ID=AKIAQZ1234567890ABCD env" }],
      ["bash", { command: "echo 'Authorization: Bearer tokQz77'" }],
      ["bash", { command: "psql 'postgres://u:hunter2Qz@example-host.Qz/db'" }],
      ["read", { path: "/srv/QzPathSegment/ghp_Qz0123456789abcdefghijklmnop.txt" }],
      ["write", { path: "QzPathSegment/x.txt", content: "Bearer tokQz77" }],
    ];
    const results = await run(h, corpus);
    assert.equal(results.length, corpus.length);
    const dir = auditDir(h.agentDir);
    const files = readdirSync(dir);
    // The process's store is still open: the WAL holds the latest writes.
    assert.ok(files.includes(`${DATABASE_FILE}-wal`), files.join(", "));
    for (const f of files) {
      const bytes = readFileSync(join(dir, f));
      for (const s of secrets) assert.ok(!bytes.includes(Buffer.from(s)), `${f} holds ${s}`);
    }
    const rows = rowsOf(h.agentDir);
    assert.equal(
      rows.reduce((n, r) => n + r.count, 0),
      corpus.length,
      "every call was counted",
    );
    // The templates still say what a rule could match.
    const templates = new Set(rows.map((r) => r.template));
    for (const t of ["curl -u * *", "GITHUB_TOKEN=* gh pr list", "grep --token * notes"]) assert.ok(templates.has(t), [...templates].join(" | "));
  });
});

describe("the recorder off the decision path", () => {
  const record = (over: Partial<CallRecord> = {}): CallRecord => ({
    toolCallId: "call_1",
    parentToolCallId: undefined,
    tool: "bash",
    mode: "auto",
    route: "allow",
    reason: "read-only",
    outcome: "allowed",
    hash: undefined,
    message: "",
    ...over,
  });

  test("a decision touches no file until a flush; the flush timer does not keep Node alive", (t) => {
    const root = mkdtempSync(join(tmpdir(), "audit-recorder-"));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const agentDir = join(root, "agent");
    const cwd = join(root, "ws");
    mkdirSync(cwd, { recursive: true });
    const warnings: string[] = [];
    const rec = createAuditRecorder({ agentDir: () => agentDir, home: join(root, "home"), warn: (m) => warnings.push(m) });
    rec.noteCall("call_1", "bash", { command: "git status --short" });
    rec.decision(record(), cwd);
    rec.noteCall("call_2", "bash", { command: "rm -rf ~" });
    rec.decision(record({ toolCallId: "call_2", route: "deny", reason: "hard-deny", outcome: "denied" }), cwd);
    rec.noteCall("call_3", "bash", { command: "npm test" });
    rec.decision(record({ toolCallId: "call_3", approvedBy: "user" }), cwd);
    rec.held("call_3", "npm test", cwd);
    assert.equal(existsSync(agentDir), false, "nothing is written on the decision path");
    rec.flush();
    assert.deepEqual(warnings, []);
    const rows = rowsOf(agentDir).map((r) => [r.template, r.outcome, r.count]);
    assert.deepEqual(rows.sort(), [
      ["git status --short", "ran", 1],
      ["npm test", "approved", 1],
      ["npm test", "held", 1],
      ["rm -rf *", "denied", 1],
    ]);
    assert.ok(FLUSH_DELAY_MS > 0);
  });

  test("a reviewer's denial of held effects counts them held once, also when the effects are then kept for the user", (t) => {
    const root = mkdtempSync(join(tmpdir(), "audit-recorder-"));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const agentDir = join(root, "agent");
    const cwd = join(root, "ws");
    mkdirSync(cwd, { recursive: true });
    const rec = createAuditRecorder({ agentDir: () => agentDir, home: join(root, "home"), warn: () => {} });
    const usage = (n: number) => ({ totalTokens: n });
    rec.noteCall("call_1", "bash", { command: "git rebase main" });
    rec.review({ toolCallId: "call_1", admitted: true, usage: usage(100), durationMs: 40 }, cwd);
    rec.decision(record({ route: "review", reason: "git-local", outcome: "sandboxed" }), cwd);
    rec.review({ toolCallId: "call_1", admitted: false, usage: usage(30), durationMs: 5 }, cwd);
    rec.held("call_1", "git rebase main", cwd);
    rec.flush();
    const rows = rowsOf(agentDir).map((r) => [r.template, r.route, r.reason, r.outcome, r.count, r.reviewerTokens, r.reviewMs]);
    assert.deepEqual(rows.sort(), [
      ["git rebase main", "review", "git-local", "ran", 1, 100, 40],
      ["git rebase main", "review", "held-effects", "held", 1, 30, 5],
    ]);
  });
});

test("a full buffer is written at the next turn of the event loop, not on the call that filled it", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "audit-recorder-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const agentDir = join(root, "agent");
  const cwd = join(root, "ws");
  mkdirSync(cwd, { recursive: true });
  const rec = createAuditRecorder({ agentDir: () => agentDir, home: join(root, "home"), warn: (m) => assert.fail(m) });
  const r = (i: number): CallRecord => ({
    toolCallId: `c${i}`,
    parentToolCallId: undefined,
    tool: "read",
    mode: "auto",
    route: "allow",
    reason: "read-only",
    outcome: "allowed",
    hash: undefined,
    message: "",
  });
  for (let i = 0; i < MAX_BUFFERED - 1; i++) rec.decision(r(i), cwd);
  await new Promise((done) => setTimeout(done, 20));
  assert.equal(existsSync(agentDir), false, "below the bound the write waits for its timer");
  rec.decision(r(MAX_BUFFERED), cwd);
  assert.equal(existsSync(agentDir), false, "not on the call that filled the buffer");
  await new Promise((done) => setTimeout(done, 20));
  assert.equal(
    rowsOf(agentDir).reduce((n, row) => n + row.count, 0),
    MAX_BUFFERED,
  );
});
