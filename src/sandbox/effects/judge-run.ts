// The judgement of a staged command's effects, with a deadline and an abort (P18): it runs on a
// thread of its own (judge-worker.ts), so the agent's event loop stays free while it works over a
// big tree or a deep history; past the deadline, or when the tool call is aborted (Esc, SIGINT),
// the thread is stopped where it is and nothing is applied. Nothing waits on the thread after that.

import { Worker } from "node:worker_threads";
import type { Places } from "../../policy/places.ts";
import type { StageRun } from "../stage.ts";
import type { StagedFacts } from "./facts.ts";
import type { EffectJudgement } from "./judge.ts";
import type { EffectStore } from "./store.ts";

/** Everything the judgement reads, as data (it crosses to the judgement's thread). */
export interface JudgeJob {
  readonly run: StageRun;
  readonly startCtimeNs: bigint;
  readonly facts: StagedFacts;
  readonly places: Places;
  readonly protectedGlobs: readonly string[];
  readonly store: EffectStore;
}

export type JudgeReply = { readonly ok: true; readonly judgement: EffectJudgement } | { readonly ok: false; readonly message: string };

export type JudgeOutcome =
  | { readonly kind: "judged"; readonly judgement: EffectJudgement }
  | { readonly kind: "failed"; readonly message: string }
  /** The judgement did not finish within `ms`. */
  | { readonly kind: "deadline"; readonly ms: number }
  /** The tool call was aborted while its effects were judged. */
  | { readonly kind: "aborted" };

/** How long a judgement may take by default: far beyond a real one (a 200,000-entry reinstall takes seconds). */
export const JUDGE_DEADLINE_MS = 120_000;

/**
 * The worker's entry beside this module: TypeScript from the sources, JavaScript from the build
 * (Node strips types only outside node_modules, so an installed package uses dist/).
 */
export function judgeWorkerEntry(moduleUrl: string = import.meta.url): URL {
  if (!moduleUrl.endsWith(".ts")) return new URL("./judge-worker.js", moduleUrl);
  const source = new URL("./judge-worker.ts", moduleUrl);
  if (!source.pathname.includes("/node_modules/")) return source;
  return new URL(source.href.replace(/\/src\/sandbox\/effects\/judge-worker\.ts$/, "/dist/sandbox/effects/judge-worker.js"));
}

export interface JudgeRunOptions {
  readonly deadlineMs?: number;
  readonly signal?: AbortSignal;
  /** The worker to run (tests hand one that never finishes); judge-worker by default. */
  readonly entry?: URL;
}

/** A judgement thread kept between judgements (starting one costs more than most judgements). */
let idle: { readonly entry: string; readonly worker: Worker } | undefined;

function startWorker(entry: URL): Worker {
  // Nothing it prints is ours to show (Pi's screen is the terminal): its output is kept from the
  // terminal and not read (reading it would keep the process alive while the thread idles).
  return new Worker(entry, { stdout: true, stderr: true });
}

export function judgeOffThread(job: JudgeJob, opts: JudgeRunOptions = {}): Promise<JudgeOutcome> {
  const deadlineMs = opts.deadlineMs ?? JUDGE_DEADLINE_MS;
  if (opts.signal?.aborted) return Promise.resolve({ kind: "aborted" });
  const entry = opts.entry ?? judgeWorkerEntry();
  return new Promise<JudgeOutcome>((resolve) => {
    let worker: Worker;
    if (idle && idle.entry === entry.href) {
      worker = idle.worker;
      idle = undefined;
    } else {
      try {
        worker = startWorker(entry);
      } catch (e) {
        resolve({ kind: "failed", message: `the judgement could not start: ${(e as Error).message}` });
        return;
      }
    }
    worker.ref();
    let done = false;
    const finish = (o: JudgeOutcome, reusable: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      worker.unref();
      if (reusable && !idle) idle = { entry: entry.href, worker };
      // Stopped where it is; nothing waits for it (a thread stuck in the kernel must not hold us).
      else void worker.terminate().catch(() => {});
      resolve(o);
    };
    const onMessage = (m: JudgeReply) => finish(m.ok ? { kind: "judged", judgement: m.judgement } : { kind: "failed", message: m.message }, true);
    const onError = (e: Error) => finish({ kind: "failed", message: e.message }, false);
    const onExit = (code: number) => finish({ kind: "failed", message: `the judgement ended without an answer (exit ${code})` }, false);
    const onAbort = () => finish({ kind: "aborted" }, false);
    const timer = setTimeout(() => finish({ kind: "deadline", ms: deadlineMs }, false), deadlineMs);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    worker.on("message", onMessage);
    worker.once("error", onError);
    worker.once("exit", onExit);
    worker.postMessage(job);
  });
}
