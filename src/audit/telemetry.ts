// Content-free telemetry events on Pi's event bus (`pi.events`): a typed, versioned contract (issue 15).
//
// Every event carries only numbers and closed enums, built field by field from the internal
// record (never a spread of it): no prompt or response text, paths, commands, hosts, provider
// errors, headers or credentials. A tool name is kept only when it is a plain identifier.
// emitSafely() catches whatever the bus or a listener throws, so telemetry never changes a decision.
// Pi-free.

import type { Approver, CallRecord, Outcome } from "../grants/admit-call.ts";
import type { RunResult } from "../sandbox/controller.ts";
import type { EffectReport } from "../sandbox/effects/settle.ts";
import type { ReasonCode, Route } from "../policy/types.ts";
import type { EffectiveMode } from "../state/effective.ts";
import type { AttemptReport } from "../review/engine.ts";
import type { FailureClass, ReviewUsage, RiskLevel, Verdict } from "../review/types.ts";

/** The version of every event's shape; bumped on any change a listener could notice. */
export const TELEMETRY_VERSION = 1;

export const TELEMETRY_EVENTS = ["auto-mode:decision", "auto-mode:review_attempt", "auto-mode:review_complete", "auto-mode:sandbox_run"] as const;
export type TelemetryEventName = (typeof TELEMETRY_EVENTS)[number];

/** One gate decision. `durationMs`: from the call's arrival at the gate to its decision (a review included). */
export interface DecisionEvent {
  readonly v: typeof TELEMETRY_VERSION;
  /** The tool's name when it is a plain identifier, else "other". */
  readonly tool: string;
  readonly route: Route;
  readonly reason: ReasonCode | "other";
  readonly outcome: Outcome;
  readonly mode: EffectiveMode | "other";
  readonly approvedBy: Approver | "none";
  /** Asked from inside another tool's call. */
  readonly nested: boolean;
  readonly durationMs: number;
}

/** One reviewer model call of a review, sent as it ends (the engine's onAttempt). */
export interface ReviewAttemptEvent {
  readonly v: typeof TELEMETRY_VERSION;
  readonly attempt: number;
  readonly status: "verdict" | "retry" | "failure";
  readonly errorClass: FailureClass | "none";
  readonly durationMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** One finished review (of a call, or of a staged command's held effects). */
export interface ReviewCompleteEvent {
  readonly v: typeof TELEMETRY_VERSION;
  readonly status: "admitted" | "denied";
  readonly verdict: "allow" | "deny" | "none";
  readonly risk: RiskLevel | "none";
  readonly errorClass: FailureClass | "none";
  readonly run: "direct" | "sandbox" | "none";
  /** The binding changed between the review and admission, which denied the call (P8). */
  readonly bindingChanged: boolean;
  readonly attempts: number;
  readonly durationMs: number;
  /** The size of the evidence put to the reviewer, in estimated tokens. */
  readonly evidenceTokens: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly totalTokens: number;
  readonly costUsd: number;
}

export type SandboxExitClass = "exit-zero" | "exit-nonzero" | "stopped" | "refused" | "not-started" | "ambiguous" | "aborted" | "timeout" | "other";

/** One sandboxed bash run. */
export interface SandboxRunEvent {
  readonly v: typeof TELEMETRY_VERSION;
  readonly durationMs: number;
  readonly exit: SandboxExitClass;
  /** What became of a staged run's changes ("unstaged": the run had no effect report). */
  readonly effects: "unstaged" | "nothing" | "applied" | "discarded";
  readonly discardedWhy: "held" | "unreadable" | "forbidden" | "stopped" | "failed" | "deadline" | "none";
  readonly created: number;
  readonly modified: number;
  readonly deleted: number;
  readonly gitChanged: number;
  readonly applied: number;
  readonly conflicts: number;
  readonly heldItems: number;
  readonly destinationsAllowed: number;
  readonly destinationsRefused: number;
  readonly connectionsRefused: number;
}

export interface TelemetryEventMap {
  readonly "auto-mode:decision": DecisionEvent;
  readonly "auto-mode:review_attempt": ReviewAttemptEvent;
  readonly "auto-mode:review_complete": ReviewCompleteEvent;
  readonly "auto-mode:sandbox_run": SandboxRunEvent;
}

export type TelemetryEvent = TelemetryEventMap[TelemetryEventName];

// Closed vocabularies, checked at run time too: a value outside them becomes "other".
const ROUTES: Readonly<Record<Route, true>> = { allow: true, sandbox: true, review: true, deny: true };
const OUTCOMES: Readonly<Record<Outcome, true>> = { allowed: true, sandboxed: true, denied: true };
const MODES: Readonly<Record<EffectiveMode, true>> = {
  off: true,
  unrestricted: true,
  "auto-config-fault": true,
  "auto-sandbox-unavailable": true,
  "auto-review-only": true,
  auto: true,
};
const REASONS: Readonly<Record<ReasonCode, true>> = {
  "read-only": true,
  "workspace-write": true,
  "regenerable-cleanup": true,
  "git-local": true,
  "build-test": true,
  "gated-container": true,
  "user-allow-rule": true,
  sandboxed: true,
  "protected-path": true,
  "outside-writable-roots": true,
  "identity-secret": true,
  "secret-egress": true,
  persistence: true,
  destructive: true,
  "remote-code": true,
  "dynamic-command": true,
  privilege: true,
  "foreign-process": true,
  "force-push": true,
  "git-config": true,
  "git-hooks": true,
  "sandbox-escalation": true,
  "uncontained-shell": true,
  network: true,
  "inline-code": true,
  "unknown-command": true,
  "unknown-tool": true,
  "malformed-input": true,
  "shell-unparseable": true,
  "user-review-rule": true,
  "hard-deny": true,
  "self-protection": true,
  "untrusted-install": true,
  "user-deny-rule": true,
  "unsupported-input": true,
  "config-fault": true,
  "sandbox-unavailable": true,
  "no-reviewer": true,
  "gate-error": true,
  "held-effects": true,
};
const FAILURES: Readonly<Record<FailureClass, true>> = {
  "not-configured": true,
  "model-unavailable": true,
  auth: true,
  "over-budget": true,
  "rate-limited": true,
  connection: true,
  "provider-error": true,
  timeout: true,
  aborted: true,
  malformed: true,
  paused: true,
  busy: true,
  internal: true,
};
const RISKS: Readonly<Record<RiskLevel, true>> = { low: true, medium: true, high: true, critical: true };
const WHY = { held: true, unreadable: true, forbidden: true, stopped: true, failed: true, deadline: true } as const;

function oneOf<K extends string>(set: Readonly<Record<K, true>>, v: unknown): K | undefined {
  return typeof v === "string" && Object.hasOwn(set, v) ? (v as K) : undefined;
}

/** A finite, non-negative number (rounded to an integer unless `fraction`); anything else is 0. */
function num(v: unknown, fraction = false): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) return 0;
  return fraction ? v : Math.round(v);
}

function len(v: unknown): number {
  return Array.isArray(v) ? v.length : 0;
}

const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export function toolName(v: unknown): string {
  return typeof v === "string" && TOOL_NAME.test(v) ? v : "other";
}

export function decisionEvent(r: CallRecord, durationMs: number): DecisionEvent {
  return {
    v: TELEMETRY_VERSION,
    tool: toolName(r.tool),
    route: oneOf(ROUTES, r.route) ?? "deny",
    reason: oneOf(REASONS, r.reason) ?? "other",
    outcome: oneOf(OUTCOMES, r.outcome) ?? "denied",
    mode: oneOf(MODES, r.mode) ?? "other",
    approvedBy: r.approvedBy === "user" || r.approvedBy === "break-glass" ? r.approvedBy : "none",
    nested: typeof r.parentToolCallId === "string",
    durationMs: num(durationMs),
  };
}

/** One reviewer attempt, as the engine reports it (its onAttempt). */
export function reviewAttemptEvent(a: AttemptReport): ReviewAttemptEvent {
  return {
    v: TELEMETRY_VERSION,
    attempt: num(a.attempt),
    status: a.status === "verdict" || a.status === "retry" ? a.status : "failure",
    errorClass: oneOf(FAILURES, a.failure) ?? "none",
    durationMs: num(a.durationMs),
    inputTokens: num(a.inputTokens),
    outputTokens: num(a.outputTokens),
  };
}

/**
 * The fields of the review record (tools/review-call.ts ReviewRecord, the REVIEW_ENTRY_TYPE
 * entry's data) that the event is built from; the record itself fits this type.
 */
export interface ReviewFacts {
  readonly admitted: boolean;
  readonly run: "direct" | "sandbox" | null;
  readonly verdict: Pick<Verdict, "outcome" | "risk_level"> | null;
  readonly failure: FailureClass | null;
  readonly bindingChanged: string | null;
  readonly usage: ReviewUsage;
  readonly attempts: number;
  readonly inputTokens: number;
  readonly durationMs: number;
}

export function reviewCompleteEvent(r: ReviewFacts): ReviewCompleteEvent {
  const verdict = r.verdict?.outcome;
  const usage = r.usage;
  return {
    v: TELEMETRY_VERSION,
    status: r.admitted === true ? "admitted" : "denied",
    verdict: verdict === "allow" || verdict === "deny" ? verdict : "none",
    risk: oneOf(RISKS, r.verdict?.risk_level) ?? "none",
    errorClass: oneOf(FAILURES, r.failure) ?? "none",
    run: r.run === "direct" || r.run === "sandbox" ? r.run : "none",
    bindingChanged: typeof r.bindingChanged === "string",
    attempts: num(r.attempts),
    durationMs: num(r.durationMs),
    evidenceTokens: num(r.inputTokens),
    inputTokens: num(usage?.input),
    outputTokens: num(usage?.output),
    cacheReadTokens: num(usage?.cacheRead),
    cacheWriteTokens: num(usage?.cacheWrite),
    totalTokens: num(usage?.totalTokens),
    costUsd: num(usage?.cost?.total, true),
  };
}

function exitClass(r: RunResult): SandboxExitClass {
  switch (r.kind) {
    case "exited":
      return r.exitCode === 0 ? "exit-zero" : "exit-nonzero";
    case "stopped":
    case "refused":
    case "not-started":
    case "ambiguous":
    case "aborted":
    case "timeout":
      return r.kind;
    default:
      return "other";
  }
}

export function sandboxRunEvent(r: RunResult, durationMs: number): SandboxRunEvent {
  const effects: EffectReport | undefined = r.kind === "exited" ? r.effects : undefined;
  const judgement = effects && effects.outcome !== "nothing" ? effects.judgement : undefined;
  const counts = judgement?.counts;
  const applied = effects?.outcome === "applied" ? effects.result : undefined;
  const refused = r.network?.refused ?? [];
  let connectionsRefused = 0;
  for (const d of refused) connectionsRefused += num(d?.connections);
  return {
    v: TELEMETRY_VERSION,
    durationMs: num(durationMs),
    exit: exitClass(r),
    effects: effects?.outcome === "nothing" || effects?.outcome === "applied" || effects?.outcome === "discarded" ? effects.outcome : "unstaged",
    discardedWhy: effects?.outcome === "discarded" ? (oneOf(WHY, effects.why) ?? "none") : "none",
    created: num(counts?.created),
    modified: num(counts?.modified),
    deleted: num(counts?.deleted),
    gitChanged: num(counts?.gitChanged),
    applied: num(applied?.applied),
    conflicts: len(applied?.conflicts),
    heldItems: judgement && "held" in judgement ? len(judgement.held) : 0,
    destinationsAllowed: len(r.network?.allowed),
    destinationsRefused: len(refused),
    connectionsRefused,
  };
}

export type Emit = (channel: string, data: unknown) => void;

/**
 * Emits one event; whatever building it, the bus or a listener throws is swallowed, so a
 * listener never affects a decision. `event` may be a thunk so building it is guarded too.
 */
export function emitSafely<N extends TelemetryEventName>(emit: Emit, name: N, event: TelemetryEventMap[N] | (() => TelemetryEventMap[N])): void {
  try {
    emit(name, typeof event === "function" ? event() : event);
  } catch {
    // Telemetry is best effort: never let it reach the decision path.
  }
}
