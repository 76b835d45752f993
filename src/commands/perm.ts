// The user's commands. Only the user can run them (a model's text is never a command), and no
// tool call can reach them: the settings they change are out of the model's reach (P10).
// They stay usable while auto mode is off and while its global state is at fault; the global
// ones are the explicit acts that may repair a fault (P12).

import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { RequestedMode } from "../state/effective.ts";
import type { CommitResult, GlobalRead, GlobalSnapshot, StateFault } from "../state/global.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import { MODE_ENTRY_TYPE, type ModeEntry } from "../state/session.ts";

export interface CommandDeps {
  readonly runtime: RuntimeState;
  /** Refresh the status line after a change. */
  readonly refresh: (ctx: ExtensionCommandContext) => void;
  /** A mode or enabled change: pending reviews are aborted (their verdicts would not bind anyway). */
  readonly onModeChange?: (reason: string) => void;
}

type Level = "info" | "warning" | "error";

const MODES: readonly RequestedMode[] = ["auto", "unrestricted"];

function say(ctx: ExtensionCommandContext, text: string, level: Level = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

export function setMode(pi: ExtensionAPI, deps: CommandDeps, ctx: ExtensionCommandContext, mode: RequestedMode): void {
  deps.runtime.setRequested(mode);
  deps.onModeChange?.("the permission mode changed");
  pi.appendEntry<ModeEntry>(MODE_ENTRY_TYPE, { mode });
  deps.refresh(ctx);
  say(
    ctx,
    mode === "unrestricted"
      ? "This runtime is now unrestricted: tool calls run without auto mode's checks (hard denies still apply)."
      : "This runtime is now in auto mode.",
  );
}

function describeSnapshot(s: GlobalSnapshot): string {
  const reviewer = s.reviewer ? `reviewer ${s.reviewer.provider}/${s.reviewer.model} (thinking ${s.reviewer.thinking})` : "no reviewer";
  return `auto mode ${s.enabled ? "on" : "off"}, ${reviewer}, revision ${s.revision}`;
}

export function faultMessage(f: StateFault, location: string): string {
  const head = `Auto mode's global state in ${location} is damaged: ${f.detail}. Until it is repaired, every call that needs review or the sandbox is denied.`;
  if (f.floor === undefined) return `${head} ${unrepairableAdvice(location)}`;
  return `${head} Run /perm-repair to rewrite it${f.survivor ? " with the surviving settings" : " with defaults (on, no reviewer)"}, or /perm-enabled on|off.`;
}

function unrepairableAdvice(location: string): string {
  return (
    "It cannot be repaired safely: neither revision watermark survived, so a new revision could repeat one a reviewer's verdict was bound to. " +
    `Quit every running Pi, delete ${location}, then start Pi again: auto mode starts fresh (on, no reviewer).`
  );
}

function describeRead(r: GlobalRead, location: string): string {
  switch (r.kind) {
    case "missing":
      return "auto mode is on (nothing saved yet)";
    case "ok":
      return describeSnapshot(r.snapshot);
    case "fault":
      return faultMessage(r.fault, location);
  }
}

/** What to tell the user about a commit, and how loudly. */
export function commitMessage(result: CommitResult, done: (s: GlobalSnapshot) => string, location: string): { text: string; level: Level } {
  switch (result.kind) {
    case "committed": {
      const repaired = result.repaired
        ? `Repaired the damaged global state (${result.repaired.detail})${result.repaired.survivor ? "" : "; the saved settings were lost, so defaults apply where this command set nothing"}. `
        : "";
      return { text: `${repaired}${done(result.snapshot)} (${describeSnapshot(result.snapshot)}).`, level: result.repaired ? "warning" : "info" };
    }
    case "unchanged":
      return { text: `Nothing to repair: ${describeRead(result.read, location)}.`, level: "info" };
    case "refused":
      return {
        text: result.unrepairable
          ? `Nothing was changed. Auto mode's global state in ${location} is damaged: ${result.fault.detail}. ${unrepairableAdvice(location)}`
          : `Nothing was changed: ${faultMessage(result.fault, location)}`,
        level: "error",
      };
    case "failed":
      return { text: `Auto mode's global state could not be saved: ${result.message}. Run /perm-enabled to see what is stored now.`, level: "error" };
  }
}

/** `/perm auto` needs a reviewer: without one, auto mode would deny every call that needs review. */
async function autoRefusal(deps: CommandDeps): Promise<string | undefined> {
  const r = await deps.runtime.global.read();
  if (r.kind !== "fault" && r.snapshot.reviewer === undefined)
    return "No reviewer model is configured, so the mode was not changed. Choose one with /perm-auto-model provider/model [thinking]; that also switches this runtime to auto.";
  return undefined;
}

export function registerPermCommands(pi: ExtensionAPI, deps: CommandDeps): void {
  const global = () => deps.runtime.global;
  const trySetMode = async (ctx: ExtensionCommandContext, mode: RequestedMode) => {
    const refusal = mode === "auto" ? await autoRefusal(deps) : undefined;
    if (refusal) say(ctx, refusal, "error");
    else setMode(pi, deps, ctx, mode);
  };

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
        // No lock is held here or anywhere around this dialog: /perm only changes this runtime.
        const picked = await ctx.ui.select("Permission mode for this runtime", [...MODES]);
        if (picked === "auto" || picked === "unrestricted") await trySetMode(ctx, picked);
        return;
      }
      if (arg !== "auto" && arg !== "unrestricted") {
        say(ctx, `Unknown mode "${arg}". Usage: /perm auto | /perm unrestricted`, "error");
        return;
      }
      await trySetMode(ctx, arg);
    },
  });

  pi.registerCommand("perm-enabled", {
    description: "Turn auto mode on or off for every runtime of this user: /perm-enabled on | off",
    getArgumentCompletions: (prefix) => ["on", "off"].filter((m) => m.startsWith(prefix.trim())).map((m) => ({ value: m, label: m })),
    handler: async (args, ctx) => {
      const arg = args.trim();
      if (arg !== "on" && arg !== "off") {
        const r = await global().read();
        deps.refresh(ctx);
        const level: Level = arg !== "" ? "error" : r.kind === "fault" ? "warning" : "info";
        say(ctx, `Usage: /perm-enabled on | off (${describeRead(r, global().location)})`, level);
        return;
      }
      const result = await global().setEnabled(arg === "on");
      deps.onModeChange?.("auto mode was turned on or off");
      deps.refresh(ctx);
      const m = commitMessage(
        result,
        (s) => (s.enabled ? "Auto mode is on for every Pi of this user" : "Auto mode is off for every Pi of this user: tool calls are no longer checked"),
        global().location,
      );
      say(ctx, m.text, m.level);
    },
  });

  pi.registerCommand("perm-repair", {
    description: "Repair auto mode's damaged global state, keeping the surviving settings",
    handler: async (_args, ctx) => {
      const result = await global().repair();
      deps.refresh(ctx);
      const m = commitMessage(result, () => "Auto mode's global state is repaired", global().location);
      say(ctx, m.text, m.level);
    },
  });
}
