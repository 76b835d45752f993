// Rule suggestions from the audit: the allow rules that would have spared reviews the user (or the
// reviewer) kept saying yes to, and nothing that was ever refused.
//
// A suggestion is evidence of preference, not proof of safety: it says the same shape was approved
// often and refused never in the window, nothing more. So it is made narrowly:
// - evidence is a human approval (outcome "approved") or a reviewer's allow (a review route that
//   ran), counted only from rows written under the current schema (`since === SCHEMA_VERSION`):
//   data from before a migration never makes a suggestion;
// - a denial, held effects, a break glass or a failure anywhere in the window rules a shape out,
//   and so does one the suggested rule would also match (rules.ts: a rule's `*` matches any text);
// - the rule's pattern is the template itself, every fixed word kept, so it is no broader than what
//   was approved; a template that cannot be said that way is held back with the reason: compound
//   commands, redirections, variable assignments, a program named by path, only the program named,
//   an interpreter or a program that runs its arguments, a protected name, and what an allow rule
//   does not spare anyway (protected places, escalations out of the sandbox), and any tool but
//   bash: a rule can name it but not narrow its input, so it would allow every call of it. Pi-free.

import { compileRule, ruleMatches } from "../policy/rules.ts";
import { protectedComponent } from "../policy/places.ts";
import type { AllowRuleSpec } from "../policy/config/schema.ts";
import { GUARDED } from "../policy/route.ts";
import { SCHEMA_VERSION, type DailyRow } from "./store.ts";
import { STAR, UNREADABLE_TEMPLATE } from "./templates.ts";

/** Said with every suggestion, in the text report and the JSON. */
export const SUGGESTION_CAVEAT =
  "A suggestion is evidence of preference, not proof of safety: the same shape was approved often and refused never in this window. Read each rule before copying it.";

/** The route auto mode's recorder never uses: rows observed from @gotgenes/pi-permission-system (permission-system.ts). */
export const PERMISSION_SYSTEM_ROUTE = "permission-system";

const BUILTIN_TOOLS: ReadonlySet<string> = new Set(["bash", "read", "write", "edit", "grep", "find", "ls", "codemode", "tool_search", "powershell"]);

/** Reasons an allow rule does not spare (route.ts GUARDED and the escalations): suggesting one would change nothing. */
const NOT_SPARED: ReadonlySet<string> = new Set([
  ...GUARDED,
  "sandbox-escalation",
  "uncontained-shell",
  "user-review-rule",
  "hard-deny",
  "self-protection",
  "untrusted-install",
  "user-deny-rule",
]);

/** Reasons that mean something failed, whatever the outcome: no evidence of preference survives one. */
const FAILURE_REASONS: ReadonlySet<string> = new Set([
  "gate-error",
  "config-fault",
  "sandbox-unavailable",
  "no-reviewer",
  "unsupported-input",
  "malformed-input",
  "shell-unparseable",
  "reviewer-unavailable",
  "breaker-open",
  "held-effects",
]);

/** Programs that run code given as an argument or a script: a rule for them is a rule for anything. */
const INTERPRETERS: ReadonlySet<string> = new Set([
  "sh",
  "bash",
  "zsh",
  "dash",
  "ksh",
  "mksh",
  "fish",
  "csh",
  "tcsh",
  "ash",
  "busybox",
  "python",
  "python2",
  "python3",
  "pypy",
  "pypy3",
  "node",
  "nodejs",
  "deno",
  "bun",
  "perl",
  "ruby",
  "php",
  "lua",
  "luajit",
  "Rscript",
  "osascript",
  "pwsh",
  "powershell",
  "tclsh",
  "awk",
  "gawk",
  "mawk",
  "nawk",
  "sed",
  "source",
]);

/** Programs that run their arguments as another command. */
const RUNNERS: ReadonlySet<string> = new Set([
  "env",
  "sudo",
  "doas",
  "su",
  "runuser",
  "sg",
  "xargs",
  "nohup",
  "timeout",
  "nice",
  "ionice",
  "time",
  "exec",
  "eval",
  "command",
  "builtin",
  "watch",
  "strace",
  "ltrace",
  "chroot",
  "unshare",
  "nsenter",
  "setsid",
  "stdbuf",
  "flock",
  "parallel",
  "ssh",
  "script",
  "taskset",
  "chrt",
  "firejail",
  "bwrap",
  "npx",
  "bunx",
  "pnpx",
  "uvx",
  "trap",
]);

/** `npm exec`, `pnpm dlx`: subcommands that fetch and run a package. */
const RUNNER_SUBCOMMANDS: Readonly<Record<string, ReadonlySet<string>>> = {
  npm: new Set(["exec", "x"]),
  pnpm: new Set(["dlx", "exec"]),
  yarn: new Set(["dlx", "exec"]),
  pipx: new Set(["run"]),
  uv: new Set(["run"]),
  git: new Set(["-c"]),
};

/** Words that make a program run another one (find's -exec and friends). */
const RUNNING_OPTIONS: ReadonlySet<string> = new Set(["-exec", "-execdir", "-ok", "-okdir", "--exec", "-c", "-e", "--eval", "--command"]);

const SEPARATORS = [" | ", " && ", " || ", " ; ", " & "];
const ASSIGNMENT = /^[A-Za-z_*][A-Za-z0-9_]*=\*$/;
const REDIRECTION = /^\d*[<>&|]+\*$/;

/** Why a shape is not suggested, in words the report prints. */
export type HeldBackReason =
  | "unreadable"
  | "compound"
  | "redirection"
  | "assignment"
  | "program-unknown"
  | "program-only"
  | "runs-code"
  | "protected-name"
  | "not-spared"
  | "built-in-tool"
  | "whole-tool"
  | "covers-refused";

export const HELD_BACK_WORDS: Readonly<Record<HeldBackReason, string>> = {
  unreadable: "the command could not be read into a template",
  compound: "a compound command (pipe, && or ;): a rule matches one simple command, and the rules for its parts would allow each of them alone",
  redirection: "it redirects to a file: a rule sees no redirections, so it would be broader than the template",
  assignment: "it sets variables before the program: a rule sees no assignments, so it would allow any",
  "program-unknown": "the program is named by a path or cannot be read",
  "program-only": "it names only the program and its options: a rule for it would allow that program on anything",
  "runs-code": "an interpreter or a program that runs other commands: a rule for it would allow anything",
  "protected-name": "it names a protected path",
  "not-spared": "what made it need review is not spared by an allow rule (a protected place, an escalation out of the sandbox, your own review rule)",
  "built-in-tool": "a rule for every call of a built-in tool would be broader than the calls seen",
  "whole-tool": "no template narrows it: the audit keeps only the tool's name, and a rule for it would allow every call of the tool, whatever its input",
  "covers-refused": "the rule would also match a command refused in this window",
};

export interface Evidence {
  /** Human approvals (/perm-approve) in the window, from current-schema rows. */
  readonly approvals: number;
  /** Reviewer allows in the window, from current-schema rows. */
  readonly reviewerAllows: number;
  readonly firstDay: string;
  readonly lastDay: string;
}

export interface RuleSuggestion {
  readonly tool: string;
  /** The template (bash) or the tool name the rule was made from. */
  readonly template: string;
  readonly rule: AllowRuleSpec;
  readonly evidence: Evidence;
}

export interface HeldBack {
  readonly tool: string;
  readonly template: string;
  readonly reason: HeldBackReason;
  readonly evidence: number;
}

export interface Suggestions {
  readonly suggestions: readonly RuleSuggestion[];
  /** Shapes with enough evidence that are not suggested, and why. */
  readonly heldBack: readonly HeldBack[];
  /** A complete auto-mode.json with every suggestion, ready to merge into the user's file. */
  readonly fragment: { readonly version: 1; readonly rules: { readonly allow: readonly AllowRuleSpec[] } } | undefined;
}

export interface SuggestOptions {
  readonly minCount: number;
  readonly top: number;
}

/** A row that rules its shape out: refused, held, broken glass or failed. */
export function isRefusal(r: DailyRow): boolean {
  return r.outcome === "denied" || r.outcome === "held" || r.outcome === "break-glass" || FAILURE_REASONS.has(r.reason);
}

/** A row that is evidence of preference: what the user approved or a reviewer allowed. */
function evidenceOf(r: DailyRow): { approvals: number; reviewerAllows: number } {
  if (r.since !== SCHEMA_VERSION || isRefusal(r)) return { approvals: 0, reviewerAllows: 0 };
  if (r.outcome === "approved") return { approvals: r.count, reviewerAllows: 0 };
  if (r.outcome === "ran" && r.route === "review") return { approvals: 0, reviewerAllows: r.count };
  return { approvals: 0, reviewerAllows: 0 };
}

/** Why a bash template cannot become a rule no broader than itself, or undefined when it can. */
export function bashHeldBack(template: string): HeldBackReason | undefined {
  const t = template.trim();
  if (t === "" || t === UNREADABLE_TEMPLATE || t.endsWith(" ; *")) return "unreadable";
  if (SEPARATORS.some((s) => t.includes(s)) || t.endsWith(" &")) return "compound";
  const words = t.split(" ");
  if (words.some((w) => REDIRECTION.test(w))) return "redirection";
  if (ASSIGNMENT.test(words[0]!)) return "assignment";
  const program = words[0]!;
  if (program === STAR || program.includes("/") || program.includes("?")) return "program-unknown";
  if (words.some((w) => w.includes("?"))) return "unreadable";
  if (INTERPRETERS.has(program) || RUNNERS.has(program)) return "runs-code";
  if (RUNNER_SUBCOMMANDS[program]?.has(words[1] ?? "")) return "runs-code";
  if (words.slice(1).some((w) => RUNNING_OPTIONS.has(w))) return "runs-code";
  // With a `*`, something after the program besides options must be fixed (a subcommand, an operand):
  // `rm -rf *` or `curl -s *` would allow every use of the program the options permit.
  if (words.includes(STAR) && words.slice(1).every((w) => w === STAR || w.startsWith("-"))) return "program-only";
  if (words.some((w) => w !== STAR && protectedComponent(w) !== undefined)) return "protected-name";
  return undefined;
}

/** The allow rule a bash template becomes: its text as the pattern, each `*` standing where the template has one. */
export function bashRule(template: string, evidence: Evidence): AllowRuleSpec {
  return { command: template.trim(), reason: reasonText(evidence) };
}

function reasonText(e: Evidence): string {
  const parts = [
    e.approvals > 0 ? `${e.approvals} approval${e.approvals === 1 ? "" : "s"} by you` : "",
    e.reviewerAllows > 0 ? `${e.reviewerAllows} reviewer allow${e.reviewerAllows === 1 ? "" : "s"}` : "",
  ].filter(Boolean);
  return `suggested by pi-auto-mode audit: ${parts.join(", ")}, no refusal, ${e.firstDay}..${e.lastDay}`;
}

// Any home and base: a command rule does not depend on them.
const compiled = (spec: AllowRuleSpec) => compileRule(spec, "user", "/nonexistent-home", "/");

/** Whether the rule would also match a refused template: then it would allow what was refused. */
function coversRefused(spec: AllowRuleSpec, refused: readonly string[]): boolean {
  const rule = compiled(spec);
  // The template's `*` stands for some word: a refused `git push origin *` is matched as it reads.
  return refused.some(
    (t) =>
      ruleMatches(rule, { tool: "bash", commands: [t.trim()], paths: [] }) ||
      ruleMatches(rule, { tool: "bash", commands: [t.replaceAll(STAR, "x")], paths: [] }),
  );
}

interface Group {
  readonly tool: string;
  readonly template: string;
  approvals: number;
  reviewerAllows: number;
  refused: boolean;
  notSpared: boolean;
  sensitive: boolean;
  firstDay: string | undefined;
  lastDay: string | undefined;
}

/**
 * The suggestions for some rows (the report's window and scope). Rows observed from
 * pi-permission-system are left out: their fragments are permission-system.ts's.
 */
export function suggestRules(rows: readonly DailyRow[], opts: SuggestOptions): Suggestions {
  const own = rows.filter((r) => r.route !== PERMISSION_SYSTEM_ROUTE);
  const groups = new Map<string, Group>();
  // Every other tool's rule covers all of its calls: grouped by tool, all its templates together.
  const keyOf = (r: DailyRow) => (r.tool === "bash" ? `bash\0${r.template.trim()}` : `tool\0${r.tool}`);
  for (const r of own) {
    const k = keyOf(r);
    let g = groups.get(k);
    if (!g) {
      g = {
        tool: r.tool,
        template: r.tool === "bash" ? r.template.trim() : r.tool,
        approvals: 0,
        reviewerAllows: 0,
        refused: false,
        notSpared: false,
        sensitive: false,
        firstDay: undefined,
        lastDay: undefined,
      };
      groups.set(k, g);
    }
    const e = evidenceOf(r);
    g.approvals += e.approvals;
    g.reviewerAllows += e.reviewerAllows;
    if (isRefusal(r)) g.refused = true;
    if (NOT_SPARED.has(r.reason)) g.notSpared = true;
    if (r.surface === "sensitive") g.sensitive = true;
    if (e.approvals + e.reviewerAllows > 0) {
      if (g.firstDay === undefined || r.day < g.firstDay) g.firstDay = r.day;
      if (g.lastDay === undefined || r.day > g.lastDay) g.lastDay = r.day;
    }
  }
  const refusedTemplates = own.filter((r) => r.tool === "bash" && isRefusal(r)).map((r) => r.template);
  const suggestions: RuleSuggestion[] = [];
  const heldBack: HeldBack[] = [];
  for (const g of groups.values()) {
    const n = g.approvals + g.reviewerAllows;
    if (n < opts.minCount || g.refused || g.firstDay === undefined || g.lastDay === undefined) continue;
    const evidence: Evidence = { approvals: g.approvals, reviewerAllows: g.reviewerAllows, firstDay: g.firstDay, lastDay: g.lastDay };
    let why: HeldBackReason | undefined;
    let rule: AllowRuleSpec | undefined;
    if (g.notSpared || g.sensitive) why = g.sensitive ? "protected-name" : "not-spared";
    else if (g.tool === "bash") {
      why = bashHeldBack(g.template);
      if (!why) {
        rule = bashRule(g.template, evidence);
        // A rule that would also match a refused command is broader than the evidence allows.
        if (coversRefused(rule, refusedTemplates)) [why, rule] = ["covers-refused", undefined];
      }
    } else if (BUILTIN_TOOLS.has(g.tool) || g.tool === "other" || /[*?]/.test(g.tool)) why = "built-in-tool";
    // A rule names a tool, a command or a path (rules.ts); nothing in it narrows another tool's
    // input, and the audit keeps none of it: a suggestion would cover every call of the tool.
    else why = "whole-tool";
    if (why || !rule) heldBack.push({ tool: g.tool, template: g.template, reason: why ?? "unreadable", evidence: n });
    else suggestions.push({ tool: g.tool, template: g.template, rule, evidence });
  }
  const total = (s: { evidence: Evidence }) => s.evidence.approvals + s.evidence.reviewerAllows;
  suggestions.sort((a, b) => total(b) - total(a) || a.template.localeCompare(b.template));
  heldBack.sort((a, b) => b.evidence - a.evidence || a.template.localeCompare(b.template));
  const top = suggestions.slice(0, opts.top);
  return {
    suggestions: top,
    heldBack: heldBack.slice(0, opts.top),
    fragment: top.length > 0 ? { version: 1, rules: { allow: top.map((s) => s.rule) } } : undefined,
  };
}
