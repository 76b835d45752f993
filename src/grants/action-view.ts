// What a user is shown when asked to approve an action (P14, issue 23): all of it. Every field of
// the call's input, every line of each, with the characters a terminal would act on or not show
// (controls, ESC sequences, bidi overrides, zero-width and tag characters) written as escapes, the
// length, line count and hidden-character count of each text, the paths as the tool will open
// them, and the hash the grant binds. A list may stay one line per denial (compactNote says what
// it leaves out); a dialog or a headless approval shows actionLines. Not redacted: the user is
// approving exactly this text, and it is shown only to them (never stored or sent to a model).

import type { CanonicalRequest } from "../request/canonical.ts";

/** Characters shown as escapes: C0 and C1 controls, DEL, and the invisible or reordering ones. */
// Variation selectors (U+FE00-FE0F) are an alternation of their own: each is matched alone.
const HIDDEN =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\ufff9-\ufffb\u{e0000}-\u{e0fff}]|\ufe00|\ufe01|\ufe02|\ufe03|\ufe04|\ufe05|\ufe06|\ufe07|\ufe08|\ufe09|\ufe0a|\ufe0b|\ufe0c|\ufe0d|\ufe0e|\ufe0f/gu;

function escapeOne(c: string): string {
  if (c === "\t") return "\\t";
  if (c === "\r") return "\\r";
  const n = c.codePointAt(0)!;
  if (n < 0x100) return `\\x${n.toString(16).padStart(2, "0")}`;
  if (n < 0x10000) return `\\u${n.toString(16).padStart(4, "0")}`;
  return `\\u{${n.toString(16)}}`;
}

/** The text with every hidden character written as an escape (a newline too: one line out). */
export function escapeHidden(text: string): string {
  return text.replace(HIDDEN, escapeOne).replaceAll("\n", "\\n");
}

/** How many characters of the text a terminal would act on or not show (newlines aside). */
export function hiddenCount(text: string): number {
  return [...text.matchAll(HIDDEN)].length;
}

export interface TextFacts {
  readonly lines: number;
  readonly characters: number;
  readonly hidden: number;
}

export function textFacts(text: string): TextFacts {
  return { lines: text.split("\n").length, characters: [...text].length, hidden: hiddenCount(text) };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function factsLine(f: TextFacts): string {
  return [plural(f.lines, "line"), plural(f.characters, "character"), ...(f.hidden > 0 ? [plural(f.hidden, "hidden character")] : [])].join(", ");
}

/** The main text of a call (a command, a file's content) or undefined: what a list's one line is cut from. */
function mainText(request: CanonicalRequest): string | undefined {
  const input = request.input as Record<string, unknown> | null;
  const text = input?.command ?? input?.content;
  return typeof text === "string" ? text : undefined;
}

/**
 * What a one-line list entry leaves out, as a short note ("2 lines, 1 hidden character"), or
 * undefined when the one line is the whole main text and nothing in it is hidden.
 */
export function compactNote(request: CanonicalRequest): string | undefined {
  const main = mainText(request);
  const lines = main === undefined ? 1 : textFacts(main).lines;
  const values = Object.values((request.input as Record<string, unknown> | null) ?? {});
  const hidden = values.reduce<number>((n, v) => n + hiddenCount(typeof v === "string" ? v : (JSON.stringify(v) ?? "")), 0);
  const parts = [...(lines > 1 ? [plural(lines, "line")] : []), ...(hidden > 0 ? [plural(hidden, "hidden character")] : [])];
  return parts.length > 0 ? parts.join(", ") : undefined;
}

/** Every line of the action, for a dialog or a headless approval. */
export function actionLines(request: CanonicalRequest): string[] {
  const out = [`Tool: ${escapeHidden(request.tool)}`, `Working directory: ${escapeHidden(request.cwd)}`];
  const input = request.input;
  if (typeof input !== "object" || input === null || Array.isArray(input)) out.push(`Input: ${escapeHidden(JSON.stringify(input) ?? String(input))}`);
  else
    for (const [key, value] of Object.entries(input).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (typeof value !== "string") {
        out.push(`${escapeHidden(key)}: ${escapeHidden(JSON.stringify(value) ?? String(value))}`);
        continue;
      }
      const lines = value.split("\n");
      out.push(`${escapeHidden(key)} (${factsLine(textFacts(value))}):`);
      const width = String(lines.length).length;
      lines.forEach((line, i) => {
        out.push(`  ${String(i + 1).padStart(width)} │ ${escapeHidden(line)}`);
      });
    }
  for (const p of request.paths) out.push(`Opens: ${escapeHidden(p.real)}${p.real !== p.lexical ? ` (as ${escapeHidden(p.lexical)})` : ""}`);
  out.push(`Request hash (what an approval is bound to): ${request.hash}`);
  return out;
}

/** What a denial keeps to show the user: the one-line note for a list, and the whole action. */
export function shownAction(request: CanonicalRequest): { readonly action: readonly string[]; readonly note?: string } {
  const note = compactNote(request);
  return { action: actionLines(request), ...(note !== undefined ? { note } : {}) };
}
