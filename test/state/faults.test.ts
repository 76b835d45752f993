// P12: how stored global state is classified, and how a Fault is repaired. Missing only when all
// three artifacts are absent; every partial set, malformed or unequal watermark pair, watermark
// below the config revision, unknown schema, malformed (including truncated) config is a Fault;
// a repair writes above the greatest surviving valid watermark or config revision, and is refused
// when neither watermark is valid.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ARTIFACT_FILES, ARTIFACTS, classify, serializeConfig, serializeWatermark, type ArtifactName, type ArtifactRead } from "../../src/state/artifacts.ts";
import { createDurableGlobalState, type DurableGlobalState } from "../../src/state/durable-store.ts";
import { readEnabled, type FaultCode, type GlobalRead, type GlobalSnapshot } from "../../src/state/global.ts";

const root = mkdtempSync(join(tmpdir(), "pi-auto-mode-state-faults-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const REVIEWER = { provider: "anthropic", model: "claude-x", thinking: "high" } as const;
const config = (revision: number, enabled = false, reviewer: GlobalSnapshot["reviewer"] = REVIEWER) => serializeConfig({ revision, enabled, reviewer });
const mark = serializeWatermark;

/** A fresh agent dir whose state dir holds exactly `files` (null: absent). */
function place(files: Partial<Record<ArtifactName, string | null>>): { agentDir: string; dir: string; store: DurableGlobalState } {
  const agentDir = join(root, `agent-${n++}`);
  const dir = join(agentDir, "auto-mode");
  mkdirSync(dir, { recursive: true });
  for (const a of ARTIFACTS) {
    const text = files[a];
    if (typeof text === "string") writeFileSync(join(dir, ARTIFACT_FILES[a]), text);
  }
  return { agentDir, dir, store: createDurableGlobalState({ agentDir, lock: { staleMs: 2000, waitMs: 3000 } }) };
}

function healthy(revision: number, extra: Partial<Record<ArtifactName, string | null>> = {}) {
  return { config: config(revision), primary: mark(revision), recovery: mark(revision), ...extra };
}

async function faultOf(files: Partial<Record<ArtifactName, string | null>>): Promise<{ code: FaultCode; read: GlobalRead }> {
  const { store } = place(files);
  const read = await store.read();
  assert.equal(read.kind, "fault", `expected a fault for ${JSON.stringify(files)}, got ${JSON.stringify(read)}`);
  return { code: (read as Extract<GlobalRead, { kind: "fault" }>).fault.code, read };
}

function snapshotFiles(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .filter((f) => !f.endsWith(".lock"))
      .map((f) => [f, readFileSync(join(dir, f), "utf8")]),
  );
}

describe("P12: Missing is only the first run", () => {
  test("no state dir, or an empty one, reads as Missing with the defaults", async () => {
    const agentDir = join(root, `agent-${n++}`);
    const store = createDurableGlobalState({ agentDir });
    assert.deepEqual(await store.read(), { kind: "missing", snapshot: { enabled: true, reviewer: undefined, revision: 0 } });
    assert.equal((await place({}).store.read()).kind, "missing");
  });

  test("leftover temp files and a lock directory do not make a first run a fault", async () => {
    const { dir, store } = place({});
    writeFileSync(join(dir, ".state.json.123.abc.tmp"), "{");
    mkdirSync(join(dir, "state.lock"));
    assert.equal(store.check().kind, "missing");
  });

  test("a complete, consistent set is Ok; watermarks above the config (a commit that stopped before the config) are Ok", async () => {
    const ok = await place(healthy(4)).store.read();
    assert.deepEqual(ok, { kind: "ok", snapshot: { enabled: false, reviewer: REVIEWER, revision: 4 } });
    const ahead = await place({ config: config(4), primary: mark(5), recovery: mark(5) }).store.read();
    assert.equal(ahead.kind, "ok");
    assert.equal(ahead.kind === "ok" && ahead.snapshot.revision, 4);
  });
});

describe("P12: every Fault shape", () => {
  test("every partial set of the three artifacts", async () => {
    const all = healthy(3);
    for (let mask = 1; mask < 7; mask++) {
      const files = Object.fromEntries(ARTIFACTS.map((a, i) => [a, mask & (1 << i) ? all[a] : null]));
      assert.equal((await faultOf(files)).code, "partial", JSON.stringify(files));
    }
  });

  test("an artifact that cannot be read (a directory in its place, or no permission)", async () => {
    for (const a of ARTIFACTS) {
      const { dir, store } = place(healthy(3, { [a]: null }));
      mkdirSync(join(dir, ARTIFACT_FILES[a]));
      const r = await store.read();
      assert.equal(r.kind === "fault" && r.fault.code, "unreadable", a);
    }
    if (process.getuid?.() !== 0) {
      const { dir, store } = place(healthy(3));
      chmodSync(join(dir, ARTIFACT_FILES.config), 0o000);
      const r = await store.read();
      assert.equal(r.kind === "fault" && r.fault.code, "unreadable");
      chmodSync(join(dir, ARTIFACT_FILES.config), 0o600);
    }
  });

  test("a truncated watermark, at every length, is malformed (primary and recovery)", async () => {
    const full = mark(12);
    for (const which of ["primary", "recovery"] as const) {
      for (let len = 0; len < full.length; len++) {
        const { code } = await faultOf(healthy(12, { [which]: full.slice(0, len) }));
        assert.equal(code, "malformed-watermark", `${which} cut to ${len} bytes: ${JSON.stringify(full.slice(0, len))}`);
      }
    }
  });

  test("watermarks of the wrong form are malformed", async () => {
    const bad = [
      "12\n",
      '{"watermark":"12"}\n',
      '{"watermark":-1}\n',
      '{"watermark":1.5}\n',
      '{"watermark":12,"extra":1}\n',
      '{ "watermark": 12 }\n',
      '{"watermark":12}',
      '{"watermark":12}\n\n',
      '{"watermark":12}\ngarbage',
      '{"watermark":1e400}\n',
      `{"watermark":${2 ** 60}}\n`,
      "[12]\n",
      "null\n",
      `${" ".repeat(5000)}{"watermark":12}\n`,
      "\u0000\u0000\u0000",
    ];
    for (const text of bad) assert.equal((await faultOf(healthy(12, { primary: text }))).code, "malformed-watermark", JSON.stringify(text.slice(0, 40)));
  });

  test("a truncated config, at every length, is malformed", async () => {
    const full = config(7, true, REVIEWER);
    for (let len = 0; len < full.length; len++) {
      const { code } = await faultOf(healthy(7, { config: full.slice(0, len) }));
      assert.equal(code, "malformed-config", `config cut to ${len} bytes`);
    }
  });

  test("configs of the wrong shape are malformed", async () => {
    const base = { schema: 1, revision: 7, enabled: true, reviewer: REVIEWER };
    const shapes: unknown[] = [
      { ...base, enabled: "yes" },
      { ...base, revision: -1 },
      { ...base, revision: 7.5 },
      { ...base, revision: "7" },
      { ...base, reviewer: { provider: "a", model: "b" } },
      { ...base, reviewer: { ...REVIEWER, thinking: "ultra" } },
      { ...base, reviewer: { ...REVIEWER, provider: "" } },
      { ...base, reviewer: { ...REVIEWER, extra: 1 } },
      { ...base, reviewer: "anthropic/claude-x" },
      { ...base, extra: true },
      { revision: 7, enabled: true, reviewer: null },
      { schema: null, revision: 7, enabled: true, reviewer: null },
      [base],
      null,
      "state",
    ];
    for (const shape of shapes)
      assert.equal((await faultOf(healthy(7, { config: `${JSON.stringify(shape)}\n` }))).code, "malformed-config", JSON.stringify(shape));
    // Valid JSON with the right values but not the bytes this extension writes.
    assert.equal((await faultOf(healthy(7, { config: JSON.stringify(base, null, 2) }))).code, "malformed-config");
    const reordered = `${JSON.stringify({ revision: 7, schema: 1, enabled: true, reviewer: REVIEWER })}\n`;
    assert.equal((await faultOf(healthy(7, { config: reordered }))).code, "malformed-config");
  });

  test("an unknown schema version is a fault of its own", async () => {
    for (const schema of [2, 0, "1", 99]) {
      const text = `${JSON.stringify({ schema, revision: 7, enabled: true, reviewer: null })}\n`;
      assert.equal((await faultOf(healthy(7, { config: text }))).code, "unknown-schema", String(schema));
    }
  });

  test("unequal watermarks, in either direction", async () => {
    assert.equal((await faultOf({ config: config(3), primary: mark(3), recovery: mark(4) })).code, "unequal-watermarks");
    assert.equal((await faultOf({ config: config(3), primary: mark(4), recovery: mark(3) })).code, "unequal-watermarks");
  });

  test("watermarks below the config revision", async () => {
    assert.equal((await faultOf({ config: config(5), primary: mark(4), recovery: mark(4) })).code, "watermark-below-config");
  });

  test("state rolled back below what this process saw, or deleted, is a fault", async () => {
    const { dir, store } = place(healthy(9));
    assert.equal((await store.read()).kind, "ok");
    for (const a of ARTIFACTS) writeFileSync(join(dir, ARTIFACT_FILES[a]), a === "config" ? config(4) : mark(4));
    const back = await store.read();
    assert.equal(back.kind === "fault" && back.fault.code, "rolled-back");
    for (const a of ARTIFACTS) rmSync(join(dir, ARTIFACT_FILES[a]));
    const gone = await store.read();
    assert.equal(gone.kind === "fault" && gone.fault.code, "rolled-back");
    assert.equal(gone.kind === "fault" && gone.fault.floor, undefined, "no watermark survived: no safe floor");
  });

  test("a fault never reads as off, whatever the surviving config says", async () => {
    const { read } = await faultOf({ config: config(3, false), primary: mark(3), recovery: mark(4) });
    assert.equal(readEnabled(read), true);
  });

  test("classification is pure: the same reads always give the same answer", () => {
    const t = (text: string): ArtifactRead => ({ kind: "text", text });
    const reads = { config: t(config(2)), primary: t(mark(2)), recovery: t(mark(3)) };
    assert.deepEqual(classify(reads), classify(reads));
    assert.equal(classify({ config: { kind: "absent" }, primary: { kind: "absent" }, recovery: { kind: "absent" } }).kind, "missing");
  });
});

describe("P12: repair writes above every surviving revision, or refuses", () => {
  const cases: Array<{ name: string; files: Partial<Record<ArtifactName, string | null>>; floor: number; keeps: boolean }> = [
    { name: "unequal watermarks, recovery ahead", files: { config: config(3), primary: mark(3), recovery: mark(8) }, floor: 8, keeps: true },
    { name: "unequal watermarks, primary ahead", files: { config: config(3), primary: mark(8), recovery: mark(3) }, floor: 8, keeps: true },
    { name: "config above the watermarks", files: { config: config(9), primary: mark(4), recovery: mark(4) }, floor: 9, keeps: true },
    { name: "one watermark damaged", files: { config: config(5), primary: "{", recovery: mark(6) }, floor: 6, keeps: true },
    { name: "config damaged", files: { config: "{", primary: mark(6), recovery: mark(6) }, floor: 6, keeps: false },
    { name: "config damaged and one watermark damaged", files: { config: "{", primary: mark(6), recovery: "" }, floor: 6, keeps: false },
    { name: "config missing", files: { config: null, primary: mark(6), recovery: mark(6) }, floor: 6, keeps: false },
    {
      name: "unknown schema",
      files: { config: `${JSON.stringify({ schema: 2, revision: 20, enabled: false, reviewer: null })}\n`, primary: mark(6), recovery: mark(6) },
      floor: 6,
      keeps: false,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: /perm-repair writes revision ${c.floor + 1}`, async () => {
      const { store, dir } = place(c.files);
      assert.equal((await store.read()).kind, "fault");
      const res = await store.repair();
      assert.equal(res.kind, "committed");
      if (res.kind !== "committed") return;
      assert.equal(res.snapshot.revision, c.floor + 1);
      assert.ok(res.repaired, "the result names the fault it repaired");
      // The surviving config keeps what the user chose; without one the defaults apply.
      assert.deepEqual(
        { enabled: res.snapshot.enabled, reviewer: res.snapshot.reviewer },
        c.keeps ? { enabled: false, reviewer: REVIEWER } : { enabled: true, reviewer: undefined },
      );
      assert.deepEqual(await store.read(), { kind: "ok", snapshot: res.snapshot });
      assert.deepEqual(snapshotFiles(dir), {
        "state.json": serializeConfig(res.snapshot),
        "revision.json": mark(c.floor + 1),
        "revision.recovery.json": mark(c.floor + 1),
      });
    });
  }

  test("/perm-enabled repairs too, and what it sets wins", async () => {
    const { store } = place({ config: config(3, true), primary: mark(3), recovery: mark(5) });
    const res = await store.setEnabled(false);
    assert.equal(res.kind === "committed" && res.snapshot.revision, 6);
    assert.equal(res.kind === "committed" && res.snapshot.enabled, false);
    assert.equal(res.kind === "committed" && res.snapshot.reviewer?.model, "claude-x");
  });

  test("a commit that may not repair leaves a Fault untouched", async () => {
    const files = { config: config(3), primary: mark(3), recovery: mark(5) };
    const { store, dir } = place(files);
    const before = snapshotFiles(dir);
    const res = await store.commit({ enabled: true }, "refuse-fault");
    assert.equal(res.kind, "refused");
    assert.equal(res.kind === "refused" && res.unrepairable, false);
    assert.deepEqual(snapshotFiles(dir), before);
  });

  const unrepairable: Array<[string, Partial<Record<ArtifactName, string | null>>]> = [
    ["both watermarks damaged", { config: config(3), primary: "{", recovery: '{"watermark":' }],
    ["both watermarks missing", { config: config(3), primary: null, recovery: null }],
    ["one watermark missing, the other damaged", { config: config(3), primary: null, recovery: "x" }],
  ];
  for (const [name, files] of unrepairable) {
    test(`${name}: repair is refused and nothing is written`, async () => {
      const { store, dir } = place(files);
      const before = snapshotFiles(dir);
      for (const res of [await store.repair(), await store.setEnabled(false), await store.setReviewer(undefined)]) {
        assert.equal(res.kind, "refused");
        assert.equal(res.kind === "refused" && res.unrepairable, true);
      }
      assert.deepEqual(snapshotFiles(dir), before);
      assert.equal((await store.read()).kind, "fault");
    });
  }

  test("repair on healthy state writes nothing", async () => {
    const { store, dir } = place(healthy(4));
    const before = snapshotFiles(dir);
    const res = await store.repair();
    assert.equal(res.kind, "unchanged");
    assert.deepEqual(snapshotFiles(dir), before);
  });

  test("repeated damage and repair: revisions only grow, and stay above what this process saw", async () => {
    const { store, dir } = place(healthy(2));
    const seen: number[] = [2];
    const damage = [
      () => writeFileSync(join(dir, ARTIFACT_FILES.recovery), mark(seen.at(-1)! + 10)),
      () => writeFileSync(join(dir, ARTIFACT_FILES.config), '{"schema":1,'),
      () => writeFileSync(join(dir, ARTIFACT_FILES.primary), ""),
      () => rmSync(join(dir, ARTIFACT_FILES.config)),
      () => writeFileSync(join(dir, ARTIFACT_FILES.config), config(seen.at(-1)! + 3)),
    ];
    for (let round = 0; round < 3; round++) {
      for (const d of damage) {
        d();
        const r = await store.read();
        assert.equal(r.kind, "fault");
        const res = await store.repair();
        assert.equal(res.kind, "committed");
        const rev = res.kind === "committed" ? res.snapshot.revision : -1;
        assert.ok(rev > Math.max(...seen), `repair revision ${rev} above ${Math.max(...seen)}`);
        seen.push(rev, r.kind === "fault" ? (r.fault.floor ?? 0) : 0);
        const ok = await store.setReviewer(undefined);
        assert.equal(ok.kind === "committed" && ok.snapshot.revision, rev + 1);
        seen.push(rev + 1);
      }
    }
    // A fresh store (another process) starts from the stored watermark, not from zero.
    const other = createDurableGlobalState({ agentDir: join(dir, "..") });
    const next = await other.setEnabled(true);
    assert.equal(next.kind === "committed" && next.snapshot.revision, Math.max(...seen) + 1);
  });

  test("rolled-back state is repaired above what this process saw, not only above what survived", async () => {
    const { store, dir } = place(healthy(9));
    await store.read();
    for (const a of ARTIFACTS) writeFileSync(join(dir, ARTIFACT_FILES[a]), a === "config" ? config(4) : mark(4));
    const res = await store.repair();
    assert.equal(res.kind === "committed" && res.snapshot.revision, 10);
  });
});
