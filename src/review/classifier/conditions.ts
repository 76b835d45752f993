// The classifier engine's conditions (data/conditions.json), checked against their schema and
// their own examples when first asked for. A file that does not pass is a fault: conditions()
// reports it and every classifier review denies (P5); a broken file can never mean "no
// conditions". The user's thresholds (review.classifier.thresholds in their auto-mode.json) are
// laid over the file's here, and a threshold for a condition the file does not have is refused.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { type Static, Type } from "typebox";
import { Value } from "typebox/value";
import { decide, type ConditionRule, type Thresholds, thresholdsProblem } from "./decide.ts";

const Id = Type.String({ pattern: "^[a-z][a-z0-9_]{1,63}$" });
const ThresholdsSchema = Type.Object(
  { satisfied: Type.Number({ minimum: 0, maximum: 1 }), rejected: Type.Number({ minimum: 0, maximum: 1 }) },
  { additionalProperties: false },
);
const Text = Type.String({ minLength: 10, maxLength: 2000 });
const Criteria = Type.Object({ true: Text, false: Text }, { additionalProperties: false });
const Question = { instructions: Text, criteria: Criteria, thresholds: ThresholdsSchema };

export const ConditionsSchema = Type.Object(
  {
    doc: Type.String(),
    version: Type.Literal(1),
    conditions: Type.Array(
      Type.Object({ id: Id, severity: Type.Union([Type.Literal("soft"), Type.Literal("hazard")]), ...Question }, { additionalProperties: false }),
      { minItems: 1, maxItems: 32 },
    ),
    intent: Type.Object({ id: Type.Literal("intent_coverage"), ...Question }, { additionalProperties: false }),
    examples: Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1 }),
          probabilities: Type.Record(Id, Type.Number({ minimum: 0, maximum: 1 })),
          decision: Type.Union([Type.Literal("allow"), Type.Literal("deny"), Type.Literal("uncertain")]),
          clearedByIntent: Type.Boolean(),
        },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  { additionalProperties: false },
);

export type ConditionsData = Static<typeof ConditionsSchema>;
export type ConditionQuestion = ConditionsData["conditions"][number];

export type ConditionsLoad =
  | { readonly kind: "ok"; readonly data: ConditionsData; readonly sha256: string }
  | { readonly kind: "fault"; readonly problem: string };

/** The rules decide() takes, from the data (and the user's thresholds, when given). */
export function rulesOf(
  data: ConditionsData,
  thresholds: Readonly<Record<string, Thresholds>> = {},
): {
  conditions: ConditionRule[];
  intent: { id: string; thresholds: Thresholds };
} {
  const t = (id: string, own: Thresholds) => (Object.hasOwn(thresholds, id) ? thresholds[id]! : own);
  return {
    conditions: data.conditions.map((c) => ({ id: c.id, severity: c.severity, thresholds: t(c.id, c.thresholds) })),
    intent: { id: data.intent.id, thresholds: t(data.intent.id, data.intent.thresholds) },
  };
}

/** The data, or the first thing wrong with it: the schema, a duplicate id, bad thresholds, an example decided otherwise. */
export function loadConditions(raw: unknown, text?: string): ConditionsLoad {
  if (!Value.Check(ConditionsSchema, raw)) {
    const first = [...Value.Errors(ConditionsSchema, raw)][0];
    const what = first?.message === "schema is false" ? "unknown key" : first?.message;
    return { kind: "fault", problem: first ? `${first.instancePath || "/"}: ${what}` : "does not match the schema" };
  }
  const data = raw as ConditionsData;
  const ids = [...data.conditions.map((c) => c.id), data.intent.id];
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) return { kind: "fault", problem: `/conditions: ${dup} is listed twice` };
  for (const c of [...data.conditions, data.intent]) {
    const bad = thresholdsProblem(c.thresholds);
    if (bad) return { kind: "fault", problem: `${c.id}: thresholds: ${bad}` };
  }
  if (!data.conditions.some((c) => c.severity === "hazard")) return { kind: "fault", problem: "/conditions: no hazard condition" };
  const rules = rulesOf(data);
  for (const ex of data.examples) {
    const unknown = Object.keys(ex.probabilities).filter((id) => !ids.includes(id));
    if (unknown.length > 0) return { kind: "fault", problem: `example "${ex.name}": unknown condition ${unknown.join(", ")}` };
    const answers = Object.fromEntries(Object.entries(ex.probabilities).map(([id, probability]) => [id, { type: "bool", probability }]));
    const d = decide({ ...rules, answers, canAsk: false });
    const got = d.kind === "malformed" ? `malformed (${d.problem})` : `${d.judgment}${d.clearedByIntent ? ", cleared by intent" : ""}`;
    const want = `${ex.decision}${ex.clearedByIntent ? ", cleared by intent" : ""}`;
    if (got !== want) return { kind: "fault", problem: `example "${ex.name}": decided ${got}, the file says ${want}` };
  }
  return {
    kind: "ok",
    data,
    sha256: createHash("sha256")
      .update(text ?? JSON.stringify(raw))
      .digest("hex"),
  };
}

function readData(): { raw: unknown; text: string } {
  // From src/review/classifier/ the data sits in ../data; from a build in dist/review/classifier/
  // it is read from the package's src/ (published), because tsc does not copy it.
  let last: unknown;
  for (const rel of ["../data/conditions.json", "../../../src/review/data/conditions.json"]) {
    try {
      const text = readFileSync(new URL(rel, import.meta.url), "utf8");
      return { raw: JSON.parse(text) as unknown, text };
    } catch (e) {
      last = e;
    }
  }
  throw new Error(`the conditions file cannot be read: ${(last as Error)?.message ?? String(last)}`);
}

let cached: ConditionsLoad | undefined;

/** The shipped conditions, loaded and checked once. Never throws: an unreadable file is a fault. */
export function conditions(): ConditionsLoad {
  if (cached) return cached;
  try {
    const { raw, text } = readData();
    cached = loadConditions(raw, text);
  } catch (e) {
    cached = { kind: "fault", problem: (e as Error).message };
  }
  return cached;
}

/** The user's classifier settings (review.classifier in their auto-mode.json). */
export interface ClassifierSettings {
  readonly thresholds?: Readonly<Record<string, Thresholds>>;
  readonly confirmUncertain?: boolean;
}

/** What is wrong with the user's thresholds against these conditions, in words for the user. */
export function settingsProblem(data: ConditionsData, settings: ClassifierSettings | undefined): string | undefined {
  const ids = [...data.conditions.map((c) => c.id), data.intent.id];
  for (const [id, t] of Object.entries(settings?.thresholds ?? {})) {
    if (!ids.includes(id)) return `review.classifier.thresholds.${id}: no such condition (the conditions are ${ids.join(", ")})`;
    const bad = thresholdsProblem(t);
    if (bad) return `review.classifier.thresholds.${id}: ${bad}`;
  }
  return undefined;
}
