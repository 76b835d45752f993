import { CLASS_RANK, type CommandClass, type ReasonCode } from "../types.ts";

/**
 * The class each reason a part of a shell command can have stands for: the one place a class
 * comes from, so a reason cannot be given with a class it does not mean.
 */
export const REASON_CLASS = {
  "read-only": "read",
  "workspace-write": "workspace-write",
  "regenerable-cleanup": "cleanup",
  "git-local": "git-local",
  "build-test": "build",
  network: "contain",
  "unknown-command": "contain",
  "outside-writable-roots": "contain",
  sandboxed: "contain",
  "inline-code": "contain",
  "protected-path": "review",
  "identity-secret": "review",
  "secret-egress": "review",
  persistence: "review",
  destructive: "review",
  "remote-code": "review",
  "dynamic-command": "review",
  privilege: "review",
  "foreign-process": "review",
  "force-push": "review",
  "git-config": "review",
  "git-hooks": "review",
  "shell-unparseable": "review",
  "hard-deny": "deny",
  "self-protection": "deny",
  "config-fault": "deny",
} as const satisfies Partial<Record<ReasonCode, CommandClass>>;

export type FindingReason = keyof typeof REASON_CLASS;

/** What one part of a shell command does, and why we think so. */
export interface Finding {
  readonly cls: CommandClass;
  readonly reason: FindingReason;
  readonly detail: string;
}

export function finding(reason: FindingReason, detail: string): Finding {
  return { cls: REASON_CLASS[reason], reason, detail };
}

/**
 * The order parts combine in: a command takes the class of its strictest part, so a class must
 * rank above another only where no backend routes it less strictly. A git write is reviewed where
 * the workspace cannot be staged and routed like a build everywhere else, so it ranks above a build
 * (types.ts lists them the other way round: `git stash; npm test` took the build's sandbox route
 * there). It stays below `contain`, which it is not comparable with either way (review-only reviews
 * contained work but allows git writes): one class cannot carry both, see the unstaged todo test.
 */
export const COMBINE_RANK: Readonly<Record<CommandClass, number>> = { ...CLASS_RANK, "git-local": CLASS_RANK.build, build: CLASS_RANK["git-local"] };

/** The strictest finding; on a tie the earliest, so the message names the first offending part. */
export function strictest(findings: readonly Finding[]): Finding | undefined {
  let best: Finding | undefined;
  for (const f of findings) if (!best || COMBINE_RANK[f.cls] > COMBINE_RANK[best.cls]) best = f;
  return best;
}
