// @gotgenes/pi-permission-system beside auto mode (src/audit/permission-system.ts): its
// `permissions:decision` broadcasts, redacted into the audit, and fragments of its own config.
// The e2e tests load the real package (a pinned devDependency) in a real AgentSession with our
// extension, answer its dialog as a user would, and load the offered fragment back into it.

import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { permissionDecisionEvent, permissionPatternMatches, permissionSystemSuggestions } from "../../src/audit/permission-system.ts";
import { auditDir, openAuditReader } from "../../src/audit/query.ts";
import { FLUSH_DELAY_MS } from "../../src/audit/recorder.ts";
import { buildReport, DEFAULT_REPORT_OPTIONS, renderReport } from "../../src/audit/report.ts";
import { SCHEMA_VERSION, type DailyRow } from "../../src/audit/store.ts";
import { call, done } from "../helpers/faux-turns.ts";
import { startPi } from "../helpers/pi-session.ts";
import { recordingUi } from "../helpers/ui.ts";

const PACKAGE = "@gotgenes/pi-permission-system";
const SECRET = "sk-live-Zq93kfa8d7Hs0p";

function packageEntry(): string | undefined {
  try {
    // Its exports map hides package.json from require.resolve: read it where npm put it.
    const pkgJson = fileURLToPath(new URL(`../../node_modules/${PACKAGE}/package.json`, import.meta.url));
    const pkg = JSON.parse(readFileSync(pkgJson, "utf8")) as { pi?: { extensions?: string[] } };
    return join(dirname(pkgJson), pkg.pi!.extensions![0]!);
  } catch {
    return undefined;
  }
}

test("a broadcast becomes a redacted audit event: bash as its template, a path as its class, nothing else of it", () => {
  const at = 1_700_000_000_000;
  const bash = permissionDecisionEvent(
    {
      surface: "bash",
      value: `curl -H "Authorization: Bearer ${SECRET}" https://internal.example/api`,
      result: "allow",
      resolution: "user_approved",
      origin: "global",
      agentName: "a",
      matchedPattern: "curl *",
    },
    { now: at, project: "/p" },
  );
  assert.deepEqual(bash, {
    at,
    tool: "bash",
    template: "curl -H * *",
    surface: "unknown",
    route: "permission-system",
    reason: "user_approved",
    outcome: "approved",
    project: "/p",
  });
  const path = permissionDecisionEvent({ surface: "external_directory", value: "/home/u/.ssh/id_rsa", result: "deny", resolution: "user_denied" }, { now: at });
  assert.equal(path?.template, "*");
  assert.equal(path?.outcome, "denied");
  assert.equal(
    permissionDecisionEvent({ surface: "mcp", value: "github:create_issue", result: "allow", resolution: "policy_allow" }, { now: at })?.template,
    "github:create_issue",
  );
  // A name keeps only its plain words: a token, a host, an address or a key shape as the value, the
  // surface or the resolution is not a name.
  for (const value of ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-api03-abcdefghijklmnop", "db.internal.acme.com", "10.0.0.1", "hunter2", "a:b:c:d"])
    assert.equal(permissionDecisionEvent({ surface: "mcp", value, result: "allow", resolution: "policy_allow" }, { now: at })?.template, "*", value);
  const named = permissionDecisionEvent(
    { surface: "ghp_abcdefghijklmnopqrstuvwxyz0123456789", value: "x", result: "allow", resolution: "sk-ant-api03-abcdefghijklmnop" },
    { now: at },
  );
  assert.deepEqual([named?.tool, named?.reason], ["other", "other"]);
  assert.equal(permissionDecisionEvent({ surface: "bash", value: "ls", result: "allow", resolution: "policy_allow" }, { now: at })?.outcome, "ran");
  assert.equal(
    permissionDecisionEvent({ surface: "bash", value: "ls", result: "allow", resolution: "confirmation_unavailable" }, { now: at })?.outcome,
    "denied",
  );
  for (const bad of [
    null,
    "x",
    {},
    { surface: "bash", value: 1, result: "allow", resolution: "x" },
    { surface: "bash", value: "ls", result: "maybe", resolution: "x" },
  ])
    assert.equal(permissionDecisionEvent(bad, { now: at }), undefined);
  assert.ok(!JSON.stringify(bash).includes(SECRET));
});

const row = (over: Partial<DailyRow>): DailyRow => ({
  day: "2026-12-01",
  project: "",
  tool: "bash",
  template: "git push origin main",
  surface: "unknown",
  route: "permission-system",
  reason: "user_approved",
  outcome: "approved",
  count: 3,
  reviewerTokens: 0,
  reviewMs: 0,
  since: SCHEMA_VERSION,
  ...over,
});

test("its fragments: approvals at min-count and no refusal; the scope picks its project or user file; its own pattern semantics rule out a covered refusal", () => {
  const opts = { minCount: 3, top: 10, scope: "current" as const };
  const s = permissionSystemSuggestions([row({}), row({ template: "npm publish", count: 2 }), row({ tool: "mcp", template: "github:create_issue" })], opts);
  assert.deepEqual(s.fragment, { permission: { bash: { "git push origin main": "allow" }, mcp: { "github:create_issue": "allow" } } });
  assert.equal(s.target, ".pi/extensions/pi-permission-system/config.json");
  assert.equal(permissionSystemSuggestions([row({})], { ...opts, scope: "all" }).target, "~/.pi/agent/extensions/pi-permission-system/config.json");
  // A policy allow is not a user's friction; a refusal rules it out; pre-migration rows count for nothing.
  assert.equal(permissionSystemSuggestions([row({ reason: "policy_allow", outcome: "ran" })], opts).fragment, undefined);
  assert.equal(permissionSystemSuggestions([row({}), row({ reason: "user_denied", outcome: "denied", count: 1 })], opts).fragment, undefined);
  assert.equal(permissionSystemSuggestions([row({ since: 1 })], opts).fragment, undefined);
  const star = permissionSystemSuggestions(
    [row({ template: "git push origin *" }), row({ template: "git push origin main", reason: "user_denied", outcome: "denied", count: 1 })],
    opts,
  );
  assert.deepEqual(
    star.heldBack.map((h) => [h.template, h.reason]),
    [["git push origin *", "covers-refused"]],
  );
  // Its trailing " *" also matches the bare command (wildcard-matcher.ts).
  assert.ok(permissionPatternMatches("git *", "git"));
  assert.ok(!permissionPatternMatches("git status", "git status --short"));
});

const ppsEntry = packageEntry();

test("the real pi-permission-system in a session with auto mode: its decisions reach the audit redacted, and its offered fragment loads back into it and allows", {
  skip: ppsEntry ? false : `${PACKAGE} is not installed (it is a pinned devDependency: run npm install)`,
}, async (t) => {
  // Answer its dialog as a user would: approve once.
  const ui = recordingUi({ select: (_title, options) => options.find((o) => /^Yes/i.test(o)) ?? options[0] });
  const broadcasts: unknown[] = [];
  const listener = (pi: ExtensionAPI) => void pi.events.on("permissions:decision", (d) => void broadcasts.push(d));
  const push = "git push origin main";
  const h = await startPi({
    mode: "rpc",
    uiContext: ui.ui,
    extensionPathsBefore: [ppsEntry!],
    extensionFactories: [listener],
    responses: [
      call("bash", { command: push }),
      call("bash", { command: push }),
      call("bash", { command: push }),
      call("bash", { command: `curl -H "Authorization: Bearer ${SECRET}" https://internal.example/api` }),
      done(),
    ],
  });
  // It polls for forwarded requests on an interval until session_shutdown, as Pi sends at quit.
  t.after(async () => {
    await h.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
    await h.dispose();
  });
  const configDir = join(h.agentDir, "extensions", "pi-permission-system");
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ permission: { "*": "allow", bash: { "*": "ask" } } }));
  await h.session.prompt("push it");
  const bashDecisions = broadcasts.filter((b) => (b as { surface?: string }).surface === "bash") as Array<{ value: string; resolution: string }>;
  assert.ok(bashDecisions.length >= 4, `its broadcasts: ${JSON.stringify(broadcasts)}`);
  assert.ok(
    bashDecisions.filter((b) => b.value === push).every((b) => b.resolution === "user_approved"),
    JSON.stringify(bashDecisions),
  );
  // The broadcasts go through the session's audit recorder, which writes on its own timer.
  await new Promise((done) => setTimeout(done, FLUSH_DELAY_MS + 300));
  const read = openAuditReader(auditDir(h.agentDir));
  assert.equal(read.kind, "ok", JSON.stringify(read));
  if (read.kind !== "ok") return;
  const rows = read.reader.rows("0000-00-00");
  const current = read.reader.pseudonym(h.cwd);
  read.reader.close();
  const ps = rows.filter((r) => r.route === "permission-system");
  assert.deepEqual(
    ps.filter((r) => r.tool === "bash").map((r) => [r.template, r.reason, r.outcome, r.count]),
    [
      ["curl -H * *", "user_approved", "approved", 1],
      [push, "user_approved", "approved", 3],
    ],
  );
  assert.ok(ps.every((r) => r.project === current));
  // Nothing of the secret in the store's files (the database and its log).
  for (const f of readdirSync(auditDir(h.agentDir))) assert.ok(!readFileSync(join(auditDir(h.agentDir), f)).includes(SECRET), `${f} holds the secret`);
  const report = buildReport(rows, DEFAULT_REPORT_OPTIONS, { now: Date.now(), currentProject: current });
  assert.deepEqual(report.permissionSystem?.fragment, { permission: { bash: { [push]: "allow" } } });
  assert.match(
    renderReport(report, { userConfigPath: "x" }),
    /pi-permission-system: \d+ decisions observed[\s\S]*Merge into \.pi\/extensions\/pi-permission-system\/config\.json/,
  );
  // Auto mode's own section is not fed by them: its suggestions come from its own rows only.
  assert.ok(report.suggestions.every((s) => s.template !== push || s.evidence.approvals === 0));

  // The fragment merged after the broad "ask", in the project's file, as the report says: it loads, and that command is allowed by it.
  const fragment = report.permissionSystem!.fragment!;
  const projectDir = join(h.cwd, ".pi", "extensions", "pi-permission-system");
  mkdirSync(projectDir, { recursive: true });
  writeFileSync(join(projectDir, "config.json"), JSON.stringify({ permission: { bash: { "*": "ask", ...fragment.permission.bash } } }));
  const again = await startPi({
    mode: "rpc",
    uiContext: ui.ui,
    root: h.root,
    cwd: h.cwd,
    extensionPathsBefore: [ppsEntry!],
    extensionFactories: [listener],
    responses: [call("bash", { command: push }), done()],
  });
  t.after(async () => {
    await again.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
    again.session.dispose();
  });
  broadcasts.length = 0;
  const dialogs = ui.dialogs.length;
  await again.session.prompt("push again");
  const decided = broadcasts.find((b) => (b as { value?: string }).value === push) as { resolution: string; matchedPattern: string | null } | undefined;
  assert.equal(decided?.resolution, "policy_allow", JSON.stringify(broadcasts));
  assert.equal(decided?.matchedPattern, push);
  assert.equal(ui.dialogs.length, dialogs, "no dialog: the fragment decided");
});
