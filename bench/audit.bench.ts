// What the local audit adds to one decision (issue 15's figure: at most 5 % of the decision's
// median), measured in one run on the same calls: the decision as the extension pays for it
// (prepareGate + decide, like bench/decide.bench.ts) without the audit, and with the audit's work
// on the decision path (the recorder's noteCall and decision: an in-memory push), interleaved call
// by call so drift and other processes on the machine hit both alike. The write itself happens
// off the decision path, at a flush; its cost is timed too and shown per decision, so nothing is
// hidden: "amortized" is the decision path plus every flush's time divided by the decisions it wrote.
//
// Prints figures and asserts nothing.

import { createAuditRecorder, MAX_BUFFERED } from "../src/audit/recorder.ts";
import { generator } from "../src/eval/generate.ts";
import { decideLikeTheExtension, evalSetup } from "../src/eval/score.ts";
import { buildEvalWorkspace } from "../src/eval/workspace.ts";
import type { CallRecord, JudgedCall } from "../src/grants/admit-call.ts";
import { decide, prepareGate } from "../src/policy/gate.ts";

const ROUNDS = 5;
const CALLS = 2000;

const w = buildEvalWorkspace();
const setup = evalSetup(w);
const next = generator(20240601);
const calls = Array.from({ length: CALLS }, (_, i) =>
  i % 4 === 3 ? { tool: "read", input: { path: `src/file${i % 50}.ts` } } : { tool: "bash", input: { command: next() } },
);

const warnings: string[] = [];
const recorder = createAuditRecorder({ agentDir: () => w.agentDir, home: w.home, warn: (m) => warnings.push(m) });

const ns = () => process.hrtime.bigint();
const us = (a: bigint, b: bigint) => Number(b - a) / 1000;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const bare: number[] = [];
const audited: number[] = [];
/** The audit's own work inside the audited decisions, timed alone. */
const pushes: number[] = [];

/** The decision and the record the gate makes of it (either way); with `audit`, also the audit's push. */
function decideAndRecord(id: string, tool: string, input: unknown, audit: boolean): { rec: CallRecord; judged: JudgedCall } {
  // decideLikeTheExtension, with the gate context kept: the gate hands its references to the audit either way.
  const gate = prepareGate(setup);
  const r = decide(tool, input, gate, "sandboxed");
  const judged: JudgedCall = { subject: r.judgement?.subject, context: gate.judge };
  const route = r.decision.route;
  const rec: CallRecord = {
    toolCallId: id,
    parentToolCallId: undefined,
    tool,
    mode: "auto",
    route,
    reason: r.decision.reason,
    outcome: route === "deny" ? "denied" : route === "sandbox" ? "sandboxed" : "allowed",
    hash: r.request?.hash,
    message: r.decision.message,
  };
  if (audit) {
    recorder.noteCall(id, tool, input);
    recorder.decision(rec, w.ws, judged);
  }
  return { rec, judged };
}

// Warm-up: the JIT, the gate's caches, and the store (opened, created and written once).
for (let i = 0; i < 3; i++) for (const c of calls) decideLikeTheExtension(c.tool, c.input, setup, "sandboxed");
for (const [j, c] of calls.slice(0, 300).entries()) decideAndRecord(`warm${j}`, c.tool, c.input, true);
recorder.flush();

let flushUs = 0;
let id = 0;
/** Decisions handed to the recorder, and how many of them the flushes so far wrote. */
let recorded = 0;
let written = 0;
const flushTimed = () => {
  const t0 = ns();
  recorder.flush();
  flushUs += us(t0, ns());
  written = recorded;
};
for (let round = 0; round < ROUNDS; round++) {
  for (const [i, c] of calls.entries()) {
    // Interleaved, and the order swapped every other call; both sides make their id the same way,
    // outside the timed part.
    const first = (i + round) % 2 === 0;
    let rec: { rec: CallRecord; judged: JudgedCall } | undefined;
    for (const withAudit of first ? [false, true] : [true, false]) {
      const callId = `c${id++}`;
      const t0 = ns();
      const r = decideAndRecord(callId, c.tool, c.input, withAudit);
      const t1 = ns();
      (withAudit ? audited : bare).push(us(t0, t1));
      if (withAudit) rec = r;
    }
    // The push alone, timed apart so its clock reads do not land inside the decisions' figures.
    const pushId = `c${id++}`;
    const again = { ...rec!.rec, toolCallId: pushId };
    const t0 = ns();
    recorder.noteCall(pushId, c.tool, c.input);
    recorder.decision(again, w.ws, rec!.judged);
    pushes.push(us(t0, ns()));
    recorded += 2;
    // What the flush timer (or a full buffer) would do off the decision path, timed apart.
    if (recorded - written >= MAX_BUFFERED) flushTimed();
  }
}
flushTimed();

const mBare = median(bare);
const mAudited = median(audited);
const hot = mAudited - mBare;
const perFlushed = flushUs / written;
const pct = (x: number) => `${((x / mBare) * 100).toFixed(2)} %`;
console.log(`audit write cost per decision (${ROUNDS} rounds x ${CALLS} calls, interleaved; 3/4 generated bash, 1/4 read)`);
console.log(`  decision without audit   median ${mBare.toFixed(2)} us`);
console.log(`  decision with audit      median ${mAudited.toFixed(2)} us`);
console.log(`  audit on the decision path: ${hot.toFixed(2)} us = ${pct(hot)} of the decision's median (difference of the medians; target <= 5 %)`);
console.log(`  the audit's push alone (noteCall + decision), timed apart: median ${median(pushes).toFixed(2)} us = ${pct(median(pushes))}`);
console.log(
  `  flush (templates, classes, SQLite write), off the path: ${perFlushed.toFixed(2)} us per decision; amortized ${(hot + perFlushed).toFixed(2)} us = ${pct(hot + perFlushed)}`,
);
if (warnings.length > 0) console.log(`  warnings: ${warnings.join("; ")}`);
w.dispose();
