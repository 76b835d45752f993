// A stand-in reviewer for the call gate's tests (grants/admit-call.ts CallEnv.review): it answers
// every review the same way, as a ReviewAdmission the real review path would produce.

import type { CallEnv, ReviewAsk } from "../../src/grants/admit-call.ts";
import type { ReviewAdmission } from "../../src/grants/admit.ts";
import { type FailureClass, type RiskLevel, ZERO_USAGE } from "../../src/review/types.ts";
import { JUDGE } from "./review-fixtures.ts";

export type Answer = { readonly verdict: RiskLevel } | { readonly failure: FailureClass } | "allow";

const spent = { reviewer: JUDGE, usage: ZERO_USAGE, attempts: 1, inputTokens: 1, durationMs: 1 } as const;

/** A reviewer that always answers `answer` (a denying verdict at a risk level, a failure, or an allow). */
export function reviewerAnswering(answer: Answer, asked: ReviewAsk[] = []): NonNullable<CallEnv["review"]> {
  return async (ask) => {
    asked.push(ask);
    if (answer === "allow")
      return {
        kind: "admit",
        run: "direct",
        review: { kind: "verdict", verdict: { risk_level: "low", user_authorization: "high", outcome: "allow", rationale: "ok" }, ...spent },
        binding: { hash: ask.request.hash, reviewer: JUDGE, endpoint: undefined, globalRevision: 1, sessionRevision: 0, backend: "review-only" },
      } satisfies ReviewAdmission;
    const review =
      "verdict" in answer
        ? ({ kind: "verdict", verdict: { risk_level: answer.verdict, user_authorization: "unknown", outcome: "deny", rationale: "no" }, ...spent } as const)
        : ({ kind: "failure", failure: answer.failure, detail: "x", ...spent } as const);
    return { kind: "deny", text: "denied by the reviewer", review, binding: undefined, changed: undefined };
  };
}
