// The check widget's state, without Pi: which check the widget shows and what it says. Checks are
// numbered as they begin; only the newest may change what is shown, so a review that started
// earlier and ends later (concurrent calls of a script, a boundary broker's ask) never writes
// over a newer check. check-widget.ts only draws these lines.

import { redact } from "../request/redact.ts";

export type CheckOutcome = "allowed" | "sandboxed" | "denied";

/** What a review spent and what it said, for the outcome line. */
export interface ReviewSummary {
  readonly reviewer: string;
  /** The verdict, its risk level and rationale, when there was a verdict. */
  readonly verdict?: "allow" | "deny";
  readonly risk?: string;
  readonly rationale?: string;
  /** Why no verdict was usable (timeout, aborted, ...), when there was none. */
  readonly failure?: string;
  readonly tokens: number;
  readonly costUsd: number;
  readonly durationMs: number;
}

export interface Decided {
  readonly route: string;
  readonly reason: string;
  readonly outcome: CheckOutcome;
  /** The gate's one sentence about the call, for a decision no reviewer made. */
  readonly message: string;
  readonly review?: ReviewSummary;
  /** Something the user should know besides the verdict (a binding change, a missing reviewer). */
  readonly note?: string;
}

export type CheckView =
  | {
      readonly phase: "reviewing";
      readonly subject: string;
      readonly route: string;
      readonly reason: string;
      readonly reviewer: string;
      readonly startedAt: number;
    }
  | ({ readonly phase: "decided"; readonly subject: string } & Decided);

export interface Checks {
  /** The id the next check gets. */
  readonly next: number;
  /** The check the widget belongs to; 0 before the first. */
  readonly newest: number;
  readonly shown: CheckView | undefined;
  /** Reviews still owed their gate decision: the call's key and its check id. */
  readonly reviews: ReadonlyMap<string, number>;
}

export const NO_CHECKS: Checks = { next: 1, newest: 0, shown: undefined, reviews: new Map() };

/** Reviews whose gate decision never comes (held effects) are forgotten past this many. */
const OWED_CAP = 64;

export interface ReviewStart {
  readonly subject: string;
  readonly route: string;
  readonly reason: string;
  readonly reviewer: string;
}

/** A review begins: it is the newest check, shown at once. */
export function beginReview(s: Checks, key: string, start: ReviewStart, now: number): { readonly checks: Checks; readonly id: number } {
  const id = s.next;
  const reviews = new Map(s.reviews);
  reviews.delete(key);
  reviews.set(key, id);
  while (reviews.size > OWED_CAP) reviews.delete(reviews.keys().next().value!);
  return { checks: { next: id + 1, newest: id, shown: { phase: "reviewing", ...start, startedAt: now }, reviews }, id };
}

/** A review's outcome replaces its running line, if no newer check began meanwhile. */
export function endReview(s: Checks, id: number, decided: Decided): Checks {
  if (id !== s.newest || s.shown?.phase !== "reviewing") return s;
  return { ...s, shown: { phase: "decided", subject: s.shown.subject, ...decided } };
}

/**
 * The gate's decision of a call. For a reviewed call it settles the review's outcome (the gate may
 * still deny after an allow, or run it sandboxed); any other call is a check of its own, shown
 * only when it was denied, so a stream of allowed reads does not wipe a denial the user should see.
 */
export function settleCall(s: Checks, key: string, subject: string, decided: Decided): Checks {
  const reviewed = s.reviews.get(key);
  if (reviewed !== undefined) {
    const reviews = new Map(s.reviews);
    reviews.delete(key);
    if (reviewed !== s.newest || s.shown?.phase !== "decided") return { ...s, reviews };
    const review = decided.review ?? s.shown.review;
    const note = decided.note ?? s.shown.note;
    // A reviewed call keeps the reviewer's words; the gate's message matters only when it overruled them.
    const message = decided.outcome === "denied" && s.shown.outcome !== "denied" ? decided.message : s.shown.message;
    return {
      ...s,
      reviews,
      shown: { ...s.shown, outcome: decided.outcome, message, ...(review ? { review } : {}), ...(note ? { note } : {}) },
    };
  }
  if (decided.outcome !== "denied") return s;
  const id = s.next;
  return { ...s, next: id + 1, newest: id, shown: { phase: "decided", subject, ...decided } };
}

/** A session change: nothing shown, and nothing begun before it may show again. */
export function clearChecks(s: Checks): Checks {
  return { next: s.next, newest: 0, shown: undefined, reviews: new Map() };
}

/** The call in a few words: the tool and its command's first line, or the path or URL it names. */
export function compactTarget(tool: string, input: unknown): string {
  const o = input !== null && typeof input === "object" ? (input as Record<string, unknown>) : {};
  const first = (v: unknown) => (typeof v === "string" && v.trim() !== "" ? v.trim().split("\n")[0] : undefined);
  const what = first(o.command) ?? first(o.path) ?? first(o.file_path) ?? first(o.url) ?? first(o.pattern);
  const text = what === undefined ? tool : `${tool} ${what}`;
  return [...text].length > 80 ? `${[...text].slice(0, 79).join("")}…` : text;
}

export type Tone = "accent" | "success" | "warning" | "error" | "muted" | "text";

export interface WidgetLine {
  readonly tone: Tone;
  readonly text: string;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The outcome's first words; `named` when they already say it was auto mode. */
function head(v: Extract<CheckView, { phase: "decided" }>): { tone: Tone; text: string; named?: boolean } {
  if (v.outcome !== "denied") {
    const how = v.outcome === "sandboxed" ? ", runs in the sandbox" : "";
    return { tone: "success", text: v.review ? `allowed by the reviewer${how}` : `allowed${how}` };
  }
  if (v.review?.verdict === "deny") return { tone: "error", text: "denied by the reviewer" };
  if (v.review?.verdict === "allow") return { tone: "warning", text: "denied after the reviewer allowed it" };
  if (v.review?.failure) return { tone: "warning", text: `denied, not reviewed (${v.review.failure})` };
  if (v.route === "review") return { tone: "warning", text: "denied, needs review" };
  return { tone: "error", text: "blocked by auto mode", named: true };
}

const why = (route: string, reason: string) => `${route} (${reason})${reason === "hard-deny" ? " · a hard deny: never allowed, no override" : ""}`;

/**
 * The widget's lines for what it shows now; `now` ticks the elapsed time of a running review. A
 * client that gets text once (`live: false`, RPC) is told neither a time that would not move nor
 * a key it may not have.
 */
export function checkLines(v: CheckView, now: number, opts: { readonly live?: boolean } = {}): WidgetLine[] {
  if (v.phase === "reviewing") {
    const elapsed = Math.max(0, Math.floor((now - v.startedAt) / 1000));
    const running = opts.live === false ? "" : ` · ${elapsed} s · Esc cancels`;
    return clean([
      { tone: "accent", text: `auto mode · reviewing ${v.subject}` },
      { tone: "muted", text: `reviewer ${v.reviewer}${running} · route ${why(v.route, v.reason)}` },
    ]);
  }
  const h = head(v);
  const r = v.review;
  const spent = r
    ? [
        r.risk ? `${r.risk} risk` : undefined,
        `reviewer ${r.reviewer}`,
        `${r.tokens} tokens`,
        r.costUsd > 0 ? `$${r.costUsd.toFixed(4)}` : undefined,
        seconds(r.durationMs),
      ]
    : [];
  const details = [`route ${why(v.route, v.reason)}`, ...spent].filter((x) => x !== undefined).join(" · ");
  // The reviewer's words when it judged; the gate's when it decided alone or overruled an allow.
  const overruled = r?.verdict === "allow" && v.outcome === "denied";
  const said = [r?.rationale, !r?.rationale || overruled ? v.message : undefined].filter((x): x is string => !!x);
  return clean([
    { tone: h.tone, text: `${h.named ? "" : "auto mode · "}${h.text}: ${v.subject}` },
    { tone: "muted", text: details },
    ...said.map((text) => ({ tone: "text" as const, text })),
    ...(v.note ? [{ tone: "warning" as const, text: v.note }] : []),
  ]);
}

/** Redacted, one line each, no control characters: a command may carry escapes that would drive the terminal. */
function clean(lines: WidgetLine[]): WidgetLine[] {
  return lines.map((l) => ({
    tone: l.tone,
    text: redact(l.text)
      .replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")
      .replace(/ +/g, " ")
      .trim(),
  }));
}

/** Cut to `width` terminal cells; a code point from U+1100 up counts as two, so a cut line never overflows. */
export function fitWidth(text: string, width: number): string {
  const cells = (ch: string) => (ch.codePointAt(0)! >= 0x1100 ? 2 : 1);
  let total = 0;
  for (const ch of text) total += cells(ch);
  if (total <= width) return text;
  let used = 0;
  let out = "";
  for (const ch of text) {
    if (used + cells(ch) > width - 1) break;
    used += cells(ch);
    out += ch;
  }
  return `${out}…`;
}
