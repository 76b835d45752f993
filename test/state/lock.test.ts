// P12: the cross-process lock itself (src/state/lock.ts): exclusion across real processes, the
// line waiters form (first come, first served; dead or stale tickets skipped; no barging past a
// line), stale-lock takeover (also by several processes at once), a holder that lost its lock
// publishing nothing, the exclusion of and by proper-lockfile (older copies of this extension),
// and the commit's last directory sync running after the release but before the commit returns.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import lockfile from "proper-lockfile";
import { nodeDurableFs, type DurableFs } from "../../src/state/durable-fs.ts";
import { createDurableGlobalState } from "../../src/state/durable-store.ts";
import { withLock } from "../../src/state/lock.ts";

const root = mkdtempSync(join(tmpdir(), "pi-auto-mode-state-lock-"));
after(() => rmSync(root, { recursive: true, force: true, maxRetries: 5 }));
let n = 0;
const LOCK_TS = fileURLToPath(new URL("../../src/state/lock.ts", import.meta.url));
const TIMING = { staleMs: 2000, waitMs: 5000 };

function freshDir(): { dir: string; lock: string } {
  const dir = join(root, `d-${n++}`);
  mkdirSync(dir, { recursive: true });
  return { dir, lock: join(dir, "state.lock") };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const busyWait = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const tickets = (dir: string) => readdirSync(dir).filter((f) => f.startsWith(".state.lock.wait."));
const leftovers = (dir: string) => readdirSync(dir).filter((f) => f.startsWith(".state.lock."));

/**
 * A child process that takes the lock `count` times; inside, it claims a marker file exclusively
 * (an overlap with another holder would find it there), bumps a counter by read-then-write, holds
 * for `holdMs`, and gives the marker back. Prints "overlap" if it ever found the marker.
 */
function contender(dir: string, count: number, holdMs: number): Promise<{ code: number | null; out: string; err: string }> {
  const script = `
    const { withLock } = await import(${JSON.stringify(LOCK_TS)});
    const fs = await import("node:fs");
    const dir = ${JSON.stringify(dir)};
    const wait = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    for (let i = 0; i < ${count}; i++) {
      const r = await withLock(dir + "/state.lock", { staleMs: 2000, waitMs: 20000 }, () => {
        try { fs.writeFileSync(dir + "/holder", String(process.pid), { flag: "wx" }); } catch { console.log("overlap"); }
        const c = Number(fs.readFileSync(dir + "/counter", "utf8"));
        wait(${holdMs});
        fs.writeFileSync(dir + "/counter", String(c + 1));
        fs.rmSync(dir + "/holder", { force: true });
      });
      if (r.kind !== "held") { console.log("not held: " + JSON.stringify(r)); process.exit(1); }
    }`;
  const proc = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => proc.on("close", (code) => resolve({ code, out, err })));
}

describe("P12: the state lock across processes", () => {
  test("6 processes x 30 critical sections: never two holders at once, no update lost, nothing left behind", async () => {
    const { dir } = freshDir();
    writeFileSync(join(dir, "counter"), "0");
    const results = await Promise.all(Array.from({ length: 6 }, () => contender(dir, 30, 1)));
    for (const r of results) {
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, "", "no holder found another one inside");
    }
    assert.equal(readFileSync(join(dir, "counter"), "utf8"), "180");
    assert.deepEqual(leftovers(dir), [], "no ticket or moved-aside lock left");
    assert.equal(existsSync(join(dir, "state.lock")), false);
  });

  test("a stale lock found by several processes at once is taken over by one at a time", async () => {
    const { dir, lock } = freshDir();
    writeFileSync(join(dir, "counter"), "0");
    mkdirSync(lock);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const results = await Promise.all(Array.from({ length: 5 }, () => contender(dir, 4, 20)));
    for (const r of results) {
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, "", "the takeover never let two holders in");
    }
    assert.equal(readFileSync(join(dir, "counter"), "utf8"), "20");
    assert.deepEqual(leftovers(dir), []);
  });

  test("a process that exits inside its critical section leaves no lock behind", () => {
    const { dir, lock } = freshDir();
    const r = spawnSync(process.execPath, [
      "--input-type=module",
      "-e",
      `const { withLock } = await import(${JSON.stringify(LOCK_TS)}); await withLock(${JSON.stringify(lock)}, { staleMs: 2000, waitMs: 1000 }, () => process.exit(3));`,
    ]);
    assert.equal(r.status, 3, r.stderr.toString());
    assert.equal(existsSync(lock), false);
    assert.deepEqual(leftovers(dir), []);
  });
});

describe("P12: waiters line up", () => {
  test("waiters get the lock in the order they began waiting, and a newcomer lines up behind them", async () => {
    const { dir, lock } = freshDir();
    mkdirSync(lock); // held by someone else, fresh
    const order: string[] = [];
    const waiters: Promise<unknown>[] = [];
    for (const name of ["a", "b", "c", "d"]) {
      waiters.push(withLock(lock, TIMING, () => order.push(name)));
      await sleep(15);
    }
    assert.equal(tickets(dir).length, 4, "each waiter left one ticket");
    rmSync(lock, { recursive: true });
    // A newcomer right at the release: the lock is free, but four are waiting before it.
    waiters.push(withLock(lock, TIMING, () => order.push("late")));
    await Promise.all(waiters);
    assert.deepEqual(order, ["a", "b", "c", "d", "late"]);
    assert.deepEqual(leftovers(dir), []);
  });

  test("a live waiter's ticket holds a newcomer back; tickets of dead processes or not refreshed are skipped and removed", async () => {
    const { dir, lock } = freshDir();
    const live = join(dir, `.state.lock.wait.${"0".repeat(17)}.${process.pid}.aaaaaaaa`);
    writeFileSync(live, "");
    // waitMs 0 is one attempt: with a live waiter ahead it does not even try.
    assert.deepEqual(await withLock(lock, { staleMs: 2000, waitMs: 0 }, () => 1), { kind: "busy" });
    assert.equal(existsSync(lock), false, "it did not take the free lock past the line");
    rmSync(live);

    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();
    writeFileSync(join(dir, `.state.lock.wait.${"0".repeat(16)}1.${dead}.bbbbbbbb`), "");
    const stale = join(dir, `.state.lock.wait.${"0".repeat(16)}2.${process.pid}.cccccccc`);
    writeFileSync(stale, "");
    const old = new Date(Date.now() - 60_000);
    utimesSync(stale, old, old);
    assert.deepEqual(await withLock(lock, { staleMs: 2000, waitMs: 0 }, () => 2), { kind: "held", value: 2 });
    assert.deepEqual(leftovers(dir), [], "both dead tickets were removed");
  });

  test("a waiter that gives up takes its ticket with it", async () => {
    const { dir, lock } = freshDir();
    mkdirSync(lock);
    assert.deepEqual(await withLock(lock, { staleMs: 10_000, waitMs: 50 }, () => 1), { kind: "busy" });
    assert.deepEqual(leftovers(dir), []);
    assert.ok(existsSync(lock), "the holder's lock is untouched");
  });
});

describe("P12: a holder that lost its lock", () => {
  test("stillHeld() turns false once the lock directory is another one, and the release leaves that one alone", async () => {
    const { dir, lock } = freshDir();
    const r = await withLock(lock, TIMING, (stillHeld) => {
      const before = stillHeld();
      // Taken over meanwhile: moved aside and made anew by someone else.
      renameSync(lock, join(dir, "gone"));
      mkdirSync(lock);
      return [before, stillHeld()];
    });
    assert.deepEqual(r, { kind: "held", value: [true, false] });
    assert.ok(existsSync(lock), "the new holder's lock was not removed");
  });

  test("a long section keeps its lock fresh, so it is not taken for stale", async () => {
    const { lock } = freshDir();
    const r = await withLock(lock, { staleMs: 2000, waitMs: 1000 }, (stillHeld) => {
      const old = new Date(Date.now() - 1900);
      utimesSync(lock, old, old);
      busyWait(600); // past a quarter of the stale time since the lock was taken
      const held = stillHeld();
      return { held, age: Date.now() - statSync(lock).mtimeMs };
    });
    assert.equal(r.kind === "held" && r.value.held, true);
    assert.ok(r.kind === "held" && r.value.age < 1000, "the lock's mtime was refreshed");
  });

  test("a commit whose lock is taken over before a rename publishes nothing more and fails", async () => {
    const agentDir = join(root, `agent-${n++}`);
    const store = createDurableGlobalState({ agentDir, lock: TIMING });
    assert.equal((await store.setEnabled(true)).kind, "committed");
    const dir = store.dir;
    const lock = join(dir, "state.lock");
    const before = readFileSync(join(dir, "state.json"), "utf8");
    let stolen = false;
    const fs: DurableFs = {
      ...nodeDurableFs,
      rename(from, to) {
        if (!stolen && to.endsWith("revision.json")) {
          stolen = true;
          renameSync(lock, join(root, `stolen-${n++}`));
          mkdirSync(lock);
        }
        nodeDurableFs.rename(from, to);
      },
    };
    // stillHeld() is asked right before each rename; the theft happens inside the primary's rename
    // call here, so the primary still lands and the config is the one refused.
    const thief = createDurableGlobalState({ agentDir, fs, lock: TIMING });
    const res = await thief.setEnabled(false);
    assert.equal(res.kind, "failed");
    assert.match(res.kind === "failed" ? res.message : "", /lock was lost/);
    assert.equal(readFileSync(join(dir, "state.json"), "utf8"), before, "the config was not published");
    assert.ok(existsSync(lock), "the lock that is someone else's now stays");
  });
});

describe("P12: proper-lockfile, as older copies of this extension use it", () => {
  test("its lock keeps this one out, and this one keeps it out", async () => {
    const { dir, lock } = freshDir();
    const release = await lockfile.lock(lock, { lockfilePath: lock, realpath: false, stale: 10_000 });
    try {
      assert.deepEqual(await withLock(lock, { staleMs: 10_000, waitMs: 100 }, () => 1), { kind: "busy" });
    } finally {
      await release();
    }
    const r = await withLock(lock, TIMING, () => {
      // Another process, with proper-lockfile, while this one holds the lock.
      const other = spawnSync(
        process.execPath,
        [
          "-e",
          `const l = require("proper-lockfile"); try { l.lockSync(${JSON.stringify(lock)}, { lockfilePath: ${JSON.stringify(lock)}, realpath: false }); console.log("got it"); } catch (e) { console.log(e.code); }`,
        ],
        { cwd: fileURLToPath(new URL("../..", import.meta.url)) },
      );
      return other.stdout.toString().trim();
    });
    assert.deepEqual(r, { kind: "held", value: "ELOCKED" });
    assert.deepEqual(leftovers(dir), []);
  });
});

describe("P12: the commit's last directory sync", () => {
  test("runs after the lock is released and before the commit is reported", async () => {
    const agentDir = join(root, `agent-${n++}`);
    const lock = join(agentDir, "auto-mode", "state.lock");
    const dirSyncs: boolean[] = [];
    const dirFds = new Set<number>();
    const fs: DurableFs = {
      ...nodeDurableFs,
      openDir(p) {
        const fd = nodeDurableFs.openDir(p);
        dirFds.add(fd);
        return fd;
      },
      fsync(fd) {
        if (dirFds.has(fd)) dirSyncs.push(existsSync(lock));
        nodeDurableFs.fsync(fd);
      },
      close(fd) {
        dirFds.delete(fd);
        nodeDurableFs.close(fd);
      },
    };
    const store = createDurableGlobalState({ agentDir, fs, lock: TIMING });
    const res = await store.setEnabled(false);
    assert.equal(res.kind, "committed");
    assert.deepEqual(
      dirSyncs,
      [true, true, false, false],
      "recovery and primary under the lock, the config's and the anchor's after it, all before the result",
    );
  });
});
