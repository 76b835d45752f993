// From a staged run that ended to what happens to its effects: judge them, ask the reviewer about
// held ones, apply or discard, and say what happened. Core: the reviewer arrives as an interface
// (the Pi edge builds it from the session's reviewer; the CLI has none, so held effects are
// discarded there), and nothing here imports Pi.

import type { Places } from "../../policy/places.ts";
import type { StageRun } from "../stage.ts";
import type { ApplyResult } from "./apply.ts";
import type { StagedFacts } from "./facts.ts";
import type { EffectJudgement } from "./judge.ts";
import type { EffectStore } from "./store.ts";
import type { UndoBounds } from "./undo.ts";
import type { KeepRequest, KeptEffects } from "./kept.ts";

/** The reviewer's answer on held effects. Anything but an explicit allow discards them. */
export type HeldVerdict =
  | { readonly allow: true; readonly rationale: string }
  | { readonly allow: false; readonly rationale: string; readonly noReviewer?: boolean };

export interface HeldReviewer {
  review(held: { readonly command: string; readonly summary: string }, signal?: AbortSignal): Promise<HeldVerdict>;
}

export interface SettleRequest {
  readonly run: StageRun;
  readonly startCtimeNs: bigint;
  readonly facts: StagedFacts;
  readonly places: Places;
  readonly protectedGlobs: readonly string[];
  readonly command: string;
  readonly store: EffectStore;
  readonly bounds: UndoBounds;
  readonly reviewer?: HeldReviewer;
  /** Aborts the judgement (Esc, SIGINT): then nothing is applied. */
  readonly signal?: AbortSignal;
  /** How long the judgement may take (judge-run.ts JUDGE_DEADLINE_MS by default): past it nothing is applied. */
  readonly deadlineMs?: number;
  /** The judgement's worker (tests hand one that never answers); judge-worker.ts by default. */
  readonly judgeEntry?: URL;
  /** Keep held effects for the user's approval (the run's folders then belong to the handle). */
  readonly keep?: (req: Omit<KeepRequest, "run" | "store" | "workspace" | "bounds">) => KeptEffects | undefined;
}

export type EffectReport =
  | { readonly outcome: "nothing" }
  | {
      readonly outcome: "applied";
      readonly judgement: Extract<EffectJudgement, { verdict: "apply" | "hold" }>;
      readonly result: ApplyResult;
      readonly reviewed?: string;
    }
  | {
      readonly outcome: "discarded";
      readonly why: "held" | "unreadable" | "forbidden" | "stopped" | "failed" | "deadline";
      readonly detail: string;
      readonly judgement?: EffectJudgement;
      readonly rationale?: string;
      readonly noReviewer?: boolean;
      /** Held effects kept for the user to approve (P14). */
      readonly kept?: KeptEffects;
    };

/** A command that left every staged root as it found it: nothing to judge or apply. */
function untouched(facts: StagedFacts): boolean {
  return facts.ok && facts.roots.every((r) => r.changes.length === 0 && !r.truncated && r.badNames.length === 0 && r.gitAfter.length === 0);
}

export async function settleEffects(req: SettleRequest): Promise<EffectReport> {
  // Most commands (reads, tests, builds into the temporary root) change nothing in the workspace:
  // the judge and its rules are loaded only for one that did.
  if (untouched(req.facts)) return { outcome: "nothing" };
  let judgement: EffectJudgement;
  let applyEffects: typeof import("./apply.ts").applyEffects;
  let heldSummary: typeof import("./report.ts").heldSummary;
  try {
    const [{ judgeOffThread }, apply, report] = await Promise.all([import("./judge-run.ts"), import("./apply.ts"), import("./report.ts")]);
    applyEffects = apply.applyEffects;
    heldSummary = report.heldSummary;
    const judged = await judgeOffThread(
      { run: req.run, startCtimeNs: req.startCtimeNs, facts: req.facts, places: req.places, protectedGlobs: req.protectedGlobs, store: req.store },
      {
        ...(req.deadlineMs !== undefined ? { deadlineMs: req.deadlineMs } : {}),
        ...(req.signal ? { signal: req.signal } : {}),
        ...(req.judgeEntry ? { entry: req.judgeEntry } : {}),
      },
    );
    // Past the deadline, or stopped by the user: nothing is applied, and the result says why (P18).
    if (judged.kind === "deadline")
      return {
        outcome: "discarded",
        why: "deadline",
        detail: `judging its effects took longer than ${Math.round(judged.ms / 1000)} s, so they were held and not applied`,
      };
    if (judged.kind === "aborted") return { outcome: "discarded", why: "stopped", detail: "it was interrupted while its effects were judged" };
    if (judged.kind === "failed") throw new Error(judged.message);
    judgement = judged.judgement;
  } catch (e) {
    // A judge that fails never lets anything through (P5).
    return { outcome: "discarded", why: "failed", detail: `the effects could not be judged: ${(e as Error).message}` };
  }
  if (judgement.verdict === "discard") return { outcome: "discarded", why: req.facts.ok ? "forbidden" : "unreadable", detail: judgement.reason, judgement };
  if (judgement.ops.length === 0 && judgement.held.length === 0 && judgement.conflicts.length === 0 && judgement.skipped.length === 0)
    return { outcome: "nothing" };
  let reviewed: string | undefined;
  const lostBytes = judgement.smallLoss.reduce((n, l) => n + l.bytes, 0);
  if (judgement.verdict === "hold") {
    const summary = heldSummary(judgement, req.places.workspace);
    const keep = () => {
      const k = req.keep?.({ command: req.command, summary, ops: judgement.ops, lostBytes });
      return k ? { kept: k } : {};
    };
    if (!req.reviewer)
      return { outcome: "discarded", why: "held", detail: summary, judgement, noReviewer: true, rationale: "no reviewer is configured", ...keep() };
    let verdict: HeldVerdict;
    try {
      verdict = await req.reviewer.review({ command: req.command, summary }, req.signal);
    } catch (e) {
      verdict = { allow: false, rationale: `the review failed (${(e as Error).message})` };
    }
    if (!verdict.allow)
      return {
        outcome: "discarded",
        why: "held",
        detail: summary,
        judgement,
        rationale: verdict.rationale,
        ...(verdict.noReviewer ? { noReviewer: true } : {}),
        ...keep(),
      };
    reviewed = verdict.rationale;
  }
  try {
    const result = await applyEffects({
      store: req.store,
      workspace: req.places.workspace,
      command: req.command,
      ops: judgement.ops,
      bounds: req.bounds,
      lostBytes,
    });
    return { outcome: "applied", judgement, result, ...(reviewed !== undefined ? { reviewed } : {}) };
  } catch (e) {
    return {
      outcome: "discarded",
      why: "failed",
      detail: `applying the effects failed: ${(e as Error).message}; the next start repairs what was begun`,
      judgement,
    };
  }
}
