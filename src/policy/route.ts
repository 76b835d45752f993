// The routing function: a judged request, the bash backend and the configuration decide the route.
// Pure: no I/O, no clock. Order (P3): configuration fault, hard denies, user deny rules, user
// review rules, user allow rules, then the static class through the backend's table.

import type { ConfigResult } from "./config/load.ts";
import type { Judgement, ToolKind } from "./judge.ts";
import { type CompiledRule, firstMatch } from "./rules.ts";
import { decision, isSandboxed, type Backend, type CommandClass, type Decision, type Route } from "./types.ts";

// Under both sandboxed backends no bash call routes `allow`: every shell command runs in the OS
// sandbox, git included (P6, P7). Only an approved escalation runs on the host.
const SANDBOXED: Readonly<Record<CommandClass, Route>> = {
  read: "sandbox",
  "workspace-write": "sandbox",
  cleanup: "sandbox",
  build: "sandbox",
  contain: "sandbox",
  "git-local": "sandbox",
  review: "review",
  deny: "deny",
};

const BASH_TABLE: Readonly<Record<"sandboxed" | "sandboxed-unstaged" | "review-only", Readonly<Record<CommandClass, Route>>>> = {
  sandboxed: SANDBOXED,
  // Nothing judges a git write's effects when the workspace cannot be staged: it needs review,
  // and then runs in the sandbox with .git writable but its code-running parts.
  "sandboxed-unstaged": { ...SANDBOXED, "git-local": "review" },
  "review-only": {
    read: "allow",
    "workspace-write": "allow",
    cleanup: "allow",
    build: "allow",
    contain: "review",
    "git-local": "allow",
    review: "review",
    deny: "deny",
  },
};

const OTHER_TABLE: Readonly<Record<CommandClass, Route>> = {
  read: "allow",
  "workspace-write": "allow",
  cleanup: "allow",
  build: "allow",
  "git-local": "allow",
  contain: "review",
  review: "review",
  deny: "deny",
};

/** Details start with a command or tool name, whose case matters (`rm`, not `Rm`): only add the full stop. */
function sentence(s: string): string {
  const t = s.trim();
  return t + (/[.!?]$/.test(t) ? "" : ".");
}

function tableRoute(kind: ToolKind, cls: CommandClass, backend: Backend): Route {
  if (kind !== "bash") return OTHER_TABLE[cls];
  if (backend === "unavailable") return "deny";
  return BASH_TABLE[backend][cls];
}

export function route(j: Judgement, backend: Backend, config: ConfigResult): Decision {
  if (!config.ok)
    return decision("deny", "config-fault", `Auto-mode configuration ${config.path} is invalid (${config.message}); every call is denied until it is fixed.`);
  if (j.cls === "deny") return decision("deny", j.reason, sentence(j.detail));
  const deny = firstMatch(config.config.deny, j.subject);
  if (deny) return decision("deny", "user-deny-rule", sentence(`matches the deny rule ${deny.label}${deny.reason ? `: ${deny.reason}` : ""}`));
  // Where a sandbox exists (or should), shell commands run only through it: a reviewer's allow must
  // never become an uncontained PowerShell run (P7). Only the user's own allow rule that says
  // `unsandboxed` can permit it: a plain allow rule never means "no sandbox".
  if (j.kind === "uncontained-shell" && backend !== "review-only" && !coveredByRules(j, config, (r) => r.unsandboxed))
    return decision(
      "deny",
      "uncontained-shell",
      sentence(
        `${j.detail}; with an OS sandbox in place auto mode runs shell commands only through bash (an allow rule runs it only with "unsandboxed": true)`,
      ),
    );
  const review = firstMatch(config.config.review, j.subject);
  if (review) {
    if (j.kind === "bash" && backend === "unavailable") return unavailable();
    return decision("review", "user-review-rule", sentence(`matches the review rule ${review.label}${review.reason ? `: ${review.reason}` : ""}`));
  }
  const rule = j.reason !== "malformed-input" && j.reason !== "shell-unparseable" ? coveredByRules(j, config) : undefined;
  if (rule) {
    if (j.kind === "bash" && backend === "unavailable") return unavailable();
    // What the rule may not spare keeps its own route: a protected path is still reviewed, a write
    // outside the writable roots still needs the sandbox (or review where none exists).
    const kept = strictestRoute(j.kind, notOpened(j, config), backend);
    if (kept && ROUTE_RANK[kept.route] > ROUTE_RANK.sandbox)
      return decision(
        kept.route,
        kept.part.reason,
        sentence(`${kept.part.detail}; the allow rule ${rule.label} does not open this, only an allow rule whose "paths" name it does`),
      );
    // A user's allow rule spares the review, never the sandbox.
    if (j.kind === "bash" && isSandboxed(backend))
      return decision("sandbox", "user-allow-rule", sentence(`allowed by the user's rules (${j.detail}); runs inside the sandbox`));
    return decision("allow", "user-allow-rule", sentence(`allowed by the user's rules (${j.detail})`));
  }
  if (j.kind === "bash" && backend === "unavailable") return unavailable();
  // The strictest route over every class the call has; on a tie the judgement's own.
  let part: { readonly cls: CommandClass; readonly reason: Judgement["reason"]; readonly detail: string } = j;
  let r = tableRoute(j.kind, j.cls, backend);
  for (const p of j.parts ?? []) {
    const pr = tableRoute(j.kind, p.cls, backend);
    if (ROUTE_RANK[pr] > ROUTE_RANK[r]) [part, r] = [p, pr];
  }
  if (r === "sandbox") return decision("sandbox", "sandboxed", sentence(`${part.detail}; runs inside the sandbox`));
  if (r === "review" && part.cls === "contain") return decision("review", part.reason, sentence(`${part.detail}; without a sandbox this needs review`));
  if (r === "review" && part.cls === "git-local")
    return decision("review", part.reason, sentence(`${part.detail}; this machine cannot stage the workspace, so a git write needs review`));
  return decision(r, part.reason, sentence(part.detail));
}

const ROUTE_RANK: Readonly<Record<Route, number>> = { allow: 0, sandbox: 1, review: 2, deny: 3 };

function unavailable(): Decision {
  return decision("deny", "sandbox-unavailable", "The sandbox is unavailable, so auto mode runs no shell commands.");
}

type Part = { readonly cls: CommandClass; readonly reason: Judgement["reason"]; readonly detail: string };

/**
 * Reasons a plain allow rule does not spare: what it would open is not the work the rule names but
 * a place (a protected path, an identity secret, a location that runs code later, git's code-running
 * settings, somewhere outside the writable roots). Only an allow rule's `paths` opens them. Hard
 * denies and self-protection never reach the rules at all.
 */
export const GUARDED: ReadonlySet<Judgement["reason"]> = new Set([
  "protected-path",
  "identity-secret",
  "secret-egress",
  "persistence",
  "git-config",
  "outside-writable-roots",
]);

/**
 * The first allow rule covering the call: for bash every simple command must match one (each may
 * be another rule); other tools need one matching rule. `which` narrows the rules that count.
 */
function coveredByRules(j: Judgement, config: Extract<ConfigResult, { ok: true }>, which?: (r: CompiledRule) => boolean): CompiledRule | undefined {
  const rules = which ? config.config.allow.filter(which) : config.config.allow;
  if (rules.length === 0) return undefined;
  if (j.kind !== "bash") return firstMatch(rules, j.subject, "every");
  if (j.subject.commands.length === 0) return undefined;
  let first: CompiledRule | undefined;
  for (const c of j.subject.commands) {
    const r = firstMatch(rules, { ...j.subject, commands: [c] }, "every");
    if (!r) return undefined;
    first ??= r;
  }
  return first;
}

/** The call's guarded parts that the allow rules' `paths` do not open. */
function notOpened(j: Judgement, config: Extract<ConfigResult, { ok: true }>): Part[] {
  const guarded = (j.found ?? [j, ...(j.parts ?? [])]).filter((f) => GUARDED.has(f.reason));
  if (guarded.length === 0 || openedByPaths(j, config)) return [];
  return guarded;
}

/**
 * Every path the call can touch lies in the `paths` of a rule covering it. Parts are not tied to
 * the paths they are about, so the call as a whole must be known exactly (no run-time word, no
 * glob, no change of directory), and for bash every simple command must be covered by a rule
 * whose `paths` hold every one of the call's paths.
 */
function openedByPaths(j: Judgement, config: Extract<ConfigResult, { ok: true }>): boolean {
  const s = j.subject;
  if (s.exact !== true || s.paths.length === 0) return false;
  const opens = (r: CompiledRule) => r.opens !== undefined && s.paths.every(r.opens);
  return coveredByRules(j, config, opens) !== undefined;
}

/** The strictest route over some parts, and the part that has it. */
function strictestRoute(kind: ToolKind, parts: readonly Part[], backend: Backend): { route: Route; part: Part } | undefined {
  let best: { route: Route; part: Part } | undefined;
  for (const part of parts) {
    const r = tableRoute(kind, part.cls, backend);
    if (!best || ROUTE_RANK[r] > ROUTE_RANK[best.route]) best = { route: r, part };
  }
  return best;
}

/**
 * The user's rules approve running this bash call outside the sandbox when it asks to
 * (`sandbox_permissions: "require_escalated"`): every simple command is covered by an allow rule
 * that says `unsandboxed`, no deny or review rule matches, and nothing guarded is left unopened
 * (on the host a write outside the writable roots lands). Pure, like `route`.
 */
export function rulesRunUnsandboxed(j: Judgement, config: ConfigResult): boolean {
  if (!config.ok || j.kind !== "bash" || j.cls === "deny") return false;
  if (j.reason === "malformed-input" || j.reason === "shell-unparseable") return false;
  if (firstMatch(config.config.deny, j.subject) || firstMatch(config.config.review, j.subject)) return false;
  if (!coveredByRules(j, config, (r) => r.unsandboxed)) return false;
  return notOpened(j, config).length === 0;
}
