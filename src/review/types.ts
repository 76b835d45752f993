// The reviewer's vocabulary. Closed unions: every consumer (gate, CLI, eval, audit entries)
// switches exhaustively, so a new failure class or outcome cannot slip through unhandled.

export const RISK_LEVELS = ["low", "medium", "high", "critical"] as const;
export const USER_AUTHORIZATIONS = ["unknown", "low", "medium", "high"] as const;
export const VERDICT_OUTCOMES = ["allow", "deny"] as const;
/** Pi's thinking levels (pi-ai's ModelThinkingLevel), kept here so the core does not import Pi. */
export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

export type RiskLevel = (typeof RISK_LEVELS)[number];
export type UserAuthorization = (typeof USER_AUTHORIZATIONS)[number];
export type VerdictOutcome = (typeof VERDICT_OUTCOMES)[number];
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];

/** The Codex-compatible verdict: exactly these four fields. */
export interface Verdict {
  readonly risk_level: RiskLevel;
  readonly user_authorization: UserAuthorization;
  readonly outcome: VerdictOutcome;
  readonly rationale: string;
}

/** The two judgment engines: a chat model's free verdict, or a classifier's answers to fixed conditions. */
export const REVIEW_ENGINES = ["chat", "classifier"] as const;
export type ReviewEngineKind = (typeof REVIEW_ENGINES)[number];

/** Which reviewer judged: the engine, the model and the thinking level, as the user configured them. */
export interface ReviewerId {
  readonly provider: string;
  readonly model: string;
  readonly thinking: ThinkingLevel;
  /** Absent: the chat reviewer. A classifier has no thinking level ("off"). */
  readonly engine?: "classifier";
}

export function engineOf(r: ReviewerId): ReviewEngineKind {
  return r.engine === "classifier" ? "classifier" : "chat";
}

/** The same reviewer: engine, model and level (P8 binds a verdict to all three). */
export function sameReviewer(a: ReviewerId | undefined, b: ReviewerId | undefined): boolean {
  if (!a || !b) return a === b;
  return a.provider === b.provider && a.model === b.model && a.thinking === b.thinking && engineOf(a) === engineOf(b);
}

export function reviewerLabel(r: ReviewerId): string {
  if (engineOf(r) === "classifier") return `${r.provider}/${r.model} (classifier)`;
  return `${r.provider}/${r.model}${r.thinking === "off" ? "" : ` (${r.thinking})`}`;
}

export function isThinkingLevel(v: unknown): v is ThinkingLevel {
  return typeof v === "string" && (THINKING_LEVELS as readonly string[]).includes(v);
}

/**
 * Why a review produced no usable verdict. Every class denies (P5); the text the model sees for
 * each is fixed (failure.ts) and never claims the action was judged risky.
 */
export type FailureClass =
  | "not-configured" // no reviewer model chosen
  | "model-unavailable" // the chosen model or level is not known to Pi's model registry
  | "auth" // no credentials, or the provider refused them
  | "over-budget" // the mandatory input does not fit the token budget: refused before calling
  | "rate-limited" // 429 after the allowed retries, or a Retry-After too long to wait
  | "connection" // the provider could not be reached, or the stream broke
  | "provider-error" // any other error answer from the provider
  | "timeout" // the aggregate deadline passed
  | "aborted" // Esc, session shutdown, or a mode or reviewer change
  | "malformed" // the answer was not exactly one verdict object, even after the format retry
  | "paused" // the per-turn breaker stopped automatic review
  | "busy" // too many reviews already waiting
  | "internal"; // a bug: something threw

/** Token usage in Pi's shape (pi-ai `Usage`), so it can be reported to Pi unchanged. */
export interface ReviewUsage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly totalTokens: number;
  readonly cost: {
    readonly input: number;
    readonly output: number;
    readonly cacheRead: number;
    readonly cacheWrite: number;
    readonly total: number;
  };
}

export const ZERO_USAGE: ReviewUsage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** Sum of two usages; tolerant of a provider that leaves fields out. */
export function addUsage(a: ReviewUsage, b: Partial<ReviewUsage> | undefined): ReviewUsage {
  if (!b) return a;
  const c = (b.cost ?? {}) as Partial<ReviewUsage["cost"]>;
  return {
    input: a.input + num(b.input),
    output: a.output + num(b.output),
    cacheRead: a.cacheRead + num(b.cacheRead),
    cacheWrite: a.cacheWrite + num(b.cacheWrite),
    totalTokens: a.totalTokens + num(b.totalTokens),
    cost: {
      input: a.cost.input + num(c.input),
      output: a.cost.output + num(c.output),
      cacheRead: a.cost.cacheRead + num(c.cacheRead),
      cacheWrite: a.cost.cacheWrite + num(c.cacheWrite),
      total: a.cost.total + num(c.total),
    },
  };
}

export type ConditionSeverity = "soft" | "hazard" | "intent";
export type ClassifierBand = "satisfied" | "uncertain" | "rejected";

/** One condition as the classifier engine judged it: what an audit keeps to tune thresholds from. */
export interface ConditionRecord {
  readonly id: string;
  readonly severity: ConditionSeverity;
  /** The probability that the condition holds; null when the answer was missing or malformed. */
  readonly probability: number | null;
  readonly satisfiedAt: number;
  readonly rejectedAt: number;
  readonly band: ClassifierBand | "missing";
}

/** The classifier engine's account of one review (absent for the chat engine). */
export interface ClassifierJudgement {
  readonly conditions: readonly ConditionRecord[];
  /** What the answers meant; `malformed` when they could not be used. */
  readonly judgment: "allow" | "deny" | "uncertain" | "malformed";
  /** The condition that decided; null when every condition held or nothing was decided. */
  readonly decidedBy: string | null;
  /** Soft rejections cleared by the user's own request. */
  readonly clearedByIntent: boolean;
  /**
   * For an uncertain judgment: "asked-allowed"/"asked-denied" after the user was asked once,
   * "not-asked" when no confirmation was possible (not opted in, no UI). "none" otherwise.
   */
  readonly confirmation: "none" | "not-asked" | "pending" | "asked-allowed" | "asked-denied";
  /** The hash of the conditions file the questions came from. */
  readonly conditionsSha256: string;
}

/** What one review produced: a verdict, or a failure class. Usage is reported either way. */
export type ReviewResult =
  | {
      readonly kind: "verdict";
      readonly verdict: Verdict;
      readonly reviewer: ReviewerId;
      readonly usage: ReviewUsage;
      readonly attempts: number;
      readonly inputTokens: number;
      readonly durationMs: number;
      /** The classifier engine's conditions, when it judged. */
      readonly classifier?: ClassifierJudgement;
    }
  | {
      readonly kind: "failure";
      readonly failure: FailureClass;
      /** For the user (CLI, audit entry): redacted and clipped. Never shown to the model. */
      readonly detail: string;
      readonly reviewer: ReviewerId | undefined;
      readonly usage: ReviewUsage;
      readonly attempts: number;
      readonly inputTokens: number;
      readonly durationMs: number;
      /** What the classifier answered, when it answered something unusable. */
      readonly classifier?: ClassifierJudgement;
    };

/** A verdict admits the call only when it allows and does not rate the risk critical. */
export function verdictAdmits(v: Verdict): boolean {
  return v.outcome === "allow" && v.risk_level !== "critical";
}
