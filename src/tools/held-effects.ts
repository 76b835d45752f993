// Held effects become a denial the user may approve (P14): the staged command's kept changes are
// listed by /perm-denials, and /perm-approve applies exactly them, without running the command
// again. Pi edge: the session comes from the tool's context.

import type { ExtensionToolContext } from "@earendil-works/pi-coding-agent";
import { shownAction } from "../grants/action-view.ts";
import { targetSummary } from "../grants/admit.ts";
import type { Overrides } from "../grants/overrides.ts";
import { buildRequest } from "../request/canonical.ts";
import type { KeptEffects } from "../sandbox/effects/kept.ts";
import { sessionOf } from "./session-of.ts";

export function rememberHeld(
  overrides: Overrides,
  call: { readonly toolCallId: string; readonly ctx: ExtensionToolContext; readonly command: string; readonly home: string },
  kept: KeptEffects,
): void {
  const { sessionId } = sessionOf(call.ctx);
  const built = buildRequest("bash", { command: call.command }, call.ctx.cwd, call.home);
  // Without a session or a request to name it by, nobody could approve it: it goes now.
  if (sessionId === undefined || !built.ok) {
    kept.discard();
    return;
  }
  overrides.remember({
    sessionId,
    tool: "bash",
    target: targetSummary(built.request),
    ...shownAction(built.request),
    reason: "held-effects",
    risk: undefined,
    escalation: false,
    hash: built.request.hash,
    toolCallId: call.toolCallId,
    input: { command: call.command },
    held: kept,
  });
}
