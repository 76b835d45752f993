// Rule suggestions (src/audit/suggest.ts) on a seeded store: what qualifies, what rules a shape
// out, and that a suggestion loads through the real configuration loader and does what it says.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { test } from "node:test";
import { SCHEMA_VERSION, V1_SCHEMA, V2_SCHEMA, DATABASE_FILE } from "../../src/audit/store.ts";
import { bashHeldBack, HELD_BACK_WORDS, suggestRules, SUGGESTION_CAVEAT } from "../../src/audit/suggest.ts";
import { bashTemplate } from "../../src/audit/templates.ts";
import { compileRule, ruleMatches } from "../../src/policy/rules.ts";
import { main } from "../../src/cli/main.ts";
import { configEnv, expectOk, loadIn } from "../helpers/config-env.ts";
import { auditDir, DAY, NOW, PROJECT, reviewed, rowsOf, seed } from "../helpers/audit-seed.ts";
import { pseudonymWith } from "../../src/audit/query.ts";

/** A project's pseudonym under the fixtures' key (32 bytes of 7). */
const rowsOfKey = (location: string) => pseudonymWith(Buffer.alloc(32, 7), location);

const opts = { minCount: 3, top: 10 };

test("three reviewer allows and no refusal: one allow rule, the template as its pattern", (t) => {
  const dir = auditDir(t);
  seed(dir, [[reviewed("git push origin main"), 3]]);
  const s = suggestRules(rowsOf(dir).rows, opts);
  assert.equal(s.suggestions.length, 1);
  const [one] = s.suggestions;
  assert.equal(one!.rule.command, "git push origin main");
  assert.deepEqual([one!.evidence.reviewerAllows, one!.evidence.approvals], [3, 0]);
  assert.deepEqual(s.fragment, { version: 1, rules: { allow: [one!.rule] } });
  assert.match(SUGGESTION_CAVEAT, /evidence of preference, not proof of safety/);
});

test("min-count boundary: two approvals suggest nothing at 3; three do; human approvals and reviewer allows add up", (t) => {
  const dir = auditDir(t);
  seed(dir, [
    [reviewed("git push origin main"), 2],
    [reviewed("git push origin release", { outcome: "approved", route: "review", reason: "reviewer-denied" }), 1],
    [reviewed("git push origin release"), 2],
  ]);
  const { rows } = rowsOf(dir);
  const s = suggestRules(rows, opts);
  assert.deepEqual(
    s.suggestions.map((x) => [x.template, x.evidence.approvals, x.evidence.reviewerAllows]),
    [["git push origin release", 1, 2]],
  );
  assert.equal(suggestRules(rows, { ...opts, minCount: 2 }).suggestions.length, 2);
  assert.equal(suggestRules(rows, { ...opts, minCount: 4 }).suggestions.length, 0);
});

test("a denial, held effects, a break glass or a failure in the window rules the shape out", (t) => {
  const cases = [
    { outcome: "denied" as const, reason: "destructive" },
    { outcome: "held" as const, reason: "held-effects" },
    { outcome: "break-glass" as const, reason: "destructive" },
    // A failure that still ran (a reason that says the reviewer was not reached) counts as one too.
    { outcome: "ran" as const, reason: "reviewer-unavailable" },
  ];
  for (const c of cases) {
    const dir = auditDir(t);
    seed(dir, [
      [reviewed("git push origin main"), 5],
      [reviewed("git push origin main", { ...c, at: NOW - 3 * DAY }), 1],
    ]);
    const s = suggestRules(rowsOf(dir).rows, opts);
    assert.deepEqual(s.suggestions, [], `${c.outcome}/${c.reason} must rule it out`);
    assert.deepEqual(s.heldBack, [], "ruled out, not held back");
  }
});

test("a rule that would also match a refused command is not suggested: git push origin * after a refused git push origin main", (t) => {
  const dir = auditDir(t);
  seed(dir, [
    [reviewed(bashTemplate("git push origin feature/x")), 4],
    [reviewed("git push origin main", { outcome: "denied", reason: "force-push" }), 1],
  ]);
  const s = suggestRules(rowsOf(dir).rows, opts);
  assert.equal(bashTemplate("git push origin feature/x"), "git push origin *");
  assert.deepEqual(s.suggestions, []);
  assert.deepEqual(
    s.heldBack.map((h) => [h.template, h.reason]),
    [["git push origin *", "covers-refused"]],
  );
});

test("pre-migration rows never make a suggestion; new evidence after the migration counts on its own", (t) => {
  const dir = auditDir(t);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const v1 = new DatabaseSync(join(dir, DATABASE_FILE));
  v1.exec(V1_SCHEMA);
  v1.exec("PRAGMA user_version = 1");
  v1.prepare("INSERT INTO daily VALUES (?, 'bash', 'git push origin main', 'review', 'network', 'ran', 9, 900, 90)").run("2026-12-01");
  v1.close();
  // A v1 database came with its key; a fresh one is made here as the v1 version would have.
  writeFileSync(join(dir, "audit.key"), Buffer.alloc(32, 7), { mode: 0o600 });
  const before = rowsOf(dir).rows;
  assert.deepEqual(
    before.map((r) => [r.template, r.count, r.since]),
    [["git push origin main", 9, 1]],
  );
  assert.deepEqual(suggestRules(before, opts).suggestions, [], "9 pre-migration allows suggest nothing");
  seed(dir, [[reviewed("git push origin main"), 2]]);
  assert.deepEqual(suggestRules(rowsOf(dir).rows, opts).suggestions, [], "2 new ones are below min-count 3");
  seed(dir, [[reviewed("git push origin main"), 1]]);
  const after = suggestRules(rowsOf(dir).rows, opts).suggestions;
  assert.deepEqual(
    after.map((s) => [s.template, s.evidence.reviewerAllows]),
    [["git push origin main", 3]],
  );
  assert.equal(SCHEMA_VERSION, 3);
});

test("v2 rows are pre-migration data too: counted, never a suggestion, after the migration to schema 3", (t) => {
  const dir = auditDir(t);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, "audit.key"), Buffer.alloc(32, 7), { mode: 0o600 });
  const v2 = new DatabaseSync(join(dir, DATABASE_FILE));
  v2.exec(V2_SCHEMA);
  v2.exec("PRAGMA user_version = 2");
  const project = rowsOfKey(PROJECT);
  v2.prepare("INSERT INTO daily VALUES (?, ?, 'bash', 'git push origin main', 'workspace', 'review', 'network', 'ran', 9, 900, 90, 2)").run(
    "2026-12-01",
    project,
  );
  v2.prepare("INSERT INTO daily VALUES (?, ?, 'bash', 'npm ci', 'workspace', 'review', 'network', 'approved', 5, 0, 0, 2)").run("2026-12-01", project);
  v2.close();
  const before = rowsOf(dir).rows;
  assert.deepEqual(
    before.map((r) => [r.template, r.count, r.since]),
    [
      ["git push origin main", 9, 2],
      ["npm ci", 5, 2],
    ],
  );
  assert.deepEqual(suggestRules(before, opts), { suggestions: [], heldBack: [], fragment: undefined }, "14 pre-migration allows and approvals suggest nothing");
  seed(dir, [[reviewed("git push origin main"), 3]]);
  assert.deepEqual(
    suggestRules(rowsOf(dir).rows, opts).suggestions.map((s) => [s.template, s.evidence.reviewerAllows]),
    [["git push origin main", 3]],
  );
});

test("shapes that would make a broad or dangerous rule are held back, each with its reason", () => {
  const expect: Array<[string, string | undefined]> = [
    ["*", "unreadable"],
    [bashTemplate("bash -c 'curl x | sh'"), "runs-code"],
    [bashTemplate("python3 ./scripts/deploy.py"), "runs-code"],
    [bashTemplate("node -e 'process.exit(1)'"), "runs-code"],
    [bashTemplate("env FOO=1 make"), "runs-code"],
    [bashTemplate("xargs rm"), "runs-code"],
    [bashTemplate("npx cowsay hi"), "runs-code"],
    [bashTemplate("npm exec cowsay"), "runs-code"],
    [bashTemplate("find . -name x -exec rm {} ;"), "runs-code"],
    [bashTemplate("git -c core.pager=less log"), "runs-code"],
    [bashTemplate("curl https://example.com/x"), "program-only"],
    [bashTemplate("rm -rf ./build"), "program-only"],
    [bashTemplate("./run.sh --fast"), "program-unknown"],
    [bashTemplate("git log | head -n 5"), "compound"],
    [bashTemplate("npm test && npm run lint"), "compound"],
    [bashTemplate("npm test > out.txt"), "redirection"],
    [bashTemplate("NODE_ENV=production npm run build"), "assignment"],
    [bashTemplate("npm test * --token abc"), undefined],
    [bashTemplate("git push origin main"), undefined],
    [bashTemplate("curl -s https://example.com"), "program-only"],
    [bashTemplate("git commit -m 'fix the bug'"), undefined],
    [bashTemplate("npm test"), undefined],
  ];
  for (const [template, why] of expect) assert.equal(bashHeldBack(template), why, template);
});

test("what an allow rule does not spare (a protected place, an escalation, the user's review rule) is held back, not suggested", (t) => {
  const dir = auditDir(t);
  seed(dir, [
    [reviewed("git push origin main", { reason: "sandbox-escalation" }), 3],
    [reviewed("git commit -m *", { reason: "protected-path" }), 3],
    [reviewed("git fetch --all", { reason: "user-review-rule" }), 3],
    [reviewed("git status", { surface: "sensitive" }), 3],
  ]);
  const s = suggestRules(rowsOf(dir).rows, opts);
  assert.deepEqual(s.suggestions, []);
  assert.deepEqual(s.heldBack.map((h) => h.reason).sort(), ["not-spared", "not-spared", "not-spared", "protected-name"]);
});

test("other tools: no rule for a whole tool, custom or built-in: the audit keeps no template that would narrow it", (t) => {
  const dir = auditDir(t);
  seed(dir, [
    [reviewed("", { tool: "mcp__github__create_issue", reason: "unknown-tool" }), 3],
    [reviewed("", { tool: "write", reason: "outside-writable-roots", surface: "external" }), 3],
    [reviewed("", { tool: "edit", reason: "inline-code" }), 3],
    [reviewed("", { tool: "deploy_site", reason: "unknown-tool", outcome: "approved" }), 4],
    [reviewed("", { tool: "mcp__db__drop", reason: "unknown-tool" }), 3],
    [reviewed("", { tool: "mcp__db__drop", reason: "unknown-tool", outcome: "denied" }), 1],
  ]);
  const s = suggestRules(rowsOf(dir).rows, opts);
  assert.deepEqual(s.suggestions, []);
  assert.equal(s.fragment, undefined);
  assert.deepEqual(s.heldBack.map((h) => [h.tool, h.reason, h.evidence]).sort(), [
    ["deploy_site", "whole-tool", 4],
    ["edit", "built-in-tool", 3],
    ["mcp__github__create_issue", "whole-tool", 3],
    ["write", "not-spared", 3],
  ]);
  assert.match(HELD_BACK_WORDS["whole-tool"], /^no template narrows it/);
  // The rule format has no way to narrow a tool by its input: a tool rule matches every call of it.
  const rule = compileRule({ tool: "deploy_site" }, "user", "/h", "/");
  assert.ok(ruleMatches(rule, { tool: "deploy_site", commands: [], paths: [] }));
});

test("a star template's rule is no broader than the template: every fixed word kept, only the starred word free", (t) => {
  const dir = auditDir(t);
  const template = bashTemplate("npm run build -- --filter @scope/pkg");
  assert.equal(template, "npm run build -- --filter *");
  seed(dir, [[reviewed(template), 3]]);
  const [s] = suggestRules(rowsOf(dir).rows, opts).suggestions;
  assert.equal(s!.rule.command, template, "the pattern is the template itself: nothing dropped, nothing added");
  const rule = compileRule(s!.rule, "user", "/h", "/");
  const m = (c: string) => ruleMatches(rule, { tool: "bash", commands: [c], paths: [] });
  // Rules see argv joined by spaces (judge.ts bashSubject): the approved commands match...
  assert.ok(m("npm run build -- --filter @scope/pkg"));
  assert.ok(m("npm run build -- --filter other"));
  // ...and a change to any fixed word does not.
  for (const c of [
    "npm run deploy -- --filter x",
    "npm run build --filter x",
    "npm run build -- --only x",
    "pnpm run build -- --filter x",
    "npm run build -- --filter",
  ])
    assert.ok(!m(c), c);
  // Every word of the template is fixed but the stars: a template of the same words with one changed is not matched.
  const words = template.split(" ");
  words.forEach((w, i) => {
    if (w === "*") return;
    const changed = [...words.slice(0, i), `${w}x`, ...words.slice(i + 1)].join(" ").replaceAll("*", "v");
    assert.ok(!m(changed), changed);
  });
});

test("the suggested fragment loads through the real loader, and the gate then allows that command by the user's rule", async (t) => {
  const dir = auditDir(t);
  seed(dir, [
    [reviewed("git push origin main"), 3],
    [reviewed("*", { tool: "mcp__github__create_issue", reason: "unknown-tool" }), 3],
  ]);
  const s = suggestRules(rowsOf(dir).rows, opts);
  // The custom tool's three allows are held back: no template narrows it.
  assert.deepEqual(
    s.suggestions.map((x) => x.template),
    ["git push origin main"],
  );
  const env = configEnv("audit-suggest-", { user: s.fragment });
  const config = expectOk(loadIn(env));
  assert.equal(config.allow.length, 1);
  const check = async (args: string[]) => {
    let out = "";
    const code = await main(["check", "--backend", "review-only", "--cwd", env.ws, "--tmp-root", env.tmp, "--json", ...args], {
      out: (x) => void (out += x),
      err: () => {},
      env: { ...process.env, PI_CODING_AGENT_DIR: env.agentDir, HOME: env.home },
      cwd: env.ws,
    });
    assert.equal(code, 0, out);
    return JSON.parse(out.trim().split("\n").at(-1)!) as { route: string; reason: string };
  };
  const pushed = await check(["--", "git push origin main"]);
  assert.deepEqual([pushed.route, pushed.reason], ["allow", "user-allow-rule"]);
  const other = await check(["--", "git push origin other"]);
  assert.notEqual(other.reason, "user-allow-rule", "a different branch is not covered");
  const tool = await check(["--tool", "mcp__github__create_issue", "--input", "{}"]);
  assert.notEqual(tool.reason, "user-allow-rule", "no rule was offered for the custom tool");
  // Without the fragment the same push needs review: the rule is what changed it.
  writeFileSync(env.userFile, JSON.stringify({ version: 1 }));
  const without = await check(["--", "git push origin main"]);
  assert.equal(without.route, "review");
});
