// The routing function: a judged request, the bash backend and the configuration decide the route.
// Pure: no I/O, no clock. Order (P3): configuration fault, hard denies, user deny rules, user
// review rules, user allow rules, then the static class through the backend's table.

import type { ConfigResult } from "./config/load.ts";
import type { Judgement, ToolKind } from "./judge.ts";
import { firstMatch } from "./rules.ts";
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
  // never become an uncontained PowerShell run (P7). Only the user's own allow rule can permit it.
  if (j.kind === "uncontained-shell" && backend !== "review-only" && !allowedByRules(j, config))
    return decision("deny", "uncontained-shell", sentence(`${j.detail}; with an OS sandbox in place auto mode runs shell commands only through bash`));
  const review = firstMatch(config.config.review, j.subject);
  if (review) {
    if (j.kind === "bash" && backend === "unavailable") return unavailable();
    return decision("review", "user-review-rule", sentence(`matches the review rule ${review.label}${review.reason ? `: ${review.reason}` : ""}`));
  }
  if (j.reason !== "malformed-input" && j.reason !== "shell-unparseable" && allowedByRules(j, config)) {
    if (j.kind === "bash" && backend === "unavailable") return unavailable();
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

/** Bash needs every simple command allowed by a rule; other tools need one matching rule. */
function allowedByRules(j: Judgement, config: Extract<ConfigResult, { ok: true }>): boolean {
  const rules = config.config.allow;
  if (rules.length === 0) return false;
  if (j.kind !== "bash") return firstMatch(rules, j.subject, "every") !== undefined;
  if (j.subject.commands.length === 0) return false;
  return j.subject.commands.every((c) => firstMatch(rules, { ...j.subject, commands: [c] }, "every") !== undefined);
}
