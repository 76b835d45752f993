// The judgement's own thread (judge-run.ts starts it): judgeEffects over each job it is handed,
// with the shipped policy and the undo store's record, and the judgement posted back. Off the
// agent's main thread so that a long judgement never keeps Esc, SIGINT or the UI waiting, and so
// that one past its deadline can be stopped where it is.

import { parentPort } from "node:worker_threads";
import type { JudgeJob, JudgeReply } from "./judge-run.ts";
import { judgeEffects } from "./judge.ts";
import { agentCreatedIn } from "./provenance.ts";
import { effectPolicy } from "./rules.ts";
import { recentLoss } from "./undo.ts";

function judge(job: JudgeJob): JudgeReply {
  try {
    const policy = effectPolicy();
    const judgement = judgeEffects({
      run: job.run,
      startCtimeNs: job.startCtimeNs,
      facts: job.facts,
      places: job.places,
      protectedGlobs: job.protectedGlobs,
      policy,
      agentCreated: agentCreatedIn(job.store, job.places.workspace),
      recentLoss: recentLoss(job.store, job.places.workspace, policy.loss.windowMs),
    });
    return { ok: true, judgement };
  } catch (e) {
    return { ok: false, message: (e as Error)?.message ?? String(e) };
  }
}

// One job at a time: judge-run.ts hands this thread a job only when it is idle.
parentPort?.on("message", (job: JudgeJob) => parentPort?.postMessage(judge(job)));
