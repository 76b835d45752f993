// Calls in flight: admitted by the gate and not finished yet. Pi judges every call of a parallel
// batch before it runs any of them, and a codemode script can start several calls at once. A
// file tool's judgement (where its path really leads, after symlinks) and a host shell command's
// (the repository it finds) hold only for the file system they were judged against; nothing
// re-checks them when the tool runs. If a call that may change files (a shell command, a script,
// a tool the gate does not know) runs beside them, a sandboxed `ln -s` can turn a write judged
// "inside the workspace" into a write outside it. So the gate never has both kinds in flight at
// once: the call judged second is denied, and can be issued again on its own (P3, P5).
//
// Our own bash is declared sequential (tools/bash.ts), so a top-level batch with a shell command
// in it runs call by call and never meets this rule; it is for scripts and unknown tools.

import { TOOLS } from "../request/tools.ts";
import type { Outcome } from "./admit-call.ts";

/** Tools whose judgement rests on the file system as it was when judged. */
const FILE_TOOLS: ReadonlySet<string> = new Set(Object.entries(TOOLS).flatMap(([name, t]) => (t.action === "shell" ? [] : [name])));
/** Tools that change nothing themselves (tool_search only loads declarations). */
const INERT_TOOLS: ReadonlySet<string> = new Set(["tool_search", ...FILE_TOOLS]);

export interface CallShape {
  readonly id: string;
  readonly parentId: string | undefined;
  readonly tool: string;
  /** Its judgement depends on files another call could change before it runs, outside the sandbox. */
  readonly judgedOnFiles: boolean;
  /** It may create, move or replace files (symlinks included) while other calls wait to run. */
  readonly mayChangeFiles: boolean;
}

/** The shape of an admitted call: `sandboxed` bash is contained when it runs, so only its effects count. */
export function callShape(call: { id: string; parentId: string | undefined; tool: string }, outcome: Exclude<Outcome, "denied">): CallShape {
  const bash = call.tool === "bash";
  return {
    ...call,
    judgedOnFiles: FILE_TOOLS.has(call.tool) || (bash && outcome === "allowed"),
    mayChangeFiles: bash || !INERT_TOOLS.has(call.tool),
  };
}

export interface CallsInFlight {
  /** An admitted, unfinished call that must not run beside `call` (never one of its own callers). */
  conflict(call: CallShape): CallShape | undefined;
  admit(call: CallShape): void;
  /** The call finished (or was stopped by a later handler): Pi's tool_execution_end. */
  finish(id: string): void;
  /** A new agent run, or the session ends: nothing of the old one is still running. */
  clear(): void;
  size(): number;
}

export function createCallsInFlight(): CallsInFlight {
  const calls = new Map<string, CallShape>();
  /** The calls that (transitively) started this one: a script is in flight while its own calls run. */
  const callers = (c: CallShape): Set<string> => {
    const out = new Set<string>();
    for (let p = c.parentId; p !== undefined && !out.has(p); p = calls.get(p)?.parentId) out.add(p);
    return out;
  };
  return {
    conflict(call) {
      if (!call.judgedOnFiles && !call.mayChangeFiles) return undefined;
      const mine = callers(call);
      for (const other of calls.values()) {
        if (other.id === call.id || mine.has(other.id)) continue;
        if ((call.judgedOnFiles && other.mayChangeFiles) || (call.mayChangeFiles && other.judgedOnFiles)) return other;
      }
      return undefined;
    },
    admit(call) {
      if (call.judgedOnFiles || call.mayChangeFiles) calls.set(call.id, call);
    },
    finish(id) {
      calls.delete(id);
    },
    clear() {
      calls.clear();
    },
    size: () => calls.size,
  };
}
