// The user's commands. Only the user can run them (a model's text is never a command), and no
// tool call can reach them: the settings they change are out of the model's reach (P10).

import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { RequestedMode } from "../state/effective.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import { MODE_ENTRY_TYPE, type ModeEntry } from "../state/session.ts";

export interface CommandDeps {
  readonly runtime: RuntimeState;
  /** Refresh the status line after a change. */
  readonly refresh: (ctx: ExtensionCommandContext) => void;
}

const MODES: readonly RequestedMode[] = ["auto", "unrestricted"];

function say(ctx: ExtensionCommandContext, text: string, level: "info" | "warning" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

export function setMode(pi: ExtensionAPI, deps: CommandDeps, ctx: ExtensionCommandContext, mode: RequestedMode): void {
  deps.runtime.setRequested(mode);
  pi.appendEntry<ModeEntry>(MODE_ENTRY_TYPE, { mode });
  deps.refresh(ctx);
  say(ctx, mode === "unrestricted" ? "This runtime is now unrestricted: tool calls run without auto mode's checks (hard denies still apply)." : "This runtime is now in auto mode.");
}

export function registerPermCommands(pi: ExtensionAPI, deps: CommandDeps): void {
  pi.registerCommand("perm", {
    description: "Auto mode for this runtime: /perm auto | /perm unrestricted",
    getArgumentCompletions: (prefix) => MODES.filter((m) => m.startsWith(prefix.trim())).map((m) => ({ value: m, label: m })),
    handler: async (args, ctx) => {
      const arg = args.trim();
      if (arg === "") {
        if (!ctx.hasUI) {
          say(ctx, `Usage: /perm auto | /perm unrestricted (this runtime is ${deps.runtime.session().requested})`);
          return;
        }
        const picked = await ctx.ui.select("Permission mode for this runtime", [...MODES]);
        if (picked === "auto" || picked === "unrestricted") setMode(pi, deps, ctx, picked);
        return;
      }
      if (arg !== "auto" && arg !== "unrestricted") {
        say(ctx, `Unknown mode "${arg}". Usage: /perm auto | /perm unrestricted`, "error");
        return;
      }
      setMode(pi, deps, ctx, arg);
    },
  });

  pi.registerCommand("perm-enabled", {
    description: "Turn auto mode on or off for every runtime of this user: /perm-enabled on | off",
    getArgumentCompletions: (prefix) => ["on", "off"].filter((m) => m.startsWith(prefix.trim())).map((m) => ({ value: m, label: m })),
    handler: async (args, ctx) => {
      const arg = args.trim();
      if (arg !== "on" && arg !== "off") {
        say(ctx, `Usage: /perm-enabled on | off (auto mode is ${deps.runtime.global.read().enabled ? "on" : "off"})`, arg === "" ? "info" : "error");
        return;
      }
      deps.runtime.global.setEnabled(arg === "on");
      deps.refresh(ctx);
      say(ctx, arg === "on" ? "Auto mode is on." : "Auto mode is off: tool calls are no longer checked.");
    },
  });
}
