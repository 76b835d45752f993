// What the tool-call gate needs from the sandbox, in two calls: judge an escalation request, and
// record where an admitted bash call runs. Kept here so the gate stays a short list of steps.

import type { GateContext, GateResult } from "../policy/gate.ts";
import type { Backend } from "../policy/types.ts";
import type { EffectiveMode } from "../state/effective.ts";
import type { TicketBook, HostReason } from "../grants/tickets.ts";
import type { WorkspaceAccess } from "./types.ts";
import { escalationAsk, reviewEscalation, type EscalationReviewer } from "./escalation.ts";
import { escalationDenial, escalationInvalidDenial } from "../policy/denial.ts";

/** The tool call as the link needs it (Pi's ToolCallEvent has this shape). */
export interface LinkedCall {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: unknown;
}

/** Where the call happens (Pi's ExtensionContext has this shape). */
export interface LinkedContext {
  readonly cwd: string;
  readonly signal?: AbortSignal | undefined;
}

/** What finally happens to a bash call the gate let through. */
export type Passed = "allowed" | "sandboxed";

export interface EscalationOutcome {
  readonly outcome: "allowed" | "denied";
  /** The tool result text when denied. */
  readonly denial?: string;
}

export interface SandboxGateLink {
  /**
   * For a bash call that asks to leave the sandbox (or asks malformedly): the fresh review's
   * outcome. Undefined for every other call, which then goes the ordinary way.
   */
  escalation(call: {
    event: LinkedCall;
    ctx: LinkedContext;
    result: GateResult;
    mode: EffectiveMode;
    /** The reviewer for this very call (it needs the call's context); the link's default otherwise. */
    reviewer?: EscalationReviewer;
  }): Promise<EscalationOutcome | undefined>;
  /** Record where an admitted call runs. Non-bash calls are ignored. */
  admit(call: {
    event: LinkedCall;
    passed: Passed;
    mode: EffectiveMode | "off";
    gate?: GateContext;
    backend: Backend;
    escalated?: boolean;
    workspace?: WorkspaceAccess;
  }): void;
}

/** Modes in which the gate judges calls; an escalation there needs its own review. */
const GATED: ReadonlySet<EffectiveMode> = new Set(["auto", "auto-review-only", "auto-sandbox-unavailable", "auto-config-fault"]);

export function createSandboxGateLink(deps: { readonly admissions: TicketBook; readonly reviewer: () => EscalationReviewer }): SandboxGateLink {
  return {
    async escalation({ event, ctx, result, mode, reviewer }) {
      if (event.toolName !== "bash" || !GATED.has(mode)) return undefined;
      const ask = escalationAsk(event.input);
      if (ask.kind === "default") return undefined;
      if (ask.kind === "invalid") return { outcome: "denied", denial: escalationInvalidDenial(ask.problem) };
      const command = (event.input as { command?: unknown }).command;
      const r = await reviewEscalation(
        {
          toolCallId: event.toolCallId,
          command: typeof command === "string" ? command : "",
          justification: ask.justification,
          cwd: ctx.cwd,
          requestHash: result.request?.hash,
          decision: result.decision,
        },
        reviewer ?? deps.reviewer(),
        ctx.signal,
      );
      if (r.admitted) return { outcome: "allowed" };
      return {
        outcome: "denied",
        denial: escalationDenial(r.reason),
      };
    },
    admit({ event, passed, mode, gate, backend, escalated, workspace }) {
      if (event.toolName !== "bash") return;
      const command = (event.input as { command?: unknown }).command;
      if (typeof command !== "string") return;
      if (passed === "sandboxed") {
        // Without the gate's places the sandbox would not know what to protect: leave no admission, so the call does not run.
        if (!gate) return;
        deps.admissions.admit(event.toolCallId, {
          placement: "sandbox",
          command,
          scope: { places: gate.judge.places, protectedGlobs: gate.judge.protectedGlobs },
          backend,
          workspace: workspace ?? (backend === "sandboxed" ? "staged" : "direct"),
        });
        return;
      }
      const why: HostReason | undefined =
        mode === "off"
          ? "gate-off"
          : mode === "unrestricted"
            ? "unrestricted"
            : escalated
              ? "escalation-approved"
              : backend === "review-only"
                ? "review-only"
                : undefined;
      // A sandboxed backend runs no shell on the host but an approved escalation: leave no admission (P6, P7).
      if (why === undefined) return;
      deps.admissions.admit(event.toolCallId, { placement: "host", command, why, backend });
    },
  };
}
