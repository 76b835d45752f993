// Who wrote each user message of this process (P10), for the reviewer's and the classifier's
// intent. Pi stores with role user both what the user typed and what an extension sent with
// pi.sendUserMessage (as a prompt, a steer or a follow-up), and stores `/name args` already
// expanded to a prompt template's body or a skill's file. Its input event is the one place that
// tells them apart: it fires for every prompt, steer and follow-up (interactive, `pi -p`, RPC,
// sendUserMessage) before the skill and template expansion, with the raw text and its source
// ("interactive" and "rpc" are the user; "extension" is an extension). Extension commands are run
// before it and store no message.
//
// An input is pending until the user message it became starts (message_start, role user: at the
// start of the run for a prompt, at delivery for a queued steer or follow-up); that message object
// (the one Pi persists in the session entry) is then recorded with the input's provenance. An
// input is matched to a message by its text: the input whose text is the message's, else one
// `/name args` the message is an expansion of; oldest first. What the user typed is all that a
// match can ever attribute to the user (a wrong match gives words the user did type, no others).
// A message no input explains (changed by another extension's input or message_end handler) has no
// record, and neither has a message from before this process (a resumed session: Pi's stored
// entries do not say who wrote a user message): both give no intent (fewer intent, never more).
//
// What this cannot see: text another extension's input handler rewrote before ours ran is
// recorded as the user's (the event gives the text as it is when each handler runs).

import type { InputEvent } from "@earendil-works/pi-coding-agent";
import type { UserProvenance, UserProvenanceOf } from "../review/transcript.ts";

interface Pending {
  readonly text: string;
  readonly provenance: UserProvenance;
}

/** Inputs that never became a message (handled by another extension, refused by Pi) are forgotten beyond this many. */
const MAX_PENDING = 32;

export interface UserProvenanceBook {
  /** Pi's input event, as it fires. */
  input(event: Pick<InputEvent, "text" | "source">): void;
  /** A user message starts (message_start with role user). */
  userMessage(message: object): void;
  /** Who wrote a stored user message, when this process saw it. */
  readonly provenanceOf: UserProvenanceOf;
  /** A session starts or is switched: pending inputs are not for its messages. */
  clearPending(): void;
}

/** The text parts of a user message, as Pi built it from the input's text (images aside). */
function messageText(message: object): string {
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((c: unknown) => {
      const part = c as { type?: unknown; text?: unknown } | null;
      return part?.type === "text" && typeof part.text === "string" ? part.text : "";
    })
    .join("");
}

export function createUserProvenanceBook(): UserProvenanceBook {
  const pending: Pending[] = [];
  const recorded = new WeakMap<object, UserProvenance>();
  return {
    input(event) {
      const user = event.source === "interactive" || event.source === "rpc";
      pending.push({ text: event.text, provenance: user ? { by: "user", typed: event.text } : { by: "extension" } });
      if (pending.length > MAX_PENDING) pending.splice(0, pending.length - MAX_PENDING);
    },
    userMessage(message) {
      if (recorded.has(message)) return;
      const text = messageText(message);
      // Pi appends notes on resized images after the text: `${text}\n\n${hints}`.
      let i = pending.findIndex((p) => p.text === text || text.startsWith(`${p.text}\n\n`));
      // Expanded: a skill command or a prompt template (a different text, from a typed `/name args`).
      if (i < 0) i = pending.findIndex((p) => /^\/\S/.test(p.text));
      if (i < 0) return;
      const [p] = pending.splice(i, 1);
      if (p) recorded.set(message, p.provenance);
    },
    provenanceOf: (message) => recorded.get(message),
    clearPending() {
      pending.length = 0;
    },
  };
}
