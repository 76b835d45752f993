// The vocabulary of a decision. Closed unions: a route or reason that is not listed here
// cannot be produced, so every consumer (status, audit, eval, CLI) can switch exhaustively.

export type Route = "allow" | "sandbox" | "review" | "deny";

/**
 * What runs bash calls: the OS sandbox over a staged (copy-on-write) workspace whose effects are
 * judged when the command ends; the OS sandbox writing the workspace in place (no copy-on-write
 * mount could be had here); nothing (every risky call is reviewed); or a broken sandbox.
 */
export type Backend = "sandboxed" | "sandboxed-unstaged" | "review-only" | "unavailable";

export const BACKENDS: readonly Backend[] = ["sandboxed", "sandboxed-unstaged", "review-only", "unavailable"];

/** Backends where bash runs inside the OS sandbox. */
export function isSandboxed(b: Backend): b is "sandboxed" | "sandboxed-unstaged" {
  return b === "sandboxed" || b === "sandboxed-unstaged";
}

/**
 * Effect classes of one simple shell command, from harmless to catastrophic. A whole command
 * takes the strictest class of its parts (the highest rank).
 */
export type CommandClass =
  | "read" // only reads; no writes, no network
  | "workspace-write" // writes statically known paths inside the writable roots
  | "cleanup" // deletes regenerable output (node_modules, dist, ...) inside the workspace
  | "git-local" // git writing its own metadata (commit, stash, branch): staged, or reviewed where nothing can be staged
  | "build" // runs the project's declared build/test/format entry points
  | "contain" // harmless only inside the sandbox: network, writes outside, inline or unknown code
  | "review" // harmful even inside the sandbox: needs a reviewer's judgment
  | "deny"; // catastrophic or self-disabling: never runs

export const CLASS_RANK: Readonly<Record<CommandClass, number>> = {
  read: 0,
  "workspace-write": 1,
  cleanup: 1,
  "git-local": 2,
  build: 3,
  contain: 4,
  review: 5,
  deny: 6,
};

export function stricter(a: CommandClass, b: CommandClass): CommandClass {
  return CLASS_RANK[b] > CLASS_RANK[a] ? b : a;
}

/** Stable reason codes: scripts and the eval read these, so they never change meaning. */
export type ReasonCode =
  // allow
  | "read-only"
  | "workspace-write"
  | "regenerable-cleanup"
  | "git-local"
  | "build-test"
  | "gated-container"
  | "user-allow-rule"
  // sandbox
  | "sandboxed"
  // review
  | "protected-path"
  | "outside-writable-roots"
  | "identity-secret"
  | "secret-egress"
  | "persistence"
  | "destructive"
  | "remote-code"
  | "dynamic-command"
  | "privilege"
  | "foreign-process"
  | "force-push"
  | "git-config"
  | "git-hooks"
  | "sandbox-escalation"
  | "uncontained-shell"
  | "network"
  | "inline-code"
  | "unknown-command"
  | "unknown-tool"
  | "malformed-input"
  | "shell-unparseable"
  | "user-review-rule"
  // deny
  | "hard-deny"
  | "self-protection"
  | "untrusted-install"
  | "user-deny-rule"
  | "unsupported-input"
  | "config-fault"
  | "sandbox-unavailable"
  | "no-reviewer"
  | "gate-error"
  // effects of a staged command (P17)
  | "held-effects";

/** The outcome of the deterministic layers for one tool call. */
export interface Decision {
  readonly route: Route;
  readonly reason: ReasonCode;
  /** One human sentence: shown to the model on denial and to the user in check/eval output. */
  readonly message: string;
}

export function decision(route: Route, reason: ReasonCode, message: string): Decision {
  return { route, reason, message };
}
