// What a staged command's effects came to, in words: for the model (next to the command's own
// output), for the reviewer (the concrete summary of what is held), and for the CLI's stderr.

import { relative } from "node:path";
import type { EffectReport } from "./settle.ts";
import type { EffectCounts, EffectJudgement, HeldItem, LostFile } from "./judge.ts";
import { DENIAL_CLASSES, denialHead } from "../../policy/denial.ts";

const MAX_ITEMS = 12;

function kb(n: number): string {
  return n < 1024 ? `${n} B` : n < 2 ** 20 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 2 ** 20).toFixed(1)} MB`;
}

function list<T>(items: readonly T[], show: (t: T) => string): string {
  const shown = items.slice(0, MAX_ITEMS).map(show).join(", ");
  return items.length > MAX_ITEMS ? `${shown}, and ${items.length - MAX_ITEMS} more` : shown;
}

/**
 * Characters a name may hold that would act on whoever reads the result (a newline forging a line
 * of this report, terminal escapes, bidirectional overrides reordering what is shown): shown as
 * escapes instead. A path is a command's to choose, every byte of it.
 */
const ACTIVE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const ESCAPES: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** Text from a command (a path, a ref, a detail naming one) as one inert line. */
export function printable(text: string): string {
  const shown = text.replace(ACTIVE, (c) => ESCAPES[c] ?? `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`);
  // A path past PATH_MAX says nothing more for being shown whole.
  return shown.length > 600 ? `${shown.slice(0, 300)}…${shown.slice(-200)}` : shown;
}

/** A path as the workspace names it, shown inert. */
const relIn = (ws: string) => (p: string) => printable(ws && (p === ws || p.startsWith(`${ws}/`)) ? relative(ws, p) || "." : p);

function lostText(f: LostFile, rel: (p: string) => string): string {
  const what = f.how === "deleted" ? "deleted" : f.how === "emptied" ? "emptied" : "overwritten";
  return `${rel(f.path)} (${what}, ${kb(f.bytes)} ${f.tracked ? "of uncommitted changes" : "untracked"})`;
}

export function heldItemText(h: HeldItem, rel: (p: string) => string = (p) => p): string {
  switch (h.kind) {
    case "protected-name":
      return `changes a protected path: ${rel(h.path)} (under ${printable(h.entry)})`;
    case "lost-content":
      return `loses ${kb(h.bytes)} of content git cannot give back${h.earlier ? ` (on top of ${kb(h.earlier)} the last commands here lost)` : ""}: ${list(h.files, (f) => lostText(f, rel))}`;
    case "git-ref":
      return `${h.change === "replace-ref" ? "adds or changes" : h.change === "moved" ? "moves" : h.change === "deleted" ? "deletes" : "rewrites"} ${printable(h.ref)}: ${printable(h.detail)}`;
    case "git-file":
      return `changes ${rel(h.path)} in git's own folder: ${printable(h.detail)}`;
    case "persistence":
      return `changes ${rel(h.path)}, a file that runs code or holds credentials later`;
    case "too-many-changes":
      return `changes more than ${h.count} entries, too many to judge one by one`;
    case "permissions":
      return `makes ${rel(h.path)} writable by others (mode ${h.mode.toString(8)})`;
  }
}

/** The concrete summary of what is held, for the reviewer and the model. */
export function heldSummary(j: Extract<EffectJudgement, { verdict: "apply" | "hold" }>, workspace = ""): string {
  const rel = relIn(workspace);
  const lines = j.held.map((h) => `- ${heldItemText(h, rel)}`);
  const c = j.counts;
  lines.push(
    `(in all the command created ${c.created}, changed ${c.modified} and removed ${c.deleted} entries${c.gitChanged ? `, and ${c.gitChanged} in git's folder` : ""})`,
  );
  return lines.join("\n");
}

function countsText(c: EffectCounts): string {
  const parts = [
    c.created && `${c.created} created`,
    c.modified && `${c.modified} changed`,
    c.deleted && `${c.deleted} removed`,
    c.gitChanged && `${c.gitChanged} in .git`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(", ") : "no files";
}

/**
 * What was applied, counted from the ops that were not refused (at the judgement or at the apply):
 * one per target, a remove and a put of one path being one change.
 */
export function appliedCounts(r: Extract<EffectReport, { outcome: "applied" }>): { readonly counts: EffectCounts; readonly all: boolean } {
  const j = r.judgement;
  const refused = r.result.conflicts.map((c) => c.path);
  const isRefused = (t: string) => refused.some((p) => t === p || t.startsWith(`${p}/`));
  // Nothing refused or left out: the judgement's counts are what landed.
  if (refused.length === 0 && j.conflicts.length === 0 && j.skipped.length === 0) return { counts: j.counts, all: true };
  const kinds = new Map<string, "created" | "modified" | "deleted">();
  for (const op of j.ops) {
    if (isRefused(op.target)) continue;
    const was = kinds.get(op.target);
    if (op.kind === "remove") kinds.set(op.target, was ?? "deleted");
    else kinds.set(op.target, was === "deleted" || op.before !== null ? "modified" : (was ?? "created"));
  }
  const counts = { created: 0, modified: 0, deleted: 0, gitChanged: 0 };
  for (const [target, kind] of kinds) {
    if (target.split("/").includes(".git")) counts.gitChanged++;
    else counts[kind]++;
  }
  return { counts, all: refused.length === 0 && j.conflicts.length === 0 && j.skipped.length === 0 };
}

/** The text appended to the command's output; empty when the command changed nothing. */
export function reportText(r: EffectReport, workspace: string): string {
  const rel = relIn(workspace);
  {
    const out: string[] = [];
    if (r.outcome === "nothing") return "";
    if (r.outcome === "applied") {
      const j = r.judgement;
      const { counts, all } = appliedCounts(r);
      const landed = counts.created + counts.modified + counts.deleted + counts.gitChanged;
      // Say what landed: all of it, some of it (and below, what did not), or none of it.
      const what = all
        ? `its changes were applied (${countsText(counts)})`
        : landed === 0
          ? "none of its changes were applied"
          : `only some of its changes were applied (${countsText(counts)})`;
      out.push(
        `[auto mode] The command ran on a staged copy of the workspace; ${what}.${r.reviewed !== undefined ? ` They were held first, and the reviewer allowed them: ${printable(r.reviewed)}` : ""}`,
      );
      if (j.smallLoss.length > 0)
        out.push(
          `[auto mode] It removed or overwrote content git cannot give back: ${list(j.smallLoss, (f) => lostText(f, rel))}; the user can restore it with /perm-undo.`,
        );
      if (r.result.conflicts.length > 0 || j.conflicts.length > 0)
        out.push(
          `[auto mode] Not applied, because they also changed outside the sandbox: ${list([...j.conflicts, ...r.result.conflicts], (c) => `${rel(c.path)} (${printable(c.detail)})`)}.`,
        );
      if (j.skipped.length > 0) out.push(`[auto mode] Not applied: ${list(j.skipped, (s) => `${rel(s.path)} (${printable(s.why)})`)}.`);
      return out.join("\n");
    }
    if (r.why === "held") {
      const j = r.judgement as Extract<EffectJudgement, { verdict: "apply" | "hold" }>;
      out.push(denialHead("held-effects"));
      out.push("The command ran on a staged copy of the workspace and none of its changes were applied: they were held because the command");
      out.push(heldSummary(j, workspace));
      out.push(
        r.noReviewer
          ? "No reviewer is set, so held changes are not applied (the user can choose one with /perm-auto-model)."
          : `The reviewer did not allow them: ${printable(r.rationale ?? "no reason given")}.`,
      );
      // Without a kept copy the changes are gone: /perm-approve would have nothing to apply.
      out.push(`Next: ${r.kept ? DENIAL_CLASSES["held-effects"].next : "Nothing: these changes were not kept, so there is nothing to approve."}`);
      out.push(DENIAL_CLASSES["held-effects"].tail);
      return out.join("\n");
    }
    if (r.why === "deadline")
      return `[auto mode] None of the command's changes to the workspace were applied: ${printable(r.detail)}. Nothing was kept; run it again (in smaller steps) if its changes are wanted.`;
    if (r.why === "stopped") return `[auto mode] The command was stopped (${printable(r.detail)}), so none of its changes to the workspace were applied.`;
    return `[auto mode] None of the command's changes to the workspace were applied: ${printable(r.detail)}.`;
  }
}
