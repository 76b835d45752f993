// Property tests of the strict verdict parser (P5): whatever the reviewer's reply, parseVerdict
// yields an allow only for exactly one flat JSON object with exactly the four schema fields, each a
// string from its closed set, a short one-line rationale, no duplicate key, nothing around it. The
// oracle below reads the reply with JSON.parse and counts its keys on the text itself, so it does
// not share the parser's code.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { RISK_LEVELS, USER_AUTHORIZATIONS, VERDICT_OUTCOMES } from "../../src/review/types.ts";
import { MAX_RATIONALE_CHARS, MAX_VERDICT_BYTES, parseVerdict } from "../../src/review/verdict.ts";
import { checkProperty, fuzzRuns } from "../helpers/fuzz.ts";

const FIELDS = ["outcome", "rationale", "risk_level", "user_authorization"];
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;

/** The verdict a reply must be read as, by the schema alone, or undefined when it is none. */
function oracle(reply: string): Record<string, string> | undefined {
  if (Buffer.byteLength(reply, "utf8") > MAX_VERDICT_BYTES) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(reply);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length !== FIELDS.length || !FIELDS.every((f) => typeof o[f] === "string")) return undefined;
  // JSON.parse keeps the last of duplicate keys: count the pairs in the text. With every value a
  // string, what is left outside the strings is only braces, colons, commas and whitespace.
  const outside = reply.replace(JSON_STRING, "");
  if (!/^[\s{}:,]*$/.test(outside) || (outside.match(/:/g) ?? []).length !== FIELDS.length) return undefined;
  const s = o as Record<string, string>;
  if (!(RISK_LEVELS as readonly string[]).includes(s.risk_level!)) return undefined;
  if (!(USER_AUTHORIZATIONS as readonly string[]).includes(s.user_authorization!)) return undefined;
  if (!(VERDICT_OUTCOMES as readonly string[]).includes(s.outcome!)) return undefined;
  const r = s.rationale!;
  if (r.trim() === "" || r.length > MAX_RATIONALE_CHARS || /[\u0000-\u001f\u007f]/.test(r)) return undefined;
  return s;
}

const ws = fc.constantFrom("", "", " ", "\n", "\t", "\r\n", "  ");
/** A key as the reply spells it: mostly plain, sometimes with \u escapes that JSON reads as the same name. */
const spelled = (k: string) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(JSON.stringify(k)) },
    { weight: 1, arbitrary: fc.constant(`"\\u${k.charCodeAt(0).toString(16).padStart(4, "0")}${k.slice(1)}"`) },
  );
const rationale = fc.oneof(
  fc.constantFrom(
    "The user asked for this.",
    "ok",
    " ",
    "",
    "x".repeat(MAX_RATIONALE_CHARS),
    "x".repeat(MAX_RATIONALE_CHARS + 1),
    "line\nbreak",
    "tab\there",
    "\u2028",
    "\u0000",
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
);
const fieldValue = (set: readonly string[]) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...set).map((x) => JSON.stringify(x)) },
    { weight: 1, arbitrary: fc.constantFrom("ALLOW", "allow ", "ask", "none", "", "Allow").map((x) => JSON.stringify(x)) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }).map((x) => JSON.stringify(x)) },
  );

/** Objects shaped like a verdict: the schema's fields in any order and spacing, with values right or wrong, sometimes a field dropped, doubled or added. */
const verdictLike = fc
  .tuple(
    fc.record({
      outcome: fieldValue(["allow", "allow", "deny"]),
      rationale: fc.oneof(
        { weight: 6, arbitrary: rationale.map((r) => JSON.stringify(r)) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }).map((x) => JSON.stringify(x)) },
      ),
      risk_level: fieldValue(RISK_LEVELS),
      user_authorization: fieldValue(USER_AUTHORIZATIONS),
    }),
    fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
    fc.constantFrom("none", "none", "none", "drop", "duplicate", "extra"),
    fc.array(ws, { minLength: 12, maxLength: 12 }),
    fc
      .array(fc.boolean(), { minLength: 4, maxLength: 4 })
      .chain((esc) => fc.tuple(...FIELDS.map((f, i) => (esc[i] ? spelled(f) : fc.constant(JSON.stringify(f)))))),
  )
  .map(([values, order, change, space, keys]) => {
    let pairs = FIELDS.map((f, i) => [keys[i]!, values[f as keyof typeof values]] as [string, string]);
    pairs.sort((a, b) => order[FIELDS.indexOf(JSON.parse(a[0]) as string)]! - order[FIELDS.indexOf(JSON.parse(b[0]) as string)]! || 0);
    if (change === "drop") pairs = pairs.slice(1);
    if (change === "duplicate") pairs = [...pairs, [pairs[0]![0], '"allow"']];
    if (change === "extra") pairs = [...pairs, ['"confidence"', '"high"']];
    const sp = (i: number) => space[i % space.length]!;
    return `${sp(0)}{${pairs.map(([k, v], i) => `${sp(i + 1)}${k}${sp(i + 2)}:${sp(i + 3)}${v}`).join(",")}${sp(5)}}${sp(6)}`;
  });

/** A valid allow, byte-exact, then a few random edits. */
const ALLOW = '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"The user asked for this."}';
const EDIT_TEXT = [
  "{",
  "}",
  '"',
  ":",
  ",",
  " ",
  "\n",
  "\\",
  "\\u0061",
  '\\"',
  "allow",
  "deny",
  '"outcome":"allow"',
  ',"outcome":"deny"',
  "```",
  "\u0000",
  "\ufeff",
  "[",
  "]",
  "null",
  "é",
];
const mutatedAllow = fc
  .tuple(
    fc.oneof(fc.constant(ALLOW), verdictLike),
    fc.array(
      fc.record({
        at: fc.nat(),
        kind: fc.constantFrom("delete", "insert", "replace", "duplicate"),
        len: fc.integer({ min: 1, max: 8 }),
        text: fc.oneof(fc.constantFrom(...EDIT_TEXT), fc.string({ maxLength: 3 })),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  )
  .map(([base, edits]) => {
    let s = base;
    for (const e of edits) {
      const at = e.at % (s.length + 1);
      if (e.kind === "delete") s = s.slice(0, at) + s.slice(at + e.len);
      else if (e.kind === "insert") s = s.slice(0, at) + e.text + s.slice(at);
      else if (e.kind === "replace") s = s.slice(0, at) + e.text + s.slice(at + e.len);
      else s = s.slice(0, at + e.len) + s.slice(at, at + e.len) + s.slice(at + e.len);
    }
    return s;
  });

const replies = fc.oneof(
  { weight: 2, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 4, arbitrary: verdictLike },
  { weight: 4, arbitrary: mutatedAllow },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom("Here is my verdict: ", "```json\n", "", ALLOW), verdictLike, fc.constantFrom("", "\n```", " Thanks.", ALLOW))
      .map(([a, b, c]) => a + b + c),
  },
);

describe("P5: the verdict parser yields an allow only for a valid allow object", () => {
  test("random text, random JSON, verdict-shaped objects and mutations of a valid allow", async (t) => {
    let allows = 0;
    await checkProperty(
      t,
      fc.property(replies, (reply) => {
        const parsed = parseVerdict(reply);
        const expected = oracle(reply);
        if (parsed.ok) {
          assert.ok(expected, `parsed as a verdict: ${JSON.stringify(reply)}`);
          assert.deepEqual({ ...parsed.verdict }, { ...expected }, "the verdict is the reply's own fields");
          if (parsed.verdict.outcome === "allow") allows++;
        } else assert.equal(expected, undefined, `a valid verdict refused (${parsed.problem}): ${JSON.stringify(reply)}`);
      }),
      { runs: fuzzRuns(20000) },
    );
    // The generators reach valid allows too, or the property would say nothing about them.
    t.diagnostic(`${allows} of the replies were valid allows`);
    assert.ok(allows > 100, `${allows} valid allows generated`);
  });
});
