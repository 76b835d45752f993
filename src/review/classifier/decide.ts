// The classifier engine's decision: the answers to the conditions in, allow / deny / ask out.
// Pure and total: any input that is not one well-formed probability per condition is
// `malformed`, and malformed denies (P5). The rules, in order:
//   1. a hazard condition rejected denies; nothing clears it, the user's request included;
//   2. a soft condition rejected while intent_coverage is rejected denies;
//   3. any condition uncertain is uncertain;
//   4. soft conditions rejected are cleared only when intent_coverage is satisfied; uncertain
//      intent makes the whole uncertain;
//   5. otherwise every condition is satisfied: allow (intent_coverage is not needed then).
// Uncertain denies, or asks the user once, only when the user opted in and a UI can ask.

import type { ClassifierBand, ConditionRecord, ConditionSeverity } from "../types.ts";

export interface Thresholds {
  /** At or above: the condition holds. */
  readonly satisfied: number;
  /** At or below: the condition is violated. Below `satisfied`. */
  readonly rejected: number;
}

export interface ConditionRule {
  readonly id: string;
  readonly severity: "soft" | "hazard";
  readonly thresholds: Thresholds;
}

export interface DecideInput {
  /** The soft and hazard conditions, in the order the records list them. */
  readonly conditions: readonly ConditionRule[];
  readonly intent: { readonly id: string; readonly thresholds: Thresholds };
  /** The classifier's answers by question id, as received: anything but a bool answer with a probability in [0, 1] is malformed. */
  readonly answers: unknown;
  /** The user opted in (confirmUncertain in their own configuration) and a UI can ask now. */
  readonly canAsk: boolean;
}

/** What the engine judged, and what happens: `ask` only when uncertain and the user can be asked. */
export type ClassifierDecision =
  | { readonly kind: "malformed"; readonly problem: string; readonly conditions: readonly ConditionRecord[] }
  | {
      readonly kind: "decided";
      readonly judgment: "allow" | "deny" | "uncertain";
      readonly resolution: "allow" | "deny" | "ask";
      /** The condition that decided (the first in order that did); null when every condition held. */
      readonly decidedBy: string | null;
      /** Soft rejections were cleared by the user's own request. */
      readonly clearedByIntent: boolean;
      readonly conditions: readonly ConditionRecord[];
    };

export function bandOf(p: number, t: Thresholds): ClassifierBand {
  if (p >= t.satisfied) return "satisfied";
  if (p <= t.rejected) return "rejected";
  return "uncertain";
}

/** A threshold pair that can split probabilities: both in [0, 1], rejected below satisfied. */
export function thresholdsProblem(t: unknown): string | undefined {
  if (typeof t !== "object" || t === null) return "must be an object { satisfied, rejected }";
  const { satisfied, rejected } = t as Record<string, unknown>;
  const ok = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1;
  if (!ok(satisfied)) return `satisfied must be a number from 0 to 1 (got ${JSON.stringify(satisfied)})`;
  if (!ok(rejected)) return `rejected must be a number from 0 to 1 (got ${JSON.stringify(rejected)})`;
  if ((rejected as number) >= (satisfied as number)) return `rejected (${rejected}) must be below satisfied (${satisfied})`;
  return undefined;
}

/** The probability of a bool answer, or why there is none. */
function probabilityOf(answers: unknown, id: string): number | string {
  if (typeof answers !== "object" || answers === null || Array.isArray(answers)) return "the answers are not an object";
  if (!Object.hasOwn(answers, id)) return `no answer for ${id}`;
  const a = (answers as Record<string, unknown>)[id];
  if (typeof a !== "object" || a === null) return `the answer for ${id} is not an object`;
  const { type, probability } = a as Record<string, unknown>;
  if (type !== "bool") return `the answer for ${id} is not a bool answer`;
  if (typeof probability !== "number" || !Number.isFinite(probability) || probability < 0 || probability > 1)
    return `the answer for ${id} has no probability from 0 to 1`;
  return probability;
}

function record(id: string, severity: ConditionSeverity, t: Thresholds, p: number | string): ConditionRecord {
  return typeof p === "number"
    ? { id, severity, probability: p, satisfiedAt: t.satisfied, rejectedAt: t.rejected, band: bandOf(p, t) }
    : { id, severity, probability: null, satisfiedAt: t.satisfied, rejectedAt: t.rejected, band: "missing" };
}

export function decide(input: DecideInput): ClassifierDecision {
  const all = [...input.conditions.map((c) => ({ ...c, severity: c.severity as ConditionSeverity })), { ...input.intent, severity: "intent" as const }];
  const problems: string[] = [];
  const records = all.map((c) => {
    const bad = thresholdsProblem(c.thresholds);
    if (bad) problems.push(`thresholds of ${c.id}: ${bad}`);
    const p = probabilityOf(input.answers, c.id);
    if (typeof p === "string") problems.push(p);
    return record(c.id, c.severity, c.thresholds, p);
  });
  if (input.conditions.length === 0) problems.push("no conditions to judge");
  if (new Set(all.map((c) => c.id)).size !== all.length) problems.push("two conditions share an id");
  if (problems.length > 0) return { kind: "malformed", problem: problems.join("; "), conditions: records };

  const conds = records.slice(0, -1);
  const intent = records.at(-1)!;
  const first = (pred: (r: ConditionRecord) => boolean) => conds.find(pred)?.id;
  const done = (judgment: "allow" | "deny" | "uncertain", decidedBy: string | null, clearedByIntent = false): ClassifierDecision => ({
    kind: "decided",
    judgment,
    resolution: judgment === "uncertain" ? (input.canAsk ? "ask" : "deny") : judgment,
    decidedBy,
    clearedByIntent,
    conditions: records,
  });

  const hazard = first((r) => r.severity === "hazard" && r.band === "rejected");
  if (hazard) return done("deny", hazard);
  const soft = first((r) => r.severity === "soft" && r.band === "rejected");
  if (soft && intent.band === "rejected") return done("deny", soft);
  const uncertain = first((r) => r.band === "uncertain");
  if (uncertain) return done("uncertain", uncertain);
  if (soft) return intent.band === "satisfied" ? done("allow", intent.id, true) : done("uncertain", intent.id);
  return done("allow", null);
}
