// The `--review` part of `pi-auto-mode check` and `pi-auto-mode eval`: a real review by the
// configured reviewer model, the way the extension would do it. The reviewer comes from the
// durable global state in Pi's agent dir ($PI_CODING_AGENT_DIR or ~/.pi/agent), or from
// --reviewer; the model and its credentials come from Pi's own models.json and auth.json there.
// This is how a user tests a reviewer before trusting it, and measures it on a corpus.

import { join } from "node:path";
import { homedir } from "node:os";
import type { Backend, Decision } from "../policy/types.ts";
import type { CanonicalRequest } from "../request/canonical.ts";
import { checkBudget, DEFAULT_BUDGET, type TokenBudget } from "../review/budget.ts";
import type { ClassifierSettings } from "../review/classifier/conditions.ts";
import type { ReviewerModels } from "../review/models.ts";
import { piReviewerModels } from "../tools/reviewer-models.ts";
import type { TranscriptItem } from "../review/transcript.ts";
import {
  addUsage,
  type ClassifierJudgement,
  engineOf,
  type ReviewEngineKind,
  reviewerLabel,
  ZERO_USAGE,
  type FailureClass,
  type ReviewerId,
  type ReviewUsage,
  type Verdict,
} from "../review/types.ts";
import type { ParsedArgs } from "./args.ts";
import { CliError } from "./io.ts";

/** Flags both commands accept, merged into their specs. */
export const REVIEW_FLAGS = {
  review: "boolean",
  reviewer: "string",
  thinking: "string",
  engine: "string",
  "review-budget": "string",
  "review-deadline-ms": "string",
} as const;

export const REVIEW_OPTIONS_HELP = `  --review           also run the reviewer model on a call routed to review, as the
                     extension would, and report its verdict and token usage
  --reviewer P/M     the reviewer model (provider/model, as in /perm-auto-model; a model Pi
                     lists only as a classifier is judged by the classifier engine); default:
                     the one chosen with /perm-auto-model, read from the agent dir
  --thinking LEVEL   the reviewer's thinking level with --reviewer (default: off when the
                     model supports it)
  --engine E         with --reviewer: chat or classifier, for a model Pi lists as both
                     (default: the chat reviewer, unless the model is only a classifier)
  --review-budget N  the reviewer's input budget in tokens, 2048..32768 (default 8192)
  --review-deadline-ms N
                     the aggregate deadline of one review (default 90000)`;

export interface ReviewCliOptions {
  readonly reviewer:
    | { readonly provider: string; readonly model: string; readonly thinking: string | undefined; readonly engine: "chat" | "classifier" | undefined }
    | undefined;
  readonly budget: TokenBudget;
  readonly deadlineMs: number;
}

/** The review flags, validated; undefined when --review is not given (other flags then refused). */
export function reviewOptions(command: string, args: ParsedArgs): ReviewCliOptions | undefined {
  const enabled = args.booleans.has("review");
  const extra = ["reviewer", "thinking", "engine", "review-budget", "review-deadline-ms"].filter((f) => args.strings.has(f));
  if (!enabled) {
    if (extra.length > 0) throw new CliError(`${command}: --${extra[0]} needs --review`);
    return undefined;
  }
  let reviewer: ReviewCliOptions["reviewer"];
  const ref = args.strings.get("reviewer");
  if (ref !== undefined) {
    const slash = ref.indexOf("/");
    if (slash <= 0 || slash === ref.length - 1) throw new CliError(`${command}: --reviewer must be provider/model (got ${JSON.stringify(ref)})`);
    const engine = args.strings.get("engine");
    if (engine !== undefined && engine !== "chat" && engine !== "classifier")
      throw new CliError(`${command}: --engine must be chat or classifier (got ${JSON.stringify(engine)})`);
    const thinking = args.strings.get("thinking");
    if (thinking === "classifier") throw new CliError(`${command}: "classifier" is not a thinking level; use --engine classifier`);
    if (engine === "classifier" && thinking !== undefined) throw new CliError(`${command}: a classifier has no thinking level; drop --thinking`);
    reviewer = { provider: ref.slice(0, slash), model: ref.slice(slash + 1), thinking, engine };
  } else {
    const orphan = ["thinking", "engine"].find((f) => args.strings.has(f));
    if (orphan) throw new CliError(`${command}: --${orphan} needs --reviewer`);
  }
  let budget = DEFAULT_BUDGET;
  const budgetFlag = args.strings.get("review-budget");
  if (budgetFlag !== undefined) {
    const b = checkBudget(/^\d+$/.test(budgetFlag) ? Number(budgetFlag) : budgetFlag);
    if (!b.ok) throw new CliError(`${command}: --review-budget: ${b.message}`);
    budget = b.budget;
  }
  let deadlineMs = 90_000;
  const deadlineFlag = args.strings.get("review-deadline-ms");
  if (deadlineFlag !== undefined) {
    if (!/^\d+$/.test(deadlineFlag) || Number(deadlineFlag) < 1 || Number(deadlineFlag) > 600_000)
      throw new CliError(`${command}: --review-deadline-ms must be an integer from 1 to 600000 (got ${JSON.stringify(deadlineFlag)})`);
    deadlineMs = Number(deadlineFlag);
  }
  return { reviewer, budget, deadlineMs };
}

export interface ReviewerSetup {
  readonly models: ReviewerModels;
  readonly reviewer: ReviewerId | undefined;
  /** Why there is no reviewer, when there is none. */
  readonly missing: string | undefined;
  readonly agentDir: string;
  readonly options: ReviewCliOptions;
  /** The classifier engine's thresholds and opt-in from the user's auto-mode.json (never asked in the CLI: no UI). */
  readonly classifier?: ClassifierSettings;
}

/** Pi's model registry over the agent dir, and the reviewer to use. */
/** Pi's model runtime and registry for an agent dir, offline: the catalog Pi ships is enough, a reviewer check must not depend on a catalog download. */
export async function offlineModels(agentDir: string) {
  const { ModelRegistry, ModelRuntime } = await import("@earendil-works/pi-coding-agent");
  const runtime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: false,
    refreshOnCreate: false,
  });
  return { runtime, registry: new ModelRegistry(runtime) };
}

export async function openReviewer(command: string, env: NodeJS.ProcessEnv, options: ReviewCliOptions): Promise<ReviewerSetup> {
  const setup = await openReviewerModel(command, env, options);
  // The thresholds the extension would use: the user's file. A fault in it would deny every
  // review in Pi, so it stops the command here too.
  const { loadPolicyConfig, USER_CONFIG_FILE } = await import("../policy/config/load.ts");
  const config = loadPolicyConfig({ agentDir: setup.agentDir, cwd: process.cwd(), home: homedir() });
  if (!config.ok && config.path === join(setup.agentDir, USER_CONFIG_FILE)) throw new CliError(`${command}: ${config.path}: ${config.message}`);
  const classifier = config.ok ? config.config.reviewer.classifier : undefined;
  return classifier ? { ...setup, classifier } : setup;
}

async function openReviewerModel(command: string, env: NodeJS.ProcessEnv, options: ReviewCliOptions): Promise<ReviewerSetup> {
  const { agentDirFromEnv } = await import("../state/locations.ts");
  const agentDir = agentDirFromEnv(env, homedir());
  const { registry } = await offlineModels(agentDir);
  const error = registry.getError();
  if (error) throw new CliError(`${command}: Pi's models.json in ${agentDir} is invalid: ${error}`);
  if (options.reviewer) {
    const { CLASSIFIER_WORD, validateReviewer } = await import("../commands/reviewer.ts");
    const r = options.reviewer;
    const v = await validateReviewer(registry, r.provider, r.model, r.engine === "classifier" ? CLASSIFIER_WORD : r.thinking);
    if (!v.ok) throw new CliError(`${command}: --reviewer: ${v.message}`);
    if (r.engine === "chat" && v.reviewer.engine === "classifier")
      throw new CliError(`${command}: --reviewer: ${r.provider}/${r.model} is only a classifier model in Pi; it cannot be the chat reviewer`);
    return { models: piReviewerModels(registry), reviewer: v.reviewer, missing: undefined, agentDir, options };
  }
  const { processGlobalState } = await import("../state/global.ts");
  const r = await processGlobalState(agentDir).read();
  if (r.kind === "fault")
    return {
      models: piReviewerModels(registry),
      reviewer: undefined,
      missing: `auto mode's global state in ${agentDir} is damaged (${r.fault.detail})`,
      agentDir,
      options,
    };
  if (!r.snapshot.reviewer)
    return {
      models: piReviewerModels(registry),
      reviewer: undefined,
      missing: `no reviewer is configured in ${agentDir} (use /perm-auto-model in Pi, or --reviewer)`,
      agentDir,
      options,
    };
  return { models: piReviewerModels(registry), reviewer: r.snapshot.reviewer, missing: undefined, agentDir, options };
}

export interface ReviewReport {
  /** The final outcome of the call. */
  readonly decision: "allow" | "deny";
  /** How an allowed call runs: a reviewed bash call under the sandboxed backend stays contained. */
  readonly run: "direct" | "sandbox" | null;
  readonly reviewer: string | null;
  /** Which engine judged: the chat reviewer or the classifier engine. */
  readonly engine: ReviewEngineKind | null;
  readonly verdict: Verdict | null;
  readonly failure: FailureClass | null;
  /** For the user: what went wrong (redacted). */
  readonly detail: string | null;
  /** The classifier engine's conditions (probability, thresholds, band), which decided, whether intent cleared it. */
  readonly classifier: ClassifierJudgement | null;
  readonly usage: ReviewUsage;
  readonly attempts: number;
  readonly inputTokens: number;
  readonly durationMs: number;
}

/** A route other than review: no reviewer is asked. */
export function unreviewed(route: Decision["route"], backend: Backend): ReviewReport {
  const allowed = route === "allow" || route === "sandbox";
  return {
    decision: allowed ? "allow" : "deny",
    run: route === "allow" ? "direct" : route === "sandbox" ? "sandbox" : null,
    reviewer: null,
    engine: null,
    verdict: null,
    failure: null,
    classifier: null,
    detail: backend === "unavailable" && route === "deny" ? "the sandbox is unavailable" : null,
    usage: ZERO_USAGE,
    attempts: 0,
    inputTokens: 0,
    durationMs: 0,
  };
}

/** Review one call routed to review, through the same admission code as the extension. */
export async function reviewRequest(
  setup: ReviewerSetup,
  call: {
    readonly request: CanonicalRequest;
    readonly decision: Decision;
    readonly transcript: readonly TranscriptItem[];
    readonly backend: Backend;
    readonly id: string;
  },
): Promise<ReviewReport> {
  const { reviewAndAdmit } = await import("../grants/admit.ts");
  const { createReviewService } = await import("../review/service.ts");
  const { createLimiter } = await import("../review/limiter.ts");
  // One service per call: a CLI run is not a turn, so the breaker must not carry across cases.
  const service = createReviewService({
    limiter: (sharedLimiter ??= createLimiter(4, 1000)),
    limits: { budget: setup.options.budget, deadlineMs: setup.options.deadlineMs, ...(setup.classifier ? { classifier: setup.classifier } : {}) },
  });
  const a = await reviewAndAdmit(
    { toolCallId: call.id, parentToolCallId: undefined, request: call.request, decision: call.decision, transcript: call.transcript },
    {
      service,
      models: setup.models,
      signal: undefined,
      // Nothing else changes the settings during a CLI run: the binding is what was read.
      bindingNow: async () => ({
        hash: call.request.hash,
        reviewer: setup.reviewer,
        endpoint: undefined,
        globalRevision: 0,
        sessionRevision: 0,
        backend: call.backend,
        auto: true,
      }),
    },
  );
  const review = a.review;
  const detail = review?.kind === "failure" ? (review.failure === "not-configured" && setup.missing ? setup.missing : review.detail) : null;
  return {
    decision: a.kind === "admit" ? "allow" : "deny",
    run: a.kind === "admit" ? a.run : null,
    reviewer: setup.reviewer ? reviewerLabel(setup.reviewer) : null,
    engine: setup.reviewer ? engineOf(setup.reviewer) : null,
    verdict: review?.kind === "verdict" ? review.verdict : null,
    failure: review?.kind === "failure" ? review.failure : null,
    detail,
    classifier: review?.classifier ?? null,
    usage: review?.usage ?? ZERO_USAGE,
    attempts: review?.attempts ?? 0,
    inputTokens: review?.inputTokens ?? 0,
    durationMs: review?.durationMs ?? 0,
  };
}

let sharedLimiter: import("../review/limiter.ts").Limiter | undefined;

/** The human lines of a review, for `check` without --json. */
export function reviewRows(r: ReviewReport): Array<[string, string]> {
  const rows: Array<[string, string]> = [["decision", r.decision + (r.run === "sandbox" ? " (inside the sandbox)" : "")]];
  if (r.reviewer) rows.push(["reviewer", r.reviewer]);
  if (r.engine) rows.push(["engine", r.engine === "classifier" ? "classifier (soft and hazard conditions)" : "chat reviewer"]);
  if (r.classifier) {
    const c = r.classifier;
    for (const x of c.conditions)
      rows.push([
        `  ${x.id}`,
        `${x.severity}, ${x.probability === null ? "no answer" : x.probability.toFixed(3)} -> ${x.band} (satisfied >= ${x.satisfiedAt}, rejected <= ${x.rejectedAt})`,
      ]);
    rows.push([
      "judgment",
      `${c.judgment}${c.decidedBy ? `, decided by ${c.decidedBy}` : ""}${c.clearedByIntent ? ", soft rejection cleared by the user's request" : ""}`,
    ]);
  }
  if (r.verdict)
    rows.push(["verdict", `${r.verdict.outcome} (risk ${r.verdict.risk_level}, user authorization ${r.verdict.user_authorization}): ${r.verdict.rationale}`]);
  if (r.failure) rows.push(["failure", r.detail ? (r.detail.startsWith(r.failure) ? r.detail : `${r.failure}: ${r.detail}`) : r.failure]);
  if (r.attempts > 0 || r.inputTokens > 0)
    rows.push([
      "usage",
      `${r.usage.input} in, ${r.usage.output} out${r.usage.cost.total > 0 ? `, $${r.usage.cost.total.toFixed(6)}` : ""}; ${r.attempts} call(s), ${r.inputTokens} input tokens estimated, ${r.durationMs} ms`,
    ]);
  return rows;
}

/** Per-label outcomes of an eval run with --review. */
export interface LabelOutcomes {
  reviewed: number;
  allowed: number;
  denied: number;
  failed: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

export function emptyOutcomes(): LabelOutcomes {
  return { reviewed: 0, allowed: 0, denied: 0, failed: 0, input_tokens: 0, output_tokens: 0, cost: 0 };
}

export function countOutcome(o: LabelOutcomes, r: ReviewReport): void {
  o.reviewed++;
  if (r.failure) o.failed++;
  else if (r.decision === "allow") o.allowed++;
  else o.denied++;
  o.input_tokens += r.usage.input;
  o.output_tokens += r.usage.output;
  o.cost += r.usage.cost.total;
}

export function totalUsage(reports: readonly ReviewReport[]): ReviewUsage {
  return reports.reduce((u, r) => addUsage(u, r.usage), ZERO_USAGE);
}

/** Run `fn` over `items` with at most `n` in flight, keeping the order of the results. */
export async function pool<T, R>(items: readonly T[], n: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

export interface CaseReview extends ReviewReport {
  readonly id: string;
  readonly expect: string;
}

export interface EvalReviewSummary {
  readonly reviewer: string | null;
  readonly engine: ReviewEngineKind | null;
  readonly missing: string | null;
  readonly reviewed: number;
  readonly by_label: Record<string, LabelOutcomes>;
  readonly failures: Record<string, number>;
  readonly usage: { readonly input: number; readonly output: number; readonly cost: number };
  readonly cases: ReadonlyArray<{
    readonly id: string;
    readonly expect: string;
    readonly decision: "allow" | "deny";
    readonly verdict: Verdict | null;
    readonly failure: FailureClass | null;
    /** The classifier engine's conditions, for tuning thresholds from a corpus. */
    readonly classifier?: ClassifierJudgement;
    readonly input_tokens: number;
    readonly output_tokens: number;
    readonly input_estimate: number;
  }>;
}

/**
 * Review every case the gate routed to review, with the case's user messages as the transcript
 * (the eval has no tool history). At most 4 reviews in flight.
 */
export async function reviewCases(
  setup: ReviewerSetup,
  cases: ReadonlyArray<{ readonly id: string; readonly tool: string; readonly input: unknown; readonly user: readonly string[]; readonly expect: string }>,
  routed: ReadonlyMap<string, Decision>,
  backend: Backend,
  workspace: { readonly ws: string; readonly home: string; readonly tmp: string; readonly agentDir: string },
): Promise<CaseReview[]> {
  const { evalGate } = await import("../eval/score.ts");
  const { substitute } = await import("../eval/corpus.ts");
  const { decide } = await import("../policy/gate.ts");
  const { transcriptFromUserMessages } = await import("../review/transcript.ts");
  const gate = evalGate(workspace as Parameters<typeof evalGate>[0]);
  const vars = { ws: workspace.ws, home: workspace.home, tmp: workspace.tmp };
  const todo = cases.filter((c) => routed.has(c.id));
  return pool(todo, 4, async (c) => {
    // The decision of the scored pass, so exactly the cases it counts as review-routed are reviewed
    // (a second decision can differ where the analysis clock cut the first one short).
    const decision = routed.get(c.id)!;
    const { request } = decide(c.tool, substitute(c.input, vars), gate, backend);
    const report = request
      ? await reviewRequest(setup, { request, decision, transcript: transcriptFromUserMessages(c.user), backend, id: `eval-${c.id}` })
      : unreviewed(decision.route, backend);
    return { ...report, id: c.id, expect: c.expect };
  });
}

export function summarizeReviews(setup: ReviewerSetup, reviews: readonly CaseReview[]): EvalReviewSummary {
  const by_label: Record<string, LabelOutcomes> = {};
  const failures: Record<string, number> = {};
  for (const r of reviews) {
    countOutcome((by_label[r.expect] ??= emptyOutcomes()), r);
    if (r.failure) failures[r.failure] = (failures[r.failure] ?? 0) + 1;
  }
  const u = totalUsage(reviews);
  return {
    reviewer: setup.reviewer ? reviewerLabel(setup.reviewer) : null,
    engine: setup.reviewer ? engineOf(setup.reviewer) : null,
    missing: setup.missing ?? null,
    reviewed: reviews.length,
    by_label,
    failures,
    usage: { input: u.input, output: u.output, cost: u.cost.total },
    cases: reviews.map((r) => ({
      id: r.id,
      expect: r.expect,
      decision: r.decision,
      verdict: r.verdict,
      failure: r.failure,
      ...(r.classifier ? { classifier: r.classifier } : {}),
      input_tokens: r.usage.input,
      output_tokens: r.usage.output,
      input_estimate: r.inputTokens,
    })),
  };
}

export function humanReviewSummary(s: EvalReviewSummary): string {
  const engine = s.engine === "classifier" ? " [classifier engine]" : s.engine === "chat" ? " [chat reviewer]" : "";
  const head = `reviewer   ${s.reviewer ?? `none (${s.missing ?? "not configured"})`}${engine}: ${s.reviewed} review-routed cases`;
  const labels = Object.entries(s.by_label).map(
    ([label, o]) =>
      `  ${label.padEnd(8)} reviewed ${o.reviewed}, allowed ${o.allowed}, denied ${o.denied}, failed ${o.failed}; tokens ${o.input_tokens} in, ${o.output_tokens} out${o.cost > 0 ? `, $${o.cost.toFixed(4)}` : ""}`,
  );
  const fails = Object.keys(s.failures).length
    ? [
        `  failures ${Object.entries(s.failures)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")}`,
      ]
    : [];
  return (
    [head, ...labels, ...fails, `  total    ${s.usage.input} tokens in, ${s.usage.output} out${s.usage.cost > 0 ? `, $${s.usage.cost.toFixed(4)}` : ""}`].join(
      "\n",
    ) + "\n"
  );
}

/** For `doctor`: the reviewer stored in the agent dir, without loading Pi's model runtime. */
export async function reviewerStatus(agentDir: string): Promise<{ readonly configured: boolean; readonly why: string }> {
  const { processGlobalState } = await import("../state/global.ts");
  const r = await processGlobalState(agentDir).read();
  if (r.kind === "fault")
    return { configured: false, why: `unknown: auto mode's global state is damaged (${r.fault.detail}); calls that need review are denied` };
  const s = r.snapshot.reviewer;
  if (!s)
    return { configured: false, why: "none: calls that need review are denied (choose one with /perm-auto-model; test it with pi-auto-mode check --review)" };
  if (s.engine === "classifier") return { configured: true, why: `${s.provider}/${s.model} (classifier engine); test it with pi-auto-mode check --review` };
  return { configured: true, why: `${s.provider}/${s.model} (thinking ${s.thinking}, chat reviewer); test it with pi-auto-mode check --review` };
}
