// The user's commands. A model's text is never a command and no tool call can reach them, but
// another extension can send one (pi.sendUserMessage): those that loosen anything act only on
// what the user typed (authority.ts); those that tighten or show run for anyone (P10).
// They stay usable while auto mode is off and while its global state is at fault; the global
// ones are the explicit acts that may repair a fault (P12).

import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { ConfigResult } from "../policy/config/load.ts";
import type { NetworkSpec } from "../policy/network/types.ts";
import type { RequestedMode } from "../state/effective.ts";
import type { CommitResult, GlobalRead, GlobalSnapshot, StateFault } from "../state/global.ts";
import { defaultTmpRootPath } from "../state/locations.ts";
import type { RuntimeState } from "../state/runtime-state.ts";
import { MODE_ENTRY_TYPE, type ModeEntry } from "../state/session.ts";
import { type CommandOrigin, mayLoosen } from "./authority.ts";

export interface CommandDeps {
  readonly runtime: RuntimeState;
  /** Refresh the status line after a change. */
  readonly refresh: (ctx: ExtensionCommandContext) => void;
  /** A mode or enabled change: pending reviews are aborted (their verdicts would not bind anyway). */
  readonly onModeChange?: (reason: string) => void;
  /** What `/perm` shows before its picker; without it only the mode is shown. */
  readonly status?: StatusSource;
  /** Where the command running now came from: only a typed one loosens anything (authority.ts). */
  readonly origin: () => CommandOrigin;
}

/** The facts the status view needs from the rest of the extension. */
export interface StatusSource {
  /** Why the backend is what it is: the probe's finding, or that another extension's bash replaced ours. */
  backendReason(): string;
  /** The layered configuration for this working directory. */
  config(ctx: ExtensionCommandContext): ConfigResult;
  /** This session's denials the user may still override (/perm-denials). */
  denials(ctx: ExtensionCommandContext): number;
  /** Why this copy of auto mode gates only reads (it can be written by the agent), if it does. */
  installNote?(ctx: ExtensionCommandContext): string | undefined;
}

type Level = "info" | "warning" | "error";

const MODES: readonly RequestedMode[] = ["auto", "unrestricted"];

function say(ctx: ExtensionCommandContext, text: string, level: Level = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

/** What each mode means, as the picker and the confirmations say it. */
const MEANS: Readonly<Record<RequestedMode, string>> = {
  auto: "every call is judged: hard denies and your rules first, shell commands in the OS sandbox, the rest by the reviewer where one is set",
  unrestricted: "calls run without auto mode's checks, except the hard denies, in this runtime only (a new, resumed or forked session starts in auto)",
};

const NO_REVIEWER_MEANS =
  "No reviewer model is set, so the deterministic layers and the sandbox decide alone: calls that need review are denied (choose a reviewer with /perm-auto-model provider/model [thinking]).";

/** Whether a reviewer is configured, as far as the last read of the global state can say. */
function hasReviewer(deps: CommandDeps): boolean {
  const g = deps.runtime.global.peek();
  return g.kind !== "fault" && g.snapshot.reviewer !== undefined;
}

/** The mode change a command asks for, if the user may make it from where the command came. */
export async function requestMode(pi: ExtensionAPI, deps: CommandDeps, ctx: ExtensionCommandContext, mode: RequestedMode, command: string): Promise<void> {
  if (mode === "unrestricted" && !(await mayLoosen(ctx, deps.origin(), command, "turns auto mode's checks off for this runtime", say))) return;
  setMode(pi, deps, ctx, mode);
}

export function setMode(pi: ExtensionAPI, deps: CommandDeps, ctx: ExtensionCommandContext, mode: RequestedMode): void {
  const reviewerNote = mode === "auto" && !hasReviewer(deps) ? ` ${NO_REVIEWER_MEANS}` : "";
  // Choosing the mode this runtime is in is no error and no change: nothing bound to it is dropped.
  if (deps.runtime.session().requested === mode) {
    deps.refresh(ctx);
    say(ctx, `This runtime is already ${mode === "auto" ? "in auto mode" : "unrestricted"}: ${MEANS[mode]}.${reviewerNote}`);
    return;
  }
  deps.runtime.setRequested(mode);
  deps.onModeChange?.("the permission mode changed");
  pi.appendEntry<ModeEntry>(MODE_ENTRY_TYPE, { mode });
  deps.refresh(ctx);
  say(ctx, `This runtime is now ${mode === "auto" ? "in auto mode" : "unrestricted"}: ${MEANS[mode]}.${reviewerNote}`);
}

function describeSnapshot(s: GlobalSnapshot): string {
  const reviewer = s.reviewer
    ? `reviewer ${s.reviewer.provider}/${s.reviewer.model} (${s.reviewer.engine === "classifier" ? "classifier" : `thinking ${s.reviewer.thinking}`})`
    : "no reviewer";
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

/** A picker line: the mode, what it means, and which one this runtime is in. */
function choice(mode: RequestedMode, current: RequestedMode, reviewer: boolean): string {
  const note = mode === "auto" && !reviewer ? " (no reviewer set: calls that need review are denied)" : "";
  return `${mode}${mode === current ? " (current)" : ""}: ${MEANS[mode]}${note}`;
}

export function registerPermCommands(pi: ExtensionAPI, deps: CommandDeps): void {
  const global = () => deps.runtime.global;

  pi.registerCommand("perm", {
    description: "Auto mode for this runtime: /perm auto | /perm unrestricted; no argument shows the status and a picker",
    getArgumentCompletions: (prefix) => MODES.filter((m) => m.startsWith(prefix.trim())).map((m) => ({ value: m, label: m })),
    handler: async (args, ctx) => {
      const arg = args.trim();
      if (arg === "") {
        // The view reads the state as it is now, not as the last tool call saw it.
        await global().read();
        deps.refresh(ctx);
        const view = statusView(deps, ctx);
        if (!ctx.hasUI) {
          say(ctx, `${view}\nUsage: /perm auto | /perm unrestricted`);
          return;
        }
        ctx.ui.notify(view, "info");
        const current = deps.runtime.session().requested;
        const reviewer = hasReviewer(deps);
        // No lock is held here or anywhere around this dialog: /perm only changes this runtime.
        const options = MODES.map((m) => choice(m, current, reviewer));
        const picked = await ctx.ui.select("Permission mode for this runtime", options);
        const mode = MODES.find((m) => picked === choice(m, current, reviewer));
        if (mode) await requestMode(pi, deps, ctx, mode, "/perm");
        return;
      }
      if (arg !== "auto" && arg !== "unrestricted") {
        say(ctx, `Unknown mode "${arg}". Usage: /perm auto | /perm unrestricted`, "error");
        return;
      }
      await global().read();
      await requestMode(pi, deps, ctx, arg, `/perm ${arg}`);
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
      if (arg === "off" && !(await mayLoosen(ctx, deps.origin(), "/perm-enabled off", "turns auto mode off for every Pi of this user", say))) return;
      const result = await global().setEnabled(arg === "on");
      // This session says so now; every other running session is told at its next tool call.
      deps.runtime.acknowledgeGlobal();
      deps.onModeChange?.("auto mode was turned on or off");
      deps.refresh(ctx);
      const m = commitMessage(
        result,
        (s) =>
          s.enabled
            ? "Auto mode is on for every Pi of this user (other running sessions are told at their next tool call)"
            : "Auto mode is off for every Pi of this user: tool calls are no longer checked, except the hard denies (wiping your home or a disk, auto mode's own files), which stay denied; other running sessions are told at their next tool call",
        global().location,
      );
      say(ctx, m.text, m.level);
    },
  });

  pi.registerCommand("perm-repair", {
    description: "Repair auto mode's damaged global state, keeping the surviving settings",
    handler: async (_args, ctx) => {
      // A repaired state gates with what survived instead of denying: it loosens the fault's floor.
      if (!(await mayLoosen(ctx, deps.origin(), "/perm-repair", "rewrites auto mode's global state, ending the denials a damaged state imposes", say))) return;
      const result = await global().repair();
      deps.runtime.acknowledgeGlobal();
      deps.refresh(ctx);
      const m = commitMessage(result, () => "Auto mode's global state is repaired", global().location);
      say(ctx, m.text, m.level);
    },
  });
}

/** At most this many allow entries are listed; the rest are counted. */
const NETWORK_SHOWN = 8;

/**
 * The one place to look: the effective mode and why, where shell commands run, the reviewer, the
 * network allowlist, the writable roots, the rules and this session's overridable denials.
 */
export function statusView(deps: CommandDeps, ctx: ExtensionCommandContext): string {
  const runtime = deps.runtime;
  const src = deps.status;
  const config = src?.config(ctx);
  const health = config === undefined || config.ok ? "ok" : "fault";
  const mode = runtime.effective(health);
  const g = runtime.global.peek();
  const backend = runtime.backend();
  const reason = src?.backendReason() ?? "";
  const lines: string[] = [`Auto mode: ${runtime.label(health)}`];
  const why = ((): string => {
    if (g.kind === "fault") return faultMessage(g.fault, runtime.global.location);
    if (mode === "off")
      return "turned off with /perm-enabled off, for every Pi of this user: tool calls are not checked, except the hard denies, which stay denied (/perm-enabled on turns it back on)";
    if (config && !config.ok) return `the configuration ${config.path} is invalid (${config.message}): every call is denied until it is fixed`;
    if (mode === "unrestricted") return `/perm unrestricted: ${MEANS.unrestricted}`;
    if (mode === "auto-sandbox-unavailable") return "the OS sandbox is unavailable (see below): every shell command is denied";
    if (mode === "auto-review-only") return "there is no OS sandbox here: a shell command that is not plainly harmless needs the reviewer";
    return MEANS.auto;
  })();
  lines.push(`  why: ${why}`);
  const install = src?.installNote?.(ctx);
  if (install) lines.push(`  also: ${install}`);
  lines.push(`Shell commands: ${backendLine(backend, reason)}`);
  const reviewer = g.kind === "fault" ? undefined : g.snapshot.reviewer;
  lines.push(
    `Reviewer: ${
      reviewer
        ? reviewer.engine === "classifier"
          ? `${reviewer.provider}/${reviewer.model} (classifier engine: soft and hazard conditions judged by a classifier model)`
          : `${reviewer.provider}/${reviewer.model} (thinking ${reviewer.thinking}, chat reviewer engine)`
        : "none: calls that need review are denied (choose one with /perm-auto-model provider/model)"
    }`,
  );
  if (config?.ok) {
    const c = config.config;
    lines.push(`Network for sandboxed commands: ${networkLine(c.network, c.networkOrigins.allow, backend)}`);
    lines.push(`Writable roots: ${ctx.cwd} (the workspace), ${c.tmpRoot ?? defaultTmpRootPath()} (the temporary root)`);
    lines.push(`Rules: ${ruleCounts(c)}`);
  } else if (config) lines.push("Network, writable roots, rules: unknown until the configuration is fixed");
  if (src) {
    const n = src.denials(ctx);
    lines.push(`Recent denials you may override: ${n === 0 ? "none" : `${n} (/perm-denials lists them, /perm-approve N runs one once)`}`);
  }
  return lines.join("\n");
}

function backendLine(backend: ReturnType<RuntimeState["backend"]>, reason: string): string {
  const why = reason ? ` (${reason})` : "";
  switch (backend) {
    case "sandboxed":
      return `in the OS sandbox, staged: a command's changes to the workspace are judged before they land${why}`;
    case "sandboxed-unstaged":
      return `in the OS sandbox, not staged: commands write the workspace in place, git writes need review, and commands have no network${why}`;
    case "review-only":
      return `on the host: there is no OS sandbox here${why}`;
    case "unavailable":
      return `denied: the OS sandbox is unavailable${why}`;
  }
}

function networkLine(n: NetworkSpec, origins: readonly string[], backend: ReturnType<RuntimeState["backend"]>): string {
  if (backend === "review-only") return "the host's own (commands run on the host here)";
  if (backend === "unavailable") return "none (shell commands are denied)";
  if (backend !== "sandboxed") return "none (only a staged sandbox has network)";
  if (n.allow.length === 0) return `none ("allow": [] in your configuration)`;
  const shown = n.allow.slice(0, NETWORK_SHOWN).join(", ");
  const more = n.allow.length > NETWORK_SHOWN ? ` and ${n.allow.length - NETWORK_SHOWN} more` : "";
  const whose = origins.every((o) => o === "default") ? "the default list" : "your list";
  const deny = n.deny.length > 0 ? `; ${n.deny.length} denied` : "";
  const unlisted = n.reviewUnlisted ? "; an unlisted destination is asked of the reviewer" : "; anything unlisted is refused";
  return `${shown}${more} (${whose}${deny}${unlisted})`;
}

function ruleCounts(c: Extract<ConfigResult, { ok: true }>["config"]): string {
  const all = [...c.allow, ...c.review, ...c.deny];
  const user = all.filter((r) => r.origin === "user").length;
  const project = all.length - user;
  const kinds = `${c.allow.length} allow, ${c.review.length} review, ${c.deny.length} deny`;
  return all.length === 0 ? "none" : `${user} from your configuration, ${project} from this project (${kinds})`;
}
