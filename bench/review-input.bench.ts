// Reviewer input size (estimator tokens: one UTF-8 byte = one token) over the review-routed
// cases of a labelled corpus (default shared/eval/cases.jsonl; pass another path as the first
// argument), under both backends. What is counted is everything the first attempt sends: the
// system prompt, the input document and the framing allowance. Targets: median <= 2,000 and
// p95 <= 6,000. Prints figures; exits 1 when a target is missed.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseCorpus, substitute } from "../src/eval/corpus.ts";
import { evalGate } from "../src/eval/score.ts";
import { buildEvalWorkspace } from "../src/eval/workspace.ts";
import { decide } from "../src/policy/gate.ts";
import type { Backend } from "../src/policy/types.ts";
import { actionForReview } from "../src/review/admit.ts";
import { DEFAULT_BUDGET, estimateTokens, FRAMING_RESERVE } from "../src/review/budget.ts";
import { buildReviewInput } from "../src/review/input.ts";
import { REVIEWER_SYSTEM_PROMPT } from "../src/review/prompt.ts";
import { transcriptFromUserMessages } from "../src/review/transcript.ts";

const MEDIAN_TARGET = 2000;
const P95_TARGET = 6000;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const corpusPath = process.argv[2] ?? fileURLToPath(new URL("../../shared/eval/cases.jsonl", import.meta.url));
const cases = parseCorpus(readFileSync(corpusPath, "utf8"), corpusPath);
const w = buildEvalWorkspace();
let missed = false;
try {
  const gate = evalGate(w);
  const vars = { ws: w.ws, home: w.home, tmp: w.tmp };
  console.log(`corpus ${corpusPath}: ${cases.length} cases; budget ${DEFAULT_BUDGET}; system prompt ${estimateTokens(REVIEWER_SYSTEM_PROMPT)} + framing ${FRAMING_RESERVE} tokens in every figure`);
  for (const backend of ["sandboxed", "review-only"] as const satisfies readonly Backend[]) {
    const sizes: number[] = [];
    const refused: string[] = [];
    let biggest = { id: "", tokens: 0 };
    for (const c of cases) {
      if (c.backend !== undefined && c.backend !== backend) continue;
      const { request, decision } = decide(c.tool, substitute(c.input, vars), gate, backend);
      if (decision.route !== "review" || !request) continue;
      const action = actionForReview({ toolCallId: `call-${c.id}`, parentToolCallId: undefined, request, decision, transcript: [] });
      const input = buildReviewInput(action, transcriptFromUserMessages(c.user), DEFAULT_BUDGET);
      if (!input.ok) {
        refused.push(`${c.id} (${input.mandatoryTokens})`);
        continue;
      }
      sizes.push(input.tokens);
      if (input.tokens > biggest.tokens) biggest = { id: c.id, tokens: input.tokens };
    }
    sizes.sort((a, b) => a - b);
    const median = percentile(sizes, 50);
    const p95 = percentile(sizes, 95);
    const ok = median <= MEDIAN_TARGET && p95 <= P95_TARGET;
    missed ||= !ok;
    console.log(
      `${backend.padEnd(11)} review-routed ${String(sizes.length + refused.length).padStart(3)}  median ${median} (target <= ${MEDIAN_TARGET})  p95 ${p95} (target <= ${P95_TARGET})  min ${sizes[0] ?? 0}  max ${sizes.at(-1) ?? 0} (${biggest.id})  refused over budget ${refused.length}${refused.length ? `: ${refused.join(", ")}` : ""}  ${ok ? "ok" : "MISSED"}`,
    );
  }
} finally {
  w.dispose();
}
process.exitCode = missed ? 1 : 0;
