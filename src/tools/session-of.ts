// The session a call belongs to, as Pi reports it. Its own module: the broker link and the held
// effects need it at load, and importing it from the gate would load the whole gate (and the
// command policy's check) at Pi's start instead of at the first tool call.

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

/** The call's session, for its overridable denials and grants (P14); none when Pi cannot say. */
export function sessionOf(ctx: Pick<ExtensionContext, "sessionManager">): { sessionId?: string } {
  try {
    const id = ctx.sessionManager.getSessionId();
    return typeof id === "string" ? { sessionId: id } : {};
  } catch {
    return {};
  }
}
