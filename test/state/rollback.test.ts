// P12 (revisions only grow) across processes: a whole, consistent copy of auto mode's state folder
// put back over a newer one is a fault, because the revision anchor beside the folder
// (auto-mode.anchor in Pi's agent dir) remembers how far revisions went. A fresh store instance
// here is what a new Pi process is: it has seen nothing. The limits the anchor documents (a
// rollback that rewinds the anchor too) are tested as what they are.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ARTIFACT_FILES, serializeAnchor, serializeConfig, serializeWatermark } from "../../src/state/artifacts.ts";
import { createDurableGlobalState } from "../../src/state/durable-store.ts";
import { readEnabled, type GlobalRead } from "../../src/state/global.ts";
import { ANCHOR_FILE } from "../../src/state/locations.ts";

const root = mkdtempSync(join(tmpdir(), "pi-auto-mode-state-rollback-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const REVIEWER = { provider: "anthropic", model: "claude-x", thinking: "high" } as const;
const WEAKER = { provider: "cheap", model: "tiny", thinking: "off" } as const;

function agent() {
  const agentDir = join(root, `agent-${n++}`);
  const dir = join(agentDir, "auto-mode");
  const anchor = join(agentDir, ANCHOR_FILE);
  /** A new Pi process: nothing seen yet. */
  const fresh = () => createDurableGlobalState({ agentDir, lock: { staleMs: 2000, waitMs: 3000 } });
  return { agentDir, dir, anchor, fresh };
}

const faultCode = (r: GlobalRead) => (r.kind === "fault" ? r.fault.code : r.kind);

/** The state an attacker wants back: auto mode off, a weaker reviewer. */
async function savedOffState(a: ReturnType<typeof agent>): Promise<string> {
  const s = a.fresh();
  assert.equal((await s.setReviewer(WEAKER)).kind, "committed");
  assert.equal((await s.setEnabled(false)).kind, "committed");
  const aside = join(root, `aside-${n++}`);
  // cp -a keeps modes and times: the copy is byte for byte and stat for stat what was stored.
  execFileSync("cp", ["-a", a.dir, aside]);
  return aside;
}

describe("P12: an older copy of the state folder put back is a fault", () => {
  test("copy aside (auto mode off), turn it on and change the reviewer, copy back: a fresh process reads rolled-back, never off", async () => {
    const a = agent();
    const aside = await savedOffState(a);
    const user = a.fresh();
    assert.equal((await user.setEnabled(true)).kind, "committed");
    assert.equal((await user.setReviewer(REVIEWER)).kind, "committed");
    // The copy-back: the folder replaced whole, as a restore or a sync would.
    rmSync(a.dir, { recursive: true });
    execFileSync("cp", ["-a", aside, a.dir]);

    const r = await a.fresh().read();
    assert.equal(faultCode(r), "rolled-back", JSON.stringify(r));
    assert.match(
      r.kind === "fault" ? r.fault.detail : "",
      /stored revision 2 is below revision 4, which auto-mode\.anchor records: an older copy of the state folder was put back/,
    );
    assert.equal(readEnabled(r), true, "a fault never reads as off");
    assert.equal(a.fresh().check().kind, "fault", "the synchronous read agrees");
  });

  test("the same with the files copied back one by one over the newer ones, and with the folder renamed back into place", async () => {
    for (const how of ["files", "rename"] as const) {
      const a = agent();
      const aside = await savedOffState(a);
      assert.equal((await a.fresh().setEnabled(true)).kind, "committed");
      if (how === "files") for (const f of Object.values(ARTIFACT_FILES)) cpSync(join(aside, f), join(a.dir, f), { preserveTimestamps: true });
      else {
        renameSync(a.dir, `${a.dir}.newer`);
        renameSync(aside, a.dir);
      }
      assert.equal(faultCode(await a.fresh().read()), "rolled-back", how);
    }
  });

  test("a repair after a rollback writes above the anchor, with the defaults: the rolled-back settings do not survive", async () => {
    const a = agent();
    const aside = await savedOffState(a);
    assert.equal((await a.fresh().setEnabled(true)).kind, "committed");
    rmSync(a.dir, { recursive: true });
    cpSync(aside, a.dir, { recursive: true, preserveTimestamps: true });
    const s = a.fresh();
    const r = await s.read();
    assert.equal(r.kind === "fault" && r.fault.survivor, undefined);
    assert.equal(r.kind === "fault" && r.fault.floor, 3);
    const fixed = await s.repair();
    assert.deepEqual(fixed.kind === "committed" && fixed.snapshot, { enabled: true, reviewer: undefined, revision: 4 });
    assert.equal(readFileSync(a.anchor, "utf8"), serializeAnchor(4, serializeConfig({ enabled: true, reviewer: undefined, revision: 4 })));
    assert.deepEqual(await a.fresh().read(), { kind: "ok", snapshot: { enabled: true, reviewer: undefined, revision: 4 } });
  });

  test("the state folder deleted while the anchor stays: a fault a repair can fix (the anchor is its floor), never the first run", async () => {
    const a = agent();
    await savedOffState(a);
    rmSync(a.dir, { recursive: true });
    const r = await a.fresh().read();
    assert.equal(faultCode(r), "rolled-back");
    assert.equal(r.kind === "fault" && r.fault.floor, 2);
    const fixed = await a.fresh().setEnabled(true);
    assert.equal(fixed.kind === "committed" && fixed.snapshot.revision, 3);
  });

  test("no watermark survives but the anchor does: repairable above the anchor", async () => {
    const a = agent();
    await savedOffState(a);
    rmSync(join(a.dir, ARTIFACT_FILES.primary));
    writeFileSync(join(a.dir, ARTIFACT_FILES.recovery), "{");
    const r = await a.fresh().read();
    assert.equal(r.kind === "fault" && r.fault.floor, 2);
    const fixed = await a.fresh().repair();
    assert.equal(fixed.kind === "committed" && fixed.snapshot.revision, 3);
  });
});

describe("P12: a config changed in place is a fault, even where its form is intact", () => {
  test("one flipped bit in the reviewer's name (still a name) or in the revision (still a number): anchor-mismatch, and the settings do not survive", async () => {
    const a = agent();
    await savedOffState(a);
    const path = join(a.dir, ARTIFACT_FILES.config);
    const text = readFileSync(path, "utf8");
    for (const [what, from, to] of [
      ["model name", '"tiny"', '"tinx"'],
      ["provider name", '"cheap"', '"chea`"'],
      ["revision", '"revision":2', '"revision":0'],
    ] as const) {
      writeFileSync(path, text.replace(from, to));
      const r = await a.fresh().read();
      assert.equal(faultCode(r), "anchor-mismatch", `${what}: ${JSON.stringify(r)}`);
      if (what !== "revision") assert.equal(r.kind === "fault" && r.fault.survivor, undefined, what);
    }
  });
});

describe("P12: what the anchor does not judge", () => {
  test("state written before the anchor existed (no anchor) is read as it is, and the next commit writes the anchor", async () => {
    const a = agent();
    mkdirSync(a.dir, { recursive: true });
    writeFileSync(join(a.dir, ARTIFACT_FILES.config), serializeConfig({ revision: 5, enabled: true, reviewer: REVIEWER }));
    for (const f of [ARTIFACT_FILES.primary, ARTIFACT_FILES.recovery]) writeFileSync(join(a.dir, f), serializeWatermark(5));
    const s = a.fresh();
    assert.equal((await s.read()).kind, "ok");
    assert.equal((await s.setEnabled(false)).kind, "committed");
    assert.equal(readFileSync(a.anchor, "utf8"), serializeAnchor(6, serializeConfig({ revision: 6, enabled: false, reviewer: REVIEWER })));
  });

  test("an anchor behind the config (a crash between the config and the anchor, or a commit by a copy of this extension older than the anchor) is a fault a repair fixes, keeping the settings", async () => {
    const a = agent();
    await savedOffState(a);
    writeFileSync(a.anchor, serializeAnchor(1, serializeConfig({ revision: 1, enabled: true, reviewer: WEAKER })));
    const r = await a.fresh().read();
    assert.equal(faultCode(r), "anchor-mismatch");
    assert.match(
      r.kind === "fault" ? r.fault.detail : "",
      /state\.json is revision 2 but auto-mode\.anchor records revision 1 \(a commit stopped before the anchor/,
    );
    assert.deepEqual(r.kind === "fault" && r.fault.survivor, { enabled: false, reviewer: WEAKER, revision: 2 });
    const fixed = await a.fresh().repair();
    assert.deepEqual(fixed.kind === "committed" && fixed.snapshot, { enabled: false, reviewer: WEAKER, revision: 3 });
  });

  test("a damaged anchor is a fault while there is state, repaired by the next explicit command; without state it is ignored, so deleting the folder always starts afresh", async () => {
    const a = agent();
    await savedOffState(a);
    const good = readFileSync(a.anchor, "utf8");
    for (const damaged of [
      "",
      "{",
      good.trim(),
      good.slice(0, -4) + '"}\n',
      serializeWatermark(2),
      '{"anchor":2}\n',
      good.replace('"anchor":2', '"anchor":-2'),
    ]) {
      writeFileSync(a.anchor, damaged);
      const r = await a.fresh().read();
      assert.equal(faultCode(r), "malformed-watermark", JSON.stringify(damaged));
      assert.match(r.kind === "fault" ? r.fault.detail : "", /auto-mode\.anchor \(beside the state folder\) is damaged/);
    }
    const fixed = await a.fresh().setEnabled(true);
    assert.equal(fixed.kind, "committed");
    assert.equal(readFileSync(a.anchor, "utf8"), serializeAnchor(3, serializeConfig({ revision: 3, enabled: true, reviewer: WEAKER })));

    writeFileSync(a.anchor, "{");
    rmSync(a.dir, { recursive: true });
    assert.equal((await a.fresh().read()).kind, "missing");
  });

  test("documented limit: the whole agent dir put back (folder and anchor together) reads as the older state in a fresh process", async () => {
    const a = agent();
    await savedOffState(a);
    const asideAgent = join(root, `aside-agent-${n++}`);
    mkdirSync(asideAgent);
    execFileSync("cp", ["-a", a.dir, a.anchor, asideAgent]);
    assert.equal((await a.fresh().setEnabled(true)).kind, "committed");
    rmSync(a.dir, { recursive: true });
    execFileSync("cp", ["-a", join(asideAgent, "auto-mode"), join(asideAgent, ANCHOR_FILE), a.agentDir]);
    const r = await a.fresh().read();
    assert.deepEqual(r, { kind: "ok", snapshot: { enabled: false, reviewer: WEAKER, revision: 2 } }, "nothing a fresh process can compare with");
  });

  test("documented limit: the folder put back and the anchor deleted reads as the older state in a fresh process; a running one still sees the rollback", async () => {
    const a = agent();
    const aside = await savedOffState(a);
    const running = a.fresh();
    assert.equal((await running.setEnabled(true)).kind, "committed");
    rmSync(a.dir, { recursive: true });
    execFileSync("cp", ["-a", aside, a.dir]);
    rmSync(a.anchor);
    assert.equal((await a.fresh().read()).kind, "ok");
    assert.equal(faultCode(await running.read()), "rolled-back", "this process saw revision 3");
  });
});
