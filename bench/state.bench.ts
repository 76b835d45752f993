// What durable global state costs (P12), next to baselines measured in the same run on the same
// file system:
//   (a) the per-gate check when nothing changed: `read()` as the gate awaits it, and its
//       synchronous part `check()` (three stats), against one bare statSync and three;
//   (b) a commit (lock, three atomic publishes, unlock): against one bare atomic write of one file
//       (temp, fsync, rename, directory fsync) and one bare lock/unlock of proper-lockfile;
//   (c) commits under contention: 8 processes committing back to back on one state dir, against
//       one process alone (what a commit costs without contention) and against the previous lock
//       (proper-lockfile polled with growing jittered sleeps, released asynchronously) running
//       the same critical section (sweep, read and classify, three publishes) on the same number
//       of processes.
// Targets: (a) p99 under 50 µs, (b) median under 20 ms, (c) p99 at most 100 ms with no failed
// commit. Prints figures and ratios and asserts nothing: timings belong in a report, not in a test.
//
//   node bench/state.bench.ts [dir] [--only=gate|commit|contention] [--procs=8] [--commits=50]
//   (dir: default a fresh folder under the system temp dir)

import { spawn } from "node:child_process";
import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import lockfile from "proper-lockfile";
import {
  ARTIFACT_FILES,
  classify,
  LOCK_NAME,
  PUBLISH_ORDER,
  serializeConfig,
  serializeWatermark,
  type ArtifactName,
  type ArtifactRead,
} from "../src/state/artifacts.ts";
import { nodeDurableFs, publishFile, sweepTemps } from "../src/state/durable-fs.ts";
import { createDurableGlobalState } from "../src/state/durable-store.ts";
import { applyChange, DEFAULT_SNAPSHOT, followingGlobalState } from "../src/state/global.ts";

interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? 0;
  return { n: s.length, p50: at(50), p95: at(95), p99: at(99), max: s.at(-1) ?? 0 };
}

const now = () => process.hrtime.bigint();
const us = (t0: bigint) => Number(now() - t0) / 1000;

async function sample(n: number, fn: () => unknown): Promise<Stats> {
  for (let i = 0; i < Math.min(1000, n); i++) await fn(); // warm-up
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await fn();
    out.push(us(t0));
  }
  return stats(out);
}

function sampleSync(n: number, fn: () => unknown): Stats {
  for (let i = 0; i < Math.min(1000, n); i++) fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    fn();
    out.push(us(t0));
  }
  return stats(out);
}

// ---------------------------------------------------------------------------------------------
// (c) A contender: a child process (this file again) that commits `count` times back to back once
// told to go, timing each commit from the call to its result, and prints the figures as JSON.

type Impl = "store" | "previous";
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The previous commit, as it was before the lock was replaced: proper-lockfile with no retries of
 * its own, polled with growing jittered sleeps (2 ms x 1.5^attempt, at most 50 ms), the same
 * critical section, every directory sync under the lock, and an asynchronous release.
 */
async function previousCommit(dir: string, enabled: boolean): Promise<boolean> {
  const lockPath = join(dir, LOCK_NAME);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const deadline = Date.now() + 15_000;
  let release: () => Promise<void>;
  for (let attempt = 0; ; attempt++) {
    try {
      release = await lockfile.lock(lockPath, { lockfilePath: lockPath, realpath: false, stale: 10_000, retries: 0, onCompromised: () => {} });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ELOCKED" || Date.now() >= deadline) return false;
      const base = Math.min(50, 2 * 1.5 ** attempt);
      await sleep(Math.min(base * (0.5 + Math.random()), Math.max(1, deadline - Date.now())));
    }
  }
  try {
    sweepTemps(nodeDurableFs, dir);
    const reads = {} as Record<ArtifactName, ArtifactRead>;
    for (const a of ["config", "primary", "recovery"] as const) reads[a] = nodeDurableFs.readFile(join(dir, ARTIFACT_FILES[a]), 4096).read;
    const c = classify(reads);
    if (c.kind === "fault") return false;
    const revision = (c.kind === "ok" ? c.watermark : 0) + 1;
    const next = applyChange(c.kind === "ok" ? c.snapshot : DEFAULT_SNAPSHOT, { enabled }, revision);
    for (const a of PUBLISH_ORDER)
      publishFile(nodeDurableFs, dir, ARTIFACT_FILES[a], a === "config" ? serializeConfig(next) : serializeWatermark(revision), revision, () => true);
    return true;
  } catch {
    return false;
  } finally {
    await release().catch(() => {});
  }
}

async function contend(agentDir: string, count: number, impl: Impl): Promise<void> {
  const store = createDurableGlobalState({ agentDir });
  const commit = async (i: number): Promise<string | undefined> => {
    if (impl === "previous") return (await previousCommit(store.dir, i % 2 === 0)) ? undefined : "previous commit failed";
    const res = await store.setEnabled(i % 2 === 0);
    return res.kind === "committed" ? undefined : JSON.stringify(res);
  };
  for (let i = 0; i < 3; i++) await commit(i); // warm-up, before the start signal
  process.stdout.write("ready\n");
  await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
  const ms: number[] = [];
  const failures: string[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = now();
    const failed = await commit(i);
    ms.push(us(t0) / 1000);
    if (failed) failures.push(failed);
  }
  process.stdout.write(`${JSON.stringify({ ms, failures })}\n`);
}

interface Contention {
  readonly procs: number;
  readonly ms: Stats;
  readonly failures: number;
  readonly firstFailure: string | undefined;
  /** Commits per second over the whole run. */
  readonly rate: number;
}

/** `procs` contenders on one fresh state dir, started together once all have loaded and warmed up. */
async function contention(root: string, procs: number, count: number, impl: Impl): Promise<Contention> {
  const agentDir = mkdtempSync(join(root, `contention-${impl}-${procs}-`));
  const self = fileURLToPath(import.meta.url);
  const children = Array.from({ length: procs }, () => {
    const proc = spawn(process.execPath, [self, "--contender", agentDir, String(count), impl], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    let readyResolve: () => void;
    const ready = new Promise<void>((resolve) => (readyResolve = resolve));
    proc.stdout!.setEncoding("utf8");
    proc.stdout!.on("data", (d: string) => {
      out += d;
      if (out.startsWith("ready\n")) readyResolve();
    });
    const done = new Promise<{ ms: number[]; failures: string[] }>((resolve, reject) =>
      proc.on("close", (code) =>
        code === 0 ? resolve(JSON.parse(out.slice("ready\n".length)) as { ms: number[]; failures: string[] }) : reject(new Error(`contender exited ${code}`)),
      ),
    );
    return { proc, ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  const t0 = now();
  for (const c of children) c.proc.stdin!.write("go\n");
  const results = await Promise.all(children.map((c) => c.done));
  const wallMs = us(t0) / 1000;
  const failures = results.flatMap((r) => r.failures);
  const all = results.flatMap((r) => r.ms);
  return { procs, ms: stats(all), failures: failures.length, firstFailure: failures[0], rate: (all.length / wallMs) * 1000 };
}

const flags = new Map(process.argv.slice(2).flatMap((a) => (a.startsWith("--") ? [[a.slice(2).split("=")[0]!, a.split("=")[1] ?? ""] as const] : [])));
if (flags.has("contender")) {
  const [agentDir, count, impl] = process.argv.slice(process.argv.indexOf("--contender") + 1);
  await contend(agentDir!, Number(count), impl as Impl);
  process.exit(0);
}
const only = flags.get("only");
const PROCS = Number(flags.get("procs") || 8);
const EACH = Number(flags.get("commits") || 50);

const fmt = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} ms` : `${x.toFixed(1)} µs`);
const row = (name: string, s: Stats) =>
  `  ${name.padEnd(44)} n=${String(s.n).padStart(6)}  p50 ${fmt(s.p50).padStart(9)}  p99 ${fmt(s.p99).padStart(9)}  max ${fmt(s.max).padStart(9)}`;

const base = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? tmpdir();
mkdirSync(base, { recursive: true });
const root = mkdtempSync(join(base, "pi-auto-mode-state-bench-"));
console.log(`durable global state, in ${root} (Node ${process.versions.node}, ${process.platform})`);

const agentDir = join(root, "agent");
const store = createDurableGlobalState({ agentDir });
if (only === undefined || only === "gate" || only === "commit") {
  // The process-wide store the wrapper finds must be this one, so both rows measure the same cache.
  (globalThis as Record<symbol, unknown>)[Symbol.for("pi-auto-mode:global-state-stores/1")] = new Map([[agentDir, store]]);
  await store.setReviewer({ provider: "anthropic", model: "claude-haiku-4-5", thinking: "low" });
  const r = await store.read();
  if (r.kind !== "ok") throw new Error(`unexpected state: ${JSON.stringify(r)}`);
}

if (only === undefined || only === "gate") {
  const CHECKS = 200_000;
  const files = ["state.json", "revision.json", "revision.recovery.json"].map((f) => join(store.dir, f));
  // The extension's store follows Pi's agent dir (getAgentDir()) at every call.
  const following = followingGlobalState(() => agentDir);
  const gate = {
    "read() via the extension's wrapper": await sample(CHECKS, () => following.read()),
    "store.read() (what the gate awaits)": await sample(CHECKS, () => store.read()),
    "store.check() (its synchronous part)": sampleSync(CHECKS, () => store.check()),
    "baseline: 1 x statSync": sampleSync(CHECKS, () => statSync(files[0]!, { throwIfNoEntry: false })),
    "baseline: 3 x statSync": sampleSync(CHECKS, () => {
      for (const f of files) statSync(f, { throwIfNoEntry: false });
    }),
  };

  console.log("\n(a) per-gate state check, nothing changed  [target: p99 < 50 µs]");
  for (const [name, s] of Object.entries(gate)) console.log(row(name, s));
  const p99 = Math.max(gate["store.read() (what the gate awaits)"].p99, gate["read() via the extension's wrapper"].p99);
  console.log(`  -> read() p99 ${fmt(p99)}: ${p99 < 50 ? "within" : "OVER"} the target`);
}

if (only === undefined || only === "commit") {
  const COMMITS = 200;
  let flip = false;
  const commit = await sample(COMMITS, async () => {
    flip = !flip;
    const res = await store.setEnabled(flip);
    if (res.kind !== "committed") throw new Error(JSON.stringify(res));
  });
  let k = 0;
  const bareWrite = sampleSync(COMMITS, () => {
    const tmp = join(root, `.bare.${k++}.tmp`);
    const fd = openSync(tmp, "wx", 0o600);
    writeSync(fd, '{"watermark":1}\n');
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, join(root, "bare.json"));
    const dfd = openSync(root, "r");
    fsyncSync(dfd);
    closeSync(dfd);
  });
  const lockPath = join(root, "bare.lock");
  const bareLock = await sample(COMMITS, async () => {
    const release = await lockfile.lock(lockPath, { lockfilePath: lockPath, realpath: false });
    await release();
  });

  console.log("\n(b) one commit: lock, recovery watermark, primary watermark, config, unlock  [target: median < 20 ms]");
  console.log(row("store.setEnabled()", commit));
  console.log(row("baseline: 1 bare atomic write", bareWrite));
  console.log(row("baseline: bare proper-lockfile lock+unlock", bareLock));
  console.log(`  -> commit median ${fmt(commit.p50)}: ${commit.p50 < 20_000 ? "within" : "OVER"} the target`);
}

if (only === undefined || only === "contention") {
  console.log(`\n(c) ${PROCS} processes committing back to back, ${EACH} commits each  [target: p99 <= 100 ms, no failed commit]`);
  // Alone first, then contended; this lock and the previous one alternate, so noise on the
  // machine falls on both.
  const alone = await contention(root, 1, EACH, "store");
  const aloneBefore = await contention(root, 1, EACH, "previous");
  const contended = await contention(root, PROCS, EACH, "store");
  const contendedBefore = await contention(root, PROCS, EACH, "previous");
  const line = (name: string, c: Contention) =>
    `  ${name.padEnd(44)} n=${String(c.ms.n).padStart(5)}  p50 ${c.ms.p50.toFixed(1).padStart(7)} ms  p95 ${c.ms.p95.toFixed(1).padStart(7)} ms  p99 ${c.ms.p99.toFixed(1).padStart(7)} ms  max ${c.ms.max.toFixed(1).padStart(7)} ms  ${c.rate.toFixed(0).padStart(4)} commits/s  failed ${c.failures}${c.firstFailure ? ` (${c.firstFailure})` : ""}`;
  console.log(line("1 process, this lock", alone));
  console.log(line("baseline: 1 process, previous lock", aloneBefore));
  console.log(line(`${PROCS} processes, this lock`, contended));
  console.log(line(`baseline: ${PROCS} processes, previous lock`, contendedBefore));
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  // Served in turn, a commit waits for the others' commits: about PROCS x the lone commit.
  console.log(
    `  -> ${PROCS}-way p99 vs the previous lock's: ${ratio(contended.ms.p99, contendedBefore.ms.p99)} (max ${ratio(contended.ms.max, contendedBefore.ms.max)}); vs ${PROCS} x the lone commit's p50 (strict turns): ${ratio(contended.ms.p99, PROCS * alone.ms.p50)}`,
  );
  const ok = contended.ms.p99 <= 100 && contended.failures === 0;
  console.log(`  -> ${PROCS}-way p99 ${contended.ms.p99.toFixed(1)} ms, ${contended.failures} failed: ${ok ? "within" : "OVER"} the target`);
}

rmSync(root, { recursive: true, force: true });
