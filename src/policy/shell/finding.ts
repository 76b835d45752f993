import { CLASS_RANK, type CommandClass, type ReasonCode } from "../types.ts";

/** What one part of a shell command does, and why we think so. */
export interface Finding {
  readonly cls: CommandClass;
  readonly reason: ReasonCode;
  readonly detail: string;
}

export function finding(cls: CommandClass, reason: ReasonCode, detail: string): Finding {
  return { cls, reason, detail };
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
