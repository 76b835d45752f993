// Reviewer usage waiting to be reported to Pi. A review happens in `tool_call`, before the call's
// result exists; the usage is attached to that result when Pi finalizes it (message_end), so
// Pi's session totals (footer, /session, RPC stats) include what the reviewer cost. Codemode's
// inner calls (ids "<outer>/<n>") are charged to the outer call's result, the message Pi keeps.

import { addUsage, type ReviewUsage } from "./types.ts";

const MAX_ENTRIES = 512;

export interface UsageLedger {
  add(toolCallId: string, usage: ReviewUsage): void;
  /** Remove and return the usage owed to this tool result (its own and its inner calls'). */
  take(toolCallId: string): ReviewUsage | undefined;
  clear(): void;
}

export function createUsageLedger(): UsageLedger {
  const owed = new Map<string, ReviewUsage>();
  return {
    add(id, usage) {
      if (usage.totalTokens === 0 && usage.cost.total === 0 && usage.input === 0 && usage.output === 0) return;
      owed.set(id, addUsage(owed.get(id) ?? usage, owed.has(id) ? usage : undefined));
      // Results that never arrive (an aborted batch) must not grow the map without bound.
      while (owed.size > MAX_ENTRIES) owed.delete(owed.keys().next().value!);
    },
    take(id) {
      let total: ReviewUsage | undefined;
      for (const [key, usage] of owed) {
        if (key === id || key.startsWith(`${id}/`)) {
          total = total ? addUsage(total, usage) : usage;
          owed.delete(key);
        }
      }
      return total;
    },
    clear: () => owed.clear(),
  };
}
