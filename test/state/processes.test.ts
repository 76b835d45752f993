// P12 with real processes: writers racing each other, and writers killed with -9 at random
// points. Every read parses to a state some writer committed, revisions only grow, and a crash
// leaves either a committed state or a Fault that repair brings back above every earlier revision.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import { createDurableGlobalState } from "../../src/state/durable-store.ts";
import { stripToJs } from "../fixtures/state-strip.ts";
import type { CommitResult, GlobalChange, GlobalRead, GlobalSnapshot } from "../../src/state/global.ts";

const root = mkdtempSync(join(tmpdir(), "pi-auto-mode-state-procs-"));
after(() => rmSync(root, { recursive: true, force: true, maxRetries: 5 }));
// The writers run the repository's own code, type-stripped once up front: a hundred processes
// then skip the TypeScript loader's start-up, most of their cost on a 2-core CI box.
const WRITER = stripToJs(fileURLToPath(new URL("../fixtures/state-writer.ts", import.meta.url)), join(root, "js"));

type Line =
  | { t: "read"; read: GlobalRead }
  | { t: "commit"; snapshot: GlobalSnapshot }
  | { t: "error"; res: CommitResult }
  | { t: "ready"; read: GlobalRead }
  | { t: "intent"; i: number; change: GlobalChange }
  | { t: "result"; i: number; res: CommitResult };

interface Child {
  readonly proc: ChildProcess;
  readonly lines: Line[];
  /** Resolves with the exit code (or signal) once stdout is drained. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves at the first line matching. */
  waitFor(pred: (l: Line) => boolean): Promise<void>;
}

function writer(args: string[]): Child {
  const proc = spawn(process.execPath, [WRITER, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  const lines: Line[] = [];
  const waiters: Array<{ pred: (l: Line) => boolean; resolve: () => void }> = [];
  let buf = "";
  let stderr = "";
  proc.stdout!.setEncoding("utf8");
  proc.stdout!.on("data", (d: string) => {
    buf += d;
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = JSON.parse(buf.slice(0, i)) as Line;
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of waiters.splice(0))
        if (w.pred(line)) w.resolve();
        else waiters.push(w);
    }
  });
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("close", (code, signal) => {
      if (code !== 0 && signal === null) process.stderr.write(`writer ${args.join(" ")} exited ${code}: ${stderr}\n`);
      resolve({ code, signal });
    }),
  );
  return {
    proc,
    lines,
    exited,
    waitFor: (pred) =>
      new Promise<void>((resolve, reject) => {
        if (lines.some(pred)) return resolve();
        waiters.push({ pred, resolve });
        proc.on("close", () => reject(new Error(`writer exited before the awaited line: ${stderr}`)));
      }),
  };
}

const contentKey = (s: { enabled: boolean; reviewer: GlobalSnapshot["reviewer"] }) => JSON.stringify([s.enabled, s.reviewer ?? null]);
const temps = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".tmp"));

describe("P12: real processes", () => {
  test("8 child processes race 200 reviewer/enabled updates: every read is a committed state, the final revision is 200", async () => {
    const agentDir = join(root, "race");
    const WRITERS = 8;
    const EACH = 25;
    const children = Array.from({ length: WRITERS }, (_, id) => writer(["race", agentDir, String(id), String(EACH)]));
    const store = createDurableGlobalState({ agentDir });
    const parentReads: GlobalRead[] = [];
    let running = true;
    const done = Promise.all(children.map((c) => c.exited)).then((codes) => {
      running = false;
      return codes;
    });
    while (running) {
      parentReads.push(await store.read());
      await new Promise((r) => setTimeout(r, 1));
    }
    for (const { code } of await done) assert.equal(code, 0);

    const committed = new Map<number, GlobalSnapshot>();
    for (const c of children)
      for (const l of c.lines) {
        assert.notEqual(l.t, "error", JSON.stringify(l));
        if (l.t === "commit") {
          assert.equal(committed.has(l.snapshot.revision), false, `revision ${l.snapshot.revision} committed twice`);
          committed.set(l.snapshot.revision, l.snapshot);
        }
      }
    assert.equal(committed.size, WRITERS * EACH);
    assert.deepEqual(
      [...committed.keys()].sort((a, b) => a - b),
      Array.from({ length: WRITERS * EACH }, (_, i) => i + 1),
    );

    const final = await store.read();
    assert.deepEqual(final, { kind: "ok", snapshot: committed.get(WRITERS * EACH) });

    // Every read, in the parent and in each writer, is the initial state or exactly a committed one,
    // and within one process revisions never go back.
    const readers = [parentReads, ...children.map((c) => c.lines.flatMap((l) => (l.t === "read" ? [l.read] : [])))];
    let total = 0;
    for (const reads of readers) {
      let last = 0;
      for (const r of reads) {
        total++;
        assert.notEqual(r.kind, "fault", `a reader saw a fault: ${JSON.stringify(r)}`);
        if (r.kind === "fault") continue;
        if (r.kind === "missing") assert.equal(last, 0, "Missing after a commit was seen");
        else assert.deepEqual(r.snapshot, committed.get(r.snapshot.revision), `read of revision ${r.snapshot.revision}`);
        assert.ok(r.snapshot.revision >= last, `revision went back from ${last} to ${r.snapshot.revision}`);
        last = r.snapshot.revision;
      }
    }
    assert.ok(parentReads.length > 10, `the parent read while the writers ran (${parentReads.length} reads, ${total} in all)`);
    assert.deepEqual(temps(join(agentDir, "auto-mode")), []);
  });

  test("kill -9 writers at random points, 100 times: committed state or Fault, and repair goes above every earlier revision", async (t) => {
    // Lanes run side by side (each its own agent dir) because a writer killed while holding the
    // lock blocks its lane for the lock's stale time (2 s, proper-lockfile's floor).
    const LANES = 25;
    const KILLS_PER_LANE = 4;
    const outcomes = { committed: 0, inFlight: 0, fault: 0, repaired: 0 };

    async function lane(l: number): Promise<void> {
      const agentDir = join(root, `kill-${l}`);
      const dir = join(agentDir, "auto-mode");
      const store = createDurableGlobalState({ agentDir, lock: { staleMs: 2000, waitMs: 10_000 } });
      let highest = 0;
      let current: { enabled: boolean; reviewer: GlobalSnapshot["reviewer"] } = { enabled: true, reviewer: undefined };
      // Each writer is started while the previous one's lock goes stale, and told to go once it has.
      let starting = writer(["loop", agentDir, `${l}.0`]);
      for (let k = 0; k < KILLS_PER_LANE; k++) {
        const tag = `${l}.${k}`;
        const child = starting;
        await child.waitFor((x) => x.t === "ready");
        child.proc.stdin!.write("go\n");
        await new Promise((r) => setTimeout(r, Math.random() * 25));
        child.proc.kill("SIGKILL");
        const { signal } = await child.exited;
        assert.equal(signal, "SIGKILL", `lane ${tag}: the writer was killed, not finished`);

        // What the writer got to: its committed revisions, and the one it was working on.
        const results = child.lines.flatMap((x) => (x.t === "result" && x.res.kind === "committed" ? [x.res.snapshot] : []));
        const intents = child.lines.flatMap((x) => (x.t === "intent" ? [x] : []));
        const pending = intents.length > results.length ? intents.at(-1)!.change : undefined;
        for (const s of results) assert.ok(s.revision > highest, `lane ${tag}: revisions grow`);
        const lastDone = results.at(-1);
        const before = lastDone ? { enabled: lastDone.enabled, reviewer: lastDone.reviewer } : current;
        highest = Math.max(highest, lastDone?.revision ?? 0);

        // A fresh reader (no memory of earlier revisions) and this lane's store, without the lock.
        for (const r of [createDurableGlobalState({ agentDir }).check(), store.check()]) {
          // Missing only while nothing has been published yet (the first writer died before its first rename).
          if (r.kind === "missing") assert.equal(highest, 0, `lane ${tag}: state disappeared`);
          if (r.kind !== "ok") continue;
          const key = contentKey(r.snapshot);
          if (key === contentKey(before)) {
            assert.ok(r.snapshot.revision >= (lastDone?.revision ?? 0), `lane ${tag}: stale revision`);
          } else {
            // The commit in flight got its config out before the kill: exactly that change, above the last one.
            assert.ok(pending, `lane ${tag}: ${key} is no state anyone committed`);
            const expected = {
              ...before,
              ...("enabled" in pending ? { enabled: pending.enabled! } : {}),
              ...("reviewer" in pending ? { reviewer: pending.reviewer ?? undefined } : {}),
            };
            assert.equal(key, contentKey(expected), `lane ${tag}: a state nobody wrote`);
            assert.ok(r.snapshot.revision > highest, `lane ${tag}: the in-flight commit's revision is new`);
          }
        }
        const seen = store.check();
        if (seen.kind === "fault") {
          outcomes.fault++;
          assert.ok(seen.fault.floor !== undefined && seen.fault.floor >= highest, `lane ${tag}: a repair floor at or above every committed revision`);
          highest = Math.max(highest, seen.fault.floor);
        } else {
          if (seen.kind === "missing" || contentKey(seen.snapshot) === contentKey(before)) outcomes.committed++;
          else outcomes.inFlight++;
          highest = Math.max(highest, seen.snapshot.revision);
        }

        if (k + 1 < KILLS_PER_LANE) starting = writer(["loop", agentDir, `${l}.${k + 1}`]);
        // The next writer (here: the lane itself) takes the dead writer's lock over once it is stale.
        const next = seen.kind === "fault" ? await store.repair() : await store.commit({ enabled: true }, "refuse-fault");
        assert.equal(next.kind, "committed", `lane ${tag}: ${JSON.stringify(next)}`);
        if (next.kind !== "committed") return;
        if (next.repaired) outcomes.repaired++;
        assert.ok(next.snapshot.revision > highest, `lane ${tag}: ${next.snapshot.revision} above every earlier revision (${highest})`);
        highest = next.snapshot.revision;
        current = { enabled: next.snapshot.enabled, reviewer: next.snapshot.reviewer };
        assert.deepEqual(temps(dir), [], `lane ${tag}: the dead writer's temp files are gone`);
        assert.deepEqual(await createDurableGlobalState({ agentDir }).read(), { kind: "ok", snapshot: next.snapshot });
      }
    }

    await Promise.all(Array.from({ length: LANES }, (_, l) => lane(l)));
    const total = outcomes.committed + outcomes.inFlight + outcomes.fault;
    assert.equal(total, LANES * KILLS_PER_LANE);
    assert.equal(outcomes.repaired, outcomes.fault);
    t.diagnostic(
      `after ${total} kills: ${outcomes.committed} at the last committed state, ${outcomes.inFlight} at the in-flight commit, ${outcomes.fault} faults (all repaired)`,
    );
  });
});
