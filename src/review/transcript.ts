// The session as the reviewer input builder sees it: user messages, tool calls and tool
// results, in order. Assistant prose, thinking, compaction summaries and extension messages are
// dropped here, at the door (P10): what is not in this list cannot reach the reviewer.
// Structural types only, so this module does not depend on Pi.
//
// A message Pi stores with role user is not always the user's words: another extension's
// pi.sendUserMessage (also queued as a steer or follow-up) is stored as one, and so is a prompt
// template's body (`/name args` is stored already expanded). Who wrote each one is recorded at
// the edge from Pi's input event, which fires before any expansion with the raw text and its
// source, and handed here as data (UserProvenanceOf). Only a message the edge saw the user type
// becomes a `user` item, and its text is what the user typed, never what it expanded to. An
// extension's message, and one with no record (from before this process: a resumed session, whose
// stored entries do not say who wrote them), is a `not-typed` item: it gives no intent.

/** Who wrote a user message, as the edge recorded it from Pi's input event. */
export type UserProvenance =
  /** Typed by the user (interactive or RPC): `typed` is the text as typed, before any template or skill expansion. */
  | { readonly by: "user"; readonly typed: string }
  /** Sent by an extension (pi.sendUserMessage, as a prompt, a steer or a follow-up). */
  | { readonly by: "extension" };

/** The provenance of a stored user message (the entry's message object), or undefined when none was recorded. */
export type UserProvenanceOf = (message: object) => UserProvenance | undefined;

export type TranscriptItem =
  | { readonly kind: "user"; readonly text: string }
  /** A user message the user did not type: it stays out of intent. */
  | { readonly kind: "not-typed"; readonly by: "extension" | "unrecorded" }
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

/**
 * A user message as the reviewer sees it: what the user typed (file blocks of `pi @file` marked),
 * and, when Pi expanded a typed `/name args` into something else (a template's body, a skill's
 * file), a marker saying so, never the expansion.
 */
function typedItem(typed: string, stored: string): TranscriptItem {
  const text = userAuthoredText(typed);
  if (stored === typed || !typed.startsWith("/")) return { kind: "user", text };
  return { kind: "user", text: `[the user ran this command; the text Pi expanded it to is not the user's words]\n\n${text}` };
}

/**
 * Entries of the active branch (ctx.sessionManager.getBranch()), oldest first. `provenanceOf`
 * says who wrote each user message (see the top of this file): only those the user typed give a
 * `user` item.
 */
export function transcriptFromEntries(entries: readonly EntryLike[], provenanceOf: UserProvenanceOf): TranscriptItem[] {
  const out: TranscriptItem[] = [];
  for (const e of entries) {
    if (e.type !== "message" || typeof e.message !== "object" || e.message === null) continue;
    const m = e.message as { role?: unknown; content?: unknown; toolCallId?: unknown; toolName?: unknown; isError?: unknown };
    if (m.role === "user") {
      const p = provenanceOf(e.message);
      if (p?.by === "user") out.push(typedItem(p.typed, partsText(m.content)));
      else out.push({ kind: "not-typed", by: p?.by === "extension" ? "extension" : "unrecorded" });
    } else if (m.role === "assistant" && Array.isArray(m.content)) {
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
