// The classifier engine: a classifier model (Pi's classify, e.g. typesafe/jev-latest) answers
// the conditions of data/conditions.json about the call, and decide.ts turns the probabilities
// into allow, deny or ask. Its result is a verdict in the chat reviewer's shape, so the breaker,
// the denial texts, the binding and every record stay one path, with the conditions attached
// (ReviewResult.classifier): each one's probability, thresholds and band, the condition that
// decided, whether the user's request cleared it.
//
// One classify call per attempt; pi-ai's own retries are off (runReview counts attempts). An
// answer that does not give every condition one probability is malformed and is not retried: the
// same request gets the same answer, and a missing answer is never an approval. Nor is an
// ambiguous one: a condition answered twice in the raw body (wire.ts) is malformed too.

import { type JudgmentEngine, overBudget } from "../engine-types.ts";
import type { ClassifierJudgement, ConditionRecord, RiskLevel, UserAuthorization, Verdict } from "../types.ts";
import { conditions, rulesOf, settingsProblem } from "./conditions.ts";
import { type ClassifierDecision, decide } from "./decide.ts";
import { buildClassifierState } from "./state.ts";
import { repeatedAnswer } from "./wire.ts";

const fmt = (p: number) => p.toFixed(2);

function describe(r: ConditionRecord): string {
  if (r.probability === null) return `${r.id} unanswered`;
  const p = fmt(r.probability);
  if (r.band === "satisfied") return `${r.id} satisfied (${p} >= ${fmt(r.satisfiedAt)})`;
  if (r.band === "rejected") return `${r.id} rejected (${p} <= ${fmt(r.rejectedAt)})`;
  return `${r.id} uncertain (${p}, between ${fmt(r.rejectedAt)} and ${fmt(r.satisfiedAt)})`;
}

/** The verdict a decision stands for: what the breaker, the denial text and the records read. */
export function verdictOf(d: Extract<ClassifierDecision, { kind: "decided" }>): Verdict {
  const intent = d.conditions.find((c) => c.severity === "intent");
  const by = d.conditions.find((c) => c.id === d.decidedBy);
  const userAuthorization: UserAuthorization =
    intent?.band === "satisfied" ? "high" : intent?.band === "uncertain" ? "medium" : intent?.band === "rejected" ? "low" : "unknown";
  let risk: RiskLevel;
  let why: string;
  if (d.judgment === "allow") {
    risk = d.clearedByIntent ? "medium" : "low";
    const soft = d.conditions.filter((c) => c.severity === "soft" && c.band === "rejected").map((c) => c.id);
    why = d.clearedByIntent
      ? `Allowed: ${soft.join(", ")} rejected, but the user's own request covers the call (${intent ? describe(intent) : "intent_coverage"}); every hazard condition holds.`
      : "Allowed: every condition holds.";
  } else if (d.judgment === "deny") {
    risk = by?.severity === "hazard" ? "high" : "medium";
    why =
      by?.severity === "hazard"
        ? `Denied: ${by ? describe(by) : d.decidedBy} is a hazard condition; the user's request never clears it.`
        : `Denied: ${by ? describe(by) : d.decidedBy}, and nothing the user wrote asks for the call (${intent ? describe(intent) : "intent_coverage"}).`;
  } else {
    risk = "medium";
    why = `Uncertain: ${by ? describe(by) : d.decidedBy}; an uncertain judgment is not an allow.`;
  }
  const all = d.conditions.map(describe).join("; ");
  return {
    risk_level: risk,
    user_authorization: userAuthorization,
    outcome: d.resolution === "allow" ? "allow" : "deny",
    rationale: `${why} Conditions: ${all}.`,
  };
}

export const classifierEngine: JudgmentEngine = {
  kind: "classifier",
  prepare(job, models, limits) {
    const reviewer = job.reviewer!;
    const data = conditions();
    if (data.kind === "fault") return { ok: false, failure: "internal", detail: `the classifier's conditions file is faulty: ${data.problem}`, inputTokens: 0 };
    const settings = limits.classifier;
    const problem = settingsProblem(data.data, settings);
    if (problem) return { ok: false, failure: "internal", detail: `the user's configuration: ${problem}`, inputTokens: 0 };
    const built = buildClassifierState(job.action, job.transcript, data.data, limits.budget);
    if (!built.ok) return overBudget(built);
    const inputTokens = built.tokens;
    const model = models.findClassifier?.(reviewer.provider, reviewer.model);
    if (!model || !models.classify)
      return {
        ok: false,
        failure: "model-unavailable",
        detail: `classifier model ${reviewer.provider}/${reviewer.model} is not in Pi's model registry`,
        inputTokens,
      };
    if (reviewer.thinking !== "off")
      return { ok: false, failure: "model-unavailable", detail: `a classifier has no thinking level (got ${reviewer.thinking})`, inputTokens };
    const classify = models.classify.bind(models);
    const rules = rulesOf(data.data, settings?.thresholds);
    const canAsk = job.canConfirm === true && settings?.confirmUncertain === true;
    return {
      ok: true,
      inputTokens,
      unreadableAnswer: "malformed",
      async attempt(ctx) {
        // The raw body, read beside the client: two answers for one condition are ambiguous.
        let repeated: string | undefined;
        const fetch: typeof globalThis.fetch = async (input, init) => {
          const res = await ctx.fetch(input, init);
          if (res.ok && res.body)
            try {
              repeated = repeatedAnswer(await res.clone().text());
            } catch {
              // A body that breaks off is the client's to report.
            }
          return res;
        };
        const reply = await classify(model, { state: built.state, questions: built.questions, signal: ctx.signal, timeoutMs: ctx.timeoutMs, fetch });
        if (reply.stopReason !== "stop") return { kind: "stopped", stopReason: reply.stopReason, errorMessage: reply.errorMessage, usage: reply.usage };
        const d = repeated
          ? { kind: "malformed" as const, problem: repeated, conditions: decide({ ...rules, answers: reply.answers, canAsk }).conditions }
          : decide({ ...rules, answers: reply.answers, canAsk });
        const judgement = (rest: Pick<ClassifierJudgement, "judgment" | "decidedBy" | "clearedByIntent" | "confirmation">): ClassifierJudgement => ({
          conditions: d.conditions,
          conditionsSha256: data.sha256,
          ...rest,
        });
        if (d.kind === "malformed")
          return {
            kind: "out-of-format",
            problem: `classifier answer unusable: ${d.problem}`,
            retry: false,
            usage: reply.usage,
            classifier: judgement({ judgment: "malformed", decidedBy: null, clearedByIntent: false, confirmation: "none" }),
          };
        return {
          kind: "verdict",
          verdict: verdictOf(d),
          usage: reply.usage,
          classifier: judgement({
            judgment: d.judgment,
            decidedBy: d.decidedBy,
            clearedByIntent: d.clearedByIntent,
            confirmation: d.judgment !== "uncertain" ? "none" : d.resolution === "ask" ? "pending" : "not-asked",
          }),
        };
      },
    };
  },
};
