// The footer status: always the true effective state (P16), one "auto-mode:" line. The check in
// progress and its outcome are the check widget's (check-widget.ts), so the footer never shows a
// second prefix or an old result.

import { redact } from "../request/redact.ts";
import { reviewerLabel, type ReviewerId } from "../review/types.ts";
import type { EffectiveMode } from "../state/effective.ts";

export const STATUS_KEY = "auto-mode";

export interface StatusSink {
  setStatus(key: string, text: string | undefined): void;
}

export interface FooterState {
  readonly mode: EffectiveMode;
  /** The mode's words (state/effective.ts statusLabel). */
  readonly label: string;
  readonly reviewer?: ReviewerId | undefined;
  /** Why the mode is weaker than asked (the sandbox's reason, an untrusted copy). */
  readonly why?: string | undefined;
}

/** Modes whose review routes go to the reviewer: only there does naming it say something true. */
const REVIEWING: ReadonlySet<EffectiveMode> = new Set(["auto", "auto-review-only", "auto-sandbox-unavailable"]);

/** The states in which tool calls run without auto mode's review: the user should not miss them. */
const TONES: Partial<Record<EffectiveMode, "warning" | "error">> = { unrestricted: "warning", off: "error" };

export interface FooterText {
  readonly label: string;
  readonly tone: "warning" | "error" | undefined;
  readonly rest: string;
}

export function footerText(s: FooterState): FooterText {
  const reviewer = s.reviewer && REVIEWING.has(s.mode) ? ` · reviewer ${reviewerLabel(s.reviewer)}` : "";
  return { label: redact(s.label), tone: TONES[s.mode], rest: redact(`${reviewer}${s.why ? ` — ${s.why}` : ""}`) };
}

export interface StatusContext {
  readonly ui: StatusSink & { readonly theme?: { fg(color: "warning" | "error", text: string): string } };
  /** Colors only in the TUI: an RPC client gets the words alone. */
  readonly mode?: string;
}

export function showStatus(ctx: StatusContext, s: FooterState): void {
  const f = footerText(s);
  const theme = ctx.mode === "tui" ? ctx.ui.theme : undefined;
  const label = f.tone && theme ? theme.fg(f.tone, f.label) : f.label;
  ctx.ui.setStatus(STATUS_KEY, `auto-mode: ${label}${f.rest}`);
}
