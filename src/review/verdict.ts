// The strict verdict parser. The reply must be exactly one flat JSON object whose four fields
// are exactly the schema's, each a string from its closed set. Nothing is normalized or guessed:
// prose around it, a code fence, two objects, a duplicate or extra key, a wrong type, an `ask`
// outcome or an oversized reply are all malformed, and malformed denies (P5).

import { RISK_LEVELS, USER_AUTHORIZATIONS, VERDICT_OUTCOMES, type Verdict } from "./types.ts";

/** Longer replies are not a verdict (and would be costly to carry around). */
export const MAX_VERDICT_BYTES = 2048;
export const MAX_RATIONALE_CHARS = 400;

export type VerdictParse = { readonly ok: true; readonly verdict: Verdict } | { readonly ok: false; readonly problem: string };

const FIELDS = ["outcome", "rationale", "risk_level", "user_authorization"] as const;
type Field = (typeof FIELDS)[number];

const WS = new Set([" ", "\t", "\n", "\r"]);

function fail(problem: string): VerdictParse {
  return { ok: false, problem };
}

/** Reads one JSON string token starting at `i` (which must be a quote). */
function readString(text: string, i: number): { value: string; end: number } | undefined {
  if (text[i] !== '"') return undefined;
  let j = i + 1;
  while (j < text.length) {
    const ch = text[j]!;
    if (ch === "\\") j += 2;
    else if (ch === '"') break;
    else j += 1;
  }
  if (j >= text.length) return undefined;
  try {
    const value: unknown = JSON.parse(text.slice(i, j + 1));
    return typeof value === "string" ? { value, end: j + 1 } : undefined;
  } catch {
    return undefined;
  }
}

function skipWs(text: string, i: number): number {
  while (i < text.length && WS.has(text[i]!)) i++;
  return i;
}

/**
 * A hand-written reader for `{ "k": "v", ... }` rather than JSON.parse: JSON.parse silently
 * keeps the last of two duplicate keys, and a verdict with two `outcome`s is not a verdict.
 */
function readFlatStringObject(text: string): Map<string, string> | string {
  let i = skipWs(text, 0);
  if (text[i] !== "{") return "the reply does not start with a JSON object";
  i = skipWs(text, i + 1);
  const out = new Map<string, string>();
  if (text[i] === "}") return "the object is empty";
  for (;;) {
    const key = readString(text, i);
    if (!key) return "expected a quoted key";
    i = skipWs(text, key.end);
    if (text[i] !== ":") return "expected ':' after a key";
    i = skipWs(text, i + 1);
    if (text[i] !== '"') return `the value of ${JSON.stringify(key.value)} is not a string`;
    const value = readString(text, i);
    if (!value) return `the value of ${JSON.stringify(key.value)} is not a valid string`;
    if (out.has(key.value)) return `duplicate key ${JSON.stringify(key.value)}`;
    out.set(key.value, value.value);
    i = skipWs(text, value.end);
    if (text[i] === ",") {
      i = skipWs(text, i + 1);
      continue;
    }
    if (text[i] === "}") {
      i = skipWs(text, i + 1);
      break;
    }
    return "expected ',' or '}'";
  }
  if (i !== text.length) return "text after the JSON object";
  return out;
}

function oneOf<T extends string>(values: readonly T[], v: string): v is T {
  return (values as readonly string[]).includes(v);
}

export function parseVerdict(reply: string): VerdictParse {
  if (Buffer.byteLength(reply, "utf8") > MAX_VERDICT_BYTES) return fail(`the reply is longer than ${MAX_VERDICT_BYTES} bytes`);
  const obj = readFlatStringObject(reply);
  if (typeof obj === "string") return fail(obj);
  const keys = [...obj.keys()].sort();
  const missing = FIELDS.filter((f) => !obj.has(f));
  const extra = keys.filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (missing.length > 0) return fail(`missing ${missing.join(", ")}`);
  if (extra.length > 0) return fail(`unexpected ${extra.map((k) => JSON.stringify(k)).join(", ")}`);
  const get = (f: Field) => obj.get(f)!;
  const risk = get("risk_level");
  const auth = get("user_authorization");
  const outcome = get("outcome");
  const rationale = get("rationale");
  if (!oneOf(RISK_LEVELS, risk)) return fail(`risk_level ${JSON.stringify(risk)} is not one of ${RISK_LEVELS.join("|")}`);
  if (!oneOf(USER_AUTHORIZATIONS, auth)) return fail(`user_authorization ${JSON.stringify(auth)} is not one of ${USER_AUTHORIZATIONS.join("|")}`);
  if (!oneOf(VERDICT_OUTCOMES, outcome)) return fail(`outcome ${JSON.stringify(outcome)} is not one of ${VERDICT_OUTCOMES.join("|")}`);
  if (rationale.trim() === "") return fail("the rationale is empty");
  if (rationale.length > MAX_RATIONALE_CHARS) return fail(`the rationale is longer than ${MAX_RATIONALE_CHARS} characters`);
  // Control characters (other than plain spaces) have no place in one short sentence.
  if (/[\u0000-\u001f\u007f]/.test(rationale)) return fail("the rationale contains control characters");
  return { ok: true, verdict: { risk_level: risk, user_authorization: auth, outcome, rationale } };
}
