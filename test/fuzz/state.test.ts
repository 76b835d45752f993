// Property tests of durable global state (P12): whatever happens to auto mode's four files (the
// config, both watermarks, the anchor beside the folder) - truncated anywhere, a bit flipped
// anywhere, an older copy put back, deleted, or replaced by a FIFO, socket, directory, symlink or
// device - reading them never yields a state the user did not choose: a read is a fault (which
// counts as on) or exactly the true state, and a repair by a command that does not set the flag
// never keeps a config the anchor disowns, so it cannot turn auto mode off. A read of a non-regular
// file runs in a child with a deadline, so a hang fails the test instead of hanging it.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import {
  ARTIFACT_FILES,
  classify,
  serializeAnchor,
  serializeConfig,
  serializeWatermark,
  type ArtifactName,
  type ArtifactRead,
  type Classification,
} from "../../src/state/artifacts.ts";
import { createDurableGlobalState } from "../../src/state/durable-store.ts";
import { readEnabled, type GlobalRead, type GlobalSnapshot, type ReviewerChoice, type StateFault } from "../../src/state/global.ts";
import { ANCHOR_FILE, STATE_DIR_NAME } from "../../src/state/locations.ts";
import { checkProperty, fuzzRuns } from "../helpers/fuzz.ts";
import { KINDS, plant, stateProbe, type Kind } from "../helpers/state-hostile.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-fuzz-state-")));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

type File = ArtifactName | "anchor";
const FILES: readonly File[] = ["config", "primary", "recovery", "anchor"];

const REVIEWERS: readonly ReviewerChoice[] = [
  { provider: "anthropic", model: "claude-x", thinking: "high" },
  { provider: "openai", model: "gpt-5", thinking: "medium" },
  { provider: "cheap", model: "tiny", thinking: "off" },
];

const snapshot = (revision: fc.Arbitrary<number>): fc.Arbitrary<GlobalSnapshot> =>
  fc
    .record({ enabled: fc.boolean(), reviewer: fc.option(fc.constantFrom(...REVIEWERS), { nil: undefined }), revision })
    .map((s) => ({ enabled: s.enabled, reviewer: s.reviewer, revision: s.revision }));

/** The four files of a healthy state, as a commit leaves them. */
function texts(s: GlobalSnapshot): Record<File, string> {
  const config = serializeConfig(s);
  return { config, primary: serializeWatermark(s.revision), recovery: serializeWatermark(s.revision), anchor: serializeAnchor(s.revision, config) };
}

/**
 * One thing that happens to one file. An older copy is put back for the three files in the state
 * folder only, and the anchor is never deleted: rewinding or deleting the anchor too is the
 * documented limit of what a fresh process can see (src/state/artifacts.ts).
 */
type Damage =
  | { readonly file: File; readonly how: "truncate"; readonly at: number }
  | { readonly file: File; readonly how: "flip"; readonly at: number; readonly bit: number }
  | { readonly file: ArtifactName; readonly how: "old"; readonly from: GlobalSnapshot }
  | { readonly file: ArtifactName; readonly how: "delete" };

const damage = (truth: GlobalSnapshot): fc.Arbitrary<Damage> =>
  fc.oneof(
    fc.record({ file: fc.constantFrom(...FILES), how: fc.constant("truncate" as const), at: fc.nat() }),
    fc.record({ file: fc.constantFrom(...FILES), how: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
    fc.record({
      file: fc.constantFrom<ArtifactName>("config", "primary", "recovery"),
      how: fc.constant("old" as const),
      from: snapshot(fc.integer({ min: 0, max: truth.revision - 1 })),
    }),
    fc.record({ file: fc.constantFrom<ArtifactName>("config", "primary", "recovery"), how: fc.constant("delete" as const) }),
  );

const truthAndDamage = snapshot(fc.integer({ min: 1, max: 130 })).chain((truth) =>
  fc.tuple(fc.constant(truth), fc.array(damage(truth), { minLength: 1, maxLength: 3 })),
);

/** The files after the damage (null: deleted). */
function damaged(truth: GlobalSnapshot, damages: readonly Damage[]): Record<File, Buffer | null> {
  const out: Record<File, Buffer | null> = Object.fromEntries(Object.entries(texts(truth)).map(([f, t]) => [f, Buffer.from(t)])) as Record<File, Buffer>;
  for (const d of damages) {
    const b = out[d.file];
    if (d.how === "old") out[d.file] = Buffer.from(texts(d.from)[d.file]);
    else if (d.how === "delete") out[d.file] = null;
    else if (b === null) continue;
    else if (d.how === "truncate") out[d.file] = b.subarray(0, d.at % (b.length + 1));
    else {
      if (b.length === 0) continue;
      const c = Buffer.from(b);
      const i = d.at % c.length;
      c[i] = c[i]! ^ (1 << d.bit);
      out[d.file] = c;
    }
  }
  return out;
}

const same = (a: GlobalSnapshot | undefined, b: GlobalSnapshot) =>
  a !== undefined && a.enabled === b.enabled && JSON.stringify(a.reviewer ?? null) === JSON.stringify(b.reviewer ?? null);

/**
 * What a read of the damaged files may say: a fault, or the true state exactly (nothing else can
 * be rebuilt from what is left). A fault's survivor, which a repair keeps, is the true settings,
 * or a config ahead of the true revision (a config ahead of the anchor keeps its settings by
 * design, artifacts.ts), or comes with a damaged anchor, which vouches for nothing (as a missing
 * one: the documented limit).
 */
function assertNotPermissive(read: GlobalRead | Classification, truth: GlobalSnapshot, files: Record<File, Buffer | null>, what: string): void {
  const anchorIntact = files.anchor !== null && files.anchor.toString("utf8") === texts(truth).anchor;
  const unchanged = FILES.every((f) => files[f] !== null && files[f]!.toString("utf8") === texts(truth)[f]);
  if (read.kind === "missing") assert.fail(`${what}: read as the first run`);
  if (read.kind === "ok") {
    assert.deepEqual(read.snapshot, truth, `${what}: read as a state the user did not choose`);
    return;
  }
  assert.ok(!unchanged, `${what}: intact files read as a fault`);
  const survivor = read.fault.survivor;
  if (survivor === undefined || same(survivor, truth) || survivor.revision > truth.revision || !anchorIntact) return;
  assert.fail(
    `${what}: a repair would keep ${JSON.stringify(survivor)} (the user chose ${JSON.stringify(truth)}); fault ${read.fault.code}: ${read.fault.detail}`,
  );
}

function show(files: Record<File, Buffer | null>): string {
  return JSON.stringify(Object.fromEntries(FILES.map((f) => [f, files[f] === null ? null : files[f]!.toString("utf8")])));
}

function agentWith(files: Record<File, Buffer | null>): string {
  const agentDir = join(root, `agent-${n++}`);
  const dir = join(agentDir, STATE_DIR_NAME);
  mkdirSync(dir, { recursive: true });
  for (const f of FILES) {
    const b = files[f];
    if (b !== null) writeFileSync(f === "anchor" ? join(agentDir, ANCHOR_FILE) : join(dir, ARTIFACT_FILES[f]), b);
  }
  return agentDir;
}

const LOCK = { staleMs: 2000, waitMs: 3000 };
const OTHER: ReviewerChoice = { provider: "p", model: "m", thinking: "low" };

describe("P12: damaged state never reads as a state the user did not choose", () => {
  test("classification of truncated, bit-flipped, older, deleted files", async (t) => {
    await checkProperty(
      t,
      fc.property(truthAndDamage, ([truth, damages]) => {
        const files = damaged(truth, damages);
        const read = (f: File): ArtifactRead => (files[f] === null ? { kind: "absent" } : { kind: "text", text: files[f]!.toString("utf8") });
        const c = classify({ config: read("config"), primary: read("primary"), recovery: read("recovery") }, 0, read("anchor"));
        assertNotPermissive(c, truth, files, show(files));
      }),
      { runs: fuzzRuns(20000) },
    );
  });

  test("the store's read, its synchronous check, and a repair by /perm-auto-model (which does not set the flag)", async (t) => {
    await checkProperty(
      t,
      fc.asyncProperty(truthAndDamage, async ([truth, damages]) => {
        const files = damaged(truth, damages);
        const what = show(files);
        const agentDir = agentWith(files);
        try {
          const store = createDurableGlobalState({ agentDir, lock: LOCK });
          const read = await store.read();
          assertNotPermissive(read, truth, files, what);
          assertNotPermissive(createDurableGlobalState({ agentDir, lock: LOCK }).check(), truth, files, `check ${what}`);
          if (truth.enabled) assert.equal(readEnabled(read), true, `${what}: read as off`);
          if (read.kind !== "fault") return;
          const fixed = await store.setReviewer(OTHER);
          if (fixed.kind !== "committed") return;
          // A damaged anchor vouches for nothing, like a missing one (the documented limit; see
          // assertNotPermissive): with it, the repair keeps whatever config is left.
          const anchorIntact = files.anchor !== null && files.anchor.toString("utf8") === texts(truth).anchor;
          if (truth.enabled && anchorIntact)
            assert.equal(fixed.snapshot.enabled, true, `${what}: the repair turned auto mode off (${read.fault.code}: ${read.fault.detail})`);
          assert.deepEqual(
            await createDurableGlobalState({ agentDir, lock: LOCK }).read(),
            { kind: "ok", snapshot: fixed.snapshot },
            `${what}: the repair reads back`,
          );
        } finally {
          rmSync(agentDir, { recursive: true, force: true });
        }
      }),
      { runs: fuzzRuns(400, 0.05) },
    );
  });
});

describe("P12: a state file that is not a regular file is a fault, never a hang", () => {
  const probe = stateProbe(join(root, "js"));
  const nonRegular = fc.tuple(
    snapshot(fc.integer({ min: 1, max: 130 })),
    fc.uniqueArray(fc.record({ file: fc.constantFrom(...FILES), kind: fc.constantFrom(...KINDS) }), { minLength: 1, maxLength: 2, selector: (x) => x.file }),
    fc.option(fc.record({ file: fc.constantFrom(...FILES), at: fc.nat() }), { nil: undefined }),
    fc.constantFrom("read", "check"),
  );
  test("FIFOs, sockets, directories, symlinks (dangling, to a FIFO) and devices in any file's place, with other damage, read in a child", async (t) => {
    await checkProperty(
      t,
      fc.asyncProperty(nonRegular, async ([truth, planted, cut, op]) => {
        const files: Record<File, Buffer | null> = Object.fromEntries(Object.entries(texts(truth)).map(([f, x]) => [f, Buffer.from(x)])) as Record<
          File,
          Buffer
        >;
        if (cut && files[cut.file]) files[cut.file] = files[cut.file]!.subarray(0, cut.at % (files[cut.file]!.length + 1));
        const agentDir = agentWith(files);
        try {
          for (const p of planted) {
            const path = p.file === "anchor" ? join(agentDir, ANCHOR_FILE) : join(agentDir, STATE_DIR_NAME, ARTIFACT_FILES[p.file]);
            await plant(path, p.kind as Kind, files[p.file]!.toString("utf8"));
          }
          const what = `${op} with ${planted.map((p) => `${p.file} a ${p.kind}`).join(", ")}${cut ? `, ${cut.file} cut at ${cut.at}` : ""}`;
          // The probe asserts it finished within its deadline (helpers/state-hostile.ts).
          const r = (await probe(op, agentDir)) as { kind: string; snapshot?: GlobalSnapshot; fault?: StateFault };
          // A symlink to a faithful copy is still not the file: only a fault is right.
          assert.equal(r.kind, "fault", `${what}: ${JSON.stringify(r)}`);
          assert.ok(
            r.fault && ["unreadable", "partial", "malformed-watermark", "malformed-config", "anchor-mismatch", "rolled-back"].includes(r.fault.code),
            `${what}: ${JSON.stringify(r)}`,
          );
        } finally {
          rmSync(agentDir, { recursive: true, force: true });
        }
      }),
      { runs: fuzzRuns(40, 0.01), shrink: false },
    );
  });
});

describe("P12: state counterexamples found by the properties", () => {
  // Found by the classification property: an older state.json put back alone (watermarks and
  // anchor newer) was a fault whose survivor was the old copy, so the next /perm-auto-model,
  // which repairs a fault, restored the old copy's settings: auto mode off.
  test("an older state.json saying off, put back alone: the next /perm-auto-model keeps auto mode on", async () => {
    const on: GlobalSnapshot = { enabled: true, reviewer: REVIEWERS[0], revision: 8 };
    const files: Record<File, Buffer | null> = Object.fromEntries(Object.entries(texts(on)).map(([f, x]) => [f, Buffer.from(x)])) as Record<File, Buffer>;
    files.config = Buffer.from(serializeConfig({ enabled: false, reviewer: undefined, revision: 0 }));
    const store = createDurableGlobalState({ agentDir: agentWith(files), lock: LOCK });
    const read = await store.read();
    assert.equal(read.kind === "fault" && read.fault.code, "anchor-mismatch");
    assert.equal(read.kind === "fault" && read.fault.survivor, undefined);
    const fixed = await store.setReviewer(OTHER);
    assert.deepEqual(fixed.kind === "committed" && fixed.snapshot, { enabled: true, reviewer: OTHER, revision: 9 });
  });

  test("a config at the anchor's revision with other bytes keeps no settings, whatever else is at fault", () => {
    const on: GlobalSnapshot = { enabled: true, reviewer: REVIEWERS[0], revision: 5 };
    const t = texts(on);
    const changed = t.config.replace('"claude-x"', '"claude-y"');
    const c = classify({ config: { kind: "text", text: changed }, primary: { kind: "text", text: "{" }, recovery: { kind: "text", text: t.recovery } }, 0, {
      kind: "text",
      text: t.anchor,
    });
    assert.equal(c.kind === "fault" && c.fault.code, "malformed-watermark");
    assert.equal(c.kind === "fault" && c.fault.survivor, undefined);
  });
});
