// Denials in a headless run, so CI can tell a run hit them without reading the transcript: Pi
// exits 0 whether or not calls were denied (a denial is a tool result, not a failure). When a
// print-mode session ends (`pi -p`, `pi --mode json`), one line on stderr counts them by class;
// in json and rpc mode every run (prompt) ends with a pi-auto-mode/denials entry, which Pi streams
// as an `entry_appended` event. Counted where auto mode itself refuses (the gate's blocked calls,
// held changes, refused destinations), never from tool output, which a command can forge.

import type { ExtensionAPI, ToolCallEventResult } from "@earendil-works/pi-coding-agent";
import { DENIAL_CLASS_NAMES, DENIAL_CLASSES, type DenialClass, denialClassOf } from "../policy/denial.ts";
import type { NetReport } from "../policy/network/types.ts";
import { byPolicy } from "../sandbox/network/notes.ts";

export const DENIALS_ENTRY_TYPE = "pi-auto-mode/denials";

export interface DenialCounts {
  readonly denied: number;
  /** Only the classes that occurred, in the order of DENIAL_CLASSES. */
  readonly byClass: Readonly<Partial<Record<DenialClass, number>>>;
}

/** The entry at the end of a run: that run's denials and the session's so far. */
export interface DenialsEntry {
  readonly run: DenialCounts;
  readonly session: DenialCounts;
  readonly at: number;
}

export interface DenialTally {
  /** The gate's answer to a tool call, passed through: a block is counted by its text's class. */
  gate<T extends ToolCallEventResult | undefined>(result: T): T;
  /** A staged command's changes were held. */
  held(): void;
  /** A sandboxed run's network report: each destination refused by policy counts once. */
  network(report: NetReport): void;
  run(): DenialCounts;
  session(): DenialCounts;
}

/** The stderr line: "pi-auto-mode: 3 denials in this session (never allowed 1, needs review, no reviewer 2)". */
export function summaryLine(c: DenialCounts): string {
  if (c.denied === 0) return "pi-auto-mode: no denials in this session";
  const parts = DENIAL_CLASS_NAMES.flatMap((k) => (c.byClass[k] ? [`${DENIAL_CLASSES[k].label} ${c.byClass[k]}`] : []));
  return `pi-auto-mode: ${c.denied} ${c.denied === 1 ? "denial" : "denials"} in this session (${parts.join(", ")})`;
}

export function createDenialTally(): DenialTally & { newRun(): void; newSession(): void } {
  let run = new Map<DenialClass, number>();
  let session = new Map<DenialClass, number>();
  const add = (cls: DenialClass, n = 1) => {
    if (n <= 0) return;
    run.set(cls, (run.get(cls) ?? 0) + n);
    session.set(cls, (session.get(cls) ?? 0) + n);
  };
  const counts = (m: Map<DenialClass, number>): DenialCounts => {
    const byClass: Partial<Record<DenialClass, number>> = {};
    let denied = 0;
    for (const k of DENIAL_CLASS_NAMES) {
      const n = m.get(k);
      if (n) {
        byClass[k] = n;
        denied += n;
      }
    }
    return { denied, byClass };
  };
  return {
    gate(result) {
      // Every text the gate blocks with is built by policy/denial.ts; one that is not would be a
      // gate fault, and is counted as one rather than lost.
      if (result?.block) add(denialClassOf(result.reason ?? "") ?? "cannot-check");
      return result;
    },
    held: () => add("held-effects"),
    network: (report) => add("network-refused", report.refused.filter(byPolicy).length),
    run: () => counts(run),
    session: () => counts(session),
    newRun: () => {
      run = new Map();
    },
    newSession: () => {
      run = new Map();
      session = new Map();
    },
  };
}

/** Counts denials for headless runs and reports them at their end (see the top of this file). */
export function registerDenialSummary(pi: ExtensionAPI, now: () => number = Date.now): DenialTally {
  const tally = createDenialTally();
  pi.on("agent_start", () => tally.newRun());
  pi.on("agent_settled", (_e, ctx) => {
    if (ctx.mode !== "json" && ctx.mode !== "rpc") return;
    pi.appendEntry<DenialsEntry>(DENIALS_ENTRY_TYPE, { run: tally.run(), session: tally.session(), at: now() });
  });
  pi.on("session_shutdown", (_e, ctx) => {
    // stderr is the diagnostics channel of a print run; the TUI and rpc have their own.
    if (ctx.mode === "print" || ctx.mode === "json") process.stderr.write(`${summaryLine(tally.session())}\n`);
    tally.newSession();
  });
  return tally;
}
