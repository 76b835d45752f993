// The `tool_call` edge: every tool call, including codemode's inner calls, passes here (P1). The
// path of the call itself is Pi-free (grants/admit-call.ts); this turns Pi's event into a GateCall,
// binds the reviewer to the call's session, records the decision, and answers Pi.

import type { ExtensionContext, ToolCallEvent, ToolCallEventResult } from "@earendil-works/pi-coding-agent";
import { decisionRecord, type DecisionRecord } from "../audit/decision-record.ts";
import { type AdmitDeps, createCallGate, type JudgedCall } from "../grants/admit-call.ts";
import { gateFailureDenial } from "../policy/denial.ts";
import { redact } from "../request/redact.ts";
import { clipHead } from "../review/budget.ts";
import type { ReviewHook } from "./review-call.ts";
import { sessionOf } from "./session-of.ts";

export { denialText } from "../grants/admit-call.ts";

export interface GateDeps extends AdmitDeps {
  /** Called once per decided call, for the audit entry and the status line. */
  /** `judged`: what the gate judged the call's paths with, by reference, for the audit (never stored). */
  readonly record: (r: DecisionRecord, ctx: ExtensionContext, judged?: JudgedCall) => void;
  /** Judges calls routed to `review` (the reviewer model) and escalations; without it they are denied. */
  readonly review?: ReviewHook;
  /** Called when auto mode is off (perhaps just turned off by another process), for the status line. */
  readonly off?: (ctx: ExtensionContext) => void;
}

export function createToolCallGate(deps: GateDeps) {
  const admit = createCallGate(deps);
  return async (event: ToolCallEvent, ctx: ExtensionContext): Promise<ToolCallEventResult | undefined> => {
    try {
      const review = deps.review;
      const outcome = await admit(
        { toolCallId: event.toolCallId, parentToolCallId: event.parentToolCallId, toolName: event.toolName, input: event.input, cwd: ctx.cwd },
        {
          ...(review ? { review: (ask) => review({ event, ctx, ...ask }) } : {}),
          record: (r, judged) => deps.record(decisionRecord(r, Date.now()), ctx, judged),
          off: () => deps.off?.(ctx),
          notify: (text) => tell(ctx, text),
          ...sessionOf(ctx),
        },
      );
      return outcome.kind === "deny" ? { block: true, reason: outcome.text } : undefined;
    } catch (e) {
      // Pi blocks a call whose handler throws, but the model would read a bare error message as if
      // the tool had failed, and the message may carry secrets: say it was auto mode's policy (P4, P5, P11).
      return { block: true, reason: gateFailureText(e) };
    }
  };
}

/** A notice for the user: in the interface, or on stderr in a headless run (stdout may be the protocol). */
function tell(ctx: ExtensionContext, text: string): void {
  try {
    if (ctx.hasUI) ctx.ui.notify(`auto mode: ${text}`, "warning");
    else process.stderr.write(`auto mode: ${text}\n`);
  } catch {
    // a stale context: the call is still judged
  }
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
