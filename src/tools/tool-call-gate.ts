// The `tool_call` edge: every tool call, including codemode's inner calls, passes here (P1).

import { homedir } from "node:os";
import type { ExtensionContext, ToolCallEvent, ToolCallEventResult } from "@earendil-works/pi-coding-agent";
import { decisionRecord, type DecisionRecord, type Outcome } from "../audit/decision-record.ts";
import { decide, prepareGate, type GateResult } from "../policy/gate.ts";
import type { Backend, Decision } from "../policy/types.ts";
import type { WorkspaceAccess } from "../sandbox/types.ts";
import { readEnabled } from "../state/global.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import { defaultTmpRoot, selfPaths } from "../state/locations.ts";
import type { EffectiveMode } from "../state/effective.ts";
import type { ReviewHook } from "./review-call.ts";
import type { ConfigResult as GateResultConfig } from "../policy/config/load.ts";
import type { EngineLimits } from "../review/engine.ts";
import type { TokenBudget } from "../review/budget.ts";
import type { SandboxGateLink } from "../sandbox/gate-link.ts";
import { escalationAsk, type EscalationReviewer } from "../sandbox/escalation.ts";
import { concurrentDenial, decisionDenial, denialBody, gateFailureDenial } from "../policy/denial.ts";
import { callShape, type CallShape, type CallsInFlight } from "./concurrent-calls.ts";
import { redact } from "../request/redact.ts";
import { clipHead } from "../review/budget.ts";
import { guardedByInstall, installTrust } from "../policy/install-trust.ts";

export interface GateDeps {
  readonly runtime: RuntimeState;
  readonly agentDir: () => string;
  /** Called once per decided call, for the audit entry and the status line. */
  readonly record: (r: DecisionRecord, ctx: ExtensionContext) => void;
  /** Judges calls routed to `review` (the reviewer model); without it they are denied. */
  readonly review?: ReviewHook;
  /** Called when auto mode is off (perhaps just turned off by another process), for the status line. */
  readonly off?: (ctx: ExtensionContext) => void;
  /** Escalation requests and where admitted bash calls run; without it no call runs sandboxed. */
  readonly sandbox?: SandboxGateLink;
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
}

/** Tools whose route depends on the sandbox backend. */
const BACKEND_BOUND = new Set(["bash", "powershell"]);

/** Modes in which a `review` route goes to the reviewer (not off, unrestricted or at fault). */
const REVIEWING: ReadonlySet<EffectiveMode> = new Set(["auto", "auto-review-only", "auto-sandbox-unavailable"]);

/** Decisions that hold even in an unrestricted runtime: wiping disks, disabling the gate itself. */
const ALWAYS_DENIED = new Set(["hard-deny", "self-protection"]);

function deepFreeze(v: unknown, seen: WeakSet<object> = new WeakSet()): void {
  if (typeof v !== "object" || v === null || seen.has(v)) return;
  seen.add(v);
  // A frozen object may still hold unfrozen ones (another extension's shallow Object.freeze of the
  // input): descend anyway, or a later rewrite of a nested field would run unjudged (P8).
  Object.freeze(v);
  for (const child of Object.values(v)) deepFreeze(child, seen);
}

export function denialText(d: Decision, mode?: EffectiveMode): string {
  return decisionDenial(d, mode === "auto-config-fault");
}

export function createToolCallGate(deps: GateDeps) {
  const gate = createGate(deps);
  return async (event: ToolCallEvent, ctx: ExtensionContext): Promise<ToolCallEventResult | undefined> => {
    try {
      return await gate(event, ctx);
    } catch (e) {
      // Pi blocks a call whose handler throws, but the model would read a bare error message as if
      // the tool had failed, and the message may carry secrets: say it was auto mode's policy (P4, P5, P11).
      return { block: true, reason: gateFailureText(e) };
    }
  };
}

export function gateFailureText(e: unknown): string {
  const message = clipHead(
    redact(e instanceof Error ? e.message : String(e))
      .replace(/\s+/g, " ")
      .trim(),
    200,
  );
  return gateFailureDenial(message);
}

function createGate(deps: GateDeps) {
  let tmpRoot: string | undefined;
  return async (event: ToolCallEvent, ctx: ExtensionContext): Promise<ToolCallEventResult | undefined> => {
    const runtime = deps.runtime;
    // Re-read at every gate (a stat when nothing changed): another process's commit applies now (P12).
    const global = await runtime.global.read();
    if (!readEnabled(global)) {
      deps.off?.(ctx);
      deps.sandbox?.admit({ event, passed: "allowed", mode: "off", backend: runtime.backend() });
      return undefined;
    }
    if (BACKEND_BOUND.has(event.toolName)) await deps.ready?.();
    tmpRoot ??= defaultTmpRoot();
    const agentDir = deps.agentDir();
    const install = deps.install;
    const setup = { cwd: ctx.cwd, home: homedir(), agentDir, defaultTmpRoot: tmpRoot };
    let gate = prepareGate({ ...setup, selfPaths: install ? [...selfPaths(agentDir), install.root] : selfPaths(agentDir) });
    const trust = install && installTrust(install.root, gate.judge.places, install.env);
    // The copy the user develops (opted in) is theirs and the agent's to edit.
    if (trust?.kind === "writable" && trust.optedIn) gate = prepareGate({ ...setup, selfPaths: selfPaths(agentDir) });
    // Every judgement of this call, the first and the re-judgements at review, is guarded the same way.
    const judge = (): GateResult => {
      const r = decide(event.toolName, event.input, gate, runtime.backend());
      return trust ? { ...r, decision: guardedByInstall(trust, r.decision) } : r;
    };
    const result: GateResult = judge();
    const mode = runtime.effective(gate.config.ok ? "ok" : "fault");
    let outcome = outcomeFor(result.decision, mode);
    let denial: string | undefined;
    let reviewed = false;
    // A bash call asking to leave the sandbox gets a fresh review of its own (P7), or a denial.
    const review = deps.review;
    const limits = reviewLimits(gate.config);
    const escalationReviewer: EscalationReviewer | undefined =
      review && result.request && REVIEWING.has(mode)
        ? {
            review: async (req) => {
              const admission = await review({
                event,
                ctx,
                request: result.request!,
                decision: escalationDecision(result.decision, req.justification),
                // The binding re-judges the live input the same way, so a changed command or justification denies (P8).
                rejudge: () => asEscalation(judge()),
                limits,
              });
              return admission.kind === "admit"
                ? { outcome: "allow", rationale: admission.review.kind === "verdict" ? admission.review.verdict.rationale : "approved" }
                : { outcome: "deny", rationale: denialBody(admission.text) };
            },
          }
        : undefined;
    const escalation = await deps.sandbox?.escalation({ event, ctx, result, mode, ...(escalationReviewer ? { reviewer: escalationReviewer } : {}) });
    if (escalation) {
      outcome = escalation.outcome;
      denial = escalation.denial;
    } else if (result.decision.route === "review" && REVIEWING.has(mode) && result.request && deps.review) {
      const admission = await deps.review({ event, ctx, request: result.request, decision: result.decision, rejudge: judge, limits });
      if (admission.kind === "deny") {
        outcome = "denied";
        denial = admission.text;
      } else if (admission.run === "sandbox") {
        // An allow never removes containment (P7): the call takes the sandbox route's way.
        const contained = { ...result.decision, route: "sandbox" as const };
        outcome = outcomeFor(contained, mode);
        reviewed = true;
        if (outcome === "denied") denial = denialText(contained, mode);
      } else outcome = "allowed";
    }
    // Nobody would run it contained: deny rather than let Pi's own bash run it bare (P5).
    if (outcome === "sandboxed" && !deps.sandbox) outcome = "denied";
    // Judged against files another admitted call may change before this one runs (a parallel
    // batch, a script's concurrent calls): this judgement could be stale when it runs (P5).
    let shape: CallShape | undefined;
    if (outcome !== "denied" && mode !== "unrestricted" && deps.inFlight) {
      shape = callShape({ id: event.toolCallId, parentId: event.parentToolCallId, tool: event.toolName }, outcome);
      const other = deps.inFlight.conflict(shape);
      if (other) {
        outcome = "denied";
        denial = concurrentDenial(event.toolName, other);
      }
    }
    deps.record(
      decisionRecord(
        {
          toolCallId: event.toolCallId,
          parentToolCallId: event.parentToolCallId,
          tool: event.toolName,
          mode,
          route: result.decision.route,
          reason: result.decision.reason,
          outcome,
          hash: result.request?.hash,
          message: denial !== undefined && shape !== undefined ? denialBody(denial) : result.decision.message,
        },
        Date.now(),
      ),
      ctx,
    );
    if (outcome === "denied") return { block: true, reason: denial ?? denialText(result.decision, mode) };
    // What was judged is what runs: a later extension that rewrites the input now throws, which blocks the call.
    deepFreeze(event.input);
    if (shape) deps.inFlight?.admit(shape);
    const backend = runtime.backend();
    deps.sandbox?.admit({
      event,
      passed: outcome,
      mode,
      gate,
      backend,
      escalated: escalation?.outcome === "allowed",
      workspace: workspaceAccess(backend, result.decision, reviewed),
    });
    return undefined;
  };
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
function reviewLimits(config: GateResultConfig): Partial<EngineLimits> {
  if (!config.ok) return {};
  const { maxInputTokens, deadlineMs } = config.config.reviewer;
  return { ...(maxInputTokens !== undefined ? { budget: maxInputTokens as TokenBudget } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}) };
}

function outcomeFor(d: Decision, mode: EffectiveMode): Outcome {
  if (mode === "unrestricted") return d.route === "deny" && ALWAYS_DENIED.has(d.reason) ? "denied" : "allowed";
  if (d.route === "allow") return "allowed";
  // The sandbox route only exists under the sandboxed backend, and `auto` says it is healthy now.
  if (d.route === "sandbox") return mode === "auto" ? "sandboxed" : "denied";
  // A review route runs only through the reviewer (above); without one it cannot run (P5).
  return "denied";
}
