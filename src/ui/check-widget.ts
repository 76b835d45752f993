// The check widget above the editor: Pi's side of checks.ts. In the TUI it is a component that
// redraws each second while a review runs (the elapsed time); an RPC client gets the same lines
// as text whenever they change; print and json runs have no widget.

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { DecisionRecord } from "../audit/decision-record.ts";
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
  type CheckView,
  type Decided,
  type ReviewStart,
  type Tone,
} from "./checks.ts";

export const CHECK_WIDGET_KEY = "auto-mode-check";

export type WidgetContext = Pick<ExtensionContext, "hasUI" | "mode" | "ui">;

export interface CheckWidget {
  /** A review of the call `key` begins; returns the check's id for its end. */
  beginReview(ctx: WidgetContext, key: string, start: ReviewStart): number;
  endReview(ctx: WidgetContext, id: number, decided: Decided): void;
  /** A call reaches the gate: what it is, in a few words, for its outcome. */
  noteCall(toolCallId: string, toolName: string, input: unknown): void;
  /** The gate's audit record of a call: settles a review's outcome, or shows a denial. */
  settle(ctx: WidgetContext, record: DecisionRecord): void;
  clear(ctx: WidgetContext): void;
  /** What the widget holds now (tests). */
  state(): Checks;
}

/** Calls noted but never recorded (a gate that threw) are forgotten past this many. */
const NOTED_CAP = 256;

export function createCheckWidget(now: () => number = Date.now): CheckWidget {
  let checks = NO_CHECKS;
  const subjects = new Map<string, string>();
  const show = (ctx: WidgetContext, next: Checks) => {
    const changed = next.shown !== checks.shown;
    checks = next;
    if (changed && ctx.hasUI) draw(ctx, checks, now);
  };
  return {
    beginReview(ctx, key, start) {
      const r = beginReview(checks, key, start, now());
      show(ctx, r.checks);
      return r.id;
    },
    endReview: (ctx, id, decided) => show(ctx, endReview(checks, id, decided)),
    noteCall(toolCallId, toolName, input) {
      subjects.set(toolCallId, compactTarget(toolName, input));
      while (subjects.size > NOTED_CAP) subjects.delete(subjects.keys().next().value!);
    },
    settle(ctx, r) {
      const subject = subjects.get(r.toolCallId) ?? r.tool;
      subjects.delete(r.toolCallId);
      show(
        ctx,
        settleCall(checks, r.toolCallId, subject, {
          route: r.route,
          reason: r.reason,
          outcome: r.outcome,
          message: r.message,
          ...(r.approvedBy ? { note: r.approvedBy === "user" ? "admitted on your approval" : "admitted by breaking the glass" } : {}),
        }),
      );
    },
    clear(ctx) {
      subjects.clear();
      show(ctx, clearChecks(checks));
    },
    state: () => checks,
  };
}

function draw(ctx: WidgetContext, checks: Checks, now: () => number): void {
  const view = checks.shown;
  try {
    if (!view) ctx.ui.setWidget(CHECK_WIDGET_KEY, undefined);
    else if (ctx.mode !== "tui")
      ctx.ui.setWidget(
        CHECK_WIDGET_KEY,
        checkLines(view, now(), { live: false }).map((l) => l.text),
      );
    else drawComponent(ctx, view, now);
  } catch {
    // A context that went stale with its session: there is nothing left to draw on.
  }
}

function drawComponent(ctx: WidgetContext, view: CheckView, now: () => number): void {
  ctx.ui.setWidget(CHECK_WIDGET_KEY, (tui, theme) => {
    const paint = (tone: Tone, text: string) => (tone === "text" ? text : theme.fg(tone, text));
    // Only a running review changes with time; Pi disposes the component when the widget is replaced.
    const timer = view.phase === "reviewing" ? setInterval(() => tui.requestRender(), 1000) : undefined;
    timer?.unref?.();
    return {
      render: (width: number) => checkLines(view, now()).map((l) => ` ${paint(l.tone, fitWidth(l.text, Math.max(1, width - 2)))}`),
      invalidate() {},
      dispose: () => clearInterval(timer),
    };
  });
}
