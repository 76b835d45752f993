// Pi's model registry as the review engine's ReviewerModels (review/models.ts).

import {
  getSupportedThinkingLevels,
  type Api,
  type AssistantMessage,
  type Context,
  type Model,
  type SimpleStreamOptions,
  type ThinkingLevel,
} from "@earendil-works/pi-ai";
import type { ModelReply, ReviewerModel, ReviewerModels } from "../review/models.ts";

/** The part of Pi's ModelRegistry (ctx.modelRegistry) the reviewer uses. */
export interface PiModelRegistry {
  find(provider: string, modelId: string): Model<Api> | undefined;
  getProviderAuth(provider: string): Promise<unknown>;
  streamSimple(model: Model<Api>, context: Context, options?: SimpleStreamOptions): { result(): Promise<AssistantMessage> };
}

export function piReviewerModels(registry: PiModelRegistry): ReviewerModels {
  const models = new WeakMap<ReviewerModel, Model<Api>>();
  return {
    find(provider, modelId) {
      const m = registry.find(provider, modelId);
      if (!m) return undefined;
      const found: ReviewerModel = { provider, id: modelId, thinkingLevels: getSupportedThinkingLevels(m) };
      models.set(found, m);
      return found;
    },
    getProviderAuth: (provider) => registry.getProviderAuth(provider),
    async complete(model, call): Promise<ModelReply> {
      const m = models.get(model);
      if (!m) throw new Error(`model ${model.provider}/${model.id} was not found through this registry`);
      const context: Context = { systemPrompt: call.systemPrompt, messages: [{ role: "user", content: call.user, timestamp: call.timestamp }] };
      const options: SimpleStreamOptions = {
        signal: call.signal,
        maxTokens: call.maxTokens,
        // pi-ai must not retry on its own: every attempt counts against the engine's bound.
        maxRetries: 0,
        timeoutMs: call.timeoutMs,
        fetch: call.fetch,
        ...(call.reasoning ? { reasoning: call.reasoning as ThinkingLevel } : {}),
      };
      const msg = await registry.streamSimple(m, context, options).result();
      return {
        stopReason: msg.stopReason,
        text: msg.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join(""),
        ...(msg.errorMessage === undefined ? {} : { errorMessage: msg.errorMessage }),
        usage: msg.usage,
      };
    },
  };
}
