// Where a slash command came from: the user's typing, or another extension (P10, issue 23). Pi runs
// an extension command inside AgentSession.prompt, before its input event, and gives the handler
// no source: the input event, which tells the user's input ("interactive", "rpc") from an
// extension's pi.sendUserMessage ("extension"), never fires for a command. Every way a command
// reaches a handler goes through prompt(text, { source }) (the editor, `pi -p`, an RPC prompt, and
// sendUserMessage with source "extension"), so prompt is wrapped, once per process, to run in an
// async context that carries that source; the handler reads it. A command sent by an extension's
// handler runs in a prompt of its own, so it never borrows the user's context it was sent from.
//
// What this cannot see: code aimed at auto mode's internals (patching AgentSession again, running
// in this context by hand). Extensions share one process; this stops what Pi's API relays.

import { AsyncLocalStorage } from "node:async_hooks";
import { AgentSession } from "@earendil-works/pi-coding-agent";
import type { CommandOrigin } from "../commands/authority.ts";

const KEY = Symbol.for("pi-auto-mode:prompt-source");

type Prompt = (this: unknown, text: string, options?: { readonly source?: string }) => Promise<void>;

/** Wraps `proto.prompt` (once per process: a reload loads this module again) and reads the source of the command running now. */
export function commandOrigins(proto: { prompt: Prompt } = AgentSession.prototype as unknown as { prompt: Prompt }): () => CommandOrigin {
  const g = globalThis as { [KEY]?: AsyncLocalStorage<string> };
  let storage = g[KEY];
  if (!storage) {
    const sources = new AsyncLocalStorage<string>();
    const original = proto.prompt;
    // Pi's own default: a prompt without a source is the interactive user's (agent-session.js).
    proto.prompt = function (this: unknown, text, options) {
      return sources.run(options?.source ?? "interactive", () => original.call(this, text, options));
    };
    Object.defineProperty(globalThis, KEY, { value: sources, writable: false, configurable: false, enumerable: false });
    storage = sources;
  }
  const s = storage;
  return () => {
    const source = s.getStore();
    if (source === undefined) return "unknown";
    return source === "interactive" || source === "rpc" ? "typed" : "extension";
  };
}
