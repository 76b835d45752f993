// Binding (P8): a verdict holds only for the exact canonical action, the reviewer's engine, model
// and thinking level, the endpoint Pi sends that model's requests to (its API and base URL as
// Pi's model registry resolves them: models.json rewritten, or a provider registered again, moves
// the reviewer somewhere else), and the global, session and backend state it was given. The caller takes a
// binding before the review and checks it again right before the call is admitted; any
// difference denies, so a mode flip (even auto -> unrestricted -> auto, which moves the session
// revision), a reviewer change, a backend change or arguments mutated by another extension
// while the review was pending can never ride on an earlier verdict.

import type { Backend } from "../policy/types.ts";
import { type ReviewerId, sameReviewer } from "../review/types.ts";

export interface ReviewBinding {
  /** The canonical request hash (CanonicalRequest.hash). */
  readonly hash: string;
  readonly reviewer: ReviewerId;
  /** Where the reviewer's requests go, as Pi resolves it (tools/reviewer-models.ts reviewerEndpoint). */
  readonly endpoint: string | undefined;
  readonly globalRevision: number;
  readonly sessionRevision: number;
  readonly backend: Backend;
}

/** The same facts, read again right before admission. */
export interface BindingNow {
  /** Undefined when the call can no longer be canonicalized or no longer routes to review. */
  readonly hash: string | undefined;
  readonly reviewer: ReviewerId | undefined;
  /** Where the reviewer's requests go now; undefined when no reviewer is set or it is not found. */
  readonly endpoint: string | undefined;
  /** Undefined when global state is at fault. */
  readonly globalRevision: number | undefined;
  readonly sessionRevision: number;
  readonly backend: Backend;
  /** The runtime still gates in auto mode (enabled, not unrestricted). */
  readonly auto: boolean;
}

/** What changed, in words for the denial text; undefined when the verdict still holds. */
export function bindingChange(b: ReviewBinding, now: BindingNow): string | undefined {
  if (now.hash !== b.hash) return "the call's arguments";
  if (!now.auto) return "the permission mode";
  if (now.sessionRevision !== b.sessionRevision) return "the permission mode";
  // The engine too: the same provider/model judged by the other engine is another reviewer.
  if (!sameReviewer(now.reviewer, b.reviewer)) return "the reviewer model";
  if (now.endpoint !== b.endpoint) return "the reviewer's endpoint";
  if (now.globalRevision !== b.globalRevision) return "the auto-mode settings";
  if (now.backend !== b.backend) return "the sandbox backend";
  return undefined;
}
