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

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before } from "node:test";
import { startClassifierServer, type ClassifierServer } from "./classifier-servers.ts";
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
