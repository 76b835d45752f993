// Execution tickets: the hand-over from the gate (tool_call) to the bash tool's execute, saying
// where an admitted call runs. The gate decides, the tool only obeys, and only once: a ticket is taken, never read twice,
// so a call can never be executed a second time on the strength of one decision (P9).

import type { Backend } from "../policy/types.ts";
import type { NetworkSpec } from "../policy/network/types.ts";
import type { Places } from "../policy/places.ts";

/** What the gate judged a call against; the sandbox enforces the same places. */
export interface SandboxScope {
  readonly places: Places;
  readonly protectedGlobs: readonly string[];
  /** The user's network allowlist, layered (P15); absent: no network. */
  readonly network?: NetworkSpec;
  /** The gate judged the command to need the network (a failure then says whether it had any). */
  readonly needsNetwork?: boolean;
}

/**
 * How a sandboxed command sees the workspace: `staged` (copy-on-write, its effects judged when it
 * ends), `direct` (written in place, .git read-only), or `direct-git` (in place with .git writable
 * but its code-running parts: only for a git command a reviewer approved where nothing can be staged).
 */
export type WorkspaceAccess = "staged" | "direct" | "direct-git";

/** Inside the OS sandbox, or on the host through Pi's ordinary local backend. */
export type Placement = "sandbox" | "host";

/**
 * Why a call may run on the host; closed, so the audit and tests can list every way out. Under a
 * sandboxed backend only an approved escalation does (P7).
 */
export type HostReason = "gate-off" | "unrestricted" | "review-only" | "escalation-approved";

export type ExecutionTicket =
  | { readonly placement: "sandbox"; readonly command: string; readonly scope: SandboxScope; readonly backend: Backend; readonly workspace: WorkspaceAccess }
  | { readonly placement: "host"; readonly command: string; readonly why: HostReason; readonly backend: Backend };

export type Taken = { readonly kind: "admitted"; readonly ticket: ExecutionTicket } | { readonly kind: "missing" } | { readonly kind: "conflict" };

export interface TicketBook {
  admit(toolCallId: string, ticket: ExecutionTicket): void;
  take(toolCallId: string): Taken;
  size(): number;
}

/** Admissions a blocked or abandoned call never takes must not pile up. */
const MAX_PENDING = 512;

export function createTicketBook(): TicketBook {
  const pending = new Map<string, ExecutionTicket | "conflict">();
  return {
    admit(id, ticket) {
      // Two calls with one id (a provider bug) would make "which one was judged" ambiguous.
      pending.set(id, pending.has(id) ? "conflict" : ticket);
      while (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value!);
    },
    take(id) {
      const a = pending.get(id);
      pending.delete(id);
      if (a === undefined) return { kind: "missing" };
      if (a === "conflict") return { kind: "conflict" };
      return { kind: "admitted", ticket: a };
    },
    size: () => pending.size,
  };
}
