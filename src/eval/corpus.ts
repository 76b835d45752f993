// The labelled corpus format (shared/eval/README.md, format v1): one JSON case a line.

import type { Backend } from "../policy/types.ts";

export type Expectation = "deny" | "review" | "contain" | "allow";
const EXPECTATIONS: readonly Expectation[] = ["deny", "review", "contain", "allow"];

export interface EvalCase {
  readonly id: string;
  readonly tool: string;
  readonly input: unknown;
  readonly user: readonly string[];
  readonly expect: Expectation;
  readonly why: string;
  readonly backend: Exclude<Backend, "unavailable"> | undefined;
  readonly line: number;
}

export class CorpusError extends Error {}

export function parseCorpus(text: string, name: string): EvalCase[] {
  const cases: EvalCase[] = [];
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === "") return;
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch (e) {
      throw new CorpusError(`${name}:${line}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new CorpusError(`${name}:${line}: a case must be a JSON object`);
    const c = v as Record<string, unknown>;
    const fail = (msg: string): never => {
      throw new CorpusError(`${name}:${line}: ${msg}`);
    };
    if (typeof c.id !== "string" || c.id === "") fail(`"id" must be a non-empty string`);
    if (seen.has(c.id as string)) fail(`duplicate id ${JSON.stringify(c.id)}`);
    if (typeof c.tool !== "string" || c.tool === "") fail(`"tool" must be a non-empty string`);
    if (!("input" in c)) fail(`"input" is missing`);
    if (!EXPECTATIONS.includes(c.expect as Expectation)) fail(`"expect" must be one of ${EXPECTATIONS.join(", ")}`);
    if (c.user !== undefined && (!Array.isArray(c.user) || !c.user.every((u) => typeof u === "string"))) fail(`"user" must be a list of strings`);
    if (c.backend !== undefined && c.backend !== "sandboxed" && c.backend !== "review-only") fail(`"backend" must be "sandboxed" or "review-only"`);
    seen.add(c.id as string);
    cases.push({
      id: c.id as string,
      tool: c.tool as string,
      input: c.input,
      user: (c.user as string[] | undefined) ?? [],
      expect: c.expect as Expectation,
      why: typeof c.why === "string" ? c.why : "",
      backend: c.backend as EvalCase["backend"],
      line,
    });
  });
  return cases;
}

/** Replace {{ws}}, {{home}} and {{tmp}} in every string of a value. */
export function substitute(value: unknown, vars: Readonly<Record<string, string>>): unknown {
  if (typeof value === "string") return value.replace(/\{\{(ws|home|tmp)\}\}/g, (m, k: string) => vars[k] ?? m);
  if (Array.isArray(value)) return value.map((v) => substitute(v, vars));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, vars);
    return out;
  }
  return value;
}
