// What applying a staged command's effects costs (src/sandbox/effects/apply.ts), in milliseconds, on one
// file system (the staged files are renamed into place):
// - 10,000 changed files: 5,000 creations spread over 100 folders, 4,000 overwrites, 1,000
//   removals; median of 5 applies, against the same changes made by plain renameSync/rmSync loops
//   (no lock, no journal, no pre-images, no undo entry). The target: at most 1 s.
// - an "npm install": one put of a new 20,000-file tree, against writing that tree in place.
// Each run gets a fresh workspace; only the apply (or the loop) is timed. Asserts nothing:
// timings belong in a report, not in a test.

import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { applyEffects } from "../src/sandbox/effects/apply.ts";
import { identityAt } from "../src/sandbox/effects/identity.ts";
import type { ApplyOp } from "../src/sandbox/effects/judge.ts";
import { effectStore } from "../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../src/sandbox/effects/undo.ts";

const RUNS = Number(process.argv[2] ?? 5);
const TARGET_MS = 1000;
const FOLDERS = 100;
const CREATE = 5000;
const OVERWRITE = 4000;
const REMOVE = 1000;
const TREE_FILES = 20_000;

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-effects-bench-")));
const content = (i: number) => `export const v${i} = ${i}; // ${"x".repeat(i % 200)}\n`;

let n = 0;
/** A workspace with the files to overwrite and remove, and a staged folder with the new ones. */
function prepare() {
  const dir = join(root, `run-${++n}`);
  const ws = join(dir, "ws");
  const staged = join(dir, "staged");
  for (let f = 0; f < FOLDERS; f++) {
    mkdirSync(join(ws, `d${f}`), { recursive: true });
    mkdirSync(join(staged, `d${f}`), { recursive: true });
  }
  const at = (base: string, i: number, name: string) => join(base, `d${i % FOLDERS}`, `${name}${i}.ts`);
  const puts: { target: string; source: string; create: boolean }[] = [];
  const removes: string[] = [];
  for (let i = 0; i < OVERWRITE; i++) {
    writeFileSync(at(ws, i, "o"), content(i));
    writeFileSync(at(staged, i, "o"), content(i + 1));
    puts.push({ target: at(ws, i, "o"), source: at(staged, i, "o"), create: false });
  }
  for (let i = 0; i < CREATE; i++) {
    writeFileSync(at(staged, i, "c"), content(i));
    puts.push({ target: at(ws, i, "c"), source: at(staged, i, "c"), create: true });
  }
  for (let i = 0; i < REMOVE; i++) {
    writeFileSync(at(ws, i, "r"), content(i));
    removes.push(at(ws, i, "r"));
  }
  return { dir, ws, puts, removes, store: effectStore(join(dir, "agent")) };
}

function opsOf(p: ReturnType<typeof prepare>): ApplyOp[] {
  const ops: ApplyOp[] = p.puts.map((x) => {
    const before = x.create ? null : identityAt(x.target);
    return { kind: "put", target: x.target, source: x.source, type: "file", before, keep: before !== null, stripSetid: false };
  });
  for (const r of p.removes) ops.push({ kind: "remove", target: r, before: identityAt(r)!, type: "file", keep: true });
  return ops;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2 };
};
const f = (x: number) => x.toFixed(0).padStart(6);

console.log(`effects apply bench: ${RUNS} runs each, ${cpus().length} cpu(s), load ${loadavg()[0]!.toFixed(2)}, in ${root}`);

// 10,000 changed files, interleaved with the baseline so both see the same machine.
const applied: number[] = [];
const plain: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const a = prepare();
  const ops = opsOf(a);
  let t = performance.now();
  const res = await applyEffects({ store: a.store, workspace: a.ws, command: "bench", ops, bounds: DEFAULT_UNDO_BOUNDS });
  applied.push(performance.now() - t);
  if (res.applied !== ops.length || res.conflicts.length > 0) throw new Error(`applied ${res.applied} of ${ops.length}, ${res.conflicts.length} conflicts`);
  rmSync(a.dir, { recursive: true, force: true });

  const b = prepare();
  t = performance.now();
  for (const x of b.puts) renameSync(x.source, x.target);
  for (const x of b.removes) rmSync(x);
  plain.push(performance.now() - t);
  rmSync(b.dir, { recursive: true, force: true });
}
const sa = stats(applied);
const sp = stats(plain);
console.log(`10,000 files (${CREATE} created over ${FOLDERS} folders, ${OVERWRITE} overwritten, ${REMOVE} removed):`);
console.log(
  `  applyEffects      min ${f(sa.min)}  median ${f(sa.median)}  ${sa.median <= TARGET_MS ? "<=" : "> "} ${TARGET_MS} ms target: ${sa.median <= TARGET_MS ? "met" : "MISSED"}`,
);
console.log(`  rename/rm loops   min ${f(sp.min)}  median ${f(sp.median)}`);
console.log(`  ratio (medians)   ${(sa.median / sp.median).toFixed(2)}x  (journal, pre-images, fsyncs, undo entry: ${f(sa.median - sp.median)} ms)`);

// An "npm install": one new tree of 20,000 files in 1,000 packages.
function writeTree(base: string): void {
  for (let p = 0; p < TREE_FILES / 20; p++) {
    const pkg = join(base, `pkg${p}`, "lib");
    mkdirSync(pkg, { recursive: true });
    for (let i = 0; i < 20; i++) writeFileSync(join(pkg, `m${i}.js`), content(i));
  }
}
const treeApply: number[] = [];
const treeDirect: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const dir = join(root, `tree-${r}`);
  const ws = join(dir, "ws");
  mkdirSync(ws, { recursive: true });
  writeTree(join(dir, "staged", "node_modules"));
  const op: ApplyOp = {
    kind: "put",
    target: join(ws, "node_modules"),
    source: join(dir, "staged", "node_modules"),
    type: "dir",
    before: null,
    keep: false,
    stripSetid: false,
  };
  let t = performance.now();
  await applyEffects({ store: effectStore(join(dir, "agent")), workspace: ws, command: "npm install", ops: [op], bounds: DEFAULT_UNDO_BOUNDS });
  treeApply.push(performance.now() - t);
  t = performance.now();
  writeTree(join(dir, "direct", "node_modules"));
  treeDirect.push(performance.now() - t);
  rmSync(dir, { recursive: true, force: true });
}
const ta = stats(treeApply);
const td = stats(treeDirect);
console.log(`a new ${TREE_FILES}-file tree ("npm install"), one put:`);
console.log(`  applyEffects      min ${f(ta.min)}  median ${f(ta.median)}  (one rename, and the tree's listing for undo)`);
console.log(`  written in place  min ${f(td.min)}  median ${f(td.median)}`);
console.log(`  ratio (medians)   ${(ta.median / td.median).toFixed(3)}x`);

rmSync(root, { recursive: true, force: true });
