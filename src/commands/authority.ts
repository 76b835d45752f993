// Only what the user typed loosens auto mode (issue 23): approving a denial, breaking the glass,
// unrestricted, off, repairing, choosing a reviewer or engine. Another extension can pass text it
// did not write on as a command (pi.sendUserMessage with expandPromptTemplates: a model-callable
// "run a slash command" tool, a chat bridge, a file trigger); such a command is refused and says
// why. Commands that only tighten or show stay open to every source.

import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";

/** typed: the user's editor, `pi -p` or an RPC prompt; extension: pi.sendUserMessage; unknown: auto mode could not tell. */
export type CommandOrigin = "typed" | "extension" | "unknown";

type Say = (ctx: ExtensionCommandContext, text: string, level: "error") => void;

/**
 * Whether a loosening command may act. `command` is what was invoked, `loosens` says what it would
 * loosen. An extension's is refused; where auto mode cannot tell, only an answer in Pi's own
 * dialog (which no extension can give) lets it act, and without a UI it is refused.
 */
export async function mayLoosen(ctx: ExtensionCommandContext, origin: CommandOrigin, command: string, loosens: string, say: Say): Promise<boolean> {
  if (origin === "typed") return true;
  const head = `Nothing was changed: ${command} ${loosens}, so it acts only on what you type yourself in Pi`;
  if (origin === "extension") {
    say(ctx, `${head}, and this one was sent by another extension (pi.sendUserMessage), not typed. Type it yourself to run it.`, "error");
    return false;
  }
  if (ctx.hasUI) {
    const yes = await ctx.ui.confirm(
      `Did you type ${command}?`,
      `It ${loosens}. Auto mode could not tell whether you typed it or another extension sent it; only your answer here runs it.`,
    );
    if (yes === true) return true;
  }
  say(ctx, `${head}, and auto mode could not tell that you typed this one.`, "error");
  return false;
}
