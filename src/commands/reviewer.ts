// `/perm-auto-model provider/model [thinking]`: choose the reviewer model. The model must exist
// in Pi's model registry, the thinking level must be one it supports, and its provider must have
// credentials; then model and level are committed as one durable update (P12) and this runtime
// is set to auto. The session's own model and thinking level are never touched: the reviewer is
// called with its own model and level, through the registry.

import { getSupportedThinkingLevels, type Api, type ClassifierApi, type ClassifierModel, type Model } from "@earendil-works/pi-ai";
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { engineOf, isThinkingLevel, type ReviewerId, type ThinkingLevel } from "../review/types.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import { mayLoosen } from "./authority.ts";
import { commitMessage, setMode, type CommandDeps } from "./perm.ts";

export const USAGE =
  "Usage: /perm-auto-model provider/model [thinking|classifier] — e.g. /perm-auto-model anthropic/claude-haiku-4-5 low, or a classifier model: /perm-auto-model typesafe/jev-latest";

/** The part of Pi's ModelRegistry the command needs. */
export interface ReviewerCatalog {
  find(provider: string, modelId: string): Model<Api> | undefined;
  getAll(): Model<Api>[];
  getProviderAuth(provider: string): Promise<unknown>;
  /** Classifier models (the classifier engine): Pi 1.6's registry has both. */
  findOfType?(type: "classifier", provider: string, modelId: string): ClassifierModel<ClassifierApi> | undefined;
  getModelsOfType?(type: "classifier", provider?: string): readonly ClassifierModel<ClassifierApi>[];
}

/** The word that picks the classifier engine where a model id is both (a llama.cpp router lists chat models as classifiers too). */
export const CLASSIFIER_WORD = "classifier";

/** How a reviewer is named to the user: the model, and the engine or the thinking level. */
export function reviewerName(r: ReviewerId): string {
  return `${r.provider}/${r.model} (${engineOf(r) === "classifier" ? "classifier engine" : `thinking ${r.thinking}`})`;
}

/** Models whose provider has credentials, asked per provider at request time (as a review would). */
export async function modelsWithAuth(catalog: ReviewerCatalog): Promise<Model<Api>[]> {
  const all = catalog.getAll();
  const providers = [...new Set(all.map((m) => m.provider))];
  const authed = new Set<string>();
  await Promise.all(
    providers.map(async (p) => {
      try {
        if ((await catalog.getProviderAuth(p)) !== undefined) authed.add(p);
      } catch {
        // A provider whose auth cannot even be checked is not offered.
      }
    }),
  );
  return all.filter((m) => authed.has(m.provider));
}

export type ParsedReviewerArgs =
  | { readonly ok: true; readonly provider: string; readonly model: string; readonly thinking: string | undefined }
  | { readonly ok: false; readonly message: string };

/** "provider/model [thinking]": split at the first "/", because model ids may contain "/". */
export function parseReviewerArgs(args: string): ParsedReviewerArgs {
  const words = args
    .trim()
    .split(/\s+/)
    .filter((w) => w !== "");
  if (words.length === 0) return { ok: false, message: USAGE };
  if (words.length > 2) return { ok: false, message: `Too many arguments. ${USAGE}` };
  const ref = words[0]!;
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) return { ok: false, message: `"${ref}" is not provider/model. ${USAGE}` };
  return { ok: true, provider: ref.slice(0, slash), model: ref.slice(slash + 1), thinking: words[1] };
}

export type ValidatedReviewer = { readonly ok: true; readonly reviewer: ReviewerId } | { readonly ok: false; readonly message: string };

/** The level used when none is given: off when the model allows it (cheapest and fastest). */
export function defaultThinking(levels: readonly string[]): ThinkingLevel {
  const first = levels.includes("off") ? "off" : levels[0];
  return isThinkingLevel(first) ? first : "off";
}

export async function validateReviewer(catalog: ReviewerCatalog, provider: string, modelId: string, thinking: string | undefined): Promise<ValidatedReviewer> {
  const model = catalog.find(provider, modelId);
  const classifier = catalog.findOfType?.("classifier", provider, modelId);
  // The classifier engine: a model Pi lists only as a classifier, or any classifier asked for by name.
  if (thinking === CLASSIFIER_WORD || (!model && classifier)) {
    if (!classifier) return { ok: false, message: `Pi knows no classifier model ${provider}/${modelId}.` };
    if (thinking !== undefined && thinking !== CLASSIFIER_WORD && thinking !== "off")
      return { ok: false, message: `${provider}/${modelId} is a classifier model: it has no thinking level (got "${thinking}").` };
    if ((await catalog.getProviderAuth(provider)) === undefined)
      return { ok: false, message: `Provider ${provider} has no credentials configured in Pi (use /login, or set its API key), so it cannot review.` };
    return { ok: true, reviewer: { provider, model: modelId, thinking: "off", engine: "classifier" } };
  }
  if (!model) {
    const known = catalog
      .getAll()
      .filter((m) => m.provider === provider)
      .map((m) => `${m.provider}/${m.id}`)
      .slice(0, 8);
    return { ok: false, message: `Pi knows no model ${provider}/${modelId}.${known.length ? ` Models of ${provider}: ${known.join(", ")}.` : ""}` };
  }
  const levels: readonly string[] = getSupportedThinkingLevels(model);
  const level = thinking ?? defaultThinking(levels);
  if (!isThinkingLevel(level) || !levels.includes(level))
    return { ok: false, message: `${provider}/${modelId} does not support thinking level "${level}" (supported: ${levels.join(", ")}).` };
  if ((await catalog.getProviderAuth(provider)) === undefined)
    return { ok: false, message: `Provider ${provider} has no credentials configured in Pi (use /login, or set its API key), so it cannot review.` };
  return { ok: true, reviewer: { provider, model: modelId, thinking: level } };
}

/** What a saved reviewer means: which model, and that every Pi of this user now uses it. */
export function reviewerSavedText(reviewer: ReviewerId | undefined, location: string): string {
  const which = reviewer ? reviewerName(reviewer) : "none";
  return `Reviewer saved: ${which}. This setting is global: every Pi session of this user uses it, those already running included, until it is changed (stored in ${location}). This runtime is now in auto mode`;
}

export interface ReviewerCommandDeps extends CommandDeps {
  readonly runtime: RuntimeState;
  /** Abort pending reviews: their verdicts would be bound to the old reviewer. */
  readonly onReviewerChange: (reason: string) => void;
}

function say(ctx: ExtensionCommandContext, text: string, level: "info" | "warning" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

async function pick(ctx: ExtensionCommandContext): Promise<{ provider: string; model: string; thinking: string } | undefined> {
  const models = await modelsWithAuth(ctx.modelRegistry);
  let classifiers: readonly { provider: string; id: string }[] = [];
  try {
    classifiers = await ctx.modelRegistry.getAvailableOfType("classifier");
  } catch {
    // No classifier is offered when their credentials cannot even be checked.
  }
  if (models.length === 0 && classifiers.length === 0) {
    say(ctx, "No model has credentials configured in Pi; use /login first.", "error");
    return undefined;
  }
  const refs = models.map((m) => `${m.provider}/${m.id}`);
  const classifierRefs = classifiers.map((m) => `${m.provider}/${m.id} (classifier)`);
  const ref = await ctx.ui.select("Reviewer model (judges calls auto mode cannot decide)", [...refs, ...classifierRefs]);
  if (!ref) return undefined;
  const c = classifierRefs.indexOf(ref);
  if (c >= 0) return { provider: classifiers[c]!.provider, model: classifiers[c]!.id, thinking: CLASSIFIER_WORD };
  const model = models[refs.indexOf(ref)]!;
  const levels = getSupportedThinkingLevels(model);
  const thinking = levels.length === 1 ? levels[0] : await ctx.ui.select(`Thinking level for ${ref}`, [...levels]);
  return thinking ? { provider: model.provider, model: model.id, thinking } : undefined;
}

export function registerReviewerCommand(pi: ExtensionAPI, deps: ReviewerCommandDeps): void {
  let catalog: ReviewerCatalog | undefined;
  pi.on("session_start", (_e, ctx) => {
    catalog = ctx.modelRegistry;
  });

  pi.registerCommand("perm-auto-model", {
    description: "Choose the reviewer model for auto mode: /perm-auto-model provider/model [thinking]",
    getArgumentCompletions: (prefix) => {
      if (!catalog) return null;
      const [ref, level] = prefix.trimStart().split(/\s+/, 2);
      if (level === undefined) {
        return [...catalog.getAll(), ...(catalog.getModelsOfType?.("classifier") ?? [])]
          .map((m) => `${m.provider}/${m.id}`)
          .filter((r, i, all) => all.indexOf(r) === i)
          .filter((r) => r.startsWith(ref ?? ""))
          .slice(0, 50)
          .map((r) => ({ value: r, label: r }));
      }
      const parsed = parseReviewerArgs(ref ?? "");
      const model = parsed.ok ? catalog.find(parsed.provider, parsed.model) : undefined;
      const classifier = parsed.ok ? catalog.findOfType?.("classifier", parsed.provider, parsed.model) : undefined;
      const words = [...(model ? getSupportedThinkingLevels(model) : []), ...(classifier ? [CLASSIFIER_WORD] : [])];
      return words.length > 0 ? words.filter((l) => l.startsWith(level)).map((l) => ({ value: `${ref} ${l}`, label: l })) : null;
    },
    handler: async (args, ctx) => {
      let wanted: { provider: string; model: string; thinking: string | undefined } | undefined;
      if (args.trim() === "" && !ctx.hasUI) {
        const r = await deps.runtime.global.read();
        const current = r.kind === "fault" ? "unknown (global state is damaged)" : r.snapshot.reviewer ? reviewerName(r.snapshot.reviewer) : "none";
        say(ctx, `${USAGE}\nCurrent reviewer: ${current}.`);
        return;
      }
      // Any reviewer or engine change decides what is allowed from now on, for every Pi of this user.
      const command = `/perm-auto-model${args.trim() === "" ? "" : ` ${args.trim()}`}`;
      if (!(await mayLoosen(ctx, deps.origin(), command, "chooses the model that allows what needs review, for every Pi of this user", say))) return;
      if (args.trim() === "") {
        wanted = await pick(ctx);
        if (!wanted) return;
      } else {
        const parsed = parseReviewerArgs(args);
        if (!parsed.ok) {
          say(ctx, parsed.message, "error");
          return;
        }
        wanted = parsed;
      }
      const valid = await validateReviewer(ctx.modelRegistry, wanted.provider, wanted.model, wanted.thinking);
      if (!valid.ok) {
        say(ctx, `Reviewer not changed: ${valid.message}`, "error");
        return;
      }
      const result = await deps.runtime.global.setReviewer(valid.reviewer);
      deps.onReviewerChange("the reviewer model changed");
      const m = commitMessage(result, (s) => reviewerSavedText(s.reviewer, deps.runtime.global.location), deps.runtime.global.location);
      if (result.kind !== "committed") {
        say(ctx, m.text, m.level);
        deps.refresh(ctx);
        return;
      }
      // setMode announces the mode; the confirmation goes last, because the TUI shows one status
      // line at a time and the next one replaces it: said first, it was gone at once.
      setMode(pi, deps, ctx, "auto");
      say(ctx, m.text, m.level);
    },
  });
}
