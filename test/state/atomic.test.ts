// P12: how durable state is written and re-read, through an instrumented file system that
// records every operation and can fail any of them: the order file sync, rename, directory sync
// for each artifact (recovery watermark, primary watermark, config); injected failures at the
// first-watermark rename, between the watermarks and at the config rename; the stat-only re-read
// when nothing changed; and the lock around it all.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import lockfile from "proper-lockfile";
import { ARTIFACT_FILES, serializeConfig, serializeWatermark } from "../../src/state/artifacts.ts";
import { nodeDurableFs, type DurableFs } from "../../src/state/durable-fs.ts";
import { createDurableGlobalState } from "../../src/state/durable-store.ts";
import { withLock } from "../../src/state/lock.ts";

const root = mkdtempSync(join(tmpdir(), "pi-auto-mode-state-atomic-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

type Op = "stat" | "readFile" | "mkdirp" | "readdir" | "openNew" | "openDir" | "write" | "futimes" | "fsync" | "close" | "rename" | "unlink";

interface Instrumented {
  readonly fs: DurableFs;
  /** Operations as "op name[->name]", names relative to the state dir ("<dir>" for the dir itself, "<tmp:file>" for a temp file). */
  readonly log: string[];
  /** Throw EIO at the first operation this matches (once). */
  failAt(match: (op: Op, name: string) => boolean): void;
  /** Run before an operation (after logging), e.g. to inspect a temp file before its rename. */
  before(hook: (op: Op, name: string, path: string) => void): void;
  count(op: Op): number;
}

function instrument(dir: string): Instrumented {
  const log: string[] = [];
  const fds = new Map<number, string>();
  let failure: ((op: Op, name: string) => boolean) | undefined;
  let hook: ((op: Op, name: string, path: string) => void) | undefined;
  const name = (p: string) => {
    if (p === dir) return "<dir>";
    if (p === dirname(dir)) return "<agent dir>";
    const b = basename(p);
    const tmp = /^\.(.+)\.\d+\.[0-9a-f]+\.tmp$/.exec(b);
    return tmp ? `<tmp:${tmp[1]}>` : b;
  };
  const step = (op: Op, path: string, shown = name(path)) => {
    log.push(`${op} ${shown}`);
    hook?.(op, shown, path);
    if (failure?.(op, shown)) {
      failure = undefined;
      throw Object.assign(new Error(`injected EIO at ${op} ${shown}`), { code: "EIO" });
    }
  };
  const base = nodeDurableFs;
  const fs: DurableFs = {
    stat: (p) => (step("stat", p), base.stat(p)),
    readFile: (p, max) => (step("readFile", p), base.readFile(p, max)),
    mkdirp: (p, mode) => (step("mkdirp", p), base.mkdirp(p, mode)),
    readdir: (p) => (step("readdir", p), base.readdir(p)),
    openNew(p, mode) {
      step("openNew", p);
      const fd = base.openNew(p, mode);
      fds.set(fd, p);
      return fd;
    },
    openDir(p) {
      step("openDir", p);
      const fd = base.openDir(p);
      fds.set(fd, p);
      return fd;
    },
    write: (fd, data) => (step("write", fds.get(fd)!), base.write(fd, data)),
    futimes: (fd, s) => (step("futimes", fds.get(fd)!), base.futimes(fd, s)),
    fsync: (fd) => (step("fsync", fds.get(fd)!), base.fsync(fd)),
    close(fd) {
      const p = fds.get(fd)!;
      fds.delete(fd);
      log.push(`close ${name(p)}`);
      base.close(fd);
    },
    rename: (from, to) => (step("rename", from, `${name(from)}->${name(to)}`), base.rename(from, to)),
    unlink: (p) => (step("unlink", p), base.unlink(p)),
  };
  return {
    fs,
    log,
    failAt: (m) => void (failure = m),
    before: (h) => void (hook = h),
    count: (op) => log.filter((l) => l.startsWith(`${op} `)).length,
  };
}

function setup(revision?: number) {
  const agentDir = join(root, `agent-${n++}`);
  const dir = join(agentDir, "auto-mode");
  if (revision !== undefined) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, ARTIFACT_FILES.config), serializeConfig({ enabled: true, reviewer: undefined, revision }));
    writeFileSync(join(dir, ARTIFACT_FILES.primary), serializeWatermark(revision));
    writeFileSync(join(dir, ARTIFACT_FILES.recovery), serializeWatermark(revision));
  }
  const io = instrument(dir);
  const store = createDurableGlobalState({ agentDir, fs: io.fs, lock: { staleMs: 2000, waitMs: 3000 } });
  return { agentDir, dir, io, store };
}

const files = (dir: string) =>
  Object.fromEntries(readdirSync(dir).map((f) => [f, statSync(join(dir, f)).isDirectory() ? "<dir>" : readFileSync(join(dir, f), "utf8")]));
const temps = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".tmp"));

describe("P12: atomic writes in a fixed order", () => {
  test("each artifact: file sync, rename, directory sync; recovery watermark, then primary, then config", async () => {
    const { io, store } = setup(3);
    await store.read();
    io.log.length = 0;
    const res = await store.setEnabled(false);
    assert.equal(res.kind === "committed" && res.snapshot.revision, 4);
    const durable = io.log.filter((l) => /^(fsync|rename) /.test(l));
    assert.deepEqual(durable, [
      "fsync <tmp:revision.recovery.json>",
      "rename <tmp:revision.recovery.json>->revision.recovery.json",
      "fsync <dir>",
      "fsync <tmp:revision.json>",
      "rename <tmp:revision.json>->revision.json",
      "fsync <dir>",
      "fsync <tmp:state.json>",
      "rename <tmp:state.json>->state.json",
      // The anchor beside the state dir, last: never ahead of durable watermarks.
      "fsync <tmp:auto-mode.anchor>",
      "rename <tmp:auto-mode.anchor>->auto-mode.anchor",
      "fsync <dir>",
      "fsync <agent dir>",
    ]);
    // Each temp file is created exclusively, written, stamped and synced before it is closed and renamed.
    const recovery = io.log.filter((l) => l.endsWith("<tmp:revision.recovery.json>") || l.startsWith("rename <tmp:revision.recovery.json>"));
    assert.deepEqual(recovery, [
      "openNew <tmp:revision.recovery.json>",
      "write <tmp:revision.recovery.json>",
      "futimes <tmp:revision.recovery.json>",
      "fsync <tmp:revision.recovery.json>",
      "close <tmp:revision.recovery.json>",
      "rename <tmp:revision.recovery.json>->revision.recovery.json",
    ]);
  });

  test("temp files are private (0600) and live in the state dir itself (the anchor's beside the anchor)", async () => {
    const { io, store, dir } = setup();
    const modes: string[] = [];
    io.before((op, shown, path) => {
      if (op === "rename") {
        assert.equal(join(path, ".."), shown.includes("auto-mode.anchor") ? dirname(dir) : dir, "same directory, so the rename is atomic");
        modes.push((statSync(path).mode & 0o777).toString(8));
      }
    });
    assert.equal((await store.setEnabled(true)).kind, "committed");
    assert.deepEqual(modes, ["600", "600", "600", "600"]);
    for (const f of Object.values(ARTIFACT_FILES)) assert.equal((statSync(join(dir, f)).mode & 0o777).toString(8), "600");
    assert.equal((statSync(join(dirname(dir), "auto-mode.anchor")).mode & 0o777).toString(8), "600");
    assert.equal((statSync(dir).mode & 0o777).toString(8), "700");
  });

  test("each published artifact's mtime is its revision, so a stat tells revisions apart", async () => {
    const { store, dir } = setup(41);
    await store.setEnabled(false);
    for (const f of Object.values(ARTIFACT_FILES)) assert.equal(statSync(join(dir, f)).mtimeMs, 42_000);
  });

  test("a directory that cannot be synced does not fail the commit (best effort)", async () => {
    const { io, store } = setup(3);
    io.failAt((op, name) => op === "fsync" && name === "<dir>");
    const res = await store.setEnabled(false);
    assert.equal(res.kind === "committed" && res.snapshot.revision, 4);
    io.failAt((op) => op === "openDir");
    assert.equal((await store.setEnabled(true)).kind, "committed");
  });
});

describe("P12: injected failures keep the old config, report a fault, clean up, and repair monotonically", () => {
  test("failure at the first-watermark rename: nothing is published, the old state stands", async () => {
    const { io, store, dir } = setup(3);
    const before = files(dir);
    io.failAt((op, name) => op === "rename" && name.endsWith("->revision.recovery.json"));
    const res = await store.setEnabled(false);
    assert.equal(res.kind, "failed");
    assert.match(res.kind === "failed" ? res.message : "", /rename revision\.recovery\.json/);
    assert.deepEqual(files(dir), before, "old config and watermarks untouched, temp file removed");
    assert.deepEqual(await store.read(), { kind: "ok", snapshot: { enabled: true, reviewer: undefined, revision: 3 } });
    const next = await store.setEnabled(false);
    assert.equal(next.kind === "committed" && next.snapshot.revision, 4);
  });

  for (const [what, match] of [
    ["the primary watermark's rename", (op: Op, name: string) => op === "rename" && name.endsWith("->revision.json")],
    ["the primary watermark's file sync", (op: Op, name: string) => op === "fsync" && name === "<tmp:revision.json>"],
  ] as const) {
    test(`failure between the watermarks (${what}): explicit Fault, old config kept, repair above the recovery watermark`, async () => {
      const { io, store, dir } = setup(3);
      const oldConfig = readFileSync(join(dir, ARTIFACT_FILES.config), "utf8");
      io.failAt(match);
      const res = await store.setReviewer({ provider: "p", model: "m", thinking: "low" });
      assert.equal(res.kind, "failed");
      assert.equal(readFileSync(join(dir, ARTIFACT_FILES.config), "utf8"), oldConfig);
      assert.deepEqual(temps(dir), []);
      const r = await store.read();
      assert.equal(r.kind === "fault" && r.fault.code, "unequal-watermarks");
      // An ordinary commit may not write over it; an explicit repair goes above the recovery watermark (4).
      assert.equal((await store.commit({ enabled: false }, "refuse-fault")).kind, "refused");
      const fixed = await store.repair();
      assert.equal(fixed.kind === "committed" && fixed.snapshot.revision, 5);
      assert.equal(fixed.kind === "committed" && fixed.snapshot.reviewer, undefined, "the failed change did not take effect");
    });
  }

  test("failure at the config rename: the watermarks moved, the old config stands, the next revision skips the promised one", async () => {
    const { io, store, dir } = setup(3);
    const oldConfig = readFileSync(join(dir, ARTIFACT_FILES.config), "utf8");
    io.failAt((op, name) => op === "rename" && name.endsWith("->state.json"));
    const res = await store.setEnabled(false);
    assert.equal(res.kind, "failed");
    assert.equal(readFileSync(join(dir, ARTIFACT_FILES.config), "utf8"), oldConfig);
    assert.equal(readFileSync(join(dir, ARTIFACT_FILES.primary), "utf8"), serializeWatermark(4));
    assert.deepEqual(temps(dir), []);
    assert.deepEqual(await store.read(), { kind: "ok", snapshot: { enabled: true, reviewer: undefined, revision: 3 } });
    const next = await store.setEnabled(false);
    assert.equal(next.kind === "committed" && next.snapshot.revision, 5, "revision 4 was promised by the watermarks and is never reused");
  });

  test("failure while creating or writing a temp file leaves nothing behind", async () => {
    for (const op of ["openNew", "write", "futimes"] as const) {
      const { io, store, dir } = setup(3);
      const before = files(dir);
      io.failAt((o, name) => o === op && name === "<tmp:revision.json>");
      assert.equal((await store.setEnabled(false)).kind, "failed", op);
      const after = files(dir);
      // Only the recovery watermark moved (it was published before the failing step).
      assert.deepEqual(Object.keys(after).sort(), Object.keys(before).sort(), op);
      assert.equal((await store.read()).kind, "fault", op);
    }
  });

  test("temp files a crashed writer left are swept by the next commit, under the lock", async () => {
    const { store, dir } = setup(3);
    writeFileSync(join(dir, ".state.json.99999.deadbeef.tmp"), "{");
    writeFileSync(join(dir, ".revision.json.99999.cafe.tmp"), "");
    assert.equal((await store.read()).kind, "ok", "stray temp files do not change what is read");
    assert.equal((await store.setEnabled(false)).kind, "committed");
    assert.deepEqual(temps(dir), []);
  });
});

describe("P12: the per-gate re-read is a stat when nothing changed", () => {
  test("no parse while unchanged; another writer's commit is seen at the next read", async () => {
    const { io, store, agentDir } = setup(3);
    await store.read();
    io.log.length = 0;
    for (let i = 0; i < 1000; i++) await store.read();
    assert.equal(io.count("readFile"), 0, "nothing was read or parsed");
    assert.equal(io.count("stat"), 4000, "one stat per artifact and one of the anchor per read");
    // Another process (here: another store instance on the same dir) commits.
    const other = createDurableGlobalState({ agentDir });
    for (let rev = 4; rev < 40; rev++) {
      assert.equal((await other.setEnabled(rev % 2 === 0)).kind, "committed");
      const r = await store.read();
      assert.deepEqual(r, { kind: "ok", snapshot: { enabled: rev % 2 === 0, reviewer: undefined, revision: rev } }, `revision ${rev}`);
    }
  });

  test("Missing is cached the same way", async () => {
    const { io, store } = setup();
    await store.read();
    io.log.length = 0;
    for (let i = 0; i < 100; i++) await store.read();
    assert.equal(io.count("readFile"), 0);
  });

  test("a file replaced in place (same size, new content) is noticed", async () => {
    const { store, dir } = setup(3);
    await store.read();
    const p = join(dir, ARTIFACT_FILES.config);
    const text = readFileSync(p, "utf8");
    writeFileSync(p, text.replace('"enabled":true', '"enabled":fals'));
    const r = await store.read();
    assert.equal(r.kind === "fault" && r.fault.code, "malformed-config");
  });
});

describe("P12: the lock", () => {
  test("it is held while publishing and released afterwards", async () => {
    const { io, store, dir } = setup(3);
    const held: boolean[] = [];
    io.before((op) => {
      if (op === "rename") held.push(existsSync(join(dir, "state.lock")));
    });
    await store.setEnabled(false);
    assert.deepEqual(held, [true, true, true, true]);
    assert.equal(existsSync(join(dir, "state.lock")), false);
  });

  test("a lock whose holder died long ago is taken over; a live one makes the commit fail without changes", async () => {
    const { store, dir } = setup(3);
    const lock = join(dir, "state.lock");
    mkdirSync(lock);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    assert.equal((await store.setEnabled(false)).kind, "committed");

    const agentDir = join(dir, "..");
    const impatient = createDurableGlobalState({ agentDir, lock: { staleMs: 10_000, waitMs: 200 } });
    const release = await lockfile.lock(lock, { lockfilePath: lock, realpath: false, stale: 10_000 });
    try {
      const before = files(dir);
      const res = await impatient.setEnabled(true);
      assert.equal(res.kind, "failed");
      assert.match(res.kind === "failed" ? res.message : "", /held the auto-mode state lock/);
      assert.deepEqual(files(dir), before);
    } finally {
      await release();
    }
  });

  test("a fault seen mid-commit is confirmed under the lock, so readers never report a commit in flight as a fault", async () => {
    const { store, dir, agentDir } = setup(3);
    await store.read();
    const lock = join(dir, "state.lock");
    const release = await lockfile.lock(lock, { lockfilePath: lock, realpath: false, stale: 10_000 });
    // A writer in another process, halfway: the recovery watermark is out, the rest not yet.
    writeFileSync(join(dir, ARTIFACT_FILES.recovery), serializeWatermark(4));
    const reading = store.read();
    await new Promise((r) => setTimeout(r, 50));
    writeFileSync(join(dir, ARTIFACT_FILES.primary), serializeWatermark(4));
    writeFileSync(join(dir, ARTIFACT_FILES.config), serializeConfig({ enabled: false, reviewer: undefined, revision: 4 }));
    await release();
    assert.deepEqual(await reading, { kind: "ok", snapshot: { enabled: false, reviewer: undefined, revision: 4 } });
    // The same reads on another store with nobody holding the lock: a real fault stays a fault.
    writeFileSync(join(dir, ARTIFACT_FILES.recovery), serializeWatermark(9));
    const r = await createDurableGlobalState({ agentDir }).read();
    assert.equal(r.kind === "fault" && r.fault.code, "unequal-watermarks");
  });

  test("the critical section must be synchronous: nothing can be awaited while the lock is held", async () => {
    const { dir } = setup();
    mkdirSync(dir, { recursive: true });
    await assert.rejects(
      withLock(join(dir, "state.lock"), { staleMs: 2000, waitMs: 1000 }, async () => 1),
      /must be synchronous/,
    );
    assert.equal(existsSync(join(dir, "state.lock")), false, "and the lock is released anyway");
  });

  test("commits of one process are serialized and each gets its own revision", async () => {
    const { store } = setup(0);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.setEnabled(i % 2 === 0)));
    assert.deepEqual(
      results.map((r) => (r.kind === "committed" ? r.snapshot.revision : -1)),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
});
