// The chat reviewer as a judgment engine: the pinned prompt and the selected evidence (input.ts)
// to a chat model, its answer parsed as exactly one Codex-compatible verdict (verdict.ts), one
// retry with a fixed reminder when the answer is out of format.

import { buildReviewInput } from "./input.ts";
import { type JudgmentEngine, overBudget } from "./engine-types.ts";
import { parseVerdict } from "./verdict.ts";
import type { ThinkingLevel } from "./types.ts";

/** Room for the verdict after any thinking the level allows; the verdict itself is short. */
const OUTPUT_TOKENS: Readonly<Record<ThinkingLevel, number>> = {
  off: 1024,
  minimal: 2048,
  low: 4096,
  medium: 8192,
  high: 16_384,
  xhigh: 32_768,
  max: 32_768,
};

export const chatEngine: JudgmentEngine = {
  kind: "chat",
  prepare(job, models, limits) {
    const reviewer = job.reviewer!;
    const input = buildReviewInput(job.action, job.transcript, limits.budget);
    if (!input.ok) return overBudget(input);
    const inputTokens = input.tokens;
    const model = models.find(reviewer.provider, reviewer.model);
    if (!model)
      return { ok: false, failure: "model-unavailable", detail: `model ${reviewer.provider}/${reviewer.model} is not in Pi's model registry`, inputTokens };
    const levels = model.thinkingLevels;
    if (!levels.includes(reviewer.thinking))
      return {
        ok: false,
        failure: "model-unavailable",
        detail: `thinking level ${reviewer.thinking} is not supported by ${reviewer.provider}/${reviewer.model} (supported: ${levels.join(", ")})`,
        inputTokens,
      };
    return {
      ok: true,
      inputTokens,
      unreadableAnswer: "provider-error",
      async attempt(ctx) {
        const msg = await models.complete(model, {
          systemPrompt: input.systemPrompt,
          user: ctx.formatRetry ? input.retryUser : input.user,
          timestamp: ctx.timestamp,
          signal: ctx.signal,
          maxTokens: OUTPUT_TOKENS[reviewer.thinking],
          timeoutMs: ctx.timeoutMs,
          fetch: ctx.fetch,
          ...(reviewer.thinking === "off" ? {} : { reasoning: reviewer.thinking }),
        });
        if (msg.stopReason !== "stop") return { kind: "stopped", stopReason: msg.stopReason, errorMessage: msg.errorMessage, usage: msg.usage };
        const parsed = parseVerdict(msg.text);
        if (parsed.ok) return { kind: "verdict", verdict: parsed.verdict, usage: msg.usage };
        return { kind: "out-of-format", problem: `reply out of format: ${parsed.problem}`, retry: true, usage: msg.usage };
      },
    };
  },
};
