// The session as the reviewer input builder sees it: user messages, tool calls and tool
// results, in order. Assistant prose, thinking, compaction summaries and extension messages are
// dropped here, at the door (P10): what is not in this list cannot reach the reviewer.
// Structural types only, so this module does not depend on Pi.

export type TranscriptItem =
  | { readonly kind: "user"; readonly text: string }
  | { readonly kind: "tool-call"; readonly id: string; readonly name: string; readonly args: unknown }
  | { readonly kind: "tool-result"; readonly id: string; readonly name: string; readonly text: string; readonly isError: boolean };

/** The parts of a Pi session entry this module reads (SessionEntry from pi-coding-agent). */
export interface EntryLike {
  readonly type: string;
  readonly message?: unknown;
}

function partsText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((c: unknown) => {
      if (typeof c !== "object" || c === null) return "";
      const part = c as { type?: unknown; text?: unknown };
      if (part.type === "text" && typeof part.text === "string") return part.text;
      if (part.type === "image") return "[image]";
      return "";
    })
    .join("");
}

const SKILL_OPEN = /^<skill name="([^"]*)" location="[^"]*">\n/;
const SKILL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const FILE_OPEN = '<file name="';

/**
 * What the user typed of a user message, without what Pi expanded into it from files (P10): a
 * `/skill:name args` message is stored as the skill file's whole body in a <skill> block followed
 * by the args, and `pi @file ...` puts each file's contents in a <file> block before the message.
 * Those blocks are a file's text, not the user's request: each becomes a short marker and only
 * the text after them is kept. The block is taken to its last closing tag, so a file that closes
 * its own block early cannot pass its next lines off as the user's (at worst a user's own text
 * that contains the tag is dropped: less intent, never more).
 */
export function userAuthoredText(text: string): string {
  let rest = text;
  const marks: string[] = [];
  if (rest.startsWith(FILE_OPEN)) {
    const end = rest.lastIndexOf("</file>");
    if (end >= 0) {
      const block = rest.slice(0, end);
      const files = block.split(FILE_OPEN).length - 1;
      marks.push(`[${files === 1 ? "a file" : `${files} files`} attached to this message: its contents are not the user's words]`);
      rest = rest.slice(end + "</file>".length).replace(/^\n+/, "");
    }
  }
  const skill = SKILL_OPEN.exec(rest);
  if (skill) {
    const end = rest.lastIndexOf("\n</skill>");
    if (end >= 0) {
      const name = SKILL_NAME.test(skill[1] ?? "") ? ` "${skill[1]}"` : "";
      marks.push(`[the user invoked the skill${name}: its file's text is not the user's words]`);
      rest = rest.slice(end + "\n</skill>".length).replace(/^\n+/, "");
    }
  }
  if (marks.length === 0) return text;
  return rest === "" ? marks.join(" ") : `${marks.join(" ")}\n\n${rest}`;
}

/** Entries of the active branch (ctx.sessionManager.getBranch()), oldest first. */
export function transcriptFromEntries(entries: readonly EntryLike[]): TranscriptItem[] {
  const out: TranscriptItem[] = [];
  for (const e of entries) {
    if (e.type !== "message" || typeof e.message !== "object" || e.message === null) continue;
    const m = e.message as { role?: unknown; content?: unknown; toolCallId?: unknown; toolName?: unknown; isError?: unknown };
    if (m.role === "user") out.push({ kind: "user", text: userAuthoredText(partsText(m.content)) });
    else if (m.role === "assistant" && Array.isArray(m.content)) {
      // Only the structured calls: the assistant's text and thinking never leave (P10).
      for (const c of m.content as unknown[]) {
        const call = c as { type?: unknown; id?: unknown; name?: unknown; arguments?: unknown };
        if (call?.type === "toolCall" && typeof call.id === "string" && typeof call.name === "string")
          out.push({ kind: "tool-call", id: call.id, name: call.name, args: call.arguments });
      }
    } else if (m.role === "toolResult" && typeof m.toolCallId === "string")
      out.push({
        kind: "tool-result",
        id: m.toolCallId,
        name: typeof m.toolName === "string" ? m.toolName : "",
        text: partsText(m.content),
        isError: m.isError === true,
      });
  }
  return out;
}

/** For the CLI and the eval: a transcript of only the user's messages, oldest first. */
export function transcriptFromUserMessages(messages: readonly string[]): TranscriptItem[] {
  return messages.map((text) => ({ kind: "user", text }));
}
