// `pi-auto-mode audit` (src/cli/audit.ts): the store the extension writes, read read-only; the
// report as text and as --json; no data yet; a store it cannot read; bad options.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { test, type TestContext } from "node:test";
import { auditDir } from "../../src/audit/query.ts";
import { DATABASE_FILE, KEY_FILE } from "../../src/audit/store.ts";
import { main } from "../../src/cli/main.ts";
import { lastJson, runCli } from "../helpers/cli.ts";
import { judged, reviewed, seed, seedConditions } from "../helpers/audit-seed.ts";

interface Setting {
  readonly agentDir: string;
  readonly cwd: string;
  readonly dir: string;
  readonly home: string;
}

function setting(t: TestContext): Setting {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "audit-cli-")));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const agentDir = join(root, "agent");
  const cwd = join(root, "project");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  return { agentDir, cwd, dir: auditDir(agentDir), home: join(root, "home") };
}

async function audit(s: Setting, args: string[]) {
  let out = "";
  let err = "";
  const code = await main(["audit", ...args], {
    out: (x) => void (out += x),
    err: (x) => void (err += x),
    env: { ...process.env, PI_CODING_AGENT_DIR: s.agentDir, HOME: s.home },
    cwd: s.cwd,
  });
  return { code, out, err };
}

const digest = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");

// The real clock: the CLI's window ends today.
const today = (over: Parameters<typeof reviewed>[1] = {}) => ({ at: Date.now(), ...over });

test("no store yet: says so, exit 0, and creates nothing", async (t) => {
  const s = setting(t);
  const r = await audit(s, []);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^no audit data yet/);
  assert.ok(!existsSync(s.dir), "the audit folder is not created by a report");
  const j = await audit(s, ["--json"]);
  assert.deepEqual(JSON.parse(j.out), { version: 1, data: false, store: join(s.dir, DATABASE_FILE) });
});

test("the report from the extension's store, the current project by default, and --scope all; the database is not changed", async (t) => {
  const s = setting(t);
  seed(s.dir, [
    [reviewed("git push origin main", today({ project: s.cwd })), 3],
    [reviewed("make deploy", today({ project: "/elsewhere" })), 4],
  ]);
  seedConditions(s.dir, [
    [judged("no_secret_egress", 0.97, { at: Date.now(), project: s.cwd }), 2],
    [judged("no_secret_egress", 0.2, { at: Date.now(), project: "/elsewhere", decided: true }), 1],
  ]);
  const db = join(s.dir, DATABASE_FILE);
  const before = digest(db);
  const files = readdirSync(s.dir).sort();
  const text = await audit(s, []);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /^Auto mode audit: \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d \(7 days, this project\)\n3 decisions/);
  assert.match(text.out, /"command": "git push origin main"/);
  assert.ok(!text.out.includes("make deploy"));
  assert.match(text.out, /evidence of preference, not proof of safety/);
  assert.match(text.out, /no_secret_egress: 2 reviews: 2 satisfied, 0 uncertain, 0 rejected, 0 no answer; decided 0/);
  assert.ok(text.out.includes(join(s.agentDir, "auto-mode.json")), "names the user file the rule goes in");
  const all = await audit(s, ["--scope", "all", "--json", "--min-count=4", "--days", "2", "--top", "5"]);
  assert.equal(all.code, 0, all.err);
  const j = JSON.parse(all.out) as Record<string, unknown> & {
    window: { days: number };
    totals: { decisions: number };
    suggestions: Array<{ rule: { command: string }; evidence: { reviewerAllows: number } }>;
    options: unknown;
    classifier: Array<{ classifier: string; condition: string; reviews: number; decided: number; histogram: number[] }>;
  };
  assert.deepEqual(Object.keys(j).sort(), [
    "caveat",
    "classifier",
    "data",
    "deniedMost",
    "fragment",
    "friction",
    "heldBack",
    "options",
    "perDay",
    "preMigrationRows",
    "reviewedMost",
    "reviewer",
    "scope",
    "store",
    "suggestions",
    "totals",
    "version",
    "window",
  ]);
  assert.equal(j.scope, "all");
  assert.deepEqual(j.options, { days: 2, top: 5, minCount: 4, scope: "all" });
  assert.equal(j.window.days, 2);
  assert.equal(j.totals.decisions, 7);
  assert.deepEqual(
    j.suggestions.map((x) => [x.rule.command, x.evidence.reviewerAllows]),
    [["make deploy", 4]],
    "min-count 4: only the shape allowed four times",
  );
  assert.deepEqual(j.fragment, { version: 1, rules: { allow: [j.suggestions[0]!.rule] } });
  assert.deepEqual(
    j.classifier.map((c) => [c.classifier, c.condition, c.reviews, c.decided, c.histogram[19], c.histogram[4]]),
    [["typesafe/jev-latest", "no_secret_egress", 3, 1, 2, 1]],
  );
  assert.equal(digest(db), before, "reading never writes the database");
  assert.deepEqual(readdirSync(s.dir).sort(), files, "nor adds a file beside it");
});

test("a store that is not a database: a clear error, exit 1, and its bytes and folder left exactly as they were", async (t) => {
  for (const [name, bytes] of [
    ["garbage", Buffer.from("this is not sqlite at all, just text the user might need\n".repeat(100))],
    ["truncated", Buffer.from("SQLite format 3\0\x10\0\x02\x02")],
  ] as const) {
    const s = setting(t);
    mkdirSync(s.dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(s.dir, DATABASE_FILE), bytes, { mode: 0o600 });
    writeFileSync(join(s.dir, KEY_FILE), Buffer.alloc(32, 1), { mode: 0o600 });
    const files = readdirSync(s.dir).sort();
    const r = await audit(s, []);
    assert.equal(r.code, 1, `${name}: ${r.out}${r.err}`);
    assert.match(r.err, /the audit store .*audit\.sqlite cannot be read: .+\. It was left as it is\./, name);
    assert.deepEqual(readFileSync(join(s.dir, DATABASE_FILE)), bytes, `${name}: bytes unchanged`);
    assert.deepEqual(readdirSync(s.dir).sort(), files, `${name}: nothing added beside it`);
  }
});

test("a store from a newer version is refused, not read as something else", async (t) => {
  const s = setting(t);
  mkdirSync(s.dir, { recursive: true, mode: 0o700 });
  const db = new DatabaseSync(join(s.dir, DATABASE_FILE));
  db.exec("CREATE TABLE daily (x)");
  db.exec("PRAGMA user_version = 9");
  db.close();
  const r = await audit(s, []);
  assert.equal(r.code, 1);
  assert.match(r.err, /schema 9/);
});

test("bad options: a clear error and exit 2, like every other command", async (t) => {
  const s = setting(t);
  const cases: Array<[string[], RegExp]> = [
    [["--days", "0"], /audit: --days takes a whole number from 1 to 3650, not "0"/],
    [["--top", "many"], /audit: --top takes a whole number/],
    [["--scope", "mine"], /audit: --scope takes current or all/],
    [["--min-count", "0"], /audit: --min-count takes a whole number from 1/],
    [["--since", "x"], /audit: unknown option --since/],
    [["extra"], /audit: unexpected argument "extra"/],
  ];
  for (const [args, message] of cases) {
    const r = await audit(s, args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.err, message);
    assert.match(r.err, /Run 'pi-auto-mode audit --help' for usage/);
  }
  const help = await audit(s, ["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.out, /--scope SCOPE/);
});

test("the real pi-auto-mode binary: --json on the last line", async (t) => {
  const s = setting(t);
  seed(s.dir, [[reviewed("git push origin main", today({ project: s.cwd })), 3]]);
  const r = await runCli(["audit", "--json"], { cwd: s.cwd, env: { PI_CODING_AGENT_DIR: s.agentDir, HOME: s.home } });
  assert.equal(r.code, 0, r.stderr);
  const j = lastJson(r.stdout) as { suggestions: Array<{ rule: { command: string } }>; scope: string };
  assert.equal(j.scope, "current");
  assert.deepEqual(
    j.suggestions.map((x) => x.rule.command),
    ["git push origin main"],
  );
});
