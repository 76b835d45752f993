// The local audit store: store.ts. Every fault must leave the caller untouched: no throw, one warning.

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { test, type TestContext } from "node:test";
import { permissionDecisionEvent } from "../../src/audit/permission-system.ts";
import { bashTemplate } from "../../src/audit/templates.ts";
import { keyedDir, oldDatabase, V1_INSERT, V2_INSERT } from "../helpers/audit-seed.ts";
import { AuditStore, type AuditEvent, type ConditionEvent, DATABASE_FILE, KEY_FILE, SCHEMA_VERSION, V1_SCHEMA, V2_SCHEMA } from "../../src/audit/store.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 11, 1, 12);

function tempDir(t: TestContext): string {
  const root = mkdtempSync(join(tmpdir(), "audit-store-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return join(root, "auto-mode", "audit");
}

function open(dir: string, extra: { retentionDays?: number; now?: number } = {}) {
  const warnings: string[] = [];
  const store = AuditStore.open({ dir, onWarning: (m) => warnings.push(m), now: () => extra.now ?? NOW, retentionDays: extra.retentionDays });
  return { store, warnings };
}

const event = (over: Partial<AuditEvent> = {}): AuditEvent => ({
  at: NOW,
  tool: "bash",
  template: "git status --short",
  surface: "workspace",
  route: "review",
  reason: "reviewer-allow",
  outcome: "ran",
  ...over,
});

const mode = (p: string) => statSync(p).mode & 0o777;

/** The one number `sql` reads from the database file in `dir`, through a connection of the test's own. */
function readNumber(dir: string, sql: string): number {
  const db = new DatabaseSync(join(dir, DATABASE_FILE));
  try {
    return Object.values(db.prepare(sql).get() ?? {})[0] as number;
  } finally {
    db.close();
  }
}

/** The schema version the database file in `dir` says it has. */
const userVersion = (dir: string) => readNumber(dir, "PRAGMA user_version");
/** The decisions the database file in `dir` counts in its daily table. */
const storedCount = (dir: string) => readNumber(dir, "SELECT sum(count) AS n FROM daily");

/** A migration's rows keep the old database's totals: `count` decisions, `tokens` reviewer tokens. */
function assertTotals(rows: { count: number; reviewerTokens: number }[], count: number, tokens: number): void {
  assert.equal(
    rows.reduce((n, r) => n + r.count, 0),
    count,
  );
  assert.equal(
    rows.reduce((n, r) => n + r.reviewerTokens, 0),
    tokens,
  );
}

/** A migration that fails is rolled back: the store off with one warning, the file still at `version` with its `count` decisions. */
function assertRolledBack(dir: string, version: number, count: number): void {
  const { store, warnings } = open(dir);
  assert.equal(store.enabled, false);
  assert.equal(warnings.length, 1);
  assert.equal(userVersion(dir), version);
  assert.equal(storedCount(dir), count);
}

test("a new store: folder 0700, database and key 0600, WAL, the current schema", (t) => {
  const dir = tempDir(t);
  const { store, warnings } = open(dir);
  assert.ok(store.enabled);
  store.record(event());
  store.flush();
  assert.equal(mode(dir), 0o700);
  assert.equal(mode(join(dir, DATABASE_FILE)), 0o600);
  assert.equal(mode(join(dir, KEY_FILE)), 0o600);
  assert.equal(readFileSync(join(dir, KEY_FILE)).length, 32);
  for (const f of readdirSync(dir)) assert.equal(mode(join(dir, f)) & 0o077, 0, `${f} is owner-only`);
  store.close();
  const db = new DatabaseSync(join(dir, DATABASE_FILE));
  assert.equal((db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode, "wal");
  db.close();
  assert.equal(userVersion(dir), SCHEMA_VERSION);
  assert.deepEqual(warnings, []);
});

test("decisions are counted per day and shape, with reviewer tokens and time summed", (t) => {
  const dir = tempDir(t);
  const { store, warnings } = open(dir);
  store.record(event({ reviewerTokens: 100, reviewMs: 40 }));
  store.record(event({ reviewerTokens: 50, reviewMs: 10 }));
  store.flush();
  store.record(event({ reviewerTokens: 1, reviewMs: 1 }));
  store.record(event({ outcome: "denied", reason: "hard-deny" }));
  store.record(event({ at: NOW - DAY, outcome: "break-glass" }));
  const rows = store.rows();
  assert.deepEqual(
    rows.map((r) => [r.day, r.outcome, r.count, r.reviewerTokens, r.reviewMs]),
    [
      ["2026-11-30", "break-glass", 1, 0, 0],
      ["2026-12-01", "denied", 1, 0, 0],
      ["2026-12-01", "ran", 3, 151, 51],
    ],
  );
  store.close();
  assert.deepEqual(warnings, []);
});

test("a tool name that is not a name, and an unknown surface, are not stored as given", (t) => {
  const dir = tempDir(t);
  const { store } = open(dir);
  store.record(event({ tool: "bash; cat /etc/passwd", surface: "nowhere" as never }));
  const [row] = store.rows();
  assert.equal(row?.tool, "other");
  assert.equal(row?.surface, "unknown");
  store.close();
});

test("a tool name, route or reason shaped like a token, a host or a password is not stored as given", (t) => {
  const dir = tempDir(t);
  const { store } = open(dir);
  for (const name of ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-api03-abcdefghijklmnop", "db.internal.acme.com", "hunter2"])
    store.record(event({ tool: name, route: name, reason: name }));
  store.record(event({ tool: "mcp__github__create_issue", route: "review", reason: "reviewer-allow" }));
  assert.deepEqual(
    store.rows().map((r) => [r.tool, r.route, r.reason]),
    [
      ["mcp__github__create_issue", "review", "reviewer-allow"],
      ["other", "other", "other"],
    ],
  );
  store.close();
});

test("project locations are stored only as their HMAC, and the key stays in its file", (t) => {
  const dir = tempDir(t);
  const project = "/home/someone/secret-project-Qz81";
  const { store } = open(dir);
  store.record(event({ project }));
  const [row] = store.rows();
  const key = readFileSync(join(dir, KEY_FILE));
  assert.match(row!.project, /^[0-9a-f]{32}$/);
  assert.equal(row!.project, store.pseudonym(project));
  assert.notEqual(store.pseudonym("req-1"), store.pseudonym("req-2"));
  store.close();
  for (const f of readdirSync(dir).filter((n) => n !== KEY_FILE)) {
    const bytes = readFileSync(join(dir, f));
    assert.ok(!bytes.includes(Buffer.from("secret-project")), `${f} holds the project path`);
    assert.ok(!bytes.includes(key), `${f} holds the key`);
    assert.ok(!bytes.includes(Buffer.from(key.toString("hex"))), `${f} holds the key in hex`);
  }
  // The same key after a reopen: pseudonyms stay comparable across sessions.
  const again = open(dir).store;
  assert.equal(again.pseudonym(project), row!.project);
  again.close();
});

test("retention: days older than the window are pruned when the store opens", (t) => {
  const dir = tempDir(t);
  const first = open(dir, { now: NOW - 200 * DAY }).store;
  first.record(event({ at: NOW - 200 * DAY }));
  first.record(event({ at: NOW - 100 * DAY }));
  first.close();
  const { store } = open(dir);
  assert.deepEqual(
    store.rows().map((r) => r.day),
    ["2026-08-23"],
  );
  store.close();
  const short = open(dir, { retentionDays: 30 }).store;
  assert.deepEqual(short.rows(), []);
  short.close();
});

test("migration from a v1 database keeps the totals and marks the rows as pre-migration", (t) => {
  const dir = tempDir(t);
  oldDatabase(dir, V1_SCHEMA, 1, V1_INSERT, [
    ["2026-11-20", "bash", "npm test", "review", "reviewer-allow", "ran", 7, 700, 70],
    ["2026-11-21", "bash", "npm test", "review", "reviewer-allow", "ran", 3, 300, 30],
    ["2026-11-21", "write", "*", "deny", "hard-deny", "denied", 2, 0, 0],
  ]);

  const { store, warnings } = open(dir);
  assert.ok(store.enabled, warnings.join());
  const rows = store.rows();
  assertTotals(rows, 12, 1000);
  assert.ok(rows.every((r) => r.since === 1 && r.surface === "unknown" && r.project === ""));
  // A new decision of the same shape is a row of its own: suggestions count only post-migration evidence.
  store.record(event({ at: Date.UTC(2026, 10, 21), template: "npm test" }));
  const after = store.rows().filter((r) => r.day === "2026-11-21" && r.template === "npm test");
  assert.deepEqual(after.map((r) => [r.since, r.count]).sort(), [
    [1, 3],
    [SCHEMA_VERSION, 1],
  ]);
  store.close();
  assert.equal(userVersion(dir), SCHEMA_VERSION);
  assert.deepEqual(warnings, []);
});

/** A v2 database as the version before the classifier's counts wrote it: its key, two days of rows. */
function v2Fixture(dir: string): void {
  oldDatabase(dir, V2_SCHEMA, 2, V2_INSERT, [
    ["2026-11-20", "p1", "bash", "npm test", "workspace", "review", "reviewer-allow", "ran", 7, 700, 70],
    ["2026-11-21", "p1", "bash", "npm test", "workspace", "review", "reviewer-allow", "ran", 3, 300, 30],
    ["2026-11-21", "p2", "write", "", "sensitive", "deny", "hard-deny", "denied", 2, 0, 0],
  ]);
}

test("migration from a v2 database keeps the totals, marks its rows pre-migration and adds the classifier's counts", (t) => {
  const dir = tempDir(t);
  v2Fixture(dir);
  const { store, warnings } = open(dir);
  assert.ok(store.enabled, warnings.join());
  const rows = store.rows();
  assertTotals(rows, 12, 1000);
  assert.deepEqual(
    rows.map((r) => [r.project, r.surface, r.since]),
    [
      ["p1", "workspace", 2],
      ["p1", "workspace", 2],
      ["p2", "sensitive", 2],
    ],
  );
  assert.deepEqual(store.conditionRows(), []);
  store.recordCondition(condition({ at: Date.UTC(2026, 10, 21) }));
  store.record(event({ at: Date.UTC(2026, 10, 21), template: "npm test", project: undefined }));
  assert.equal(store.conditionRows().length, 1);
  assert.deepEqual(
    store
      .rows()
      .filter((r) => r.template === "npm test" && r.day === "2026-11-21")
      .map((r) => r.since)
      .sort(),
    [2, SCHEMA_VERSION],
  );
  store.close();
  assert.equal(userVersion(dir), 3);
  assert.deepEqual(warnings, []);
});

test("a v1 database migrates to 3 in one step: its rows pre-migration, the classifier's table there", (t) => {
  const dir = tempDir(t);
  oldDatabase(dir, V1_SCHEMA, 1, V1_INSERT, [["2026-11-20", "bash", "npm test", "review", "reviewer-allow", "ran", 7, 0, 0]]);
  const { store, warnings } = open(dir);
  assert.ok(store.enabled, warnings.join());
  assert.deepEqual(
    store.rows().map((r) => [r.count, r.since]),
    [[7, 1]],
  );
  store.recordCondition(condition());
  assert.equal(store.conditionRows().length, 1);
  store.close();
  assert.equal(userVersion(dir), SCHEMA_VERSION);
});

test("a failed v2 -> v3 migration is rolled back: the v2 database as it was, the store off with one warning", (t) => {
  const dir = tempDir(t);
  v2Fixture(dir);
  const raw = new DatabaseSync(join(dir, DATABASE_FILE));
  // A table in the way of the new one makes the migration fail.
  raw.exec("CREATE TABLE classifier_daily (x)");
  raw.close();
  assertRolledBack(dir, 2, 12);
});

const condition = (over: Partial<ConditionEvent> = {}): ConditionEvent => ({
  at: NOW,
  classifier: "typesafe/jev-latest",
  condition: "no_secret_egress",
  satisfiedAt: 0.9,
  rejectedAt: 0.5,
  band: "satisfied",
  probability: 0.97,
  decided: false,
  cleared: false,
  ...over,
});

test("classifier conditions are counted per day, classifier, condition, thresholds, band and twentieth of probability", (t) => {
  const dir = tempDir(t);
  const { store, warnings } = open(dir);
  store.recordCondition(condition({ probability: 0.96 }));
  // On a bucket's edge it is in that bucket (0.15 * 20 is 2.9999999999999996 in floating point).
  store.recordCondition(condition({ probability: 0.15, band: "rejected" }));
  store.recordCondition(condition({ probability: 0.999 }));
  store.recordCondition(condition({ probability: 1 }));
  store.recordCondition(condition({ probability: 0.2, band: "rejected", decided: true }));
  store.recordCondition(
    condition({ condition: "local_scope", satisfiedAt: 0.8, rejectedAt: 0.3, probability: 0.1, band: "rejected", cleared: true, project: "/w/p" }),
  );
  store.recordCondition(condition({ probability: null, band: "missing" }));
  // A band the probability cannot have, thresholds out of range, a bad band: never stored as given.
  store.recordCondition(condition({ probability: 1.5, band: "satisfied" }));
  store.recordCondition(condition({ satisfiedAt: 2 }));
  store.recordCondition(condition({ band: "odd" as never }));
  store.recordCondition(condition({ classifier: "a b/c\n", condition: "x y", at: NOW - DAY }));
  const rows = store.conditionRows();
  const pseudonym = store.pseudonym("/w/p");
  assert.deepEqual(
    rows.map((r) => [r.day, r.project, r.classifier, r.condition, r.satisfiedAt, r.rejectedAt, r.band, r.bucket, r.reviews, r.decided, r.cleared, r.since]),
    [
      ["2026-11-30", "", "other", "other", 0.9, 0.5, "satisfied", 19, 1, 0, 0, SCHEMA_VERSION],
      ["2026-12-01", pseudonym, "typesafe/jev-latest", "local_scope", 0.8, 0.3, "rejected", 2, 1, 0, 1, SCHEMA_VERSION],
      ["2026-12-01", "", "typesafe/jev-latest", "no_secret_egress", 0.9, 0.5, "missing", -1, 2, 0, 0, SCHEMA_VERSION],
      ["2026-12-01", "", "typesafe/jev-latest", "no_secret_egress", 0.9, 0.5, "rejected", 3, 1, 0, 0, SCHEMA_VERSION],
      ["2026-12-01", "", "typesafe/jev-latest", "no_secret_egress", 0.9, 0.5, "rejected", 4, 1, 1, 0, SCHEMA_VERSION],
      ["2026-12-01", "", "typesafe/jev-latest", "no_secret_egress", 0.9, 0.5, "satisfied", 19, 3, 0, 0, SCHEMA_VERSION],
    ],
  );
  store.close();
  // Retention prunes them with the decisions.
  const later = open(dir, { now: NOW + 40 * DAY, retentionDays: 30 }).store;
  assert.deepEqual(later.conditionRows(), []);
  later.close();
  assert.deepEqual(warnings, []);
});

test("a failed migration is rolled back: the v1 database is as it was, the store off with one warning", (t) => {
  const dir = tempDir(t);
  oldDatabase(dir, V1_SCHEMA, 1, V1_INSERT, [["2026-11-20", "bash", "npm test", "review", "ok", "ran", 7, 0, 0]]);
  const raw = new DatabaseSync(join(dir, DATABASE_FILE));
  // A table in the way of the rename makes the migration fail half-way.
  raw.exec("CREATE TABLE daily_v1 (x)");
  raw.close();
  assertRolledBack(dir, 1, 7);
});

test("a garbage database: no throw, one warning, the store off, the file's bytes unchanged", (t) => {
  const dir = tempDir(t);
  keyedDir(dir);
  const garbage = Buffer.from("this is not an sqlite database, but the user's file all the same\n".repeat(100));
  writeFileSync(join(dir, DATABASE_FILE), garbage, { mode: 0o600 });
  const { store, warnings } = open(dir);
  store.record(event());
  store.flush();
  store.prune();
  assert.deepEqual(store.rows(), []);
  store.close();
  assert.equal(store.enabled, false);
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.ok(readFileSync(join(dir, DATABASE_FILE)).equals(garbage));
});

test("a truncated database: no throw, one warning, never rebuilt", (t) => {
  const dir = tempDir(t);
  const first = open(dir).store;
  for (let i = 0; i < 200; i++) first.record(event({ template: `git log -n ${i}` }));
  first.close();
  // Checkpointed into the main file by the close; cut it in the middle of a page.
  const full = readFileSync(join(dir, DATABASE_FILE));
  const cut = full.subarray(0, Math.floor(full.length / 2) + 100);
  writeFileSync(join(dir, DATABASE_FILE), cut);
  rmSync(join(dir, `${DATABASE_FILE}-wal`), { force: true });
  rmSync(join(dir, `${DATABASE_FILE}-shm`), { force: true });
  const { store, warnings } = open(dir);
  store.record(event());
  store.rows();
  store.close();
  assert.equal(store.enabled, false);
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.ok(readFileSync(join(dir, DATABASE_FILE)).equals(cut));
});

test("a database another connection holds locked: writes fail without throwing, one warning", (t) => {
  const dir = tempDir(t);
  const { store, warnings } = open(dir);
  const other = new DatabaseSync(join(dir, DATABASE_FILE));
  other.exec("BEGIN EXCLUSIVE");
  try {
    store.record(event());
    store.flush();
    store.record(event());
    store.flush();
  } finally {
    other.exec("ROLLBACK");
    other.close();
  }
  assert.equal(store.enabled, false);
  assert.equal(warnings.length, 1);
  store.close();
});

test("a missing key beside an existing database: off with one warning, no new key", (t) => {
  const dir = tempDir(t);
  open(dir).store.close();
  rmSync(join(dir, KEY_FILE));
  const { store, warnings } = open(dir);
  assert.equal(store.enabled, false);
  assert.equal(warnings.length, 1);
  assert.equal(existsSync(join(dir, KEY_FILE)), false);
});

test("a key others can read: off with one warning", (t) => {
  const dir = tempDir(t);
  open(dir).store.close();
  chmodSync(join(dir, KEY_FILE), 0o644);
  const { store, warnings } = open(dir);
  assert.equal(store.enabled, false);
  assert.equal(warnings.length, 1);
});

test("a folder that cannot be made, and a warning sink that throws: neither reaches the caller", (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, ".."), { recursive: true });
  writeFileSync(dir, "a file where the folder should be");
  const store = AuditStore.open({
    dir,
    onWarning: () => {
      throw new Error("sink");
    },
  });
  store.record(event());
  store.flush();
  assert.equal(store.enabled, false);
  assert.equal(store.pseudonym("x"), undefined);
  store.close();
});

test("a database from a newer version is left alone", (t) => {
  const dir = tempDir(t);
  open(dir).store.close();
  const db = new DatabaseSync(join(dir, DATABASE_FILE));
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
  db.close();
  const before = readFileSync(join(dir, DATABASE_FILE));
  const { store, warnings } = open(dir);
  store.record(event());
  store.close();
  assert.equal(warnings.length, 1);
  assert.ok(readFileSync(join(dir, DATABASE_FILE)).equals(before));
});

test("redaction end to end: the database files hold none of the secrets, URLs or paths of a corpus", (t) => {
  const dir = tempDir(t);
  const secrets = [
    "hunter2Qz",
    "ghp_Qz0123456789abcdefghijklmnop",
    "sk-ant-Qzabcdefghijklmnopqrstu",
    "QzPathSegment",
    "QzValue42",
    "example-host.Qz",
    "Qzw0rd9",
    "Qzsecret",
    "4111111111111111",
    "QzJalrXUtnFEMI",
  ];
  const corpus = [
    "curl -u admin:hunter2Qz https://example-host.Qz/api",
    "GITHUB_TOKEN=ghp_Qz0123456789abcdefghijklmnop gh pr list",
    "echo sk-ant-Qzabcdefghijklmnopqrstu | pbcopy",
    "cat /srv/QzPathSegment/config.json > ./QzPathSegment.out",
    "npm test -- --token QzValue42",
    "make deploy TARGET=QzValue42",
    "psql 'postgres://u:hunter2Qz@example-host.Qz/db'",
    // Bare words no option or quote announces.
    "echo Qzw0rd9 | gh auth login --with-token",
    "mysql -pQzsecret db",
    "echo 4111111111111111",
    "aws configure set aws_secret_access_key QzJalrXUtnFEMI",
    "Qzw0rd9=1 make",
  ];
  const { store, warnings } = open(dir);
  for (const c of corpus) store.record(event({ template: bashTemplate(c), project: "/home/u/QzPathSegment" }));
  // A tool name from the model and another extension's payload carry text too.
  store.record(event({ tool: "ghp_Qz0123456789abcdefghijklmnop", template: "" }));
  for (const value of ["sk-ant-Qzabcdefghijklmnopqrstu", "example-host.Qz", "mysql -pQzsecret db"]) {
    const e = permissionDecisionEvent({ surface: value.includes(" ") ? "bash" : "mcp", value, result: "allow", resolution: "hunter2Qz" }, { now: NOW });
    if (e) store.record(e);
  }
  store.close();
  assert.deepEqual(warnings, []);
  for (const f of readdirSync(dir)) {
    const bytes = readFileSync(join(dir, f));
    for (const s of secrets) assert.ok(!bytes.includes(Buffer.from(s)), `${f} holds ${s}`);
  }
});
