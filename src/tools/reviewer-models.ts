// Pi's model registry as the review engine's ReviewerModels (review/models.ts): chat models
// through streamSimple, classifier models through findOfType("classifier") and classify.

import {
  getSupportedThinkingLevels,
  type Api,
  type AssistantMessage,
  type ClassifierApi,
  type ClassifierContext,
  type ClassifierModel,
  type ClassifierResult,
  type Context,
  type Model,
  type ModelsClassifierOptions,
  type SimpleStreamOptions,
  type ThinkingLevel,
} from "@earendil-works/pi-ai";
import type { ClassifierReply, ModelReply, ReviewerModel, ReviewerModels } from "../review/models.ts";
import { engineOf, type ReviewerId } from "../review/types.ts";

/** The part of Pi's ModelRegistry (ctx.modelRegistry) the reviewer uses. */
export interface PiModelRegistry {
  find(provider: string, modelId: string): Model<Api> | undefined;
  getProviderAuth(provider: string): Promise<unknown>;
  streamSimple(model: Model<Api>, context: Context, options?: SimpleStreamOptions): { result(): Promise<AssistantMessage> };
  /** The classifier engine's models (Pi 1.6's ModelRegistry has both). */
  findOfType?(type: "classifier", provider: string, modelId: string): ClassifierModel<ClassifierApi> | undefined;
  classify?(model: ClassifierModel<ClassifierApi>, context: ClassifierContext, options?: ModelsClassifierOptions): Promise<ClassifierResult>;
}

export function piReviewerModels(registry: PiModelRegistry): ReviewerModels {
  const models = new WeakMap<ReviewerModel, Model<Api>>();
  const classifiers = new WeakMap<ReviewerModel, ClassifierModel<ClassifierApi>>();
  return {
    findClassifier(provider, modelId) {
      const m = registry.findOfType?.("classifier", provider, modelId);
      if (!m) return undefined;
      const found: ReviewerModel = { provider, id: modelId, thinkingLevels: ["off"] };
      classifiers.set(found, m);
      return found;
    },
    async classify(model, call): Promise<ClassifierReply> {
      const m = classifiers.get(model);
      if (!m || !registry.classify) throw new Error(`classifier ${model.provider}/${model.id} was not found through this registry`);
      const context = { state: call.state, questions: { ...call.questions } } as ClassifierContext;
      // pi-ai must not retry on its own: every attempt counts against the engine's bound.
      const r = await registry.classify(m, context, { signal: call.signal, timeoutMs: call.timeoutMs, fetch: call.fetch, maxRetries: 0 });
      return {
        stopReason: r.stopReason,
        answers: r.answers,
        ...(r.errorMessage === undefined ? {} : { errorMessage: r.errorMessage }),
        ...(r.usage ? { usage: r.usage } : {}),
      };
    },
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

/**
 * Where Pi sends the reviewer's requests, as its model registry resolves them now: the model's
 * API and base URL, and a base URL its provider's credentials put in their place. A verdict binds
 * to it (P8): models.json rewritten, or a provider registered again, while a review is pending
 * moves the reviewer somewhere else. Undefined without a reviewer; "not found" when the registry
 * no longer has the model.
 */
export async function reviewerEndpoint(registry: PiModelRegistry, reviewer: ReviewerId | undefined): Promise<string | undefined> {
  if (!reviewer) return undefined;
  const m =
    engineOf(reviewer) === "classifier"
      ? registry.findOfType?.("classifier", reviewer.provider, reviewer.model)
      : registry.find(reviewer.provider, reviewer.model);
  if (!m) return "not found";
  let authBase: unknown;
  try {
    authBase = ((await registry.getProviderAuth(reviewer.provider)) as { auth?: { baseUrl?: unknown } } | undefined)?.auth?.baseUrl;
  } catch {
    // No credentials: the review itself fails; the endpoint is still the model's.
  }
  return JSON.stringify([m.api, m.baseUrl, typeof authBase === "string" ? authBase : null]);
}
