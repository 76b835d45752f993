// How long one call costs the gate, in microseconds, measured as the extension pays for it: the
// per-call preparation (configuration, places, repository facts: prepareGate) and the decision,
// (a) over a labelled corpus and (b) over 10,000 generated realistic shell commands, each under
// both backends, next to baselines measured in the same run on the same inputs: JSON.stringify +
// sha256 (the least any gate must do to bind a verdict to a request) and, for shell commands, the
// bare unbash parse. (c) is the scaling table: each command shape of src/eval/shapes.ts at 1, 4,
// 16 and 64 KB, with the growth factor per step; linear growth is about 4x per step, and a shape
// that reaches the analysis bound stops growing (it is reviewed as too complex).
//
// The corpus is the first of: the path given as the first argument; $PI_AUTO_MODE_CORPUS; a
// shared/eval/cases.jsonl beside the repository or above it (a fresh clone in CI has ../shared);
// otherwise the repository's own test/fixtures/*.jsonl. Prints figures and asserts nothing:
// timings belong in a report, not in a test.

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "unbash";
import { parseCorpus, substitute } from "../src/eval/corpus.ts";
import { generator } from "../src/eval/generate.ts";
import { decideLikeTheExtension, evalSetup } from "../src/eval/score.ts";
import { SCALING_SIZES_KB, SHAPES } from "../src/eval/shapes.ts";
import { buildEvalWorkspace } from "../src/eval/workspace.ts";
import { decide, prepareGate, type GateSetup } from "../src/policy/gate.ts";
import { analyzeShell } from "../src/policy/shell/analyze.ts";
import type { Backend, Route } from "../src/policy/types.ts";
import type { StampBook } from "../src/request/stamps.ts";

interface Call {
  readonly id?: string;
  readonly tool: string;
  readonly input: unknown;
}

interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function stats(samples: number[]): Stats {
  const s = samples.sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s.at(-1) ?? 0 };
}

function once(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0) / 1000;
}

/**
 * Two views of the same calls, after untimed warm-up rounds (WARM_UP_ROUNDS: the gate runs
 * thousands of times a session, so the figure that matters is the JIT's steady state; the first
 * calls' cost is the start-up bench's):
 * - `single`: every call timed once per round, every sample kept, so GC pauses and scheduler
 *   noise from other processes on the machine land in p99 and max;
 * - `median5`: one sample per call, the median of 5 back-to-back runs (what `eval` reports as
 *   decide_us): the cost of the decision itself, without stray pauses.
 */
const WARM_UP_ROUNDS = 3;

function timeEach<T>(items: readonly T[], rounds: number, fn: (item: T) => unknown): { single: Stats; median5: Stats } {
  for (let r = 0; r < WARM_UP_ROUNDS; r++) for (const item of items) fn(item);
  const single: number[] = [];
  for (let r = 0; r < rounds; r++) for (const item of items) single.push(once(() => fn(item)));
  const median5 = items.map((item) => {
    const five = [once(() => fn(item)), once(() => fn(item)), once(() => fn(item)), once(() => fn(item)), once(() => fn(item))];
    return five.sort((a, b) => a - b)[2]!;
  });
  return { single: stats(single), median5: stats(median5) };
}

// ---- run -------------------------------------------------------------------------------------

const BACKENDS: readonly Exclude<Backend, "unavailable">[] = ["sandboxed", "review-only"];
const CORPUS_ROUNDS = 20;
const GENERATED = 10_000;

function jsonSha(call: Call, cwd: string): string {
  return createHash("sha256")
    .update(JSON.stringify({ tool: call.tool, input: call.input, cwd }))
    .digest("hex");
}

function row(label: string, t: { single: Stats; median5: Stats }): string {
  const f = (x: number) => x.toFixed(1).padStart(7);
  const cells = (s: Stats) => `${String(s.n).padStart(6)} ${f(s.p50)} ${f(s.p99)} ${f(s.max)}`;
  return `${label.padEnd(38)} | ${cells(t.single)} | ${cells(t.median5)}`;
}

const HEADER = [
  `${"".padEnd(38)} | ${"single-shot, every sample".padEnd(30)} | median of 5 per call`,
  `${"".padEnd(38)} | ${"n".padStart(6)} ${"p50".padStart(7)} ${"p99".padStart(7)} ${"max".padStart(7)} | ${"n".padStart(6)} ${"p50".padStart(7)} ${"p99".padStart(7)} ${"max".padStart(7)}`,
];

function routes(calls: readonly Call[], setup: GateSetup, backend: Backend): string {
  const by: Record<Route, number> = { allow: 0, sandbox: 0, review: 0, deny: 0 };
  for (const c of calls) by[decideLikeTheExtension(c.tool, c.input, setup, backend).decision.route]++;
  return Object.entries(by)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/**
 * The k slowest calls, each with the file system calls its shell analysis made (after the
 * preparation's, which every call makes): how much of a slow case the look-ups can explain.
 */
function slowest(calls: readonly Call[], setup: GateSetup, backend: Backend, k: number): string {
  const timed = calls.map((c) => {
    const five = Array.from({ length: 5 }, () => once(() => decideLikeTheExtension(c.tool, c.input, setup, backend)));
    return { call: c, us: five.sort((a, b) => a - b)[2]! };
  });
  return timed
    .sort((a, b) => b.us - a.us)
    .slice(0, k)
    .map(({ call, us }) => {
      const command = call.tool === "bash" ? (call.input as { command?: unknown }).command : undefined;
      const fs = typeof command === "string" ? ` (${analyzeShell(command, prepareGate(setup).judge.shell).fsCalls} fs)` : "";
      return `${call.id ?? "?"} ${us.toFixed(0)}${fs}`;
    })
    .join(", ");
}

/** The corpus files to measure: see the header. */
function corpusFiles(): { files: string[]; from: string } {
  const given = process.argv[2] ?? process.env.PI_AUTO_MODE_CORPUS;
  if (given) return { files: [resolve(given)], from: "given" };
  const repo = fileURLToPath(new URL("..", import.meta.url));
  for (const start of [repo, process.cwd()]) {
    for (let dir = resolve(start); ; dir = dirname(dir)) {
      const candidate = join(dir, "shared", "eval", "cases.jsonl");
      if (existsSync(candidate)) return { files: [candidate], from: "shared" };
      if (dirname(dir) === dir) break;
    }
  }
  const fixtures = join(repo, "test", "fixtures");
  const own = readdirSync(fixtures)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .map((f) => join(fixtures, f));
  return { files: own, from: "the repository's own fixtures (no shared corpus found)" };
}

function loadCorpus(files: readonly string[], vars: Readonly<Record<string, string>>): Call[] {
  return files.flatMap((file) => {
    const prefix =
      files.length > 1
        ? `${file
            .split("/")
            .pop()!
            .replace(/\.jsonl$/, "")}:`
        : "";
    return parseCorpus(readFileSync(file, "utf8"), file).map((c) => ({ id: prefix + c.id, tool: c.tool, input: substitute(c.input, vars) }));
  });
}

/** Median of `n` runs of fn, in microseconds. */
function median(n: number, fn: () => unknown): number {
  const s = Array.from({ length: n }, () => once(fn)).sort((a, b) => a - b);
  return s[n >> 1]!;
}

function scalingTable(setup: GateSetup): string[] {
  const gate = prepareGate(setup);
  const lines = [
    "(c) scaling: preparation + decision (median of 3, ms) at each size; xN = growth over the previous size (linear is ~4x);",
    "    steps and fs = analysis steps and file system calls (growth too); the route at 64 KB",
  ];
  const width = Math.max(...Object.keys(SHAPES).map((k) => k.length));
  for (const [name, shape] of Object.entries(SHAPES)) {
    const cells: string[] = [];
    let prev: { ms: number; steps: number; fs: number } | undefined;
    let last = "";
    for (const kb of SCALING_SIZES_KB) {
      const command = shape(kb * 1024);
      decideLikeTheExtension("bash", { command }, setup, "sandboxed");
      const ms = median(3, () => decideLikeTheExtension("bash", { command }, setup, "sandboxed")) / 1000;
      const a = analyzeShell(command, gate.judge.shell);
      const growth = (x: number, y: number | undefined) => (y === undefined || y === 0 ? "" : ` x${(x / y).toFixed(1)}`);
      cells.push(
        `${String(kb).padStart(2)}K ${ms.toFixed(2).padStart(6)}ms${growth(ms, prev?.ms).padEnd(6)} ${String(a.steps).padStart(5)}st${growth(a.steps, prev?.steps).padEnd(6)} ${String(a.fsCalls).padStart(4)}fs`,
      );
      prev = { ms, steps: a.steps, fs: a.fsCalls };
      const d = decide("bash", { command }, gate, "sandboxed").decision;
      last = `${d.route}/${d.reason}`;
    }
    lines.push(`    ${name.padEnd(width)} | ${cells.join(" | ")} | ${last}`);
  }
  return lines;
}

const w = buildEvalWorkspace();
try {
  const setup = evalSetup(w);
  const vars = { ws: w.ws, home: w.home, tmp: w.tmp };
  const lines: string[] = [];
  lines.push(`node ${process.versions.node}, ${process.platform}/${process.arch}; times in microseconds per call, preparation included`);
  lines.push(...HEADER);

  const { files, from } = corpusFiles();
  const corpus = loadCorpus(files, vars);
  for (const b of BACKENDS)
    lines.push(
      row(
        `(a) corpus decide, ${b}`,
        timeEach(corpus, CORPUS_ROUNDS, (c) => decideLikeTheExtension(c.tool, c.input, setup, b)),
      ),
    );
  lines.push(
    row(
      "(a) corpus preparation alone",
      timeEach(corpus, CORPUS_ROUNDS, () => prepareGate(setup)),
    ),
  );
  // The preparation's cost is its look-ups (one lstat each): how many a warm call makes.
  const prepCalls = (prepareGate(setup).judge.shell as unknown as { book: StampBook }).book.calls;
  lines.push(
    row(
      "(a) corpus baseline json+sha256",
      timeEach(corpus, CORPUS_ROUNDS, (c) => jsonSha(c, w.ws)),
    ),
  );

  const next = generator(20240601);
  const generated: Call[] = Array.from({ length: GENERATED }, () => ({ tool: "bash", input: { command: next() } }));
  const gen: Record<string, { single: Stats; median5: Stats }> = {};
  for (const b of BACKENDS) {
    gen[b] = timeEach(generated, 1, (c) => decideLikeTheExtension(c.tool, c.input, setup, b));
    lines.push(row(`(b) generated decide, ${b}`, gen[b]!));
  }
  const genSha = timeEach(generated, 1, (c) => jsonSha(c, w.ws));
  const genParse = timeEach(generated, 1, (c) => parse((c.input as { command: string }).command));
  lines.push(row("(b) generated baseline json+sha256", genSha));
  lines.push(row("(b) generated baseline unbash parse()", genParse));

  const s = gen.sandboxed!.median5;
  const ratio = (base: Stats) => `p50 ${(s.p50 / base.p50).toFixed(1)}x, p99 ${(s.p99 / base.p99).toFixed(1)}x`;
  lines.push("");
  lines.push(`ratio (b) sandboxed decide / json+sha256 (median of 5): ${ratio(genSha.median5)}`);
  lines.push(
    `ratio (b) sandboxed decide / unbash parse() (median of 5): ${ratio(genParse.median5)}  (parse() is lazy: nested parts are parsed when the gate walks them)`,
  );
  const avgLen = generated.reduce((n, c) => n + (c.input as { command: string }).command.length, 0) / generated.length;
  const unique = new Set(generated.map((c) => (c.input as { command: string }).command)).size;
  lines.push(
    `generated: ${generated.length} commands (${unique} distinct), mean ${avgLen.toFixed(0)} chars; routes sandboxed: ${routes(generated, setup, "sandboxed")}; review-only: ${routes(generated, setup, "review-only")}`,
  );
  lines.push(`corpus: ${corpus.length} cases from ${files.join(", ")} (${from})`);
  lines.push(`preparation: ${prepCalls} file system calls per call, warm (the stamps of what the kept configuration and places were read from)`);
  lines.push(`slowest corpus cases (sandboxed, median of 5 us; file system calls of the analysis): ${slowest(corpus, setup, "sandboxed", 5)}`);
  lines.push("");
  lines.push(...scalingTable(setup));
  console.log(lines.join("\n"));
} finally {
  w.dispose();
}
