// The strict verdict parser (P5): exactly one JSON object with exactly the schema's fields and
// values. Everything else is malformed, and malformed denies.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MAX_VERDICT_BYTES, parseVerdict } from "../../src/review/verdict.ts";
import { verdictAdmits } from "../../src/review/types.ts";

const ALLOW = '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"The user asked for this."}';
const DENY = '{"risk_level":"high","user_authorization":"unknown","outcome":"deny","rationale":"Deletes work the user did not mention."}';

describe("P5: strict verdict parsing", () => {
  test("a valid allow and a valid deny parse exactly", () => {
    const a = parseVerdict(ALLOW);
    assert.deepEqual(a, { ok: true, verdict: { risk_level: "low", user_authorization: "high", outcome: "allow", rationale: "The user asked for this." } });
    const d = parseVerdict(DENY);
    assert.equal(d.ok && d.verdict.outcome, "deny");
  });

  test("surrounding whitespace and any key order are accepted", () => {
    const r = parseVerdict(' \n {"outcome":"allow", "rationale":"ok.", "user_authorization":"medium", "risk_level":"medium"}\n');
    assert.equal(r.ok, true);
  });

  const MALFORMED: ReadonlyArray<[string, string]> = [
    ["empty reply", ""],
    ["whitespace only", "  \n"],
    ["prose before", `Here is my verdict: ${ALLOW}`],
    ["prose after", `${ALLOW} Let me know if you need more.`],
    ["code fence", "```json\n" + ALLOW + "\n```"],
    ["two objects", ALLOW + DENY],
    ["two objects with a newline", ALLOW + "\n" + DENY],
    ["an array", `[${ALLOW}]`],
    ["a JSON string", JSON.stringify(ALLOW)],
    ["missing field", '{"risk_level":"low","user_authorization":"high","outcome":"allow"}'],
    ["extra field", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"x.","confidence":"0.9"}'],
    ["duplicate field", '{"risk_level":"low","user_authorization":"high","outcome":"deny","outcome":"allow","rationale":"x."}'],
    ["ask outcome", '{"risk_level":"low","user_authorization":"high","outcome":"ask","rationale":"Ask the user."}'],
    ["uppercase outcome", '{"risk_level":"low","user_authorization":"high","outcome":"ALLOW","rationale":"x."}'],
    ["unknown risk level", '{"risk_level":"none","user_authorization":"high","outcome":"allow","rationale":"x."}'],
    ["unknown authorization", '{"risk_level":"low","user_authorization":"full","outcome":"allow","rationale":"x."}'],
    ["number instead of string", '{"risk_level":1,"user_authorization":"high","outcome":"allow","rationale":"x."}'],
    ["boolean outcome", '{"risk_level":"low","user_authorization":"high","outcome":true,"rationale":"x."}'],
    ["null rationale", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":null}'],
    ["nested object", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":{"text":"x"}}'],
    ["empty rationale", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"  "}'],
    ["rationale with a newline", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"line one\\nline two"}'],
    ["overlong rationale", `{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"${"x".repeat(401)}"}`],
    ["oversized reply", `${ALLOW}${" ".repeat(MAX_VERDICT_BYTES)}`],
    ["trailing comma", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"x.",}'],
    ["single quotes", "{'risk_level':'low','user_authorization':'high','outcome':'allow','rationale':'x.'}"],
    ["unterminated", '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"x.'],
    ["empty object", "{}"],
    ["prose only", "ALLOW"],
  ];
  for (const [name, reply] of MALFORMED) {
    test(`malformed: ${name}`, () => {
      const r = parseVerdict(reply);
      assert.equal(r.ok, false, `accepted: ${reply}`);
    });
  }

  test("an allow rated critical does not admit", () => {
    const r = parseVerdict('{"risk_level":"critical","user_authorization":"high","outcome":"allow","rationale":"x."}');
    assert.equal(r.ok, true);
    assert.equal(r.ok && verdictAdmits(r.verdict), false);
    const d = parseVerdict(DENY);
    assert.equal(d.ok && verdictAdmits(d.verdict), false);
    const a = parseVerdict(ALLOW);
    assert.equal(a.ok && verdictAdmits(a.verdict), true);
  });
});
