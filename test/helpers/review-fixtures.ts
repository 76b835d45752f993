// Shared set-up for the reviewer tests: Pi's real ModelRegistry over a temporary agent dir
// (models.json custom providers, auth.json), optionally with faux providers registered, and
// actions built through the real canonical request code.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fauxProvider, type FauxModelDefinition } from "@earendil-works/pi-ai";
import { ModelRegistry, ModelRuntime } from "@earendil-works/pi-coding-agent";
import { buildRequest, type CanonicalRequest } from "../../src/request/canonical.ts";
import type { ActionForReview } from "../../src/review/input.ts";
import type { ReviewerId } from "../../src/review/types.ts";
import { after, before } from "node:test";
import { loopbackModels, startLoopback, type Loopback } from "./openai-loopback.ts";
import type { UserProvenanceOf } from "../../src/review/transcript.ts";

export const VERDICT = {
  allow: '{"risk_level":"low","user_authorization":"high","outcome":"allow","rationale":"The user asked for exactly this."}',
  deny: '{"risk_level":"high","user_authorization":"unknown","outcome":"deny","rationale":"The user never asked to delete these files."}',
} as const;

export interface Registry {
  readonly registry: ModelRegistry;
  readonly runtime: ModelRuntime;
  readonly agentDir: string;
}

const made: string[] = [];
// Removed when the test process ends, whatever the tests did with them.
process.on("exit", () => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

export function tempAgentDir(prefix = "pi-auto-mode-review-"): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(root);
  const dir = join(root, "agent");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Pi's registry over `agentDir`, with `models.json` written first when given. */
export async function makeRegistry(agentDir: string, modelsJson?: unknown): Promise<Registry> {
  if (modelsJson !== undefined) writeFileSync(join(agentDir, "models.json"), JSON.stringify(modelsJson));
  const runtime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: false,
    refreshOnCreate: false,
  });
  return { registry: new ModelRegistry(runtime), runtime, agentDir };
}

/** A registry with one faux provider ("judge" by default) registered. */
export async function fauxRegistry(opts: { provider?: string; models?: FauxModelDefinition[]; tokensPerSecond?: number } = {}) {
  const r = await makeRegistry(tempAgentDir());
  const faux = fauxProvider({
    provider: opts.provider ?? "judge",
    models: opts.models ?? [{ id: "judge-1" }, { id: "thinker", reasoning: true }],
    ...(opts.tokensPerSecond ? { tokensPerSecond: opts.tokensPerSecond } : {}),
  });
  r.runtime.registerNativeProvider(faux.provider);
  return { ...r, faux };
}

export const JUDGE: ReviewerId = { provider: "judge", model: "judge-1", thinking: "off" };

export function request(tool: string, input: unknown, cwd = "/work/project", home = "/home/user"): CanonicalRequest {
  const r = buildRequest(tool, input, cwd, home);
  if (!r.ok) throw new Error(r.reason);
  return r.request;
}

export function action(tool: string, input: unknown, extra: Partial<ActionForReview> = {}): ActionForReview {
  const req = request(tool, input);
  return {
    canonical: req.canonical,
    tool: req.tool,
    input: req.input,
    paths: req.paths,
    gateReason: "destructive",
    gateNote: "needs review",
    toolCallId: "call-current",
    parentToolCallId: undefined,
    ...extra,
  };
}

/** The text of the user message of a reviewer request, as the provider received it. */
export function userText(context: { messages: readonly { role: string; content: unknown }[] }): string {
  const m = context.messages.find((x) => x.role === "user");
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content);
}

/**
 * For a test file that reviews over real HTTP: a loopback OpenAI chat-completions server, and Pi's
 * registry with it registered through models.json, for the whole file.
 */
export function useLoopbackRegistry(): { lb: Loopback; reg: Registry } {
  const env = {} as { lb: Loopback; reg: Registry };
  before(async () => {
    env.lb = await startLoopback();
    env.reg = await makeRegistry(tempAgentDir(), loopbackModels(env.lb.baseUrl));
  });
  after(async () => {
    await env.lb.close();
  });
  return env;
}

/** For tests of stored entries: every user message was typed by the user as Pi stored it (no expansion, no extension). */
export const storedAsTyped: UserProvenanceOf = (message) => {
  const content = (message as { content?: unknown }).content;
  const typed =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content.map((c: { text?: unknown }) => (typeof c.text === "string" ? c.text : "")).join("")
        : "";
  return { by: "user", typed };
};
