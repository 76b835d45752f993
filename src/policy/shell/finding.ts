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

/** The strictest finding; on a tie the earliest, so the message names the first offending part. */
export function strictest(findings: readonly Finding[]): Finding | undefined {
  let best: Finding | undefined;
  for (const f of findings) if (!best || CLASS_RANK[f.cls] > CLASS_RANK[best.cls]) best = f;
  return best;
}
