// Applying a judged effect set to the real workspace (src/sandbox/effects/apply.ts) and undoing it
// (src/sandbox/effects/undo.ts), on real files in temp folders. Ops are built by hand: a "staged" folder
// stands in for the overlay's upper layer, `before` identities are taken right before applying.
//
// The hostile part: a child process applies ~200 ops and is killed with SIGKILL at random points
// (after a random op through the afterOp hook, at a random file system call inside the apply, or
// from the parent after a random delay), 100 times; sometimes the recovery and the undo that
// follow are killed too. After every kill each target must be exactly its old or its new version;
// recovery must finish the apply (every target new, no journal, no temp files left in the
// workspace) and its undo must give the old state back exactly. The same on two file systems
// (the copy fallback) where a second one is at hand. Then conflicts, undo rules, pruning, two
// applies racing for one workspace, and a live applier whose journal nobody else may touch.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { after, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { applyEffects, recoverJournals } from "../../src/sandbox/effects/apply.ts";
import { identityAt } from "../../src/sandbox/effects/identity.ts";
import type { ApplyOp } from "../../src/sandbox/effects/judge.ts";
import { effectStore, lockPathOf, undoDirOf, type EffectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS, listUndo, pruneUndo, undoLast, type UndoBounds } from "../../src/sandbox/effects/undo.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-apply-")));
after(() => rmSync(root, { recursive: true, force: true }));
const SRC = join(import.meta.dirname, "..", "..", "src", "sandbox", "effects");

// A second file system for the copy fallback (tmpfs in /dev/shm on Linux), when it is one.
const otherFs = (() => {
  try {
    if (statSync("/dev/shm").dev === statSync(root).dev) return undefined;
    const d = realpathSync(mkdtempSync("/dev/shm/pi-auto-mode-apply-"));
    after(() => rmSync(d, { recursive: true, force: true }));
    return d;
  } catch {
    return undefined;
  }
})();

let counter = 0;
function fresh(name: string, base = root): string {
  const d = join(base, `${name}-${++counter}`);
  mkdirSync(d, { recursive: true });
  return d;
}

// ---------------------------------------------------------------------------------------------
// Snapshots: what a path holds, by content (a hash), mode and type; a directory with its children.

type Snap = { t: "f"; mode: number; h: string } | { t: "l"; to: string } | { t: "d"; mode: number; c: Record<string, Snap> } | { t: "o" };

function snap(p: string): Snap | null {
  const st = lstatSync(p, { throwIfNoEntry: false });
  if (!st) return null;
  if (st.isSymbolicLink()) return { t: "l", to: readlinkSync(p) };
  if (st.isFile()) return { t: "f", mode: st.mode & 0o7777, h: createHash("sha1").update(readFileSync(p)).digest("hex") };
  if (st.isDirectory()) {
    const c: Record<string, Snap> = {};
    for (const n of readdirSync(p).sort()) c[n] = snap(join(p, n))!;
    return { t: "d", mode: st.mode & 0o7777, c };
  }
  return { t: "o" };
}

/** Replace the entry at `rel` of a tree snapshot, in place (null: absent). */
function setEntry(tree: Snap, rel: string, entry: Snap | null): void {
  const parts = rel.split("/");
  let cur = tree;
  for (const part of parts.slice(0, -1)) {
    assert.equal(cur.t, "d");
    cur = (cur as { c: Record<string, Snap> }).c[part]!;
  }
  assert.equal(cur.t, "d");
  const c = (cur as { c: Record<string, Snap> }).c;
  const last = parts.at(-1)!;
  if (entry === null) delete c[last];
  else c[last] = entry;
  // Keep the key order of a fresh snapshot.
  const sorted = Object.fromEntries(Object.entries(c).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  for (const k of Object.keys(c)) delete c[k];
  Object.assign(c, sorted);
}

/** Names auto mode's apply or undo leaves only while it runs. */
function junkIn(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (n.startsWith(".pi-auto-mode")) out.push(relative(dir, p));
      if (lstatSync(p).isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Ops by hand.

const put = (target: string, source: string, o: { keep?: boolean; stripSetid?: boolean; before?: "now" | null } = {}): ApplyOp => {
  const st = lstatSync(source);
  const type = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
  const before = o.before === null ? null : identityAt(target);
  return { kind: "put", target, source, type, before, keep: o.keep ?? before !== null, stripSetid: o.stripSetid ?? false };
};
const remove = (target: string, keep = true): ApplyOp => {
  const before = identityAt(target);
  assert.ok(before, `${target} must exist to be removed`);
  const st = lstatSync(target);
  return { kind: "remove", target, before, type: st.isDirectory() ? "dir" : st.isSymbolicLink() ? "symlink" : "file", keep };
};
/** What replaces a path of another type: its removal, then the put of the new entry. */
const replace = (target: string, source: string, keep = true): ApplyOp[] => {
  const r = remove(target, keep);
  return [r, { ...put(target, source, { before: null }), keep }];
};

function setup(name: string, base = root) {
  const dir = fresh(name, base);
  const ws = join(dir, "ws");
  const staged = join(dir, "staged");
  mkdirSync(ws);
  mkdirSync(staged);
  return { dir, ws, staged, store: effectStore(join(dir, "agent")) };
}

const bounds: UndoBounds = DEFAULT_UNDO_BOUNDS;
const apply = (store: EffectStore, ws: string, ops: ApplyOp[], command = "cmd", b: UndoBounds = bounds) =>
  applyEffects({ store, workspace: ws, command, ops, bounds: b });
const journals = (store: EffectStore) => (existsSync(store.journalDir) ? readdirSync(store.journalDir).filter((n) => n.endsWith(".json")) : []);

// ---------------------------------------------------------------------------------------------
// A child process that applies (or recovers, or undoes) and can be killed at chosen points.

interface ChildSpec {
  readonly mode: "apply" | "recover" | "undo";
  readonly store: EffectStore;
  readonly workspace: string;
  readonly command?: string;
  readonly ops?: readonly ApplyOp[];
  readonly bounds?: UndoBounds;
  /** SIGKILL itself after this op (afterOp). */
  readonly killAfterOp?: number;
  /** SIGKILL itself at this mutating file system call (counted from 0), before or after it runs. */
  readonly killAtCall?: number;
  /** With killAtCall: count from the end of this op instead (so the kill lands inside the next one). */
  readonly countFromOp?: number;
  readonly killAfterCall?: boolean;
  /** Sleep this long after every op (so two applies overlap in time). */
  readonly sleepPerOpMs?: number;
  /** Append "<op> <ms>" per op here. */
  readonly log?: string;
  /** Busy-wait for this wall-clock time before starting. */
  readonly startAt?: number;
  /** After this op, say "held" and wait until the file `release` exists. */
  readonly holdAfterOp?: number;
  readonly release?: string;
}

const CHILD = join(root, "child.mjs");
writeFileSync(
  CHILD,
  `import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const { applyEffects, recoverJournals } = await import(${JSON.stringify(pathToFileURL(join(SRC, "apply.ts")).href)});
const { undoLast, DEFAULT_UNDO_BOUNDS } = await import(${JSON.stringify(pathToFileURL(join(SRC, "undo.ts")).href)});
const kill = () => process.kill(process.pid, "SIGKILL");
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
let armed = false;
let calls = 0;
// Calls are counted from 0 at the start, or from the end of op countFromOp (until then, never).
let base = spec.countFromOp === undefined ? 0 : Infinity;
// The calls that take many steps are done here by the single steps, so a kill can land between them.
const { join } = await import("node:path");
fs.rmSync = function rmSync(p, o = {}) {
  const st = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!st) {
    if (o.force) return;
    throw Object.assign(new Error("ENOENT: " + p), { code: "ENOENT" });
  }
  if (!st.isDirectory()) return fs.unlinkSync(p);
  if (!o.recursive) throw Object.assign(new Error("EISDIR: " + p), { code: "ERR_FS_EISDIR" });
  for (const n of fs.readdirSync(p)) fs.rmSync(join(p, n), o);
  fs.rmdirSync(p);
};
fs.copyFileSync = function copyFileSync(from, to) {
  const data = fs.readFileSync(from);
  const st = fs.statSync(from);
  fs.writeFileSync(to, data.subarray(0, data.length >> 1), { mode: st.mode & 0o7777 });
  fs.appendFileSync(to, data.subarray(data.length >> 1));
  fs.chmodSync(to, st.mode & 0o7777);
};
fs.cpSync = function cpSync(from, to, o = {}) {
  const st = fs.lstatSync(from);
  if (st.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(from), to);
  else if (st.isDirectory()) {
    fs.mkdirSync(to);
    for (const n of fs.readdirSync(from)) fs.cpSync(join(from, n), join(to, n), o);
    fs.chmodSync(to, st.mode & 0o7777);
  } else fs.copyFileSync(from, to);
  if (o.preserveTimestamps && !st.isSymbolicLink()) fs.utimesSync(to, st.atime, st.mtime);
};
const MUTATING = ["renameSync", "linkSync", "unlinkSync", "rmdirSync", "mkdirSync", "symlinkSync", "writeFileSync", "appendFileSync", "chmodSync", "fsyncSync", "openSync", "utimesSync"];
for (const name of MUTATING) {
  const orig = fs[name];
  fs[name] = function (...args) {
    if (!armed) return orig.apply(this, args);
    const n = calls++ - base;
    if (n === spec.killAtCall && !spec.killAfterCall) kill();
    const r = orig.apply(this, args);
    if (n === spec.killAtCall && spec.killAfterCall) kill();
    return r;
  };
}
syncBuiltinESMExports();
const bounds = spec.bounds ?? DEFAULT_UNDO_BOUNDS;
const afterOp = (i) => {
  if (i === spec.countFromOp) base = calls;
  if (spec.log) fs.appendFileSync(spec.log, i + " " + Date.now() + "\\n");
  if (spec.sleepPerOpMs) sleep(spec.sleepPerOpMs);
  if (i === spec.killAfterOp) kill();
  if (i === spec.holdAfterOp) {
    process.stdout.write("held\\n");
    const until = Date.now() + 30000;
    while (!fs.existsSync(spec.release) && Date.now() < until) sleep(5);
  }
};
while (spec.startAt && Date.now() < spec.startAt) {}
process.stdout.write("go\\n");
const t0 = performance.now();
armed = true;
let result;
if (spec.mode === "apply") result = await applyEffects({ store: spec.store, workspace: spec.workspace, command: spec.command, ops: spec.ops, bounds, afterOp });
else if (spec.mode === "recover") result = await recoverJournals(spec.store, bounds);
else result = undoLast(spec.store, spec.workspace, 1);
armed = false;
process.stdout.write("result " + JSON.stringify({ result, calls, ms: performance.now() - t0 }) + "\\n");
`,
);

interface ChildEnd {
  readonly killed: boolean;
  readonly result?: unknown;
  readonly calls?: number;
  readonly ms?: number;
  readonly stderr: string;
}

let specN = 0;
function runChild(spec: ChildSpec, o: { killAfterMs?: number; onLine?: (line: string) => void } = {}): Promise<ChildEnd> {
  const specPath = join(root, `spec-${++specN}.json`);
  writeFileSync(specPath, JSON.stringify(spec));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, specPath], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      const before = out;
      out += d.toString();
      const lines = out.split("\n").slice(before.split("\n").length - 1, -1);
      for (const line of lines) {
        if (line === "go" && o.killAfterMs !== undefined) setTimeout(() => child.kill("SIGKILL"), o.killAfterMs);
        o.onLine?.(line);
      }
    });
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      rmSync(specPath, { force: true });
      const line = out.split("\n").find((l) => l.startsWith("result "));
      if (signal === "SIGKILL") return resolve({ killed: true, stderr: err });
      if (code !== 0 || !line) return reject(new Error(`child exited ${code} ${signal}: ${err}`));
      const r = JSON.parse(line.slice(7)) as { result: unknown; calls: number; ms: number };
      resolve({ killed: false, ...r, stderr: err });
    });
  });
}

// A lock a killed process left before it could say who held it can only be waited out; the
// tests age it instead of waiting (what the stale time allows after it has passed).
function ageOrphanLock(store: EffectStore, ws: string): void {
  const lock = lockPathOf(store, ws);
  if (existsSync(lock)) {
    const past = new Date(Date.now() - 10 * 60_000);
    utimesSync(lock, past, past);
  }
}

// ---------------------------------------------------------------------------------------------
// A seeded random source, so a failure can be replayed (PI_APPLY_SEED=...).

const SEED = Number(process.env.PI_APPLY_SEED ?? Date.now() % 1_000_000);
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

// ---------------------------------------------------------------------------------------------
// The scenario the crash tests apply: ~200 ops of every kind over a small workspace.

interface Scenario {
  readonly ws: string;
  readonly staged: string;
  readonly store: EffectStore;
  readonly ops: ApplyOp[];
  readonly oldTree: Snap;
  readonly newTree: Snap;
  /** What undo gives back: the old tree, less what was removed without being kept. */
  readonly undoneTree: Snap;
  /** `pair`: the path changes type (a remove and a put): absent between the two renames. */
  readonly targets: { readonly rel: string; readonly old: Snap | null; readonly new: Snap | null; readonly pair: boolean }[];
}

function scenario(base: string, stagedBase: string, storeBase: string, rand: () => number, scale = 1): Scenario {
  const n = (k: number) => Math.max(1, Math.round(k * scale));
  const dir = fresh("scn", base);
  const ws = join(dir, "ws");
  const staged = fresh("staged", stagedBase);
  const store = effectStore(fresh("agent", storeBase));
  // Content needs no seed (the kill points and sizes have one).
  const bytes = (n: number) => randomBytes(n);
  const file = (p: string, n = Math.floor(rand() * 3000), mode = 0o644) => {
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, bytes(n));
    chmodSync(p, mode);
  };
  const tree = (p: string, files = 4) => {
    mkdirSync(join(p, "sub"), { recursive: true });
    for (let i = 0; i < files; i++) file(join(p, i % 2 ? "sub" : "", `f${i}`));
    symlinkSync("f0", join(p, "link"));
  };
  for (let d = 0; d < 10; d++) mkdirSync(join(ws, `d${d}`), { recursive: true });
  const plan: (() => ApplyOp | ApplyOp[])[] = [];
  let s = 0;
  const src = () => join(staged, `s${s++}`);
  for (let i = 0; i < n(60); i++) {
    // creations (a few setuid/setgid ones, stripped)
    const t = join(ws, `d${i % 10}`, `new-${i}`);
    const sp = src();
    const setid = i % 15 === 0 ? 0o4755 : i % 15 === 1 ? 0o2755 : 0o644;
    file(sp, undefined, setid);
    plan.push(() => put(t, sp, { before: null, stripSetid: setid !== 0o644 }));
  }
  for (let i = 0; i < n(50); i++) {
    // overwrites; every tenth by a symlink
    const t = join(ws, `d${i % 10}`, `ow-${i}`);
    file(t);
    const sp = src();
    if (i % 10 === 3) symlinkSync(`../d0/new-${i}`, sp);
    else file(sp);
    plan.push(() => put(t, sp));
  }
  for (let i = 0; i < n(40); i++) {
    // file removals; some not kept (regenerable)
    const t = join(ws, `d${i % 10}`, `rm-${i}`);
    file(t);
    plan.push(() => remove(t, i % 8 !== 0));
  }
  for (let i = 0; i < n(8); i++) {
    // directory removals; two not kept (regenerable)
    const t = join(ws, i < 2 ? `node_modules-${i}` : `rmdir-${i}`);
    tree(t, 6);
    plan.push(() => remove(t, i >= 2));
  }
  for (let i = 0; i < n(10); i++) {
    const t = join(ws, `d${i}`, `ln-${i}`);
    const sp = src();
    symlinkSync(`new-${i}`, sp);
    plan.push(() => put(t, sp, { before: null }));
  }
  for (let i = 0; i < n(6); i++) {
    // new trees, one put each
    const t = join(ws, `tree-${i}`);
    const sp = src();
    tree(sp, 5);
    plan.push(() => put(t, sp, { before: null }));
  }
  for (let i = 0; i < n(5); i++) {
    // a file replaced by a directory
    const t = join(ws, `fd-${i}`);
    file(t);
    const sp = src();
    tree(sp, 2);
    plan.push(() => replace(t, sp));
  }
  for (let i = 0; i < n(5); i++) {
    // a directory replaced by a file
    const t = join(ws, `df-${i}`);
    tree(t, 2);
    const sp = src();
    file(sp);
    plan.push(() => replace(t, sp));
  }
  // Shuffle by target, keeping each remove+put pair in order.
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [plan[i], plan[j]] = [plan[j]!, plan[i]!];
  }
  const oldTree = snap(ws)!;
  const ops = plan.flatMap((p) => p());
  const newTree = structuredClone(oldTree);
  const undoneTree = structuredClone(oldTree);
  const targets: Scenario["targets"][number][] = [];
  const seen = new Set<string>();
  for (const op of ops) {
    const rel = relative(ws, op.target);
    const last = ops.findLast((o) => o.target === op.target)!;
    if (!seen.has(op.target)) {
      seen.add(op.target);
      let n: Snap | null = last.kind === "put" ? snap(last.source) : null;
      if (n && n.t === "f" && last.kind === "put" && last.stripSetid) n = { ...n, mode: n.mode & ~0o6000 };
      const o = snap(op.target);
      targets.push({ rel, old: o, new: n, pair: last !== op });
      setEntry(newTree, rel, n);
      // Not kept: the removal stays done after undo.
      if (op.kind === "remove" && !op.keep) setEntry(undoneTree, rel, null);
    }
  }
  return { ws, staged, store, ops, oldTree, newTree, undoneTree, targets };
}

function checkOldOrNew(sc: Scenario, why: string): { old: number; new: number } {
  let o = 0;
  let n = 0;
  for (const t of sc.targets) {
    const now = snap(join(sc.ws, t.rel));
    const isOld = JSON.stringify(now) === JSON.stringify(t.old);
    const isNew = JSON.stringify(now) === JSON.stringify(t.new) || (t.pair && now === null);
    assert.ok(isOld || isNew, `${why}: ${t.rel} is neither its old nor its new version: ${JSON.stringify(now)?.slice(0, 300)}`);
    if (isOld) o++;
    else n++;
  }
  return { old: o, new: n };
}

/** After one killed apply (and perhaps a killed recovery and a killed undo): check and repair. */
interface Calls {
  readonly apply: number;
  readonly recover: number;
  readonly undo: number;
}

async function afterKill(sc: Scenario, why: string, rand: () => number, o: { killRecovery: boolean; killUndo: boolean; calls: Calls }): Promise<string> {
  const counts = checkOldOrNew(sc, why);
  let interrupted = journals(sc.store).length > 0;
  let story = `${counts.new} new/${counts.old} old`;
  if (interrupted && o.killRecovery) {
    const r = await runChild({
      mode: "recover",
      store: sc.store,
      workspace: sc.ws,
      killAtCall: Math.floor(rand() * o.calls.recover),
      killAfterCall: rand() < 0.5,
    });
    checkOldOrNew(sc, `${why}, then a recovery killed`);
    story += r.killed ? ", recovery killed" : ", recovery finished in a child";
    interrupted = journals(sc.store).length > 0;
  }
  // A lock without an owner record (killed between taking it and saying who holds it): waited out.
  if (existsSync(lockPathOf(sc.store, sc.ws)) && !existsSync(`${lockPathOf(sc.store, sc.ws)}.owner`)) {
    ageOrphanLock(sc.store, sc.ws);
    story += ", orphan lock aged";
  }
  const rec = await recoverJournals(sc.store, bounds);
  assert.deepEqual(rec.failed, [], why);
  if (interrupted) {
    assert.equal(rec.recovered.length, 1, `${why}: the interrupted apply is reported (${story})`);
    assert.deepEqual(rec.recovered[0]!.lost, [], `${why}: nothing is lost`);
    assert.equal(rec.recovered[0]!.workspace, sc.ws);
  } else assert.equal(rec.recovered.length, 0, why);
  assert.deepEqual(journals(sc.store), [], `${why}: no journal is left`);
  const now = snap(sc.ws);
  const entries = listUndo(sc.store, sc.ws);
  if (JSON.stringify(now) === JSON.stringify(sc.oldTree) && entries.length === 0) {
    assert.deepEqual(existsSync(undoDirOf(sc.store, sc.ws)) ? readdirSync(undoDirOf(sc.store, sc.ws)) : [], [], `${why}: no entry is left in the undo store`);
    return `${story}, killed before the journal`;
  }
  assert.deepEqual(junkIn(sc.ws), [], `${why}: no temp files are left in the workspace`);
  assert.deepEqual(now, sc.newTree, `${why}: after recovery every target has its new content (${story})`);
  assert.equal(entries.length, 1, `${why}: one undo entry`);
  assert.deepEqual(readdirSync(undoDirOf(sc.store, sc.ws)), [basename(entries[0]!.dir)], `${why}: nothing else in the undo store`);
  if (o.killUndo) {
    const u = await runChild({
      mode: "undo",
      store: sc.store,
      workspace: sc.ws,
      killAtCall: Math.floor(rand() * (o.calls.undo + 5)),
      killAfterCall: rand() < 0.5,
    });
    story += u.killed ? ", undo killed" : ", undo finished in a child";
    if (!u.killed) {
      const res = u.result as { ok: boolean; refused?: string };
      assert.ok(res.ok, `${why}: the undo in a child works: ${res.refused}`);
      assert.deepEqual(snap(sc.ws), sc.undoneTree, `${why}: the undo in a child restored the old state`);
      assert.deepEqual(readdirSync(undoDirOf(sc.store, sc.ws)), [], `${why}: the undone entry is gone whole`);
      return story;
    }
    if (existsSync(lockPathOf(sc.store, sc.ws)) && !existsSync(`${lockPathOf(sc.store, sc.ws)}.owner`)) ageOrphanLock(sc.store, sc.ws);
    if (listUndo(sc.store, sc.ws).length === 0) {
      // Killed after the entry went (in one rename): the undo was whole.
      assert.deepEqual(snap(sc.ws), sc.undoneTree, `${why}: an undo killed after its entry went had restored everything`);
      const again = undoLast(sc.store, sc.ws, 1);
      assert.match((again as { refused: string }).refused, /nothing to undo/);
      assert.deepEqual(readdirSync(undoDirOf(sc.store, sc.ws)), [], `${why}: the half-removed entry is cleared`);
      return `${story}, after its entry went`;
    }
  }
  const u = undoLast(sc.store, sc.ws, 1);
  assert.ok(u.ok, `${why}: undo works (${story}): ${u.ok ? "" : u.refused}`);
  assert.deepEqual(junkIn(sc.ws), [], `${why}: no temp files are left after undo`);
  assert.deepEqual(snap(sc.ws), sc.undoneTree, `${why}: undo restores the old state exactly (${story})`);
  assert.equal(listUndo(sc.store, sc.ws).length, 0);
  assert.deepEqual(readdirSync(undoDirOf(sc.store, sc.ws)), [], `${why}: the undone entry is gone whole`);
  return story;
}

type KillPlan =
  | { kind: "none" }
  | { kind: "afterOp"; i: number }
  | { kind: "call"; k: number; after: boolean }
  | { kind: "inOp"; op: number; k: number; after: boolean }
  | { kind: "delay"; ms: number };

async function killedApply(sc: Scenario, plan: KillPlan): Promise<ChildEnd> {
  const spec: ChildSpec = {
    mode: "apply",
    store: sc.store,
    workspace: sc.ws,
    command: "hostile",
    ops: sc.ops,
    ...(plan.kind === "afterOp"
      ? { killAfterOp: plan.i }
      : plan.kind === "call"
        ? { killAtCall: plan.k, killAfterCall: plan.after }
        : plan.kind === "inOp"
          ? { killAtCall: plan.k, killAfterCall: plan.after, countFromOp: plan.op }
          : {}),
  };
  return runChild(spec, plan.kind === "delay" ? { killAfterMs: plan.ms } : {});
}

const PROF = { scn: 0, child: 0, after: 0, rm: 0 };
after(() => console.log(PROF));
async function crashSuite(label: string, runs: number, scale: number, place: (i: number) => { base: string; stagedBase: string; storeBase: string }) {
  const rand = rng(SEED + label.length);
  // Calibration: an apply, an undo and a recovery that are not killed, to learn how many file
  // system calls each makes (where a kill can land) and how long an apply takes.
  const p0 = place(0);
  const cal = scenario(p0.base, p0.stagedBase, p0.storeBase, rand, scale);
  const calEnd = await killedApply(cal, { kind: "none" });
  assert.equal(calEnd.killed, false);
  assert.equal((calEnd.result as { applied: number }).applied, cal.ops.length);
  assert.deepEqual(snap(cal.ws), cal.newTree, "an apply that is not killed lands whole");
  const calUndo = await runChild({ mode: "undo", store: cal.store, workspace: cal.ws });
  assert.ok((calUndo.result as { ok: boolean }).ok);
  assert.deepEqual(snap(cal.ws), cal.undoneTree, "an undo that is not killed restores whole");
  const cal2 = scenario(p0.base, p0.stagedBase, p0.storeBase, rand, scale);
  assert.equal((await killedApply(cal2, { kind: "afterOp", i: 0 })).killed, true);
  const calRec = await runChild({ mode: "recover", store: cal2.store, workspace: cal2.ws });
  assert.equal((calRec.result as { recovered: unknown[] }).recovered.length, 1);
  const calls: Calls = { apply: calEnd.calls!, recover: calRec.calls!, undo: calUndo.calls! };
  const ms = calEnd.ms!;
  const stories: string[] = [];
  const one = async (i: number) => {
    const p = place(i);
    let T = performance.now();
    const sc = scenario(p.base, p.stagedBase, p.storeBase, rand, scale);
    PROF.scn += performance.now() - T;
    T = performance.now();
    const n = sc.ops.length;
    const r = rand();
    const plan: KillPlan =
      i % 10 === 0
        ? { kind: "afterOp", i: i % 20 === 0 ? 0 : n - 1 } // after the first op, after the last
        : i % 10 === 1
          ? { kind: "call", k: Math.floor(rand() * 12), after: rand() < 0.5 } // in the journal, before the first op
          : r < 0.2
            ? { kind: "afterOp", i: Math.floor(rand() * n) }
            : r < 0.45
              ? { kind: "call", k: Math.floor(rand() * (calls.apply + 5)), after: rand() < 0.5 }
              : r < 0.8
                ? // inside one op, wherever it is: a tree's copy has many calls, a file's few
                  { kind: "inOp", op: Math.floor(rand() * (n - 1)), k: Math.floor(rand() * 8), after: rand() < 0.5 }
                : { kind: "delay", ms: rand() * ms * 1.3 };
    const end = await killedApply(sc, plan);
    PROF.child += performance.now() - T;
    T = performance.now();
    const why = `${label} run ${i} (seed ${SEED}, ${JSON.stringify(plan)}${end.killed ? "" : ", not killed"})`;
    const story = await afterKill(sc, why, rand, { killRecovery: rand() < 0.25, killUndo: rand() < 0.25, calls });
    stories.push(story);
    PROF.after += performance.now() - T;
    T = performance.now();
    rmSync(dirname(sc.ws), { recursive: true, force: true });
    PROF.rm += performance.now() - T;
  };
  // Two at a time: the CI machine has two cores.
  let next = 1;
  await Promise.all(
    [0, 1].map(async () => {
      while (next <= runs) await one(next++);
    }),
  );
  return { calls, ms, stories };
}

describe("apply: the effects land", () => {
  test("creations, overwrites, removals, type changes, setid stripped, parents made", async () => {
    const { ws, staged, store } = setup("basics");
    // The old workspace.
    writeFileSync(join(ws, "edit.txt"), "old\n");
    writeFileSync(join(ws, "gone.txt"), "bye\n");
    mkdirSync(join(ws, "gonedir", "deep"), { recursive: true });
    writeFileSync(join(ws, "gonedir", "deep", "x"), "x\n");
    writeFileSync(join(ws, "f2d"), "a file that becomes a directory\n");
    mkdirSync(join(ws, "d2f"));
    writeFileSync(join(ws, "d2f", "inner"), "in\n");
    symlinkSync("edit.txt", join(ws, "oldlink"));
    const oldTree = snap(ws)!;
    // The staged changes.
    writeFileSync(join(staged, "edit.txt"), "new\n");
    writeFileSync(join(staged, "created.txt"), "created\n");
    symlinkSync("created.txt", join(staged, "newlink"));
    symlinkSync("created.txt", join(staged, "oldlink"));
    mkdirSync(join(staged, "tree", "a", "b"), { recursive: true });
    writeFileSync(join(staged, "tree", "a", "b", "leaf"), "leaf\n");
    symlinkSync("a/b/leaf", join(staged, "tree", "toleaf"));
    mkdirSync(join(staged, "f2d"));
    writeFileSync(join(staged, "f2d", "now-a-dir"), "yes\n");
    writeFileSync(join(staged, "d2f"), "now a file\n");
    writeFileSync(join(staged, "suid"), "#!/bin/sh\n");
    chmodSync(join(staged, "suid"), 0o4755);
    writeFileSync(join(staged, "sgid"), "#!/bin/sh\n");
    chmodSync(join(staged, "sgid"), 0o2711);
    writeFileSync(join(staged, "deep-new"), "in new parents\n");
    const ops: ApplyOp[] = [
      put(join(ws, "edit.txt"), join(staged, "edit.txt")),
      put(join(ws, "created.txt"), join(staged, "created.txt"), { before: null }),
      put(join(ws, "newlink"), join(staged, "newlink"), { before: null }),
      put(join(ws, "oldlink"), join(staged, "oldlink")),
      put(join(ws, "tree"), join(staged, "tree"), { before: null }),
      remove(join(ws, "gone.txt")),
      remove(join(ws, "gonedir")),
      ...replace(join(ws, "f2d"), join(staged, "f2d")),
      ...replace(join(ws, "d2f"), join(staged, "d2f")),
      put(join(ws, "suid"), join(staged, "suid"), { before: null, stripSetid: true }),
      put(join(ws, "sgid"), join(staged, "sgid"), { before: null, stripSetid: true }),
      put(join(ws, "made", "for", "it", "deep-new"), join(staged, "deep-new"), { before: null }),
    ];
    const r = await apply(store, ws, ops);
    assert.equal(r.applied, ops.length);
    assert.deepEqual(r.conflicts, []);
    assert.equal(r.kept, true);
    assert.ok(r.undoId);
    assert.equal(readFileSync(join(ws, "edit.txt"), "utf8"), "new\n");
    assert.equal(readFileSync(join(ws, "created.txt"), "utf8"), "created\n");
    assert.equal(readlinkSync(join(ws, "newlink")), "created.txt");
    assert.equal(readlinkSync(join(ws, "oldlink")), "created.txt");
    assert.equal(readFileSync(join(ws, "tree", "a", "b", "leaf"), "utf8"), "leaf\n");
    assert.equal(readlinkSync(join(ws, "tree", "toleaf")), "a/b/leaf");
    assert.equal(existsSync(join(ws, "gone.txt")), false);
    assert.equal(existsSync(join(ws, "gonedir")), false);
    assert.ok(lstatSync(join(ws, "f2d")).isDirectory());
    assert.equal(readFileSync(join(ws, "f2d", "now-a-dir"), "utf8"), "yes\n");
    assert.ok(lstatSync(join(ws, "d2f")).isFile());
    assert.equal(readFileSync(join(ws, "d2f"), "utf8"), "now a file\n");
    assert.equal(lstatSync(join(ws, "suid")).mode & 0o7777, 0o755, "setuid cleared");
    assert.equal(lstatSync(join(ws, "sgid")).mode & 0o7777, 0o711, "setgid cleared");
    assert.equal(readFileSync(join(ws, "made", "for", "it", "deep-new"), "utf8"), "in new parents\n");
    assert.deepEqual(journals(store), []);
    assert.deepEqual(junkIn(ws), []);
    // And back: everything the command overwrote or removed, and nothing it created (but the
    // folders apply made for a file stay).
    const u = undoLast(store, ws, 1);
    assert.ok(u.ok, u.ok ? "" : u.refused);
    assert.equal(u.undone[0]!.command, "cmd");
    rmSync(join(ws, "made"), { recursive: true });
    assert.deepEqual(snap(ws), oldTree);
    assert.deepEqual(listUndo(store, ws), []);
  });

  test("a setuid file inside a new tree is stripped and arrives with its tree", async () => {
    const { ws, staged, store } = setup("setid-tree");
    mkdirSync(join(staged, "bin", "sub"), { recursive: true });
    writeFileSync(join(staged, "bin", "sub", "tool"), "#!/bin/sh\n");
    chmodSync(join(staged, "bin", "sub", "tool"), 0o6755);
    // As the judge emits it: the tree, and the setid child inside it with stripSetid (either order).
    for (const order of [0, 1]) {
      const w = fresh(`ws-${order}`);
      const s = fresh(`st-${order}`);
      rmSync(s, { recursive: true });
      const { cpSync } = await import("node:fs");
      cpSync(join(staged, "bin"), join(s, "bin"), { recursive: true });
      chmodSync(join(s, "bin", "sub", "tool"), 0o6755);
      const tree = put(join(w, "bin"), join(s, "bin"), { before: null });
      const child: ApplyOp = {
        kind: "put",
        target: join(w, "bin", "sub", "tool"),
        source: join(s, "bin", "sub", "tool"),
        type: "file",
        before: null,
        keep: false,
        stripSetid: true,
      };
      const r = await apply(store, w, order === 0 ? [tree, child] : [child, tree]);
      assert.deepEqual(r.conflicts, []);
      assert.equal(lstatSync(join(w, "bin", "sub", "tool")).mode & 0o7777, 0o755);
      assert.equal(readFileSync(join(w, "bin", "sub", "tool"), "utf8"), "#!/bin/sh\n");
    }
    void ws;
  });

  test("an apply with nothing left after the conflicts changes nothing and keeps no entry", async () => {
    const { ws, staged, store } = setup("empty");
    writeFileSync(join(ws, "a"), "a\n");
    writeFileSync(join(staged, "a"), "A\n");
    const op = put(join(ws, "a"), join(staged, "a"));
    writeFileSync(join(ws, "a"), "edited outside\n");
    const r = await apply(store, ws, [op]);
    assert.equal(r.applied, 0);
    assert.equal(r.undoId, undefined);
    assert.deepEqual(listUndo(store, ws), []);
    assert.equal(readFileSync(join(ws, "a"), "utf8"), "edited outside\n");
  });
});

describe("apply: kill -9 at random points", () => {
  test("100 applies killed anywhere: old or new, then recovered whole and undone exactly", { timeout: 240_000 }, async () => {
    const t0 = performance.now();
    const r = await crashSuite("same-fs", 100, 1, () => ({ base: root, stagedBase: root, storeBase: root }));
    const tally = new Map<string, number>();
    for (const s of r.stories) {
      const key = s.replace(/^\d+ new\/\d+ old/, (m) => (m.startsWith("0 new") ? "all old" : m.endsWith("/0 old") ? "all new" : "mixed"));
      tally.set(key, (tally.get(key) ?? 0) + 1);
    }
    console.log(
      `kill -9 (seed ${SEED}): ${r.stories.length} runs in ${((performance.now() - t0) / 1000).toFixed(1)} s; unkilled: apply ${r.calls.apply} calls (${r.ms.toFixed(0)} ms), undo ${r.calls.undo}, recovery ${r.calls.recover}`,
    );
    for (const [k, v] of [...tally].sort((a, b) => b[1] - a[1])) console.log(`  ${String(v).padStart(3)}  ${k}`);
  });

  test("across file systems (the copy fallback), killed anywhere", {
    timeout: 240_000,
    skip: otherFs === undefined ? "no second file system in /dev/shm" : false,
  }, async () => {
    const other = otherFs!;
    // Staged on the other file system (puts copy), the undo store there (pre-images copy), or both.
    // Smaller op sets, more runs: the windows of a copy are a few calls each.
    const r = await crashSuite("cross-fs", 45, 0.3, (i) => ({ base: root, stagedBase: i % 3 === 2 ? root : other, storeBase: i % 3 === 1 ? root : other }));
    assert.equal(r.stories.length, 45);
  });
});

describe("apply: conflicts", () => {
  test("a target changed outside after `before` was taken is not overwritten; the rest applies", async () => {
    const { ws, staged, store } = setup("conflict");
    for (const n of ["a", "b", "c", "gone", "pair"]) writeFileSync(join(ws, n), `${n} old\n`);
    for (const n of ["a", "b", "c", "new"]) writeFileSync(join(staged, n), `${n} new\n`);
    mkdirSync(join(staged, "pairdir"));
    const ops: ApplyOp[] = [
      put(join(ws, "a"), join(staged, "a")),
      put(join(ws, "b"), join(staged, "b")),
      put(join(ws, "c"), join(staged, "c")),
      put(join(ws, "new"), join(staged, "new"), { before: null }),
      remove(join(ws, "gone")),
      ...replace(join(ws, "pair"), join(staged, "pairdir")),
    ];
    // Meanwhile, outside the sandbox:
    writeFileSync(join(ws, "b"), "b edited outside\n");
    writeFileSync(join(ws, "new"), "created outside\n");
    writeFileSync(join(ws, "gone"), "gone edited outside\n");
    writeFileSync(join(ws, "pair"), "pair edited outside\n");
    const r = await apply(store, ws, ops);
    assert.deepEqual(
      r.conflicts.map((c) => c.path).sort(),
      ["b", "gone", "new", "pair"].map((n) => join(ws, n)),
    );
    assert.match(r.conflicts.find((c) => c.path === join(ws, "new"))!.detail, /created/);
    assert.equal(r.applied, 2);
    assert.equal(readFileSync(join(ws, "a"), "utf8"), "a new\n");
    assert.equal(readFileSync(join(ws, "c"), "utf8"), "c new\n");
    assert.equal(readFileSync(join(ws, "b"), "utf8"), "b edited outside\n");
    assert.equal(readFileSync(join(ws, "new"), "utf8"), "created outside\n");
    assert.equal(readFileSync(join(ws, "gone"), "utf8"), "gone edited outside\n");
    assert.equal(readFileSync(join(ws, "pair"), "utf8"), "pair edited outside\n");
    // The undo entry covers only what was applied.
    assert.deepEqual(
      listUndo(store, ws)[0]!
        .manifest.ops.map((o) => o.target)
        .sort(),
      [join(ws, "a"), join(ws, "c")],
    );
    const u = undoLast(store, ws, 1);
    assert.ok(u.ok);
    assert.equal(readFileSync(join(ws, "a"), "utf8"), "a old\n");
    assert.equal(readFileSync(join(ws, "b"), "utf8"), "b edited outside\n");
  });

  test("a folder on the way replaced by a symlink meanwhile: nothing lands (or is removed, or restored) through it", async () => {
    const { dir, ws, staged, store } = setup("redirect");
    const outside = join(dir, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "y"), "outside's y\n");
    mkdirSync(join(ws, "d"));
    writeFileSync(join(ws, "d", "y"), "d/y\n");
    writeFileSync(join(ws, "ok"), "ok old\n");
    writeFileSync(join(staged, "x"), "payload\n");
    writeFileSync(join(staged, "deep"), "payload\n");
    writeFileSync(join(staged, "ok"), "ok new\n");
    // As judged when the command ended:
    const ops = [
      put(join(ws, "d", "x"), join(staged, "x"), { before: null }),
      put(join(ws, "d", "sub", "deep"), join(staged, "deep"), { before: null }),
      remove(join(ws, "d", "y")),
      put(join(ws, "ok"), join(staged, "ok")),
    ];
    // While a reviewer considered it, another command made d a symlink to a folder outside.
    rmSync(join(ws, "d"), { recursive: true });
    symlinkSync(outside, join(ws, "d"));
    const r = await apply(store, ws, ops);
    assert.deepEqual(r.conflicts.map((c) => c.path).sort(), [join(ws, "d", "sub", "deep"), join(ws, "d", "x"), join(ws, "d", "y")]);
    assert.match(r.conflicts[0]!.detail, /symlink/);
    assert.deepEqual(readdirSync(outside), ["y"], "nothing written or removed outside");
    assert.equal(readFileSync(join(ws, "ok"), "utf8"), "ok new\n");
    // Undo through a redirected folder is refused too.
    const w = setup("redirect-undo");
    mkdirSync(join(w.ws, "e"));
    writeFileSync(join(w.ws, "e", "f"), "f old\n");
    writeFileSync(join(w.staged, "f"), "f new\n");
    await apply(w.store, w.ws, [put(join(w.ws, "e", "f"), join(w.staged, "f"))]);
    const elsewhere = join(w.dir, "elsewhere");
    mkdirSync(elsewhere);
    // The same file (same inode) seen through a symlink: undo would write into `elsewhere`.
    const { renameSync } = await import("node:fs");
    renameSync(join(w.ws, "e", "f"), join(elsewhere, "f"));
    rmSync(join(w.ws, "e"), { recursive: true });
    symlinkSync(elsewhere, join(w.ws, "e"));
    const u = undoLast(w.store, w.ws, 1);
    assert.equal(u.ok, false);
    assert.match((u as { refused: string }).refused, /e\/f/);
    assert.equal(readFileSync(join(elsewhere, "f"), "utf8"), "f new\n");
  });

  test("a target removed outside, and a file inside a removed tree: conflicts", async () => {
    const { ws, staged, store } = setup("conflict2");
    writeFileSync(join(ws, "a"), "a\n");
    writeFileSync(join(staged, "a"), "A\n");
    mkdirSync(join(ws, "dir"));
    writeFileSync(join(ws, "dir", "x"), "x\n");
    const ops = [put(join(ws, "a"), join(staged, "a")), remove(join(ws, "dir"))];
    rmSync(join(ws, "a"));
    writeFileSync(join(ws, "dir", "y"), "added outside\n");
    const r = await apply(store, ws, ops);
    assert.deepEqual(r.conflicts.map((c) => c.path).sort(), [join(ws, "a"), join(ws, "dir")]);
    assert.equal(r.applied, 0);
    assert.equal(existsSync(join(ws, "a")), false);
    assert.equal(readFileSync(join(ws, "dir", "y"), "utf8"), "added outside\n");
  });
});

describe("undo", () => {
  const state = (ws: string) => snap(ws);

  test("one command, then several: undo 1 then 2 steps; 3 steps at once", async () => {
    const { ws, staged, store } = setup("undo");
    writeFileSync(join(ws, "a"), "a0\n");
    writeFileSync(join(ws, "b"), "b0\n");
    const s0 = state(ws);
    let k = 0;
    // Each command: overwrite a, create c<k>, remove or recreate b.
    const command = async (name: string) => {
      k++;
      writeFileSync(join(staged, `a${k}`), `a${k}\n`);
      writeFileSync(join(staged, `c${k}`), `c${k}\n`);
      const ops = [put(join(ws, "a"), join(staged, `a${k}`)), put(join(ws, `c${k}`), join(staged, `c${k}`), { before: null })];
      if (existsSync(join(ws, "b"))) ops.push(remove(join(ws, "b")));
      else {
        writeFileSync(join(staged, `b${k}`), `b${k}\n`);
        ops.push(put(join(ws, "b"), join(staged, `b${k}`), { before: null }));
      }
      const r = await apply(store, ws, ops, name);
      assert.equal(r.applied, ops.length);
      return state(ws);
    };
    const s1 = await command("one");
    let u = undoLast(store, ws, 1);
    assert.ok(u.ok);
    assert.deepEqual(state(ws), s0, "undo after one command");
    assert.deepEqual(
      u.undone.map((x) => x.command),
      ["one"],
    );

    const t1 = await command("first");
    const t2 = await command("second");
    await command("third");
    assert.deepEqual(
      listUndo(store, ws).map((e) => e.manifest.command),
      ["third", "second", "first"],
      "newest first",
    );
    u = undoLast(store, ws, 1);
    assert.ok(u.ok);
    assert.deepEqual(state(ws), t2);
    u = undoLast(store, ws, 2);
    assert.ok(u.ok);
    assert.deepEqual(
      u.undone.map((x) => x.command),
      ["second", "first"],
    );
    assert.deepEqual(state(ws), s0);
    void s1;
    void t1;

    await command("x");
    await command("y");
    await command("z");
    u = undoLast(store, ws, 3);
    assert.ok(u.ok, u.ok ? "" : u.refused);
    assert.deepEqual(state(ws), s0, "three at once: the state before all three");
    u = undoLast(store, ws, 1);
    assert.equal(u.ok, false);
    assert.match((u as { refused: string }).refused, /nothing to undo/);
  });

  test("refused after a later edit of a file the command wrote, naming it; also inside a tree it created", async () => {
    const { ws, staged, store } = setup("undo-refuse");
    writeFileSync(join(ws, "a"), "a0\n");
    writeFileSync(join(staged, "a"), "a1\n");
    mkdirSync(join(staged, "gen", "sub"), { recursive: true });
    writeFileSync(join(staged, "gen", "sub", "out.txt"), "generated\n");
    await apply(store, ws, [put(join(ws, "a"), join(staged, "a")), put(join(ws, "gen"), join(staged, "gen"), { before: null })], "build");
    writeFileSync(join(ws, "gen", "sub", "out.txt"), "the user's edit\n");
    let u = undoLast(store, ws, 1);
    assert.equal(u.ok, false, "an edit inside a tree the command created is never thrown away");
    assert.match((u as { refused: string }).refused, /out\.txt/);
    assert.equal(readFileSync(join(ws, "gen", "sub", "out.txt"), "utf8"), "the user's edit\n");
    assert.equal(readFileSync(join(ws, "a"), "utf8"), "a1\n", "a refused undo changes nothing");
    // Put it back as it was (same inode, same size, same mtime): undoable again.
    rmSync(join(ws, "gen", "sub", "out.txt"));
    writeFileSync(join(ws, "gen", "sub", "extra"), "x");
    u = undoLast(store, ws, 1);
    assert.equal(u.ok, false);
    assert.match((u as { refused: string }).refused, /gen/);

    const w2 = setup("undo-refuse2");
    writeFileSync(join(w2.ws, "f"), "f0\n");
    writeFileSync(join(w2.staged, "f"), "f1\n");
    await apply(w2.store, w2.ws, [put(join(w2.ws, "f"), join(w2.staged, "f"))], "edit f");
    writeFileSync(join(w2.ws, "f"), "f2 by the user\n");
    u = undoLast(w2.store, w2.ws, 1);
    assert.equal(u.ok, false);
    assert.match((u as { refused: string }).refused, new RegExp(`changed since \`edit f\`.*${join(w2.ws, "f").replaceAll("/", "\\/")}`));
    assert.equal(readFileSync(join(w2.ws, "f"), "utf8"), "f2 by the user\n");
  });

  test("refused for a command whose pre-images were over the size bound", async () => {
    const { ws, staged, store } = setup("undo-notkept");
    writeFileSync(join(ws, "big"), Buffer.alloc(4096, 1));
    writeFileSync(join(staged, "big"), "small\n");
    const r = await apply(store, ws, [put(join(ws, "big"), join(staged, "big"))], "shrink", { maxCommands: 20, maxBytes: 1000 });
    assert.equal(r.kept, false);
    const u = undoLast(store, ws, 1);
    assert.equal(u.ok, false);
    assert.match((u as { refused: string }).refused, /not kept.*size bound/);
    assert.equal(readFileSync(join(ws, "big"), "utf8"), "small\n");
  });

  test("what a regenerable folder lost is not kept: the rest of the command is still undone", async () => {
    const { ws, staged, store } = setup("undo-regen");
    mkdirSync(join(ws, "node_modules", "x"), { recursive: true });
    writeFileSync(join(ws, "node_modules", "x", "i.js"), "1\n");
    writeFileSync(join(ws, "src.ts"), "old\n");
    writeFileSync(join(staged, "src.ts"), "new\n");
    await apply(store, ws, [remove(join(ws, "node_modules"), false), put(join(ws, "src.ts"), join(staged, "src.ts"))], "clean");
    const u = undoLast(store, ws, 1);
    assert.ok(u.ok, u.ok ? "" : u.refused);
    assert.equal(readFileSync(join(ws, "src.ts"), "utf8"), "old\n");
    assert.equal(existsSync(join(ws, "node_modules")), false, "regenerable, not kept");
  });

  test("pruning keeps at most maxCommands entries and at most maxBytes; listUndo is newest first", async () => {
    const { ws, staged, store } = setup("prune");
    writeFileSync(join(ws, "f"), Buffer.alloc(1000, 0));
    const b = { maxCommands: 3, maxBytes: 10 * 2 ** 20 };
    for (let i = 1; i <= 5; i++) {
      writeFileSync(join(staged, `f${i}`), Buffer.alloc(1000, i));
      await apply(store, ws, [put(join(ws, "f"), join(staged, `f${i}`))], `c${i}`, b);
    }
    assert.deepEqual(
      listUndo(store, ws).map((e) => e.manifest.command),
      ["c5", "c4", "c3"],
    );
    // By bytes: each entry keeps 1000 bytes; 2500 allows two.
    const bb = { maxCommands: 20, maxBytes: 2500 };
    for (let i = 6; i <= 8; i++) {
      writeFileSync(join(staged, `f${i}`), Buffer.alloc(1000, i));
      await apply(store, ws, [put(join(ws, "f"), join(staged, `f${i}`))], `c${i}`, bb);
    }
    assert.deepEqual(
      listUndo(store, ws).map((e) => e.manifest.command),
      ["c8", "c7"],
    );
    // pruneUndo on its own, with a smaller bound.
    pruneUndo(undoDirOf(store, ws), { maxCommands: 1, maxBytes: 2500 });
    assert.deepEqual(
      listUndo(store, ws).map((e) => e.manifest.command),
      ["c8"],
    );
    // The two kept ones undo in order.
    const u = undoLast(store, ws, 1);
    assert.ok(u.ok);
    assert.deepEqual(readFileSync(join(ws, "f")), Buffer.alloc(1000, 7));
  });

  test("many applies within one millisecond still list newest first", async () => {
    const { ws, staged, store } = setup("order");
    for (let i = 0; i < 15; i++) {
      writeFileSync(join(staged, `n${i}`), "x");
      await apply(store, ws, [put(join(ws, `n${i}`), join(staged, `n${i}`), { before: null })], `c${i}`);
    }
    assert.deepEqual(
      listUndo(store, ws).map((e) => e.manifest.command),
      Array.from({ length: 15 }, (_, i) => `c${14 - i}`),
    );
  });
});

describe("apply: processes", () => {
  test("two concurrent applies into one workspace serialize through the lock; neither half-applies", { timeout: 60_000 }, async () => {
    const { dir, ws, staged, store } = setup("race");
    const N = 150;
    for (let i = 0; i < N; i++) writeFileSync(join(ws, `f${i}`), `old ${i}\n`);
    const mk = (who: string) => {
      const ops: ApplyOp[] = [];
      for (let i = 0; i < N; i++) {
        // Both write the shared f0..f49; each its own others.
        const t = i < 50 ? join(ws, `f${i}`) : join(ws, `${who}-${i}`);
        const s = join(staged, `${who}-${i}`);
        writeFileSync(s, `${who} ${i}\n`);
        ops.push(i < 50 ? put(t, s) : put(t, s, { before: null }));
      }
      return ops;
    };
    const opsA = mk("A");
    const opsB = mk("B");
    const startAt = Date.now() + 600;
    const [a, b] = await Promise.all(
      (["A", "B"] as const).map((who) =>
        runChild({ mode: "apply", store, workspace: ws, command: who, ops: who === "A" ? opsA : opsB, sleepPerOpMs: 1, log: join(dir, `${who}.log`), startAt }),
      ),
    );
    type R = { applied: number; conflicts: { path: string }[] };
    const ra = a!.result as R;
    const rb = b!.result as R;
    const span = (who: string) => {
      const ts = readFileSync(join(dir, `${who}.log`), "utf8")
        .trim()
        .split("\n")
        .map((l) => Number(l.split(" ")[1]));
      return [Math.min(...ts), Math.max(...ts)] as const;
    };
    const [sa, sb] = [span("A"), span("B")];
    assert.ok(sa[1] <= sb[0] || sb[1] <= sa[0], `the applies did not overlap: A ${sa} B ${sb}`);
    // The second one found the shared files changed: all 50 conflicts, the rest applied.
    const [first, second] = sa[0] < sb[0] ? [ra, rb] : [rb, ra];
    const firstWho = sa[0] < sb[0] ? "A" : "B";
    assert.equal(first.applied, N);
    assert.equal(first.conflicts.length, 0);
    assert.equal(second.applied, N - 50);
    assert.equal(second.conflicts.length, 50);
    for (let i = 0; i < 50; i++) assert.equal(readFileSync(join(ws, `f${i}`), "utf8"), `${firstWho} ${i}\n`);
    for (const who of ["A", "B"]) for (let i = 50; i < N; i++) assert.equal(readFileSync(join(ws, `${who}-${i}`), "utf8"), `${who} ${i}\n`);
    assert.deepEqual(journals(store), []);
    assert.equal(listUndo(store, ws).length, 2);
  });

  test("the journal of a process that is still applying is not recovered by another", { timeout: 60_000 }, async () => {
    const { dir, ws, staged, store } = setup("alive");
    const N = 100;
    for (let i = 0; i < N; i++) writeFileSync(join(ws, `f${i}`), `old ${i}\n`);
    for (let i = 0; i < N; i++) writeFileSync(join(staged, `f${i}`), `new ${i}\n`);
    const ops = Array.from({ length: N }, (_, i) => put(join(ws, `f${i}`), join(staged, `f${i}`)));
    const release = join(dir, "release");
    let held!: () => void;
    const heldP = new Promise<void>((r) => (held = r));
    const childP = runChild({ mode: "apply", store, workspace: ws, command: "slow", ops, holdAfterOp: 40, release }, { onLine: (l) => l === "held" && held() });
    await heldP;
    let late: Promise<unknown>;
    try {
      const stateHeld = snap(ws);
      assert.equal(journals(store).length, 1);
      // Another process's start-up repair, even when the lock looks old: the holder is alive.
      const lock = lockPathOf(store, ws);
      const past = new Date(Date.now() - 10 * 60_000);
      utimesSync(lock, past, past);
      const rec = await recoverJournals(store, bounds);
      assert.deepEqual(rec, { recovered: [], failed: [] });
      assert.equal(journals(store).length, 1, "the journal is left to its live owner");
      assert.deepEqual(snap(ws), stateHeld, "nothing was touched");
      // A second apply waits for the first instead of running beside it.
      writeFileSync(join(staged, "late"), "late\n");
      late = apply(store, ws, [put(join(ws, "late"), join(staged, "late"), { before: null })], "late");
      let lateDone = false;
      void late.then(() => (lateDone = true));
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(lateDone, false, "the second apply waits for the lock");
    } finally {
      writeFileSync(release, "");
    }
    const end = await childP;
    assert.equal(end.killed, false);
    assert.equal((end.result as { applied: number }).applied, N);
    await late;
    for (let i = 0; i < N; i++) assert.equal(readFileSync(join(ws, `f${i}`), "utf8"), `new ${i}\n`);
    assert.equal(readFileSync(join(ws, "late"), "utf8"), "late\n");
    assert.deepEqual(journals(store), []);
  });

  test("a long apply keeps its lock fresh while it runs (no timer can while the apply is synchronous)", { timeout: 60_000 }, async () => {
    const { ws, staged, store } = setup("beat");
    const N = 50;
    for (let i = 0; i < N; i++) writeFileSync(join(staged, `f${i}`), `${i}\n`);
    const ops = Array.from({ length: N }, (_, i) => put(join(ws, `f${i}`), join(staged, `f${i}`), { before: null }));
    const lock = lockPathOf(store, ws);
    const seen: number[] = [];
    let started = 0;
    const timer = setInterval(() => {
      const st = lstatSync(lock, { throwIfNoEntry: false });
      if (st) seen.push(Date.now() - st.mtimeMs);
    }, 100);
    const end = await runChild(
      { mode: "apply", store, workspace: ws, command: "long", ops, sleepPerOpMs: 70 },
      { onLine: (l) => l === "go" && (started = Date.now()) },
    );
    clearInterval(timer);
    assert.equal(end.killed, false);
    assert.ok(Date.now() - started > 3000);
    assert.ok(seen.length > 20, `the lock was seen ${seen.length} times`);
    // proper-lockfile alone would leave it at its first mtime for the whole 3.5 s.
    assert.ok(Math.max(...seen) < 3000, `the lock's age stayed under the beat interval plus slack: ${Math.max(...seen)} ms`);
  });

  test("what changed between the crash and the recovery is lost, not in the undo entry, and never clobbered by undo", { timeout: 60_000 }, async () => {
    const { ws, staged, store } = setup("lost");
    for (const n of ["a", "b", "c"]) writeFileSync(join(ws, n), `${n} old\n`);
    writeFileSync(join(staged, "a"), "a new\n");
    writeFileSync(join(staged, "b"), "b new\n");
    mkdirSync(join(staged, "c"));
    writeFileSync(join(staged, "c", "in"), "c is a folder now\n");
    writeFileSync(join(staged, "d"), "d new\n");
    const ops = [
      put(join(ws, "a"), join(staged, "a")),
      ...replace(join(ws, "c"), join(staged, "c")),
      put(join(ws, "b"), join(staged, "b")),
      put(join(ws, "d"), join(staged, "d"), { before: null }),
    ];
    // Killed with a done and c removed (its folder not yet in place).
    assert.equal((await runChild({ mode: "apply", store, workspace: ws, command: "cut", ops, killAfterOp: 1 })).killed, true);
    assert.equal(existsSync(join(ws, "c")), false);
    // Meanwhile: the user makes a file c and edits b; the staged d goes.
    writeFileSync(join(ws, "c"), "the user's c\n");
    writeFileSync(join(ws, "b"), "the user's b\n");
    rmSync(join(staged, "d"));
    const rec = await recoverJournals(store, bounds);
    assert.equal(rec.recovered.length, 1);
    assert.deepEqual(
      [...rec.recovered[0]!.lost].sort(),
      ["b", "c", "d"].map((n) => join(ws, n)),
    );
    assert.equal(readFileSync(join(ws, "c"), "utf8"), "the user's c\n");
    assert.equal(readFileSync(join(ws, "b"), "utf8"), "the user's b\n");
    assert.deepEqual(junkIn(ws), []);
    const [entry] = listUndo(store, ws);
    assert.deepEqual(
      entry!.manifest.ops.map((o) => `${o.kind} ${relative(ws, o.target)}`),
      ["put a", "remove c"],
      "only what was done",
    );
    // Undo would put the old c back over the user's c: refused, naming it.
    let u = undoLast(store, ws, 1);
    assert.equal(u.ok, false);
    assert.match((u as { refused: string }).refused, new RegExp(`${join(ws, "c")}$`));
    assert.equal(readFileSync(join(ws, "c"), "utf8"), "the user's c\n");
    rmSync(join(ws, "c"));
    u = undoLast(store, ws, 1);
    assert.ok(u.ok, u.ok ? "" : u.refused);
    assert.equal(readFileSync(join(ws, "a"), "utf8"), "a old\n");
    assert.equal(readFileSync(join(ws, "c"), "utf8"), "c old\n");
    assert.equal(readFileSync(join(ws, "b"), "utf8"), "the user's b\n");
    assert.equal(existsSync(join(ws, "d")), false);
  });

  test("a dead applier's journal is recovered at once, and before the next apply in its workspace", { timeout: 60_000 }, async () => {
    const { ws, staged, store } = setup("dead");
    const N = 60;
    for (let i = 0; i < N; i++) writeFileSync(join(ws, `f${i}`), `old ${i}\n`);
    for (let i = 0; i < N; i++) writeFileSync(join(staged, `f${i}`), `new ${i}\n`);
    const ops = Array.from({ length: N }, (_, i) => put(join(ws, `f${i}`), join(staged, `f${i}`)));
    const end = await runChild({ mode: "apply", store, workspace: ws, command: "killed", ops, killAfterOp: 20 });
    assert.equal(end.killed, true);
    assert.equal(journals(store).length, 1);
    // The next apply into this workspace (no start-up repair ran): it finishes the dead one first,
    // without waiting out the lock's stale time.
    writeFileSync(join(staged, "next"), "next\n");
    const t = performance.now();
    const r = await apply(store, ws, [put(join(ws, "next"), join(staged, "next"), { before: null })], "next");
    assert.ok(performance.now() - t < 5000, "no wait for a dead holder's lock");
    assert.equal(r.applied, 1);
    assert.deepEqual(journals(store), []);
    for (let i = 0; i < N; i++) assert.equal(readFileSync(join(ws, `f${i}`), "utf8"), `new ${i}\n`);
    assert.deepEqual(
      listUndo(store, ws).map((e) => e.manifest.command),
      ["next", "killed"],
    );
    const u = undoLast(store, ws, 2);
    assert.ok(u.ok, u.ok ? "" : u.refused);
    for (let i = 0; i < N; i++) assert.equal(readFileSync(join(ws, `f${i}`), "utf8"), `old ${i}\n`);
  });
});
