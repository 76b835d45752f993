// The path of one tool call, from its input to what may run (docs/architecture.md §2), without Pi: the
// request is judged (policy), a review route or an escalation goes through the one review path,
// a call judged beside an unfinished one is held back, and what passes gets its execution
// ticket. The `tool_call` edge (tools/tool-call-gate.ts) only translates Pi's event to a
// GateCall and the outcome back; the CLI and tests can drive this directly.

import { homedir } from "node:os";
import { dirname } from "node:path";
import type { ConfigResult } from "../policy/config/load.ts";
import { concurrentDenial, decisionDenial, denial, denialBody, escalationDenial, escalationInvalidDenial, noReviewerDenial } from "../policy/denial.ts";
import { decide, prepareGate, type GateContext, type GateResult } from "../policy/gate.ts";
import type { JudgeContext, Judgement } from "../policy/judge.ts";
import type { RuleSubject } from "../policy/rules.ts";
import { guardedByInstall, installTrust } from "../policy/install-trust.ts";
import { type Backend, type Decision, decision, isSandboxed, type ReasonCode, type Route } from "../policy/types.ts";
import { rulesRunUnsandboxed } from "../policy/route.ts";
import { escalationAsk } from "../request/escalation-ask.ts";
import { StampBook } from "../request/stamps.ts";
import type { TokenBudget } from "../review/budget.ts";
import type { EngineLimits } from "../review/engine.ts";
import type { EffectiveMode } from "../state/effective.ts";
import { readEnabled } from "../state/global.ts";
import { selfPaths } from "../state/locations.ts";
import { TempSession } from "../state/temp-root.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import { shownAction } from "./action-view.ts";
import { targetSummary, type ReviewAdmission } from "./admit.ts";
import { callShape, type CallShape, type CallsInFlight } from "./concurrent-calls.ts";
import { overridableFailure, type OverridableReason, type Overrides } from "./overrides.ts";
import type { HostReason, TicketBook, WorkspaceAccess } from "./tickets.ts";
import type { RiskLevel } from "../review/types.ts";

/** One tool call as the gate sees it. */
export interface GateCall {
  readonly toolCallId: string;
  readonly parentToolCallId: string | undefined;
  readonly toolName: string;
  readonly input: unknown;
  readonly cwd: string;
}

/** What finally happened to the call: it ran (possibly contained) or it was stopped. */
export type Outcome = "allowed" | "sandboxed" | "denied";

/** Where an admitted call runs, or why it does not. */
export type GateOutcome =
  | { readonly kind: "run-here" }
  | { readonly kind: "run-sandboxed"; readonly workspace: WorkspaceAccess }
  | { readonly kind: "run-on-host-once" }
  | { readonly kind: "deny"; readonly text: string };

/** What the gate decided, for the audit entry (redacted there) and the status line. */
export interface CallRecord {
  readonly toolCallId: string;
  readonly parentToolCallId: string | undefined;
  readonly tool: string;
  readonly mode: EffectiveMode;
  readonly route: Route;
  readonly reason: ReasonCode;
  readonly outcome: Outcome;
  readonly hash: string | undefined;
  readonly message: string;
  /** Admitted on the user's one-shot approval of an earlier denial, or their breaking the glass, not by a reviewer (P14). */
  readonly approvedBy?: Approver;
}

/**
 * What the gate judged a call's paths with, by reference (nothing is computed for it): the audit
 * classifies the subject's paths off the decision path and never stores one.
 */
export interface JudgedCall {
  readonly subject: RuleSubject | undefined;
  readonly context: JudgeContext;
}

/** Who admitted a call in a reviewer's place. */
export type Approver = "user" | "break-glass";

/** A review the gate asks for: of a review route, or of an escalation out of the sandbox. */
export interface ReviewAsk {
  readonly request: NonNullable<GateResult["request"]>;
  readonly decision: Decision;
  /** The gate's decision for the call as its input is now (for the binding check). */
  readonly rejudge: () => GateResult;
  readonly limits?: Partial<EngineLimits>;
}

/** What the edge provides for this one call. */
export interface CallEnv {
  /** The reviewer for this call (it needs the call's transcript and model registry); without it review routes are denied. */
  readonly review?: (ask: ReviewAsk) => Promise<ReviewAdmission>;
  readonly record: (r: CallRecord, judged?: JudgedCall) => void;
  /** Auto mode is off (perhaps just turned off by another process). */
  readonly off?: () => void;
  /** The session the call belongs to: denials are remembered and grants used per session (P14). */
  readonly sessionId?: string;
  /** Tells the user something at this call (the global state changed since this runtime last looked). */
  readonly notify?: (text: string) => void;
}

export interface AdmitDeps {
  readonly runtime: RuntimeState;
  readonly agentDir: () => string;
  /** Where admitted bash calls are told where to run; without it no call runs sandboxed. */
  readonly tickets?: TicketBook;
  /** Admitted calls not finished yet: a judgement is not made stale by a call running beside it. */
  readonly inFlight?: CallsInFlight;
  /** Resolves when the sandbox backend is known (the probe has run); shell calls wait for it. */
  readonly ready?: () => Promise<unknown>;
  /**
   * The running copy of auto mode (its package's real path) and the environment Pi started with:
   * its files are protected like auto mode's state, and a copy the agent can write gates only
   * plain reads (policy/install-trust.ts).
   */
  readonly install?: { readonly root: string; readonly env: NodeJS.ProcessEnv };
  /** Denials a user may override and the one-shot grants their approvals create (P14). */
  readonly overrides?: Overrides;
  /** The asker runs a sandboxed outcome inside its own containment (the boundary broker): no ticket is needed. */
  readonly askerContains?: boolean;
  /** A break-glass allow was used: the turn's breaker starts closed again (P13, P14). */
  readonly resetBreaker?: () => void;
  /** This session's private temporary folders (state/temp-root.ts); its owner removes them at the session's end. */
  readonly temp?: TempSession;
}

/** Modes in which a `review` route goes to the reviewer (not off, unrestricted or at fault). */
const REVIEWING: ReadonlySet<EffectiveMode> = new Set(["auto", "auto-review-only", "auto-sandbox-unavailable"]);

/** Modes in which the gate judges calls; an escalation there needs its own review. */
const GATED: ReadonlySet<EffectiveMode> = new Set(["auto", "auto-review-only", "auto-sandbox-unavailable", "auto-config-fault"]);

/** Decisions that hold even in an unrestricted runtime: wiping disks, disabling the gate itself. */
const ALWAYS_DENIED = new Set(["hard-deny", "self-protection"]);

const NO_ESCALATION_REVIEWER =
  'this command asks to run outside the sandbox (sandbox_permissions "require_escalated"), which only a reviewer\'s approval allows, so it did not run; inside the sandbox, without sandbox_permissions, it may need no review.';

export function denialText(d: Decision, mode?: EffectiveMode): string {
  return decisionDenial(d, mode === "auto-config-fault");
}

export function createCallGate(deps: AdmitDeps): (call: GateCall, env: CallEnv) => Promise<GateOutcome> {
  const temp = deps.temp ?? new TempSession();
  return async (call, env) => {
    const runtime = deps.runtime;
    // Re-read at every gate (a stat when nothing changed): another process's commit applies now (P12).
    const global = await runtime.global.read();
    // Another process's /perm-enabled or /perm-auto-model changes what this session's calls get: say so, once.
    const changed = env.notify ? runtime.globalChange() : undefined;
    if (changed) env.notify?.(changed);
    if (!readEnabled(global)) {
      env.off?.();
      // Off is no way around the floor: what an unrestricted runtime never runs, an off one does not either.
      const offGate = gateFor(deps, call.cwd, temp).context;
      const judged = decide(call.toolName, call.input, offGate, runtime.backend());
      const floor = offFloor(judged);
      if (floor) {
        env.record(
          {
            toolCallId: call.toolCallId,
            parentToolCallId: call.parentToolCallId,
            tool: call.toolName,
            mode: "off",
            route: floor.route,
            reason: floor.reason,
            outcome: "denied",
            hash: judged.request?.hash,
            message: floor.message,
          },
          { subject: judged.judgement?.subject, context: offGate.judge },
        );
        return { kind: "deny", text: denialText(floor, "off") };
      }
      issue(deps, call, { passed: "allowed", host: "gate-off", backend: runtime.backend() });
      return { kind: "run-here" };
    }
    // Every call waits for the sandbox's probe, not only a shell command: the mode a verdict is
    // bound to follows the backend, and a backend that settles while a call is reviewed would
    // void the review (the sandbox loads at the first call or when Pi is idle).
    await deps.ready?.();
    const gate = gateFor(deps, call.cwd, temp);
    // Every judgement of this call, the first and the re-judgements at review, is guarded the same way.
    const judge = (): GateResult => {
      const r = decide(call.toolName, call.input, gate.context, runtime.backend());
      return gate.trust ? { ...r, decision: guardedByInstall(gate.trust, r.decision) } : r;
    };
    const result = judge();
    const mode = runtime.effective(gate.context.config.ok ? "ok" : "fault");
    const limits = reviewLimits(gate.context.config);
    const approval = grantLookup(deps, env, result);
    let step = await reviewStep(call, env, result, judge, mode, limits, approval, runtime.backend(), gate.context.config);
    if ((step.overridable || step.critical) && deps.overrides && env.sessionId !== undefined && result.request) {
      const denial = {
        sessionId: env.sessionId,
        tool: call.toolName,
        target: targetSummary(result.request),
        ...shownAction(result.request),
        escalation: step.escalation === true,
        hash: result.request.hash,
        toolCallId: call.toolCallId,
        input: call.input,
      };
      if (step.overridable) deps.overrides.remember({ ...denial, reason: step.overridable.reason, risk: step.overridable.risk });
      else deps.overrides.rememberCritical({ ...denial, reason: "reviewer-denied", risk: "critical", rationale: step.critical!.rationale, cwd: call.cwd });
    }
    if (step.approvedBy === "break-glass") deps.resetBreaker?.();
    // Nobody would run it contained: deny rather than let Pi's own bash run it bare (P5).
    if (step.outcome === "sandboxed" && !deps.tickets && !deps.askerContains) step = { ...step, outcome: "denied" };
    // Judged against files another admitted call may change before this one runs (a parallel
    // batch, a script's concurrent calls): this judgement could be stale when it runs (P5).
    let shape: CallShape | undefined;
    if (step.outcome !== "denied" && mode !== "unrestricted" && deps.inFlight) {
      shape = callShape({ id: call.toolCallId, parentId: call.parentToolCallId, tool: call.toolName }, step.outcome);
      const other = deps.inFlight.conflict(shape);
      if (other) step = { outcome: "denied", denial: concurrentDenial(call.toolName, other), reviewed: false, escalated: false };
    }
    env.record(
      {
        toolCallId: call.toolCallId,
        parentToolCallId: call.parentToolCallId,
        tool: call.toolName,
        mode,
        route: result.decision.route,
        reason: result.decision.reason,
        outcome: step.outcome,
        hash: result.request?.hash,
        message: step.note ?? (step.denial !== undefined && shape !== undefined ? denialBody(step.denial) : result.decision.message),
        ...(step.approvedBy ? { approvedBy: step.approvedBy } : {}),
      },
      { subject: result.judgement?.subject, context: gate.context.judge },
    );
    if (step.outcome === "denied") return { kind: "deny", text: step.denial ?? denialText(result.decision, mode) };
    // What was judged is what runs: a later extension that rewrites the input now throws, which blocks the call.
    deepFreeze(call.input);
    if (shape) deps.inFlight?.admit(shape);
    const backend = runtime.backend();
    if (step.outcome === "sandboxed") {
      const workspace = workspaceAccess(backend, result.decision, step.reviewed);
      issue(deps, call, { passed: "sandboxed", gate: gate.context, backend, workspace, needsNetwork: needsNetwork(result.judgement) });
      return { kind: "run-sandboxed", workspace };
    }
    const host: HostReason | undefined =
      mode === "unrestricted" ? "unrestricted" : step.escalated ? "escalation-approved" : backend === "review-only" ? "review-only" : undefined;
    issue(deps, call, { passed: "allowed", host, backend });
    return step.escalated ? { kind: "run-on-host-once" } : { kind: "run-here" };
  };
}

/** The gate context for this call's working directory, and whether the running copy can be trusted. */
function gateFor(deps: AdmitDeps, cwd: string, temp: TempSession): { context: GateContext; trust: ReturnType<typeof installTrust> | undefined } {
  const agentDir = deps.agentDir();
  const install = deps.install;
  const setup = { cwd, home: homedir(), agentDir, defaultTmpRoot: temp.defaultRoot, tempFolder: (configured: string | undefined) => temp.folder(configured) };
  // One set of look-ups for both preparations below: the second checks the same directories.
  const book = new StampBook();
  const context = prepareGate({ ...setup, selfPaths: install ? [...selfPaths(agentDir), install.root] : selfPaths(agentDir) }, book);
  // A copy in any session's folder is writable by that session's sandbox: trust is judged against the
  // whole temp root the session's folder was made in (directly, by mkdtemp).
  const { workspace, tmpRoot } = context.judge.places;
  const trust = install && installTrust(install.root, { workspace, tmpRoot: tmpRoot === workspace ? tmpRoot : dirname(tmpRoot) }, install.env);
  // The copy the user develops (opted in) is theirs and the agent's to edit.
  if (trust?.kind === "writable" && trust.optedIn) return { context: prepareGate({ ...setup, selfPaths: selfPaths(agentDir) }, book), trust };
  return { context, trust };
}

interface Step {
  readonly outcome: Outcome;
  readonly denial?: string;
  /** Denied in a way the user may override, and why (P14). */
  readonly overridable?: { readonly reason: OverridableReason; readonly risk: RiskLevel | undefined };
  /** Denied by a reviewer as critical: only break glass overrides it (P14). */
  readonly critical?: { readonly rationale: string };
  /** The call asked to run outside the sandbox. */
  readonly escalation?: boolean;
  /** Admitted on the user's approval rather than a reviewer's. */
  readonly approvedBy?: Approver;
  /** Admitted by a reviewer (a git command then runs with .git writable where nothing can be staged). */
  readonly reviewed: boolean;
  /** An approved escalation: runs once on the host. */
  readonly escalated: boolean;
  /** What the record says instead of the deterministic decision's message. */
  readonly note?: string;
}

/** The deterministic decision, then the review it asks for: of an escalation out of the sandbox, or of a review route. */
async function reviewStep(
  call: GateCall,
  env: CallEnv,
  result: GateResult,
  judge: () => GateResult,
  mode: EffectiveMode,
  limits: Partial<EngineLimits>,
  approved: () => Approver | undefined,
  backend: Backend,
  config: ConfigResult,
): Promise<Step> {
  const plain: Step = { outcome: outcomeFor(result.decision, mode), reviewed: false, escalated: false };
  const reviewing = result.request !== undefined && REVIEWING.has(mode);
  const review = env.review && reviewing ? env.review : undefined;
  // A bash call asking to leave the sandbox gets a fresh review of its own (P7), or a denial.
  const ask = call.toolName === "bash" && GATED.has(mode) ? escalationAsk(call.input) : { kind: "default" as const };
  if (ask.kind === "invalid") return { ...plain, outcome: "denied", denial: escalationInvalidDenial(ask.problem) };
  if (ask.kind === "escalated") {
    // A deterministic deny of the command itself is never put to a reviewer (P3), nor to the user.
    if (result.decision.route === "deny") return { ...plain, outcome: "denied", denial: escalationDenial(denialText(result.decision, mode)) };
    // The user approved exactly this escalation after it was denied: it runs once on the host (P14).
    const by = reviewing ? approved() : undefined;
    if (by) return { outcome: "allowed", reviewed: true, escalated: true, escalation: true, approvedBy: by };
    // The user's own allow rule says `unsandboxed` for exactly what this runs (route.ts): no review.
    if (result.judgement && rulesRunUnsandboxed(result.judgement, config))
      return {
        outcome: "allowed",
        reviewed: false,
        escalated: true,
        escalation: true,
        note: 'Runs once outside the sandbox: the user\'s allow rule with "unsandboxed": true covers it and it asked to escalate.',
      };
    const denied = { ...plain, outcome: "denied" as const, escalation: true };
    if (!review)
      return {
        ...denied,
        // Not reviewing here (a configuration fault) is no want of a reviewer: say what it is.
        denial: reviewing ? noReviewerDenial(NO_ESCALATION_REVIEWER) : denialText(escalationDecision(result.decision, ask.justification), mode),
        ...(reviewing ? { overridable: { reason: "no-reviewer" as const, risk: undefined } } : {}),
      };
    let admission: ReviewAdmission;
    try {
      admission = await review({
        request: result.request!,
        decision: escalationDecision(result.decision, ask.justification),
        // The binding re-judges the live input the same way, so a changed command or justification denies (P8).
        rejudge: () => asEscalation(judge()),
        limits,
      });
    } catch (e) {
      return {
        ...denied,
        denial: escalationDenial(
          denial(
            "reviewer-unavailable",
            `The escalation review failed (${(e as Error)?.message ?? String(e)}), so the command does not run outside the sandbox.`,
          ),
        ),
      };
    }
    if (admission.kind === "deny") return { ...denied, denial: escalationDenial(admission.text), ...overridable(admission) };
    return { outcome: "allowed", reviewed: true, escalated: true, escalation: true };
  }
  if (result.decision.route !== "review") return plain;
  // The user approved exactly this call after it was denied: admitted without the reviewer, and
  // still run where a reviewer's allow would run it (P7, P14).
  const by = reviewing ? approved() : undefined;
  if (by) return approvedRun(result, mode, call.toolName, backend, by);
  if (!review) return reviewing ? { ...plain, overridable: { reason: "no-reviewer", risk: undefined } } : plain;
  const admission = await review({ request: result.request!, decision: result.decision, rejudge: judge, limits });
  if (admission.kind === "deny") return { ...plain, outcome: "denied", denial: admission.text, ...overridable(admission) };
  if (admission.run !== "sandbox") return { outcome: "allowed", reviewed: true, escalated: false };
  // An allow never removes containment (P7): the call takes the sandbox route's way.
  const contained = { ...result.decision, route: "sandbox" as const };
  const outcome = outcomeFor(contained, mode);
  return { outcome, reviewed: true, escalated: false, ...(outcome === "denied" ? { denial: denialText(contained, mode) } : {}) };
}

/** A reviewer's denial the user may override: not a critical verdict, not an arguments change, not an abort. */
function overridable(admission: ReviewAdmission & { kind: "deny" }): Pick<Step, "overridable" | "critical"> {
  const r = admission.review;
  if (!r || admission.changed !== undefined) return {};
  if (r.kind === "verdict")
    return r.verdict.risk_level === "critical"
      ? { critical: { rationale: r.verdict.rationale } }
      : { overridable: { reason: "reviewer-denied", risk: r.verdict.risk_level } };
  const reason = overridableFailure(r.failure);
  return reason ? { overridable: { reason, risk: undefined } } : {};
}

/** A call the user approved runs where a reviewer's allow would run it: bash under a sandboxed backend stays sandboxed (P7). */
function approvedRun(result: GateResult, mode: EffectiveMode, tool: string, backend: Backend, approvedBy: Approver): Step {
  if (tool !== "bash" || !isSandboxed(backend)) return { outcome: "allowed", reviewed: true, escalated: false, approvedBy };
  const decision = { ...result.decision, route: "sandbox" as const };
  const outcome = outcomeFor(decision, mode);
  return { outcome, reviewed: true, escalated: false, approvedBy, ...(outcome === "denied" ? { denial: denialText(decision, mode) } : {}) };
}

/** Uses this session's live grant for exactly this request, once (P14). */
function grantLookup(deps: AdmitDeps, env: CallEnv, result: GateResult): () => Approver | undefined {
  return () => {
    if (!deps.overrides || env.sessionId === undefined || !result.request) return undefined;
    const grant = deps.overrides.consume(env.sessionId, result.request.hash);
    return grant === undefined ? undefined : grant.by === "break-glass" ? "break-glass" : "user";
  };
}

/**
 * The ticket for a bash call that passed: where it runs. A sandboxed backend runs no shell on the
 * host but an approved escalation: without a host reason there, no ticket is left (P6, P7).
 */
function issue(
  deps: AdmitDeps,
  call: GateCall,
  pass:
    | {
        readonly passed: "sandboxed";
        readonly gate: GateContext;
        readonly backend: Backend;
        readonly workspace: WorkspaceAccess;
        readonly needsNetwork: boolean;
      }
    | { readonly passed: "allowed"; readonly host: HostReason | undefined; readonly backend: Backend },
): void {
  if (!deps.tickets || call.toolName !== "bash") return;
  const command = (call.input as { command?: unknown } | null)?.command;
  if (typeof command !== "string") return;
  if (pass.passed === "sandboxed") {
    deps.tickets.admit(call.toolCallId, {
      placement: "sandbox",
      command,
      scope: {
        places: pass.gate.judge.places,
        protectedGlobs: pass.gate.judge.protectedGlobs,
        ...(pass.gate.config.ok ? { network: pass.gate.config.config.network } : {}),
        needsNetwork: pass.needsNetwork,
      },
      backend: pass.backend,
      workspace: pass.workspace,
    });
    return;
  }
  if (pass.host === undefined) return;
  deps.tickets.admit(call.toolCallId, { placement: "host", command, why: pass.host, backend: pass.backend });
}

/** The judgement found a part of the command that uses the network (a failure then says whether it had any). */
function needsNetwork(j: Judgement | undefined): boolean {
  return j !== undefined && (j.reason === "network" || (j.parts ?? []).some((p) => p.reason === "network"));
}

function deepFreeze(v: unknown, seen: WeakSet<object> = new WeakSet()): void {
  if (typeof v !== "object" || v === null || seen.has(v)) return;
  seen.add(v);
  // A frozen object may still hold unfrozen ones (another extension's shallow Object.freeze of the
  // input): descend anyway, or a later rewrite of a nested field would run unjudged (P8).
  Object.freeze(v);
  for (const child of Object.values(v)) deepFreeze(child, seen);
}

/**
 * How a sandboxed call sees the workspace: staged wherever the machine can stage; in place
 * otherwise, with .git writable only for a git command a reviewer just approved (P17's fallback).
 */
function workspaceAccess(backend: Backend, d: Decision, reviewed: boolean): WorkspaceAccess {
  if (backend === "sandboxed") return "staged";
  return reviewed && (d.reason === "git-local" || d.reason === "git-hooks") ? "direct-git" : "direct";
}

/** The review question for a call asking to leave the sandbox: the command, and why it asks. */
function escalationDecision(d: Decision, justification: string): Decision {
  return {
    route: "review",
    reason: "sandbox-escalation",
    message: `asks to run outside the OS sandbox, without its file, network and process containment; the agent's justification (untrusted): ${JSON.stringify(justification)}. The gate's own judgement of the command: ${d.message}`,
  };
}

/** A re-judged escalation: still a review unless the command itself is now denied. */
function asEscalation(r: GateResult): GateResult {
  if (r.decision.route === "deny") return r;
  const ask = escalationAsk(r.request?.input);
  return { ...r, decision: escalationDecision(r.decision, ask.kind === "escalated" ? ask.justification : "") };
}

/** The user's reviewer limits from auto-mode.json, in the engine's terms. */
function reviewLimits(config: ConfigResult): Partial<EngineLimits> {
  if (!config.ok) return {};
  const { maxInputTokens, deadlineMs, classifier } = config.config.reviewer;
  return {
    ...(maxInputTokens !== undefined ? { budget: maxInputTokens as TokenBudget } : {}),
    ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    ...(classifier !== undefined ? { classifier } : {}),
  };
}

/**
 * What still holds while auto mode is off: the hard denies and self-protection, judged as in an
 * unrestricted runtime. Read from the judgement, so a configuration fault (which the route puts
 * first) cannot hide them.
 */
function offFloor(r: GateResult): Decision | undefined {
  if (r.decision.route === "deny" && ALWAYS_DENIED.has(r.decision.reason)) return r.decision;
  const j = r.judgement;
  if (j?.cls !== "deny" || !ALWAYS_DENIED.has(j.reason)) return undefined;
  return decision("deny", j.reason, /[.!?]$/.test(j.detail.trim()) ? j.detail.trim() : `${j.detail.trim()}.`);
}

function outcomeFor(d: Decision, mode: EffectiveMode): Outcome {
  if (mode === "unrestricted") return d.route === "deny" && ALWAYS_DENIED.has(d.reason) ? "denied" : "allowed";
  if (d.route === "allow") return "allowed";
  // The sandbox route only exists under the sandboxed backend, and `auto` says it is healthy now.
  if (d.route === "sandbox") return mode === "auto" ? "sandboxed" : "denied";
  // A review route runs only through the reviewer (above); without one it cannot run (P5).
  return "denied";
}
