// What durable global state costs (P12), next to baselines measured in the same run on the same
// file system:
//   (a) the per-gate check when nothing changed: `read()` as the gate awaits it, and its
//       synchronous part `check()` (three stats), against one bare statSync and three;
//   (b) a commit (lock, three atomic publishes, unlock): against one bare atomic write of one file
//       (temp, fsync, rename, directory fsync) and one bare lock/unlock of proper-lockfile.
// Targets: (a) p99 under 50 µs, (b) median under 20 ms. Prints figures and asserts nothing:
// timings belong in a report, not in a test.
//
//   node bench/state.bench.ts [dir]    (default: a fresh folder under the system temp dir)

import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import lockfile from "proper-lockfile";
import { createDurableGlobalState } from "../src/state/durable-store.ts";
import { followingGlobalState } from "../src/state/global.ts";

interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? 0;
  return { n: s.length, p50: at(50), p99: at(99), max: s.at(-1) ?? 0 };
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

const base = process.argv[2] ?? tmpdir();
mkdirSync(base, { recursive: true });
const root = mkdtempSync(join(base, "pi-auto-mode-state-bench-"));
const agentDir = join(root, "agent");
const store = createDurableGlobalState({ agentDir });
// The process-wide store the wrapper finds must be this one, so both rows measure the same cache.
(globalThis as Record<symbol, unknown>)[Symbol.for("pi-auto-mode:global-state-stores/1")] = new Map([[agentDir, store]]);
await store.setReviewer({ provider: "anthropic", model: "claude-haiku-4-5", thinking: "low" });
const r = await store.read();
if (r.kind !== "ok") throw new Error(`unexpected state: ${JSON.stringify(r)}`);

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

const fmt = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} ms` : `${x.toFixed(1)} µs`);
const row = (name: string, s: Stats) => `  ${name.padEnd(44)} n=${String(s.n).padStart(6)}  p50 ${fmt(s.p50).padStart(9)}  p99 ${fmt(s.p99).padStart(9)}  max ${fmt(s.max).padStart(9)}`;

console.log(`durable global state, in ${root} (Node ${process.versions.node}, ${process.platform})`);
console.log("\n(a) per-gate state check, nothing changed  [target: p99 < 50 µs]");
for (const [name, s] of Object.entries(gate)) console.log(row(name, s));
const p99 = Math.max(gate["store.read() (what the gate awaits)"].p99, gate["read() via the extension's wrapper"].p99);
console.log(`  -> read() p99 ${fmt(p99)}: ${p99 < 50 ? "within" : "OVER"} the target`);
console.log("\n(b) one commit: lock, recovery watermark, primary watermark, config, unlock  [target: median < 20 ms]");
console.log(row("store.setEnabled()", commit));
console.log(row("baseline: 1 bare atomic write", bareWrite));
console.log(row("baseline: bare proper-lockfile lock+unlock", bareLock));
console.log(`  -> commit median ${fmt(commit.p50)}: ${commit.p50 < 20_000 ? "within" : "OVER"} the target`);

rmSync(root, { recursive: true, force: true });
