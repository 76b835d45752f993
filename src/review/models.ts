// What the review engine needs from a model provider, in its own terms: the engine never sees
// Pi's model registry or pi-ai's message types; the edges adapt them (tools/reviewer-models.ts).

import type { BoolQuestion, JsonObject } from "./classifier/state.ts";
import type { ReviewUsage, ThinkingLevel } from "./types.ts";

/** A model found in the provider's registry. */
export interface ReviewerModel {
  readonly provider: string;
  readonly id: string;
  /** The thinking levels the model supports ("off" included where it can run without). */
  readonly thinkingLevels: readonly string[];
}

/** One model call: a system prompt and one user message, bounded by the engine. */
export interface ModelCall {
  readonly systemPrompt: string;
  readonly user: string;
  readonly timestamp: number;
  readonly signal: AbortSignal;
  readonly maxTokens: number;
  readonly timeoutMs: number;
  /** Used for every HTTP request of the call, so the engine sees status and Retry-After itself. */
  readonly fetch: typeof globalThis.fetch;
  readonly reasoning?: Exclude<ThinkingLevel, "off">;
}

/** How a model call ended. Errors are replies, never thrown: the engine classifies them. */
export interface ModelReply {
  /** "stop" for a complete answer; "aborted", "error" or the provider's own reason otherwise. */
  readonly stopReason: string;
  /** The text of the answer (its text parts joined). */
  readonly text: string;
  readonly errorMessage?: string;
  readonly usage?: Partial<ReviewUsage>;
}

/** One classify call: the state and the questions, bounded by the engine. */
export interface ClassifierCall {
  readonly state: JsonObject;
  readonly questions: Readonly<Record<string, BoolQuestion>>;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  readonly fetch: typeof globalThis.fetch;
}

/** How a classify call ended (pi-ai's ClassifierResult, in the engine's terms). Never thrown. */
export interface ClassifierReply {
  /** "stop" for a complete answer; "aborted" or "error" otherwise. */
  readonly stopReason: string;
  /** Answers by question id, as received: the engine checks every one. */
  readonly answers: unknown;
  readonly errorMessage?: string;
  readonly usage?: Partial<ReviewUsage>;
}

export interface ReviewerModels {
  find(provider: string, modelId: string): ReviewerModel | undefined;
  /** Resolves to undefined when the provider has no usable credentials. */
  getProviderAuth(provider: string): Promise<unknown>;
  complete(model: ReviewerModel, call: ModelCall): Promise<ModelReply>;
  /** A classifier model (Pi's findOfType("classifier")); absent where the edge offers none. */
  findClassifier?(provider: string, modelId: string): ReviewerModel | undefined;
  /** Pi's ModelRegistry.classify, adapted at the edge. */
  classify?(model: ReviewerModel, call: ClassifierCall): Promise<ClassifierReply>;
}
