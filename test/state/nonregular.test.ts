// P12, P5: a state file that is not a regular file (a FIFO, a socket, a device, a directory, a
// symlink) is a fault the status names, never a hang and never a setting. A FIFO used to block the
// reading process inside open(2) for good (the gate's state read, `doctor`, the start-up repair of
// interrupted applies), so every read here runs in a child process with a deadline: a hang fails
// the test instead of hanging the suite.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ARTIFACT_FILES, ARTIFACTS, LOCK_NAME, serializeAnchor, serializeConfig, serializeWatermark, type ArtifactName } from "../../src/state/artifacts.ts";
import { effectStore, lockPathOf, undoDirOf } from "../../src/sandbox/effects/store.ts";
import { ANCHOR_FILE } from "../../src/state/locations.ts";
import { BIN } from "../helpers/cli.ts";
import { IS_ROOT, KINDS, plant, pool, runWithDeadline, stateProbe, type Kind } from "../helpers/state-hostile.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-state-nonregular-")));
after(() => rmSync(root, { recursive: true, force: true }));
const probe = stateProbe(join(root, "js"));
let n = 0;
if (!IS_ROOT) console.log("# the character-device cases are skipped: only root can mknod a device");

const REVIEWER = { provider: "anthropic", model: "claude-x", thinking: "high" } as const;
/** A healthy state at `revision` that says auto mode is off: reading it any other way than whole would be the permissive mistake. */
function healthyFiles(revision: number): Record<ArtifactName, string> {
  return {
    config: serializeConfig({ revision, enabled: false, reviewer: REVIEWER }),
    primary: serializeWatermark(revision),
    recovery: serializeWatermark(revision),
  };
}

async function agentWith(artifact: ArtifactName | "lock" | "anchor" | undefined, kind: Kind): Promise<string> {
  const agentDir = join(root, `agent-${n++}`);
  const dir = join(agentDir, "auto-mode");
  mkdirSync(dir, { recursive: true });
  const files = healthyFiles(3);
  for (const a of ARTIFACTS) writeFileSync(join(dir, ARTIFACT_FILES[a]), files[a]);
  const anchor = serializeAnchor(3, files.config);
  writeFileSync(join(agentDir, ANCHOR_FILE), anchor);
  if (artifact === "lock") await plant(join(dir, LOCK_NAME), kind);
  else if (artifact === "anchor") await plant(join(agentDir, ANCHOR_FILE), kind, anchor);
  else if (artifact) await plant(join(dir, ARTIFACT_FILES[artifact]), kind, files[artifact]);
  return agentDir;
}

type Read = { kind: string; fault?: { code: string; detail: string }; snapshot?: { enabled: boolean } };

describe("P12: a state file that is not a regular file is a fault, never a hang", () => {
  for (const artifact of ARTIFACTS) {
    test(`${ARTIFACT_FILES[artifact]} as a FIFO, socket, directory, symlink or device: read and check are faults that say why`, async () => {
      const results = await pool(
        KINDS.flatMap((kind) =>
          (["read", "check"] as const).map((op) => async () => {
            const agentDir = await agentWith(artifact, kind);
            return { kind, op, r: (await probe(op, agentDir)) as Read };
          }),
        ),
      );
      for (const { kind, op, r } of results) {
        assert.equal(r.kind, "fault", `${op} with ${ARTIFACT_FILES[artifact]} a ${kind}: ${JSON.stringify(r)}`);
        assert.equal(r.fault!.code, "unreadable", `${op}, ${kind}: ${JSON.stringify(r)}`);
        assert.match(r.fault!.detail, new RegExp(`${ARTIFACT_FILES[artifact].replace(".", "\\.")} cannot be read: `), `${kind}: ${r.fault!.detail}`);
        if (kind !== "dangling-symlink") assert.match(r.fault!.detail, /not a regular file|symbolic link/, `${kind}: ${r.fault!.detail}`);
      }
    });

    test(`${ARTIFACT_FILES[artifact]} not a regular file: /perm-enabled on repairs it or fails, never hangs`, async () => {
      const results = await pool(
        KINDS.map((kind) => async () => {
          const agentDir = await agentWith(artifact, kind);
          return { kind, r: (await probe("commit", agentDir)) as { result: { kind: string; message?: string }; read: Read } };
        }),
      );
      for (const { kind, r } of results) {
        // A directory cannot be renamed over; everything else is replaced by the repair.
        if (kind === "directory") {
          assert.equal(r.result.kind, "failed", `${kind}: ${JSON.stringify(r)}`);
          assert.equal(r.read.kind, "fault");
        } else {
          assert.equal(r.result.kind, "committed", `${kind}: ${JSON.stringify(r)}`);
          assert.deepEqual([r.read.kind, r.read.snapshot?.enabled], ["ok", true], `${kind}: ${JSON.stringify(r)}`);
        }
      }
    });
  }

  test(`${ANCHOR_FILE} (beside the state folder) not a regular file: a fault that says why; /perm-enabled on rewrites it`, async () => {
    const results = await pool(
      KINDS.map((kind) => async () => {
        const agentDir = await agentWith("anchor", kind);
        return {
          kind,
          read: (await probe("read", agentDir)) as Read,
          commit: (await probe("commit", await agentWith("anchor", kind))) as { result: { kind: string }; read: Read },
        };
      }),
    );
    for (const { kind, read, commit } of results) {
      if (kind === "dangling-symlink")
        assert.match(
          read.fault?.detail ?? "",
          /auto-mode\.anchor \(beside the state folder\) cannot be read: not a regular file \(a symbolic link\)/,
          JSON.stringify(read),
        );
      else
        assert.match(
          read.fault?.detail ?? "",
          /auto-mode\.anchor \(beside the state folder\) cannot be read: not a regular file/,
          `${kind}: ${JSON.stringify(read)}`,
        );
      assert.equal(read.fault?.code, "unreadable");
      if (kind === "directory") assert.deepEqual([commit.result.kind, commit.read.kind], ["failed", "fault"], JSON.stringify(commit));
      else
        assert.deepEqual(
          [commit.result.kind, commit.read.kind, commit.read.snapshot?.enabled],
          ["committed", "ok", true],
          `${kind}: ${JSON.stringify(commit)}`,
        );
    }
  });

  test("the lock's name taken by a FIFO, a file, a socket or a symlink: not a lock, so a commit takes it over at once", async () => {
    const results = await pool(
      (["fifo", "socket", "symlink", "dangling-symlink", "symlink-to-fifo"] as const).map((kind) => async () => {
        const agentDir = await agentWith("lock", kind);
        const t0 = Date.now();
        const r = (await probe("commit", agentDir)) as { result: { kind: string }; read: Read };
        return { kind, r, ms: Date.now() - t0 };
      }),
    );
    for (const { kind, r, ms } of results) {
      assert.equal(r.result.kind, "committed", `${kind}: ${JSON.stringify(r)}`);
      // The probe's stale time is 2 s: a non-directory judged by its age would have cost that.
      assert.ok(ms < 1900, `${kind}: the commit waited ${ms} ms for something that is not a lock`);
    }
  });

  test("the state folder itself a FIFO, socket, file or dangling symlink: a fault (dangling: nothing stored, the strict defaults); a commit fails", async () => {
    const results = await pool(
      (["fifo", "socket", "dangling-symlink", "symlink-to-fifo", "file"] as const).map((kind) => async () => {
        const agentDir = join(root, `agent-${n++}`);
        mkdirSync(agentDir, { recursive: true });
        if (kind === "file") writeFileSync(join(agentDir, "auto-mode"), healthyFiles(3).config);
        else await plant(join(agentDir, "auto-mode"), kind);
        return { kind, read: (await probe("read", agentDir)) as Read, commit: (await probe("commit", agentDir)) as { result: { kind: string }; read: Read } };
      }),
    );
    for (const { kind, read, commit } of results) {
      // A symlink to nowhere holds no files: the same as a deleted folder, which reads as the first run.
      if (kind === "dangling-symlink") assert.deepEqual(read, { kind: "missing", snapshot: { enabled: true, revision: 0 } });
      else assert.deepEqual([read.kind, read.fault?.code], ["fault", "unreadable"], `${kind}: ${JSON.stringify(read)}`);
      assert.equal(commit.result.kind, "failed", `${kind}: ${JSON.stringify(commit)}`);
      assert.notEqual(commit.read.kind, "ok", kind);
    }
  });

  test("doctor with a FIFO as the state file ends, says the state is at fault, and exits 1", async () => {
    const agentDir = await agentWith("config", "fifo");
    const r = await runWithDeadline([BIN, "doctor", "--json"], 60_000, { ...process.env, PI_CODING_AGENT_DIR: agentDir, HOME: join(root, "home") });
    assert.equal(r.hung, false, "doctor hung on a FIFO state file");
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const d = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { ok: boolean; state: { status: string; message: string }; reviewer: { configured: boolean } };
    assert.equal(d.ok, false);
    assert.equal(d.state.status, "fault");
    assert.match(d.state.message, /state\.json cannot be read: not a regular file/);
    assert.equal(d.reviewer.configured, false);
  });
});

describe("P17, P5: the effect store's files that are not regular files are refused, never a hang", () => {
  const ws = join(root, "ws");
  mkdirSync(ws, { recursive: true });

  test("an interrupted-apply journal that is a FIFO, socket, directory or symlink is reported, not read", async () => {
    const results = await pool(
      KINDS.map((kind) => async () => {
        const agentDir = join(root, `agent-${n++}`);
        const store = effectStore(agentDir);
        mkdirSync(store.journalDir, { recursive: true });
        await plant(join(store.journalDir, "0001-x.json"), kind, JSON.stringify({ version: 1, ops: [], workspace: ws }));
        return { kind, r: (await probe("journals", agentDir)) as { recovered: unknown[]; failed: string[] } };
      }),
    );
    for (const { kind, r } of results) {
      assert.equal(r.recovered.length, 0, kind);
      assert.equal(r.failed.length, 1, `${kind}: ${JSON.stringify(r)}`);
      assert.match(r.failed[0]!, /0001-x\.json/);
    }
  });

  test("an undo entry whose manifest is not a regular file is left out of the list; a summary that is not one is read around", async () => {
    const results = await pool(
      KINDS.flatMap((kind) =>
        (["manifest.json", "meta.json"] as const).map((file) => async () => {
          const agentDir = join(root, `agent-${n++}`);
          const entry = join(undoDirOf(effectStore(agentDir), ws), "lmn0p-abc");
          mkdirSync(entry, { recursive: true });
          const manifest = JSON.stringify({ version: 1, id: "lmn0p-abc", workspace: ws, command: "true", at: 1, kept: true, ops: [] });
          writeFileSync(join(entry, "manifest.json"), manifest);
          writeFileSync(join(entry, "meta.json"), JSON.stringify({ at: 1, bytes: 0 }));
          await plant(join(entry, file), kind, file === "manifest.json" ? manifest : JSON.stringify({ at: 1, bytes: 0 }));
          return { kind, file, entry, r: (await probe(file === "meta.json" ? "undo-prune" : "undo-list", agentDir, ws)) as string[] };
        }),
      ),
    );
    for (const { kind, file, entry, r } of results) assert.deepEqual(r, file === "manifest.json" ? [] : [entry], `${file} as ${kind}`);
  });

  test("a workspace lock whose owner record is a FIFO is judged by its age, not read", async () => {
    const results = await pool(
      (["fifo", "socket", "symlink-to-fifo", "directory"] as const).map((kind) => async () => {
        const agentDir = join(root, `agent-${n++}`);
        const store = effectStore(agentDir);
        const lock = lockPathOf(store, ws);
        mkdirSync(lock, { recursive: true });
        await plant(`${lock}.owner`, kind);
        // Older than the stale time, so the lock is taken over once the record is found unreadable.
        const past = Date.now() / 1000 - 600;
        utimesSync(lock, past, past);
        return { kind, r: (await probe("ws-lock", agentDir, ws)) as { async: { kind: string }; sync: { kind: string } } };
      }),
    );
    for (const { kind, r } of results) assert.deepEqual([r.async.kind, r.sync.kind], ["held", "held"], `${kind}: ${JSON.stringify(r)}`);
  });

  test("a workspace lock's name taken by a FIFO, a file or a symlink: not a lock, taken at once", async () => {
    const results = await pool(
      (["fifo", "socket", "symlink", "symlink-to-fifo", "dangling-symlink"] as const).map((kind) => async () => {
        const agentDir = join(root, `agent-${n++}`);
        const store = effectStore(agentDir);
        mkdirSync(store.lockDir, { recursive: true });
        await plant(lockPathOf(store, ws), kind);
        return { kind, r: (await probe("ws-lock", agentDir, ws)) as { async: { kind: string }; sync: { kind: string } } };
      }),
    );
    for (const { kind, r } of results) assert.deepEqual([r.async.kind, r.sync.kind], ["held", "held"], `${kind}: ${JSON.stringify(r)}`);
  });

  test("a FIFO left at a durable write's temp name does not block the write", async () => {
    const file = join(root, `durable-${n++}`, "file.json");
    mkdirSync(join(file, ".."), { recursive: true });
    const r = (await probe("durable-write", file)) as { ok: boolean; message?: string };
    assert.deepEqual(r, { ok: true });
  });
});
