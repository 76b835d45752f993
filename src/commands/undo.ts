// `/perm-undo [N]`: undo the last N commands whose staged changes auto mode applied in this
// session's workspace (default 1), newest first, refusing where a file changed since. Only the
// user runs it; the model cannot (it is a command, not a tool).

import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { realpathSync } from "node:fs";
import { effectStore } from "../sandbox/effects/store-paths.ts";

function say(ctx: ExtensionCommandContext, text: string, level: "info" | "warning" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

export function registerUndoCommand(pi: ExtensionAPI): void {
  pi.registerCommand("perm-undo", {
    description: "Undo the last N commands whose staged changes auto mode applied (default 1); 'list' shows them",
    handler: async (args, ctx) => {
      const arg = args.trim();
      let workspace: string;
      try {
        workspace = realpathSync(ctx.cwd);
      } catch {
        say(ctx, `The workspace ${ctx.cwd} does not exist any more.`, "error");
        return;
      }
      const store = effectStore(getAgentDir());
      // The undo machinery is loaded when the command runs, not with Pi.
      const { listUndo, undoLast } = await import("../sandbox/effects/undo.ts");
      if (arg === "list") {
        const entries = listUndo(store, workspace);
        say(
          ctx,
          entries.length === 0
            ? "Nothing to undo in this workspace."
            : entries
                .map(
                  (e, i) =>
                    `${i + 1}. ${e.manifest.command.split("\n")[0]!.slice(0, 100)} (${e.manifest.ops.length} change(s), ${new Date(e.manifest.at).toLocaleTimeString()})`,
                )
                .join("\n"),
        );
        return;
      }
      const steps = arg === "" ? 1 : Number(arg);
      if (!Number.isInteger(steps) || steps < 1) {
        say(ctx, `/perm-undo takes a positive number of commands to undo, or 'list' (not ${JSON.stringify(arg)}).`, "error");
        return;
      }
      const r = undoLast(store, workspace, steps);
      const done = r.undone.map((u) => `Undone: ${u.command.split("\n")[0]!.slice(0, 100)} (${u.restored} change(s) restored).`);
      if (r.ok) say(ctx, done.join("\n"));
      else say(ctx, [...done, `${r.undone.length > 0 ? "Stopped: " : "Nothing was undone: "}${r.refused}.`].join("\n"), "warning");
    },
  });
}
