// The check widget's state machine (src/ui/checks.ts), without Pi, and its drawing at Pi's edge
// (check-widget.ts): newest wins, an older check never overwrites a newer one, a session change
// clears, and the lines say what the issue asks for (tool, target, reviewer, elapsed, Esc; route,
// reason, rationale, tokens, duration).

import { callRecord } from "../helpers/call-record.ts";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  beginReview,
  checkLines,
  clearChecks,
  compactTarget,
  endReview,
  fitWidth,
  NO_CHECKS,
  settleCall,
  type Checks,
  type Decided,
  type ReviewSummary,
} from "../../src/ui/checks.ts";
import { createCheckWidget } from "../../src/ui/check-widget.ts";
import { recordingUi } from "../helpers/ui.ts";
import { CHECK_WIDGET_KEY } from "../../src/ui/check-widget.ts";
import type { DecisionRecord } from "../../src/audit/decision-record.ts";

const start = (subject: string) => ({ subject, route: "review", reason: "protected-path", reviewer: "judge/judge-1" });
const spent: ReviewSummary = {
  reviewer: "judge/judge-1",
  verdict: "allow",
  risk: "low",
  rationale: "The user asked for it.",
  tokens: 54,
  costUsd: 0,
  durationMs: 1234,
};
const allowed: Decided = { route: "review", reason: "protected-path", outcome: "allowed", message: "writes .git/hooks", review: spent };
const text = (s: Checks, now = 0) => (s.shown ? checkLines(s.shown, now).map((l) => l.text) : []);

describe("the check widget's state", () => {
  test("a review shows tool, target, reviewer, elapsed time and Esc; its outcome replaces it in place", () => {
    const a = beginReview(NO_CHECKS, "call-1", start("write .git/hooks/pre-commit"), 1_000);
    assert.deepEqual(text(a.checks, 4_500), [
      "auto mode · reviewing write .git/hooks/pre-commit",
      "reviewer judge/judge-1 · 3 s · Esc cancels · route review (protected-path)",
    ]);
    const done = endReview(a.checks, a.id, allowed);
    assert.deepEqual(text(done), [
      "auto mode · allowed by the reviewer: write .git/hooks/pre-commit",
      "route review (protected-path) · low risk · reviewer judge/judge-1 · 54 tokens · 1.2 s",
      "The user asked for it.",
    ]);
  });

  test("newest wins: an older review ending later does not overwrite the newer check", () => {
    const a = beginReview(NO_CHECKS, "a", start("bash a"), 0);
    const b = beginReview(a.checks, "b", start("bash b"), 0);
    const late = endReview(b.checks, a.id, { ...allowed, review: { ...spent, rationale: "A's verdict" } });
    assert.equal(late, b.checks, "unchanged");
    assert.match(text(late)[0]!, /reviewing bash b/);
    // Nor can the older call's gate record bring it back.
    const settled = settleCall(late, "a", "bash a", { route: "deny", reason: "hard-deny", outcome: "denied", message: "no" });
    assert.match(text(settled)[0]!, /reviewing bash b/);
    assert.equal(settled.reviews.has("a"), false, "the owed record is forgotten once it came");
  });

  test("a deterministic denial is a check of its own; allowed calls do not wipe it", () => {
    const denied = settleCall(NO_CHECKS, "c1", "bash rm -rf ~", {
      route: "deny",
      reason: "hard-deny",
      outcome: "denied",
      message: "rm recursively wipes /home/u",
    });
    assert.deepEqual(text(denied), [
      "blocked by auto mode: bash rm -rf ~",
      "route deny (hard-deny) · a hard deny: never allowed, no override",
      "rm recursively wipes /home/u",
    ]);
    const next = settleCall(denied, "c2", "read notes.txt", { route: "allow", reason: "read-only", outcome: "allowed", message: "reads" });
    assert.equal(next, denied);
  });

  test("a review route denied before any model was asked says it needs review", () => {
    const s = settleCall(NO_CHECKS, "c", "write .git/x", { route: "review", reason: "protected-path", outcome: "denied", message: "writes a protected path" });
    assert.match(text(s)[0]!, /denied, needs review: write \.git\/x/);
  });

  test("the gate's record settles a reviewed call: sandboxed, or denied after an allow", () => {
    const a = beginReview(NO_CHECKS, "k", start("bash make"), 0);
    const reviewed = endReview(a.checks, a.id, allowed);
    const sandboxed = settleCall(reviewed, "k", "bash make", { route: "review", reason: "protected-path", outcome: "sandboxed", message: "m" });
    assert.match(text(sandboxed)[0]!, /allowed by the reviewer, runs in the sandbox: bash make/);
    assert.equal(text(sandboxed)[2], "The user asked for it.");
    const overruled = settleCall(reviewed, "k", "bash make", {
      route: "review",
      reason: "protected-path",
      outcome: "denied",
      message: "another call is still running",
    });
    assert.match(text(overruled)[0]!, /denied after the reviewer allowed it/);
    assert.ok(text(overruled).includes("another call is still running"), text(overruled).join("\n"));
  });

  test("a review that failed says so and is not a risk judgement", () => {
    const a = beginReview(NO_CHECKS, "k", start("bash x"), 0);
    const s = endReview(a.checks, a.id, {
      ...allowed,
      outcome: "denied",
      message: "The review was cancelled.",
      review: { reviewer: "judge/judge-1", failure: "aborted", tokens: 0, costUsd: 0, durationMs: 300 },
    });
    assert.match(text(s)[0]!, /denied, not reviewed \(aborted\): bash x/);
    assert.ok(!text(s).join(" ").includes("risk"));
  });

  test("a session change clears, and nothing begun before it shows again", () => {
    const a = beginReview(NO_CHECKS, "k", start("bash x"), 0);
    const cleared = clearChecks(a.checks);
    assert.equal(cleared.shown, undefined);
    assert.equal(endReview(cleared, a.id, allowed).shown, undefined);
    assert.equal(settleCall(cleared, "k", "bash x", { ...allowed, outcome: "allowed" }).shown, undefined);
    assert.ok(beginReview(cleared, "n", start("bash n"), 0).id > a.id, "ids keep growing");
  });

  test("lines are redacted and carry no control characters", () => {
    const s = settleCall(NO_CHECKS, "k", "bash curl -H 'Authorization: Bearer abcdefghijklmnop123' \u001b[2J", {
      route: "deny",
      reason: "hard-deny",
      outcome: "denied",
      message: "x\u0007y",
    });
    const all = text(s).join("\n");
    assert.ok(!all.includes("abcdefghijklmnop123"), all);
    assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(all), JSON.stringify(all));
  });

  test("compact targets and fitting to the terminal", () => {
    assert.equal(compactTarget("bash", { command: "ls -la\nrm x" }), "bash ls -la");
    assert.equal(compactTarget("write", { path: ".git/hooks/pre-commit", content: "x" }), "write .git/hooks/pre-commit");
    assert.equal(compactTarget("deploy_service", { service: "api" }), "deploy_service");
    assert.equal([...compactTarget("bash", { command: "x".repeat(200) })].length, 80);
    assert.equal(fitWidth("abc", 3), "abc");
    assert.equal(fitWidth("abcdef", 4), "abc…");
    assert.equal(fitWidth("日本語です", 5), "日本…", "wide characters count twice");
  });
});

describe("the check widget at Pi's edge", () => {
  const record = (over: Partial<DecisionRecord>): DecisionRecord => ({
    ...callRecord({ route: "deny", reason: "hard-deny", outcome: "denied", message: "rm recursively wipes /home/u" }),
    at: 0,
    ...over,
  });

  test("an RPC client gets the lines as text, a cleared widget as undefined; print mode gets nothing", () => {
    const rec = recordingUi();
    const ctx = { hasUI: true, mode: "rpc" as const, ui: rec.ui };
    const w = createCheckWidget(() => 0);
    w.noteCall("t1", "bash", { command: "rm -rf ~" });
    w.settle(ctx, record({}));
    w.clear(ctx);
    assert.deepEqual(rec.widgets(CHECK_WIDGET_KEY), [
      ["blocked by auto mode: bash rm -rf ~", "route deny (hard-deny) · a hard deny: never allowed, no override", "rm recursively wipes /home/u"],
      undefined,
    ]);
    w.beginReview(ctx, "t2", start("write .git/x"));
    assert.deepEqual(
      rec.widgets(CHECK_WIDGET_KEY).at(-1),
      ["auto mode · reviewing write .git/x", "reviewer judge/judge-1 · route review (protected-path)"],
      "text sent once has no clock that would not move, nor a key the client may not have",
    );
    const quiet = recordingUi();
    const w2 = createCheckWidget(() => 0);
    w2.settle({ hasUI: false, mode: "print", ui: quiet.ui }, record({}));
    assert.deepEqual(quiet.calls, []);
  });

  test("in the TUI it is a component that ticks while a review runs and stops when replaced", () => {
    let factory: ((tui: { requestRender(): void }, theme: { fg(c: string, t: string): string }) => unknown) | undefined;
    const ui = { setWidget: (_k: string, f: unknown) => void (factory = f as typeof factory) };
    let now = 0;
    const w = createCheckWidget(() => now);
    const id = w.beginReview({ hasUI: true, mode: "tui", ui: ui as never }, "t1", start("bash make"));
    let renders = 0;
    const c = factory!({ requestRender: () => void renders++ }, { fg: (col, t) => `<${col}>${t}</>` }) as {
      render(w: number): string[];
      dispose(): void;
    };
    now = 2_000;
    const lines = c.render(60);
    assert.match(lines[0]!, /^ <accent>auto mode · reviewing bash make<\/>$/);
    assert.match(lines[1]!, /2 s · Esc cancels/);
    assert.ok(lines.every((l) => l.replace(/<[^>]*>/g, "").length <= 60));
    c.dispose();
    w.endReview({ hasUI: true, mode: "tui", ui: ui as never }, id, allowed);
  });
});
