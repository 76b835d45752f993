// The audit report (src/audit/report.ts) on a seeded store: its figures, its window and scope,
// its text, and the option checks /perm-audit and `pi-auto-mode audit` share.

import assert from "node:assert/strict";
import { test } from "node:test";
import { buildReport, DEFAULT_REPORT_OPTIONS, parseReportWords, renderReport, ReportOptionError, reportOptions } from "../../src/audit/report.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openAuditReader } from "../../src/audit/query.ts";
import { DATABASE_FILE, V2_SCHEMA } from "../../src/audit/store.ts";
import { auditDir, DAY, judged, NOW, OTHER_PROJECT, oldDatabase, reviewed, rowsOf, seed, seedConditions, V2_INSERT } from "../helpers/audit-seed.ts";

const render = (r: ReturnType<typeof buildReport>) => renderReport(r, { userConfigPath: "/home/u/.pi/agent/auto-mode.json" });

function seeded(t: Parameters<typeof auditDir>[0]) {
  const dir = auditDir(t);
  seed(dir, [
    [reviewed("git push origin main"), 4],
    [reviewed("git push origin main", { at: NOW - DAY }), 2],
    [reviewed("curl -s *", { reason: "network", outcome: "denied", reviewerTokens: 800, reviewMs: 400 }), 3],
    [reviewed("rm -rf *", { route: "deny", reason: "hard-deny", outcome: "denied", reviewerTokens: 0, reviewMs: 0 }), 2],
    [reviewed("npm install *", { route: "sandbox", reason: "sandboxed", outcome: "held", reviewerTokens: 0, reviewMs: 0, at: NOW - 2 * DAY }), 1],
    [reviewed("git status", { route: "allow", reason: "read-only", reviewerTokens: 0, reviewMs: 0 }), 10],
    [reviewed("", { tool: "write", route: "allow", reason: "workspace-write", surface: "workspace", reviewerTokens: 0, reviewMs: 0 }), 5],
    // Another project, and a day outside a 7-day window.
    [reviewed("make deploy", { project: OTHER_PROJECT }), 5],
    [reviewed("git push origin main", { at: NOW - 20 * DAY, outcome: "denied", reason: "force-push" }), 1],
  ]);
  return rowsOf(dir);
}

test("the figures: per day, denied and reviewed most, reviewer cost, friction; only the current project and the window", (t) => {
  const { rows, project } = seeded(t);
  const r = buildReport(rows, DEFAULT_REPORT_OPTIONS, { now: NOW, currentProject: project });
  assert.deepEqual(r.window, { days: 7, from: "2026-11-25", to: "2026-12-01" });
  assert.equal(r.perDay.length, 7);
  assert.deepEqual(
    r.perDay.filter((d) => d.total > 0).map((d) => [d.day, d.total, d.ran, d.denied, d.held]),
    [
      ["2026-11-29", 1, 0, 0, 1],
      ["2026-11-30", 2, 2, 0, 0],
      ["2026-12-01", 24, 19, 5, 0],
    ],
  );
  assert.equal(r.totals.decisions, 27);
  assert.deepEqual(
    r.deniedMost.map((c) => [c.template, c.reason, c.count]),
    [
      ["curl -s *", "network", 3],
      ["rm -rf *", "hard-deny", 2],
    ],
  );
  assert.deepEqual(
    r.reviewedMost.map((c) => [c.template, c.count]),
    [
      ["git push origin main", 6],
      ["curl -s *", 3],
    ],
  );
  assert.deepEqual(r.reviewer, { reviews: 9, tokens: 6 * 1200 + 3 * 800, ms: 6 * 900 + 3 * 400, tokensPerReview: 1067, msPerReview: 733 });
  assert.deepEqual(r.friction.templates.slice(0, 2), [
    { key: "bash: curl -s *", decisions: 3, reviews: 3, denials: 3, held: 0 },
    { key: "bash: git push origin main", decisions: 6, reviews: 6, denials: 0, held: 0 },
  ]);
  assert.deepEqual(r.friction.surfaces[0], { key: "bash on workspace", decisions: 22, reviews: 9, denials: 5, held: 1 });
  assert.ok(
    r.friction.templates.every((f) => f.key !== "bash: git status"),
    "no friction where nothing was reviewed, denied or held",
  );
  assert.deepEqual(
    r.suggestions.map((s) => s.rule.command),
    ["git push origin main"],
    "the denial 20 days ago is outside the window",
  );
  assert.ok(!JSON.stringify(r).includes("make deploy"), "another project's rows stay out of --scope current");
});

test("--scope all takes every project; --scope current without a key matches nothing rather than everything", (t) => {
  const { rows, project } = seeded(t);
  const all = buildReport(rows, { ...DEFAULT_REPORT_OPTIONS, scope: "all" }, { now: NOW, currentProject: project });
  assert.equal(all.totals.decisions, 32);
  assert.deepEqual(all.suggestions.map((s) => s.rule.command).sort(), ["git push origin main", "make deploy"]);
  const none = buildReport(rows, DEFAULT_REPORT_OPTIONS, { now: NOW, currentProject: undefined });
  assert.equal(none.totals.decisions, 0);
});

test("a longer window brings the old denial in, and it rules the suggestion out", (t) => {
  const { rows, project } = seeded(t);
  const r = buildReport(rows, { ...DEFAULT_REPORT_OPTIONS, days: 30 }, { now: NOW, currentProject: project });
  assert.equal(r.window.from, "2026-11-02");
  assert.deepEqual(r.suggestions, []);
});

test("the text: a chart per day, each section, the fragment to copy with the caveat", (t) => {
  const { rows, project } = seeded(t);
  const text = render(buildReport(rows, DEFAULT_REPORT_OPTIONS, { now: NOW, currentProject: project }));
  assert.match(text, /^Auto mode audit: 2026-11-25 to 2026-12-01 \(7 days, this project\)\n27 decisions: 21 ran, 5 denied, 1 held/);
  assert.match(text, /2026-12-01 {5}24 {2}█{30} {2}19\/5\/0\/0/);
  assert.match(text, /2026-11-30 {6}2 {2}█+ /);
  for (const heading of [
    "Decisions per day",
    "Denied most",
    "Reviewed most",
    "Reviewer cost: 9 reviews",
    "Friction by template:",
    "Friction by tool and surface:",
    "Rule suggestions",
  ])
    assert.ok(text.includes(heading), heading);
  assert.match(text, /evidence of preference, not proof of safety/);
  assert.match(text, /Merge into \/home\/u\/\.pi\/agent\/auto-mode\.json/);
  // The fragment as printed is JSON a user can paste.
  const start = text.indexOf("    {");
  const end = text.indexOf("\n    }", start);
  const fragment = JSON.parse(text.slice(start, end + 6)) as { version: number; rules: { allow: Array<{ command: string }> } };
  assert.equal(fragment.version, 1);
  assert.equal(fragment.rules.allow[0]!.command, "git push origin main");
});

test("an empty window says so", () => {
  const text = render(buildReport([], DEFAULT_REPORT_OPTIONS, { now: NOW, currentProject: "x" }));
  assert.match(text, /No decisions recorded in this window\./);
  assert.match(text, /Rule suggestions[^\n]*\n {2}none/);
});

test("options: defaults, both spellings, and a clear refusal of what is wrong", () => {
  assert.deepEqual(parseReportWords([]), { days: 7, top: 10, minCount: 3, scope: "current" });
  assert.deepEqual(parseReportWords(["--days", "30", "--top=5", "--min-count", "1", "--scope", "all"]), { days: 30, top: 5, minCount: 1, scope: "all" });
  const bad: Array<[string[], RegExp]> = [
    [["--days", "0"], /--days takes a whole number from 1 to 3650, not "0"/],
    [["--days", "1.5"], /--days takes a whole number/],
    [["--top", "x"], /--top takes a whole number from 1 to 100/],
    [["--min-count", "-1"], /--min-count needs a value|--min-count takes/],
    [["--scope", "mine"], /--scope takes current or all, not "mine"/],
    [["--dayz", "3"], /unknown option --dayz/],
    [["--days"], /--days needs a value/],
    [["--days", "3", "--days", "4"], /--days given twice/],
    [["7"], /unexpected argument "7"/],
  ];
  for (const [words, message] of bad)
    assert.throws(
      () => parseReportWords(words),
      (e: Error) => e instanceof ReportOptionError && message.test(e.message),
      words.join(" "),
    );
  assert.throws(() => reportOptions({ days: "3651" }), /from 1 to 3650/);
});

test("classifier conditions: reviews by band, a histogram with the thresholds marked, decided and cleared; scope and window apply", (t) => {
  const dir = auditDir(t);
  seed(dir, [[reviewed("git push origin main"), 1]]);
  seedConditions(dir, [
    [judged("no_secret_egress", 0.97), 6],
    [judged("no_secret_egress", 0.93), 2],
    [judged("no_secret_egress", 0.7), 1],
    [judged("no_secret_egress", 0.1, { decided: true }), 1],
    [judged("no_secret_egress", null), 1],
    [judged("local_scope", 0.2, { satisfiedAt: 0.8, rejectedAt: 0.3, cleared: true }), 2],
    [judged("local_scope", 0.85, { satisfiedAt: 0.8, rejectedAt: 0.3 }), 1],
    [judged("local_scope", 0.85, { satisfiedAt: 0.75, rejectedAt: 0.3 }), 1],
    [judged("intent_coverage", 0.95, { satisfiedAt: 0.8, rejectedAt: 0.3, decided: true }), 2],
    // Not this project, and outside the window.
    [judged("no_secret_egress", 0.1, { project: OTHER_PROJECT }), 5],
    [judged("no_secret_egress", 0.1, { at: NOW - 30 * DAY }), 5],
    [judged("no_secret_egress", 0.95, { classifier: "openai/gpt-6-luna", project: OTHER_PROJECT }), 1],
  ]);
  const { rows, conditions, project } = rowsOf(dir);
  const r = buildReport(rows, DEFAULT_REPORT_OPTIONS, { now: NOW, currentProject: project, conditions });
  assert.deepEqual(
    r.classifier.map((c) => [c.classifier, c.condition, c.reviews, c.bands, c.decided, c.clearedByIntent]),
    [
      ["typesafe/jev-latest", "no_secret_egress", 11, { satisfied: 8, uncertain: 1, rejected: 1, missing: 1 }, 1, 0],
      ["typesafe/jev-latest", "local_scope", 4, { satisfied: 2, uncertain: 0, rejected: 2, missing: 0 }, 0, 2],
      ["typesafe/jev-latest", "intent_coverage", 2, { satisfied: 2, uncertain: 0, rejected: 0, missing: 0 }, 2, 0],
    ],
  );
  const egress = r.classifier[0]!;
  const expected = new Array(20).fill(0);
  expected[19] = 6;
  expected[18] = 2;
  expected[14] = 1;
  expected[2] = 1;
  assert.deepEqual(egress.histogram, expected);
  assert.deepEqual(egress.thresholds, [{ satisfiedAt: 0.9, rejectedAt: 0.5, reviews: 11 }]);
  assert.deepEqual(r.classifier[1]!.thresholds, [
    { satisfiedAt: 0.8, rejectedAt: 0.3, reviews: 3 },
    { satisfiedAt: 0.75, rejectedAt: 0.3, reviews: 1 },
  ]);
  const text = render(r);
  assert.match(text, /Classifier conditions/);
  assert.match(text, /\n {2}typesafe\/jev-latest:\n/);
  assert.match(
    text,
    /no_secret_egress: 11 reviews: 8 satisfied, 1 uncertain, 1 rejected, 1 no answer; decided 1, cleared by your request 0\n {6}0 ··▂···········▂···▃█ 1\n {8} {10}R {7}S\n/,
  );
  assert.match(text, /local_scope: 4 reviews: .*cleared by your request 2\n/);
  assert.match(text, /thresholds satisfied 0\.8, rejected 0\.3 \(3 reviews\); satisfied 0\.75, rejected 0\.3 \(1 review\) \(marked: the first\)/);
  assert.ok(!text.includes("gpt-6-luna"), "another project's classifier is not in this project's report");
  const all = buildReport(rows, { ...DEFAULT_REPORT_OPTIONS, scope: "all" }, { now: NOW, currentProject: project, conditions });
  assert.deepEqual(
    all.classifier.map((c) => [c.classifier, c.condition, c.reviews]),
    [
      ["openai/gpt-6-luna", "no_secret_egress", 1],
      ["typesafe/jev-latest", "no_secret_egress", 16],
      ["typesafe/jev-latest", "local_scope", 4],
      ["typesafe/jev-latest", "intent_coverage", 2],
    ],
  );
  // Without classifier data the report has no such section.
  const none = buildReport(rows, DEFAULT_REPORT_OPTIONS, { now: NOW, currentProject: project });
  assert.deepEqual(none.classifier, []);
  assert.ok(!render(none).includes("Classifier conditions"));
});

test("a v2 store reads as having no classifier data, and is not migrated by reading", (t) => {
  const dir = auditDir(t);
  oldDatabase(dir, V2_SCHEMA, 2, V2_INSERT, [["2026-12-01", "", "bash", "npm test", "workspace", "review", "network", "ran", 4, 0, 0]]);
  const before = readFileSync(join(dir, DATABASE_FILE));
  const read = openAuditReader(dir);
  assert.equal(read.kind, "ok", read.kind === "error" ? read.message : "");
  if (read.kind !== "ok") return;
  assert.deepEqual(
    read.reader.rows("2026-01-01").map((r) => [r.template, r.count, r.since]),
    [["npm test", 4, 2]],
  );
  assert.deepEqual(read.reader.conditionRows("2026-01-01"), []);
  read.reader.close();
  assert.ok(readFileSync(join(dir, DATABASE_FILE)).equals(before), "the v2 file is unchanged");
});

test("a database written under looser redaction: the report shows its rows through today's rules, never the words it kept", (t) => {
  const dir = auditDir(t);
  const leaked = ["hunter2", "Passw0rd1", "4111111111111111", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "db.internal.acme.com"];
  const row = (tool: string, template: string, reason: string, outcome: string) => [
    "2026-12-01",
    "",
    tool,
    template,
    "workspace",
    "review",
    reason,
    outcome,
    4,
    0,
    0,
  ];
  oldDatabase(dir, V2_SCHEMA, 2, V2_INSERT, [
    row("bash", "echo hunter2", "network", "denied"),
    row("bash", "mysql -pPassw0rd1 db", "network", "ran"),
    row("bash", "echo 4111111111111111", "db.internal.acme.com", "approved"),
    row("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "", "network", "denied"),
    row("bash", "git status", "network", "ran"),
  ]);
  const opened = openAuditReader(dir);
  assert.equal(opened.kind, "ok");
  if (opened.kind !== "ok") return;
  const rows = opened.reader.rows("2026-11-01");
  opened.reader.close();
  const report = buildReport(rows, { ...DEFAULT_REPORT_OPTIONS, scope: "all", minCount: 1 }, { now: NOW, currentProject: undefined });
  const text = render(report) + JSON.stringify(report);
  for (const s of leaked) assert.ok(!text.includes(s), `the report shows ${s}`);
  assert.match(text, /git status/);
});
