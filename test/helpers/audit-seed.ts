// A seeded audit store for the report and suggestion tests: real AuditStore.record + flush in a temp dir.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { AuditStore, type AuditEvent, type ConditionEvent } from "../../src/audit/store.ts";

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
