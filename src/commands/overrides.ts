// The user's overrides (P14): /perm-denials lists this session's denials a human may override,
// /perm-approve [N] approves one exact retry of one of them. A model's text is never a command,
// and a command another extension sends is refused (authority.ts): only the user creates a grant.

import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import {
  type Approval,
  GRANT_TTL_MS,
  type GrantProvenance,
  type HeldChanges,
  type OverridableReason,
  type Overrides,
  type RecentDenial,
} from "../grants/overrides.ts";
import { escapeHidden } from "../grants/action-view.ts";
import { type CommandOrigin, mayLoosen } from "./authority.ts";

export const GRANT_ENTRY_TYPE = "pi-auto-mode/grant";
/** /perm-denials' list, kept in the session for the user (a custom entry: never sent to the model). */
export const DENIALS_ENTRY_TYPE = "pi-auto-mode/denials";

export interface DenialsEntry {
  readonly lines: readonly string[];
  readonly at: number;
}
export const APPROVAL_MESSAGE_TYPE = "pi-auto-mode/approval";

/** The session's record of an approval (never sent to the model), for the audit. */
export interface GrantEntry {
  readonly kind: GrantProvenance | "held-effects-approval";
  readonly denialToolCallId: string;
  readonly tool: string;
  readonly target: string;
  readonly reason: OverridableReason;
  readonly hash: string;
  /** When the grant ends; none for held effects, which are applied at once. */
  readonly expiresAt?: number;
  /** What applying held effects did. */
  readonly applied?: number;
  readonly refused?: string;
  readonly at: number;
}

const REASON_WORDS: Readonly<Record<OverridableReason, string>> = {
  "reviewer-denied": "the reviewer denied it",
  "no-reviewer": "no reviewer is configured",
  "reviewer-unavailable": "the reviewer was unavailable",
  "breaker-open": "automatic review was paused for this turn",
  "held-effects": "its changes were held (approving applies them as they were, without running it again)",
};

function clock(at: number): string {
  return new Date(at).toTimeString().slice(0, 8);
}

/** One line per denial: number, tool, target (and what the line leaves out), why, when. */
export function denialLines(list: readonly RecentDenial[]): string[] {
  return list.map(
    (d, i) =>
      `${i + 1}. ${d.target}${d.note ? ` [${d.note}: /perm-approve ${i + 1} shows it all]` : ""}${d.escalation ? " (outside the sandbox)" : ""} — ${REASON_WORDS[d.reason]}${d.risk ? ` (${d.risk} risk)` : ""} · ${clock(d.at)}`,
  );
}

/** What an approval asks about: the whole action, and where it would run. */
export function approvalText(d: RecentDenial): string {
  const where = d.held
    ? `Approving applies the changes this command left, as they were: ${escapeHidden(d.held.summary)}`
    : d.escalation
      ? "Approved, the retry runs once outside the sandbox, on this machine, as you."
      : "Approved, the agent's exact retry runs once, where a reviewer's allow would run it.";
  return [`Denied: ${REASON_WORDS[d.reason]}${d.risk ? ` (${d.risk} risk)` : ""}.`, ...d.action, where].join("\n");
}

function say(ctx: ExtensionCommandContext, text: string, level: "info" | "warning" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stdout.write(`${text}\n`);
}

/** What the agent is told after an approval: retry exactly that call, once. */
export function approvalMessage(a: Approval & { kind: "granted" }): string {
  const seconds = Math.round(GRANT_TTL_MS / 1000);
  return (
    `The user approved, once, the ${a.denial.tool} call that auto mode denied (tool call ${a.denial.toolCallId}: ${a.denial.target}). ` +
    `Issue exactly that call again now, with the same arguments; any change, or a retry after ${seconds} s, is judged afresh.`
  );
}

export interface OverrideCommandDeps {
  readonly overrides: Overrides;
  readonly sessionId: (ctx: ExtensionCommandContext) => string;
  /** Why break glass is off here (the user's or the project's configuration, or a faulty one), if it is. */
  readonly breakGlassOff: (ctx: ExtensionCommandContext) => string | undefined;
  /** Where the command running now came from: only a typed one approves (authority.ts). */
  readonly origin: () => CommandOrigin;
}

export function registerOverrideCommands(pi: ExtensionAPI, deps: OverrideCommandDeps): void {
  const listText = (ctx: ExtensionCommandContext): string | undefined => {
    const lines = denialLines(deps.overrides.list(deps.sessionId(ctx)));
    return lines.length > 0 ? `Denials you may approve once (/perm-approve N):\n${lines.join("\n")}` : undefined;
  };

  // Drawn as plain lines, cut to the width (no Pi UI library needed for that).
  pi.registerEntryRenderer<DenialsEntry>(DENIALS_ENTRY_TYPE, (entry) => {
    const lines = ["Denials you may approve once (/perm-approve N):", ...(entry.data?.lines ?? [])];
    return { render: (width: number) => lines.map((l) => (l.length > width ? `${l.slice(0, Math.max(0, width - 1))}…` : l)), invalidate() {} };
  });

  pi.registerCommand("perm-denials", {
    description: "This session's recent denials you may approve once with /perm-approve N",
    handler: async (_args, ctx) => {
      const lines = denialLines(deps.overrides.list(deps.sessionId(ctx)));
      // In the session view a custom entry, never sent to the model; headless, printed.
      if (ctx.hasUI && lines.length > 0) pi.appendEntry<DenialsEntry>(DENIALS_ENTRY_TYPE, { lines, at: Date.now() });
      else say(ctx, listText(ctx) ?? "No denials in this session that you could approve.");
    },
  });

  pi.registerCommand("perm-approve", {
    description: "Approve one exact retry of a recent denial: /perm-approve [N] (see /perm-denials)",
    handler: async (args, ctx) => {
      const sessionId = deps.sessionId(ctx);
      const list = deps.overrides.list(sessionId);
      let n: number;
      const arg = args.trim();
      if (arg === "" && (list.length === 0 || !ctx.hasUI)) {
        say(ctx, listText(ctx) ?? "No denials in this session that you could approve.");
        return;
      }
      if (!(await mayLoosen(ctx, deps.origin(), `/perm-approve${arg ? ` ${arg}` : ""}`, "lets a call auto mode denied run once", say))) return;
      if (arg === "") {
        const lines = denialLines(list);
        const picked = await ctx.ui.select("Approve one exact retry of", lines);
        if (picked === undefined) return;
        n = lines.indexOf(picked) + 1;
      } else if (/^[1-9][0-9]*$/.test(arg)) n = Number(arg);
      else {
        say(ctx, `"${arg}" is not a denial number. Usage: /perm-approve [N] (see /perm-denials)`, "error");
        return;
      }
      // The whole action first: in a dialog, or printed before it takes effect.
      const shown = deps.overrides.list(sessionId)[n - 1];
      if (shown) {
        const text = approvalText(shown);
        if (ctx.hasUI) {
          if (!(await ctx.ui.confirm(`Approve once denial ${n}, exactly this?`, text))) {
            say(ctx, "Nothing was approved.");
            return;
          }
          // Newer denials are listed first: N may name another one after the dialog.
          if (deps.overrides.list(sessionId)[n - 1]?.id !== shown.id) {
            say(ctx, "Nothing was approved: the list of denials changed while you were asked; see /perm-denials.", "error");
            return;
          }
        } else say(ctx, `Approving denial ${n}, exactly this:\n${text}`);
      }
      const approval = deps.overrides.approve(sessionId, n);
      if (approval.kind === "refused") {
        say(ctx, `Nothing was approved: ${approval.why}.`, "error");
        return;
      }
      if (approval.kind === "apply-held") {
        await applyHeld(ctx, approval.denial);
        return;
      }
      granted(ctx, approval);
    },
  });

  pi.registerCommand("perm-break-glass", {
    description: "Override a reviewer's critical denial of the last five minutes, once, after typing a confirmation phrase",
    handler: async (args, ctx) => {
      const arg0 = args.trim();
      if (!(await mayLoosen(ctx, deps.origin(), `/perm-break-glass${arg0 ? ` ${arg0}` : ""}`, "lets a call the reviewer called critical run once", say)))
        return;
      // Typing a phrase shown on the screen is the point: there is no headless break glass.
      if (!ctx.hasUI) {
        say(ctx, "Break glass needs Pi's interactive interface: it asks you to confirm and type a phrase.", "error");
        return;
      }
      const off = deps.breakGlassOff(ctx);
      if (off) {
        say(ctx, `Break glass is off: ${off}.`, "error");
        return;
      }
      const sessionId = deps.sessionId(ctx);
      const list = deps.overrides.critical(sessionId);
      if (list.length === 0) {
        say(ctx, "No critical denial from the last five minutes in this session.");
        return;
      }
      let n = 1;
      const arg = args.trim();
      if (/^[1-9][0-9]*$/.test(arg)) n = Number(arg);
      else if (list.length > 1) {
        const lines = denialLines(list);
        const picked = await ctx.ui.select("Break the glass for", lines);
        if (picked === undefined) return;
        n = lines.indexOf(picked) + 1;
      }
      const started = deps.overrides.challenge(sessionId, n);
      if (started.kind === "refused") {
        say(ctx, `Nothing was approved: ${started.why}.`, "error");
        return;
      }
      const { denial, phrase } = started.challenge;
      const details = [`The reviewer rated this critical: ${escapeHidden(denial.rationale)}`, approvalText(denial)].join("\n");
      if (!(await ctx.ui.confirm("Break glass: run what the reviewer called critical, once?", details))) {
        deps.overrides.breakGlass(started.challenge, undefined);
        say(ctx, "Nothing was approved.");
        return;
      }
      const typed = await ctx.ui.input(`Type ${phrase} within 60 s to break the glass`, phrase.replace(/[A-Z0-9]/g, "_"));
      const approval = deps.overrides.breakGlass(started.challenge, typed);
      if (approval.kind === "refused") {
        say(ctx, `Nothing was approved: ${approval.why}.`, "error");
        return;
      }
      granted(ctx, approval);
    },
  });

  async function applyHeld(ctx: ExtensionCommandContext, denial: RecentDenial & { readonly held: HeldChanges }): Promise<void> {
    const r = await denial.held.apply();
    pi.appendEntry<GrantEntry>(GRANT_ENTRY_TYPE, {
      kind: "held-effects-approval",
      denialToolCallId: denial.toolCallId,
      tool: denial.tool,
      target: denial.target,
      reason: denial.reason,
      hash: denial.hash,
      ...(r.kind === "applied" ? { applied: r.applied } : { refused: r.why }),
      at: Date.now(),
    });
    if (r.kind === "refused") {
      say(ctx, `Nothing was applied: ${r.why}.`, "error");
      return;
    }
    say(ctx, `Applied the held changes of ${denial.target} (${r.applied} change${r.applied === 1 ? "" : "s"}); /perm-undo takes them back.`);
    pi.sendMessage(
      {
        customType: APPROVAL_MESSAGE_TYPE,
        content: `The user approved the held changes of your earlier command (tool call ${denial.toolCallId}: ${denial.target}), and they are now applied to the workspace as that command left them. Do not run it again.`,
        display: true,
      },
      { triggerTurn: true },
    );
  }

  function granted(ctx: ExtensionCommandContext, approval: Approval & { kind: "granted" }): void {
    const { denial, grant } = approval;
    pi.appendEntry<GrantEntry>(GRANT_ENTRY_TYPE, {
      kind: grant.by,
      denialToolCallId: denial.toolCallId,
      tool: denial.tool,
      target: denial.target,
      reason: denial.reason,
      hash: grant.hash,
      expiresAt: grant.expiresAt,
      at: Date.now(),
    });
    const how = grant.by === "break-glass" ? "Glass broken, once" : "Approved once";
    say(ctx, `${how}: ${denial.target}. The agent is asked to retry exactly that call within ${Math.round(GRANT_TTL_MS / 1000)} s.`);
    pi.sendMessage({ customType: APPROVAL_MESSAGE_TYPE, content: approvalMessage(approval), display: true }, { triggerTurn: true });
  }
}
