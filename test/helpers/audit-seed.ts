// A seeded audit store for the report and suggestion tests: real AuditStore.record + flush in a temp dir;
// and a database as an earlier version wrote it, for the migration and reader tests.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { TestContext } from "node:test";
import { AuditStore, type AuditEvent, type ConditionEvent, DATABASE_FILE, KEY_FILE } from "../../src/audit/store.ts";

export const DAY = 86_400_000;
export const NOW = Date.UTC(2026, 11, 1, 12);
export const PROJECT = "/home/someone/project-a";
export const OTHER_PROJECT = "/home/someone/project-b";

export function auditDir(t: TestContext): string {
  const root = mkdtempSync(join(tmpdir(), "audit-report-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return join(root, "agent", "auto-mode", "audit");
}

/** A reviewer's allow of a bash command shape, today, in PROJECT. */
export const reviewed = (template: string, over: Partial<AuditEvent> = {}): AuditEvent => ({
  at: NOW,
  tool: "bash",
  template,
  surface: "workspace",
  route: "review",
  reason: "network",
  outcome: "ran",
  reviewerTokens: 1200,
  reviewMs: 900,
  project: PROJECT,
  ...over,
});

/** Opens a store in `dir` at NOW, records the events `times` each, flushes and closes it. */
export function seed(dir: string, events: ReadonlyArray<readonly [AuditEvent, number]>): void {
  const warnings: string[] = [];
  const store = AuditStore.open({ dir, onWarning: (m) => warnings.push(m), now: () => NOW });
  if (!store.enabled) throw new Error(`the store did not open: ${warnings.join("; ")}`);
  for (const [e, times] of events) for (let i = 0; i < times; i++) store.record(e);
  store.flush();
  store.close();
  if (warnings.length > 0) throw new Error(warnings.join("; "));
}

/** A classifier condition as typesafe/jev-latest judged it, today, in PROJECT. */
export const judged = (condition: string, probability: number | null, over: Partial<ConditionEvent> = {}): ConditionEvent => {
  const [satisfiedAt, rejectedAt] = [over.satisfiedAt ?? 0.9, over.rejectedAt ?? 0.5];
  const band = probability === null ? "missing" : probability >= satisfiedAt ? "satisfied" : probability <= rejectedAt ? "rejected" : "uncertain";
  return {
    at: NOW,
    classifier: "typesafe/jev-latest",
    condition,
    satisfiedAt,
    rejectedAt,
    band,
    probability,
    decided: false,
    cleared: false,
    project: PROJECT,
    ...over,
  };
};

/** Opens a store in `dir` at NOW, records the conditions `times` each, flushes and closes it. */
export function seedConditions(dir: string, events: ReadonlyArray<readonly [ConditionEvent, number]>): void {
  const warnings: string[] = [];
  const store = AuditStore.open({ dir, onWarning: (m) => warnings.push(m), now: () => NOW });
  for (const [e, times] of events) for (let i = 0; i < times; i++) store.recordCondition(e);
  store.close();
  if (warnings.length > 0) throw new Error(warnings.join("; "));
}

export function rowsOf(dir: string) {
  const store = AuditStore.open({ dir, onWarning: (m) => assertNever(m), now: () => NOW });
  const rows = store.rows();
  const conditions = store.conditionRows();
  const pseudonym = (p: string) => store.pseudonym(p);
  const out = { rows, conditions, project: pseudonym(PROJECT)!, other: pseudonym(OTHER_PROJECT)! };
  store.close();
  return out;
}

function assertNever(m: string): never {
  throw new Error(`unexpected audit warning: ${m}`);
}

/** The audit folder with its key, as an earlier version left it. */
export function keyedDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, KEY_FILE), Buffer.alloc(32, 7), { mode: 0o600 });
}

/** A v1 row: day, tool, template, route, reason, outcome, count, reviewer tokens, review ms. */
export const V1_INSERT = "INSERT INTO daily VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
/** A v2 row: day, project, tool, template, surface, route, reason, outcome, count, reviewer tokens, review ms (since 2). */
export const V2_INSERT = "INSERT INTO daily VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 2)";

/** A database an earlier version wrote in `dir`: its key, its schema, its rows (each through `insert`), its version. */
export function oldDatabase(dir: string, schema: string, version: number, insert: string, rows: ReadonlyArray<ReadonlyArray<string | number>>): void {
  keyedDir(dir);
  const db = new DatabaseSync(join(dir, DATABASE_FILE));
  db.exec(schema);
  const statement = db.prepare(insert);
  for (const row of rows) statement.run(...row);
  db.exec(`PRAGMA user_version = ${version}`);
  db.close();
  chmodSync(join(dir, DATABASE_FILE), 0o600);
}
