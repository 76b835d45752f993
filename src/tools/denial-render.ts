// How the TUI draws a call auto mode blocked: Pi shows a blocked call's reason as the tool's
// error output, which for most tools is the dim text of any failure. A tool renderer
// (pi.registerToolRenderer) puts a "Blocked by auto mode" head over it, in the error colour, with
// the denial's class, its reason and the next step; every other result is drawn as before.

import type { AgentToolResult, ExtensionAPI, Theme, ToolRenderers } from "@earendil-works/pi-coding-agent";
import { DENIAL_CLASSES, denialBody, denialClassOf } from "../policy/denial.ts";

type RenderResult = NonNullable<ToolRenderers["renderResult"]>;
type Component = ReturnType<RenderResult>;

/** The lines of a blocked call's view, before colour: head, why, next step. */
export interface BlockedView {
  readonly head: string;
  readonly body: string;
  readonly next: string;
}

/** The view of a result that is one of auto mode's denials; undefined for any other result. */
export function blockedView(text: string): BlockedView | undefined {
  const cls = denialClassOf(text);
  if (cls === undefined) return undefined;
  const next = text.split("\n").find((l) => l.startsWith("Next: "));
  return { head: `Blocked by auto mode — ${DENIAL_CLASSES[cls].heading}`, body: denialBody(text), next: next ?? `Next: ${DENIAL_CLASSES[cls].next}` };
}

export function registerDenialRenderer(pi: ExtensionAPI): void {
  pi.registerToolRenderer((_toolName, next) => {
    const base = next();
    const renderResult: RenderResult = (result, options, theme, context) => {
      const view = context.isError && !options.isPartial ? blockedView(resultText(result)) : undefined;
      if (view) return blockedComponent(view, theme);
      if (base?.renderResult) return base.renderResult(result, options, theme, context);
      return plainComponent(resultText(result), options.expanded, theme);
    };
    return { ...base, renderResult };
  });
}

function resultText(result: AgentToolResult<unknown>): string {
  return result.content
    .flatMap((c) => (c.type === "text" ? [c.text] : []))
    .join("\n")
    .trim();
}

export function blockedLines(view: BlockedView, width: number, paint: (tone: "error" | "text" | "accent", s: string) => string): string[] {
  const w = Math.max(8, width);
  return [
    ...wrap(view.head, w).map((l) => paint("error", l)),
    ...(view.body ? wrap(view.body, w).map((l) => paint("text", l)) : []),
    ...wrap(view.next, w).map((l) => paint("accent", l)),
  ];
}

function blockedComponent(view: BlockedView, theme: Theme): Component {
  const paint = (tone: "error" | "text" | "accent", s: string) => (tone === "error" ? theme.fg("error", theme.bold(s)) : theme.fg(tone, s));
  return { render: (width: number) => blockedLines(view, width, paint), invalidate() {} };
}

/** Pi's own view of a result when the tool has no renderer: its text, the first lines unless expanded. */
function plainComponent(text: string, expanded: boolean, theme: Theme): Component {
  const lines = text === "" ? [] : text.split("\n");
  const shown = expanded ? lines : lines.slice(0, 10);
  const more = lines.length - shown.length;
  return {
    render: (width: number) => [
      ...shown.flatMap((l) => wrap(l, Math.max(8, width))).map((l) => theme.fg("toolOutput", l)),
      ...(more > 0 ? [theme.fg("muted", `... (${more} more lines)`)] : []),
    ],
    invalidate() {},
  };
}

/** Terminal cells of one character: wide (East Asian, emoji) counts two. */
const cells = (ch: string): number => (ch.codePointAt(0)! >= 0x1100 ? 2 : 1);

/** Word-wraps plain text to `width` cells; a word longer than a line is broken over lines. */
export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  for (const para of text.split("\n")) {
    let line = "";
    let used = 0;
    const flush = () => {
      out.push(line.trimEnd());
      line = "";
      used = 0;
    };
    for (const word of para.split(/(\s+)/)) {
      if (word === "") continue;
      const size = [...word].reduce((n, ch) => n + cells(ch), 0);
      if (/^\s+$/.test(word)) {
        if (used > 0 && used + 1 <= width) {
          line += " ";
          used += 1;
        }
        continue;
      }
      if (used + size > width && used > 0) flush();
      if (size <= width) {
        line += word;
        used += size;
        continue;
      }
      for (const ch of word) {
        if (used + cells(ch) > width) flush();
        line += ch;
        used += cells(ch);
      }
    }
    flush();
  }
  return out;
}
