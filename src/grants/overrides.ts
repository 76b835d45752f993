// Human overrides (P14): the denials of this session a user may override, and the one-shot grants
// an approval creates. A grant is bound to the exact canonical request (its hash covers the tool,
// the canonical input, the cwd and the resolved paths, and leaves out the tool-call id, since the
// retry is a new call), to the session, and to a short lifetime; it is used once. Hard denies and
// the user's deny rules never reach this list: only what a reviewer or its absence decided does.

import { randomInt } from "node:crypto";
import type { RequestHash } from "../request/canonical.ts";
import type { FailureClass, RiskLevel } from "../review/types.ts";

/** Why a denial may be overridden: a reviewer said no, or no reviewer could say yes. */
export type OverridableReason = "reviewer-denied" | "no-reviewer" | "reviewer-unavailable" | "breaker-open" | "held-effects";

/** A staged command's held changes, kept so the user can have exactly them applied (sandbox/effects/kept.ts). */
export interface HeldChanges {
  readonly summary: string;
  apply(): Promise<{ readonly kind: "applied"; readonly applied: number } | { readonly kind: "refused"; readonly why: string }>;
}

export type DenialId = number & { readonly __brand: "DenialId" };

/** One denial the user may approve; `target` is redacted, short and escaped, for a list. */
export interface RecentDenial {
  readonly id: DenialId;
  readonly sessionId: string;
  readonly tool: string;
  readonly target: string;
  /** What the one-line target leaves out ("2 lines, 1 hidden character"), if anything (grants/action-view.ts). */
  readonly note?: string;
  /** The whole action, every line, hidden characters escaped, with the hash: what an approval shows. */
  readonly action: readonly string[];
  readonly reason: OverridableReason;
  /** The reviewer's risk level, when a reviewer judged it. */
  readonly risk: RiskLevel | undefined;
  /** Whether the call asked to run outside the sandbox (an approved retry then runs once on the host). */
  readonly escalation: boolean;
  readonly hash: RequestHash;
  readonly toolCallId: string;
  /** The call as the model made it, to ask for exactly it again. */
  readonly input: unknown;
  readonly at: number;
  /** For held effects: approving applies these, the command does not run again. */
  readonly held?: HeldChanges;
}

/** A reviewer's critical denial: only break glass overrides it, and only for a few minutes. */
export interface CriticalDenial extends RecentDenial {
  readonly rationale: string;
  readonly cwd: string;
}

/** Who made a grant: the user approving a denial, or breaking the glass on a critical one. */
export type GrantProvenance = "human-approval" | "break-glass";

export interface OneShotGrant {
  readonly hash: RequestHash;
  readonly sessionId: string;
  readonly denialId: DenialId;
  /** The tool call that was denied: a break-glass grant names the one it overrides. */
  readonly deniedToolCallId: string;
  readonly escalation: boolean;
  readonly expiresAt: number;
  readonly by: GrantProvenance;
}

/** The phrase a user types to break the glass, and until when it is accepted. */
export interface BreakGlassChallenge {
  readonly denial: CriticalDenial;
  readonly phrase: string;
  readonly expiresAt: number;
}

export type Approval =
  | { readonly kind: "granted"; readonly denial: RecentDenial; readonly grant: OneShotGrant }
  | { readonly kind: "apply-held"; readonly denial: RecentDenial & { readonly held: HeldChanges } }
  | { readonly kind: "refused"; readonly why: string };

export const DENIALS_KEPT = 10;
export const GRANT_TTL_MS = 60_000;
/** How long a critical denial can be broken out of. */
export const BREAK_GLASS_WINDOW_MS = 5 * 60_000;
/** How long the typed phrase is accepted after it is shown. */
export const PHRASE_TTL_MS = 60_000;

const CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/** A short random code no model could have seen before it is shown to the user. */
function breakGlassCode(): string {
  return Array.from({ length: 6 }, () => CODE_LETTERS[randomInt(CODE_LETTERS.length)]).join("");
}

/** A reviewer's failure, as a reason to override; undefined when it is no such reason. */
export function overridableFailure(f: FailureClass): OverridableReason | undefined {
  switch (f) {
    case "not-configured":
      return "no-reviewer";
    case "paused":
      return "breaker-open";
    case "model-unavailable":
    case "auth":
    case "rate-limited":
    case "connection":
    case "provider-error":
    case "timeout":
    case "malformed":
    case "busy":
    case "over-budget":
      return "reviewer-unavailable";
    // The user pressed Esc or changed the mode: nothing was denied that they did not ask for.
    case "aborted":
    case "internal":
      return undefined;
  }
}

export interface Overrides {
  /** Remembers a denial (newest first, at most DENIALS_KEPT per session). */
  remember(d: Omit<RecentDenial, "id" | "at">): RecentDenial;
  /** This session's denials, newest first. */
  list(sessionId: string): readonly RecentDenial[];
  /** Approves the `n`th denial of the list (1 = newest): a one-shot grant for exactly that call. */
  approve(sessionId: string, n: number): Approval;
  /**
   * Uses the grant for this exact request, if there is a live one: true once, then never again.
   * Synchronous, so of two calls judged at once exactly one wins.
   */
  consume(sessionId: string, hash: RequestHash): OneShotGrant | undefined;
  /** Remembers a reviewer's critical denial, for break glass. */
  rememberCritical(d: Omit<CriticalDenial, "id" | "at">): CriticalDenial;
  /** This session's critical denials of the last five minutes, newest first. */
  critical(sessionId: string): readonly CriticalDenial[];
  /** Starts breaking the glass on the `n`th critical denial (1 = newest): the phrase to type. */
  challenge(
    sessionId: string,
    n: number,
  ): { readonly kind: "challenge"; readonly challenge: BreakGlassChallenge } | { readonly kind: "refused"; readonly why: string };
  /** The typed phrase: exactly the challenge's, in time, once, gives the one-shot grant. */
  breakGlass(challenge: BreakGlassChallenge, typed: string | undefined): Exclude<Approval, { kind: "apply-held" }>;
}

export function createOverrides(now: () => number = Date.now): Overrides {
  let next = 1;
  const denials = new Map<string, RecentDenial[]>();
  const grants = new Map<string, OneShotGrant>();
  const approved = new Set<DenialId>();
  const criticals = new Map<string, CriticalDenial[]>();
  const challenges = new Set<BreakGlassChallenge>();
  const key = (sessionId: string, hash: string) => `${sessionId}\0${hash}`;
  const grant = (denial: RecentDenial, by: GrantProvenance): OneShotGrant => {
    approved.add(denial.id);
    const g: OneShotGrant = {
      hash: denial.hash,
      sessionId: denial.sessionId,
      denialId: denial.id,
      deniedToolCallId: denial.toolCallId,
      escalation: denial.escalation,
      expiresAt: now() + GRANT_TTL_MS,
      by,
    };
    grants.set(key(denial.sessionId, denial.hash), g);
    return g;
  };
  const recentCritical = (sessionId: string) => (criticals.get(sessionId) ?? []).filter((d) => now() - d.at <= BREAK_GLASS_WINDOW_MS);
  return {
    remember(d) {
      const denial: RecentDenial = { ...d, id: next++ as DenialId, at: now() };
      const list = [denial, ...(denials.get(d.sessionId) ?? [])].slice(0, DENIALS_KEPT);
      denials.set(d.sessionId, list);
      return denial;
    },
    list: (sessionId) => denials.get(sessionId) ?? [],
    approve(sessionId, n) {
      const list = denials.get(sessionId) ?? [];
      if (!Number.isInteger(n) || n < 1 || n > list.length)
        return { kind: "refused", why: list.length === 0 ? "there is no denial to approve in this session" : `choose a number from 1 to ${list.length}` };
      const denial = list[n - 1]!;
      // One approval per denial: the same action must be denied afresh before it can be approved again.
      if (approved.has(denial.id)) return { kind: "refused", why: `denial ${n} was already approved; it must be denied again before another approval` };
      // Held changes are applied as they were kept: nothing is run again, so no grant is made.
      if (denial.held) {
        approved.add(denial.id);
        return { kind: "apply-held", denial: denial as RecentDenial & { readonly held: HeldChanges } };
      }
      return { kind: "granted", denial, grant: grant(denial, "human-approval") };
    },
    consume(sessionId, hash) {
      const k = key(sessionId, hash);
      const grant = grants.get(k);
      if (!grant) return undefined;
      grants.delete(k);
      return now() <= grant.expiresAt ? grant : undefined;
    },
    rememberCritical(d) {
      const denial: CriticalDenial = { ...d, id: next++ as DenialId, at: now() };
      criticals.set(d.sessionId, [denial, ...recentCritical(d.sessionId)].slice(0, DENIALS_KEPT));
      return denial;
    },
    critical: recentCritical,
    challenge(sessionId, n) {
      const list = recentCritical(sessionId);
      if (!Number.isInteger(n) || n < 1 || n > list.length)
        return {
          kind: "refused",
          why: list.length === 0 ? "there is no critical denial from the last five minutes in this session" : `choose a number from 1 to ${list.length}`,
        };
      const denial = list[n - 1]!;
      if (approved.has(denial.id)) return { kind: "refused", why: "the glass was already broken for this denial" };
      const c: BreakGlassChallenge = { denial, phrase: `BREAK-GLASS ${breakGlassCode()}`, expiresAt: now() + PHRASE_TTL_MS };
      challenges.add(c);
      return { kind: "challenge", challenge: c };
    },
    breakGlass(c, typed) {
      // A challenge answers once, right or wrong: a wrong guess needs a new phrase.
      if (!challenges.delete(c)) return { kind: "refused", why: "this phrase was already used or never issued" };
      if (now() > c.expiresAt) return { kind: "refused", why: `the phrase was typed after ${PHRASE_TTL_MS / 1000} s` };
      if (typed?.trim() !== c.phrase) return { kind: "refused", why: "the typed phrase does not match" };
      if (approved.has(c.denial.id)) return { kind: "refused", why: "the glass was already broken for this denial" };
      return { kind: "granted", denial: c.denial, grant: grant(c.denial, "break-glass") };
    },
  };
}
