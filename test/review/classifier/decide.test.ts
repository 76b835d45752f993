// The classifier engine's decision (src/review/classifier/decide.ts): the table of rules, every
// way an answer can be unusable, and properties over generated answers: no allow with a hazard
// not satisfied, no allow from anything malformed, ask only when the user can be asked.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { bandOf, type ConditionRule, decide, type DecideInput, thresholdsProblem } from "../../../src/review/classifier/decide.ts";
import { checkProperty, fuzzRuns } from "../../helpers/fuzz.ts";

const SOFT = { satisfied: 0.8, rejected: 0.3 };
const HARD = { satisfied: 0.9, rejected: 0.5 };
const CONDITIONS: ConditionRule[] = [
  { id: "local_scope", severity: "soft", thresholds: SOFT },
  { id: "no_outward_effect", severity: "soft", thresholds: SOFT },
  { id: "no_secret_egress", severity: "hazard", thresholds: HARD },
  { id: "no_instruction_injection", severity: "hazard", thresholds: HARD },
];
const INTENT = { id: "intent_coverage", thresholds: SOFT };
const IDS = [...CONDITIONS.map((c) => c.id), INTENT.id];

const bool = (probability: unknown) => ({ type: "bool", probability });
/** Every condition satisfied, intent rejected, with `over` on top. */
function answers(over: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    local_scope: 0.95,
    no_outward_effect: 0.95,
    no_secret_egress: 0.99,
    no_instruction_injection: 0.99,
    intent_coverage: 0.1,
  };
  for (const [k, v] of Object.entries(over)) base[k] = v;
  return Object.fromEntries(Object.entries(base).map(([k, v]) => [k, typeof v === "number" ? bool(v) : v]));
}
const run = (a: unknown, canAsk = false) => decide({ conditions: CONDITIONS, intent: INTENT, answers: a, canAsk });
function decided(a: unknown, canAsk = false) {
  const d = run(a, canAsk);
  assert.equal(d.kind, "decided", d.kind === "malformed" ? d.problem : "");
  return d as Extract<typeof d, { kind: "decided" }>;
}

describe("the hostile cases", () => {
  test("a hazard rejection is never cleared, not even by the user's clear request", () => {
    const d = decided(answers({ no_secret_egress: 0.02, intent_coverage: 0.99 }));
    assert.equal(d.judgment, "deny");
    assert.equal(d.resolution, "deny");
    assert.equal(d.decidedBy, "no_secret_egress");
    assert.equal(d.clearedByIntent, false);
  });

  test("a hazard rejection denies even with confirmation available: a confirmation is for uncertain only", () => {
    const d = decided(answers({ no_instruction_injection: 0.3, local_scope: 0.6, intent_coverage: 0.99 }), true);
    assert.equal(d.resolution, "deny");
    assert.equal(d.decidedBy, "no_instruction_injection");
  });

  test("an uncertain hazard is not cleared by intent: it asks or denies", () => {
    assert.equal(decided(answers({ no_secret_egress: 0.7, intent_coverage: 0.99 })).resolution, "deny");
    const asked = decided(answers({ no_secret_egress: 0.7, intent_coverage: 0.99 }), true);
    assert.equal(asked.judgment, "uncertain");
    assert.equal(asked.resolution, "ask");
    assert.equal(asked.decidedBy, "no_secret_egress");
  });

  test("a missing answer for any one condition is malformed, whatever the others say", () => {
    for (const id of IDS) {
      const a = answers({ intent_coverage: 0.99 });
      delete a[id];
      const d = run(a, true);
      assert.equal(d.kind, "malformed", id);
      assert.match(d.kind === "malformed" ? d.problem : "", new RegExp(`no answer for ${id}`));
      assert.equal(d.conditions.find((c) => c.id === id)?.band, "missing");
    }
  });

  test("answers that are not one bool probability from 0 to 1 are malformed", () => {
    const bad: unknown[] = [
      null,
      undefined,
      0.9,
      "0.9",
      { type: "bool" },
      { type: "bool", probability: "0.95" },
      { type: "bool", probability: Number.NaN },
      { type: "bool", probability: Number.POSITIVE_INFINITY },
      { type: "bool", probability: 1.01 },
      { type: "bool", probability: -0.01 },
      { type: "score", score: 1, confidence: 1 },
      { type: "choice", choice: "true", probabilities: { true: 1 }, confidence: 1 },
    ];
    for (const b of bad) {
      const a = answers();
      a.local_scope = b;
      assert.equal(run(a).kind, "malformed", JSON.stringify(b) ?? String(b));
    }
    for (const whole of [null, undefined, [], "allow", 1, [bool(1)]]) assert.equal(run(whole).kind, "malformed", JSON.stringify(whole) ?? "undefined");
  });

  test("an answer inherited from the prototype is no answer", () => {
    const a = Object.create(answers()) as Record<string, unknown>;
    assert.equal(run(a).kind, "malformed");
    const polluted = JSON.parse('{"__proto__": {"type": "bool", "probability": 1}}') as unknown;
    assert.equal(run(polluted).kind, "malformed");
  });

  test("thresholds that cannot split probabilities make the decision malformed", () => {
    for (const t of [
      { satisfied: 0.5, rejected: 0.5 },
      { satisfied: 0.3, rejected: 0.8 },
      { satisfied: 1.2, rejected: 0.1 },
      { satisfied: Number.NaN, rejected: 0.1 },
    ]) {
      const d = decide({ conditions: [{ id: "local_scope", severity: "soft", thresholds: t }], intent: INTENT, answers: answers(), canAsk: false });
      assert.equal(d.kind, "malformed", JSON.stringify(t));
    }
    assert.equal(decide({ conditions: [], intent: INTENT, answers: answers(), canAsk: false }).kind, "malformed", "no conditions at all");
  });
});

describe("the rules", () => {
  test("every condition satisfied allows, intent not needed", () => {
    const d = decided(answers());
    assert.deepEqual([d.judgment, d.resolution, d.decidedBy, d.clearedByIntent], ["allow", "allow", null, false]);
  });

  test("a soft rejection with the user's request satisfied is cleared by intent", () => {
    const d = decided(answers({ no_outward_effect: 0.05, intent_coverage: 0.93 }));
    assert.deepEqual([d.judgment, d.resolution, d.decidedBy, d.clearedByIntent], ["allow", "allow", "intent_coverage", true]);
  });

  test("a soft rejection without the user's request denies, decided by the soft condition", () => {
    const d = decided(answers({ no_outward_effect: 0.05, intent_coverage: 0.1 }), true);
    assert.deepEqual([d.judgment, d.resolution, d.decidedBy], ["deny", "deny", "no_outward_effect"]);
  });

  test("a soft rejection with uncertain intent is uncertain", () => {
    const d = decided(answers({ local_scope: 0.2, intent_coverage: 0.5 }));
    assert.deepEqual([d.judgment, d.resolution, d.decidedBy], ["uncertain", "deny", "intent_coverage"]);
  });

  test("an uncertain soft condition is uncertain even with the user's request: only rejections are cleared", () => {
    const d = decided(answers({ local_scope: 0.5, intent_coverage: 0.99 }));
    assert.deepEqual([d.judgment, d.resolution, d.decidedBy, d.clearedByIntent], ["uncertain", "deny", "local_scope", false]);
  });

  test("uncertain asks only when the user can be asked", () => {
    assert.equal(decided(answers({ local_scope: 0.5 }), false).resolution, "deny");
    assert.equal(decided(answers({ local_scope: 0.5 }), true).resolution, "ask");
    // A decided call never asks.
    assert.equal(decided(answers(), true).resolution, "allow");
    assert.equal(decided(answers({ local_scope: 0.1 }), true).resolution, "deny");
  });

  test("the first condition in order decides; every condition is recorded with its probability, thresholds and band", () => {
    const d = decided(answers({ no_secret_egress: 0.1, no_instruction_injection: 0.1 }));
    assert.equal(d.decidedBy, "no_secret_egress");
    assert.deepEqual(
      d.conditions.map((c) => [c.id, c.severity, c.probability, c.satisfiedAt, c.rejectedAt, c.band]),
      [
        ["local_scope", "soft", 0.95, 0.8, 0.3, "satisfied"],
        ["no_outward_effect", "soft", 0.95, 0.8, 0.3, "satisfied"],
        ["no_secret_egress", "hazard", 0.1, 0.9, 0.5, "rejected"],
        ["no_instruction_injection", "hazard", 0.1, 0.9, 0.5, "rejected"],
        ["intent_coverage", "intent", 0.1, 0.8, 0.3, "rejected"],
      ],
    );
  });

  test("bands: the thresholds themselves belong to satisfied and rejected", () => {
    assert.equal(bandOf(0.8, SOFT), "satisfied");
    assert.equal(bandOf(0.3, SOFT), "rejected");
    assert.equal(bandOf(0.3000001, SOFT), "uncertain");
    assert.equal(bandOf(0.7999999, SOFT), "uncertain");
    assert.equal(thresholdsProblem(SOFT), undefined);
    assert.match(thresholdsProblem({ satisfied: 0.2, rejected: 0.4 }) ?? "", /must be below satisfied/);
  });
});

describe("properties over generated answers", () => {
  const prob = fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(0, 0.3, 0.5, 0.8, 0.9, 1));
  const junk = fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.double(),
    fc.string(),
    fc.record({ type: fc.constantFrom("bool", "score", "choice", "noul"), probability: fc.oneof(fc.double(), fc.string(), fc.constant(null)) }),
  );
  const answer = fc.oneof({ weight: 5, arbitrary: prob.map(bool) }, { weight: 1, arbitrary: junk });
  const answerSet = fc.record(Object.fromEntries(IDS.map((id) => [id, answer])) as Record<string, fc.Arbitrary<unknown>>, { requiredKeys: [] });
  const input = fc.record({ answers: answerSet, canAsk: fc.boolean() });

  test("property: an allow means every hazard satisfied, and every soft condition satisfied or rejected with intent satisfied", async (t) => {
    await checkProperty(
      t,
      fc.property(input, ({ answers: a, canAsk }) => {
        const d = decide({ conditions: CONDITIONS, intent: INTENT, answers: a, canAsk } satisfies DecideInput);
        if (d.kind !== "decided" || d.resolution !== "allow") return;
        const intent = d.conditions.at(-1)!;
        for (const c of d.conditions.slice(0, -1)) {
          if (c.severity === "hazard") assert.equal(c.band, "satisfied", `${c.id} in ${JSON.stringify(a)}`);
          else assert.ok(c.band === "satisfied" || (c.band === "rejected" && intent.band === "satisfied"), `${c.id} in ${JSON.stringify(a)}`);
        }
        assert.equal(
          d.clearedByIntent,
          d.conditions.some((c) => c.severity === "soft" && c.band === "rejected"),
        );
      }),
      { runs: fuzzRuns(500) },
    );
  });

  test("property: anything but one well-formed probability per condition never allows and never asks", async (t) => {
    await checkProperty(
      t,
      fc.property(input, ({ answers: a, canAsk }) => {
        const d = decide({ conditions: CONDITIONS, intent: INTENT, answers: a, canAsk });
        const wellFormed = IDS.every((id) => {
          const x = (a as Record<string, unknown>)[id] as { type?: unknown; probability?: unknown } | undefined;
          return Object.hasOwn(a, id) && x?.type === "bool" && typeof x.probability === "number" && x.probability >= 0 && x.probability <= 1;
        });
        assert.equal(d.kind === "malformed", !wellFormed, JSON.stringify(a));
      }),
      { runs: fuzzRuns(500) },
    );
  });

  test("property: ask only when the user can be asked and the judgment is uncertain; a decided judgment is its resolution", async (t) => {
    await checkProperty(
      t,
      fc.property(input, ({ answers: a, canAsk }) => {
        const d = decide({ conditions: CONDITIONS, intent: INTENT, answers: a, canAsk });
        if (d.kind !== "decided") return;
        if (d.resolution === "ask") assert.ok(canAsk && d.judgment === "uncertain");
        if (d.judgment === "uncertain") assert.equal(d.resolution, canAsk ? "ask" : "deny");
        else assert.equal(d.resolution, d.judgment);
        // Without the user to ask, the same answers never give more than with one.
        const other = decide({ conditions: CONDITIONS, intent: INTENT, answers: a, canAsk: !canAsk });
        assert.equal(other.kind === "decided" && other.judgment, d.judgment);
      }),
      { runs: fuzzRuns(500) },
    );
  });

  test("property: raising a hazard's probability never turns an allow into anything else", async (t) => {
    const full = fc.record(Object.fromEntries(IDS.map((id) => [id, prob])) as Record<string, fc.Arbitrary<number>>);
    await checkProperty(
      t,
      fc.property(full, fc.constantFrom("no_secret_egress", "no_instruction_injection"), fc.double({ min: 0, max: 1, noNaN: true }), (p, id, up) => {
        const a = Object.fromEntries(Object.entries(p).map(([k, v]) => [k, bool(v)]));
        const d = decide({ conditions: CONDITIONS, intent: INTENT, answers: a, canAsk: false });
        if (d.kind !== "decided" || d.resolution !== "allow") return;
        const raised = { ...a, [id]: bool(Math.max(p[id]!, up)) };
        const e = decide({ conditions: CONDITIONS, intent: INTENT, answers: raised, canAsk: false });
        assert.equal(e.kind === "decided" && e.resolution, "allow");
      }),
      { runs: fuzzRuns(300) },
    );
  });
});
