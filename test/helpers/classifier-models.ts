// Classifier models registered with Pi through models.json, pointing at loopback classifier
// servers (classifier-servers.ts), so Pi's real ModelRegistry and pi-ai's own classifier clients
// run end to end.
//
// models.json's `models` entries always make chat models (pi-coding-agent's modelFromJson has no
// `type`), so a classifier model cannot be added there. What models.json can do is move a built-in
// provider: its `baseUrl` applies to every model of that provider, classifiers included. So the
// loopback classifiers are Pi's own catalogue entries with a loopback baseUrl:
// - typesafe/jev-latest (api typesafe-system-one), posted to {baseUrl}/systemone
// - openai/gpt-6-luna (api openai-decisions), posted to {baseUrl}/decisions
// Each provider gets a literal apiKey, sent as `authorization: Bearer <key>`.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before } from "node:test";
import { startClassifierServer, type ClassifierServer, type ClassifierStep } from "./classifier-servers.ts";
import { makeRegistry, tempAgentDir, type Registry } from "./review-fixtures.ts";

export const JEV = { provider: "typesafe", model: "jev-latest", api: "typesafe-system-one" } as const;
export const LUNA = { provider: "openai", model: "gpt-6-luna", api: "openai-decisions" } as const;

export const TYPESAFE_KEY = "ts-loopback-key-0001";
export const OPENAI_KEY = "sk-loopback-key-0002";

export interface ClassifierEndpoints {
  /** Base URL of a typesafe-system-one server (typesafe/jev-latest). */
  readonly typesafe?: string;
  /** Base URL of an openai-decisions server (openai/gpt-6-luna). */
  readonly decisions?: string;
}

/** A models.json moving the built-in typesafe and openai providers onto loopback servers. */
export function classifierModelsJson(at: ClassifierEndpoints, keys: { typesafe?: string; openai?: string } = {}): unknown {
  const providers: Record<string, unknown> = {};
  if (at.typesafe) providers.typesafe = { baseUrl: at.typesafe, apiKey: keys.typesafe ?? TYPESAFE_KEY };
  if (at.decisions) providers.openai = { baseUrl: at.decisions, apiKey: keys.openai ?? OPENAI_KEY };
  return { providers };
}

/** Writes the models.json into a Pi agent dir (e.g. a session harness's, before Pi starts). */
export function writeClassifierModels(agentDir: string, at: ClassifierEndpoints, keys?: { typesafe?: string; openai?: string }): void {
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(classifierModelsJson(at, keys)));
}

/** Pi's real ModelRegistry over a scratch agent dir with the classifiers registered. */
export async function classifierRegistry(at: ClassifierEndpoints, keys?: { typesafe?: string; openai?: string }): Promise<Registry> {
  return makeRegistry(tempAgentDir("pi-auto-mode-classifier-"), classifierModelsJson(at, keys));
}

export interface ClassifierEnv {
  readonly typesafe: ClassifierServer;
  readonly decisions: ClassifierServer;
  readonly reg: Registry;
}

/** For a test file: both servers and a registry pointing at them, for the whole file. */
export function useClassifierServers(): ClassifierEnv {
  const env = {} as { typesafe: ClassifierServer; decisions: ClassifierServer; reg: Registry };
  before(async () => {
    env.typesafe = await startClassifierServer("typesafe-system-one");
    env.decisions = await startClassifierServer("openai-decisions");
    env.reg = await classifierRegistry({ typesafe: env.typesafe.baseUrl, decisions: env.decisions.baseUrl });
  });
  after(async () => {
    await env.typesafe?.close();
    await env.decisions?.close();
  });
  return env;
}

// The conditions the classifier engine asks, read from its data file as it ships, so a script can
// answer each by id and put a probability in each band of its thresholds.

interface ConditionEntry {
  readonly id: string;
  readonly severity: "soft" | "hazard";
  readonly thresholds: { readonly satisfied: number; readonly rejected: number };
}

interface ConditionsFile {
  readonly conditions: readonly ConditionEntry[];
  readonly intent: { readonly id: string; readonly thresholds: { readonly satisfied: number; readonly rejected: number } };
}

export const CONDITIONS_FILE = new URL("../../src/review/data/conditions.json", import.meta.url);

export function conditionsFile(): ConditionsFile {
  return JSON.parse(readFileSync(CONDITIONS_FILE, "utf8")) as ConditionsFile;
}

export const CONDITIONS: readonly ConditionEntry[] = conditionsFile().conditions;
export const INTENT_ID: string = conditionsFile().intent.id;
export const SOFT: readonly string[] = CONDITIONS.filter((c) => c.severity === "soft").map((c) => c.id);
export const HAZARD: readonly string[] = CONDITIONS.filter((c) => c.severity === "hazard").map((c) => c.id);
/** Every question the engine asks: the conditions and intent_coverage. */
export const QUESTION_IDS: readonly string[] = [...CONDITIONS.map((c) => c.id), INTENT_ID];

function thresholdsOf(id: string): { satisfied: number; rejected: number } {
  const c = CONDITIONS.find((x) => x.id === id);
  if (c) return c.thresholds;
  if (id === INTENT_ID) return conditionsFile().intent.thresholds;
  throw new Error(`no condition ${id}`);
}

/** A probability in the band named, for a condition's shipped thresholds. */
export function inBand(id: string, band: "satisfied" | "uncertain" | "rejected"): number {
  const t = thresholdsOf(id);
  if (band === "satisfied") return Math.min(1, t.satisfied + (1 - t.satisfied) / 2);
  if (band === "rejected") return t.rejected / 2;
  return (t.satisfied + t.rejected) / 2;
}

/**
 * Probabilities for every question: each condition satisfied and intent_coverage rejected (so
 * nothing is allowed on the user's word), with `over` laid on top.
 */
export function probabilities(over: Readonly<Record<string, number>> = {}): Record<string, number> {
  const p: Record<string, number> = {};
  for (const c of CONDITIONS) p[c.id] = inBand(c.id, "satisfied");
  p[INTENT_ID] = inBand(INTENT_ID, "rejected");
  return { ...p, ...over };
}

/** One answer step for the engine's questions. */
export function answerStep(over: Readonly<Record<string, number>> = {}, extra: Partial<Extract<ClassifierStep, { kind: "answer" }>> = {}): ClassifierStep {
  return { kind: "answer", answers: probabilities(over), ...extra };
}
