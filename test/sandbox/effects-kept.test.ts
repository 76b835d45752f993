// Held effects kept for the user's approval (src/sandbox/effects/kept.ts): applied once, as they
// were kept, only if nothing they touch changed meanwhile (then nothing at all is applied), never
// after the keep time, a few at most; the run's folders go when they are used or dropped.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { identityAt } from "../../src/sandbox/effects/identity.ts";
import type { ApplyOp } from "../../src/sandbox/effects/judge.ts";
import { KEEP_MS, KEPT_AT_MOST, keepHeld } from "../../src/sandbox/effects/kept.ts";
import { effectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../../src/sandbox/effects/undo.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-kept-")));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A workspace with two files and a "run" whose upper layer rewrites both. */
function world(now?: () => number) {
  const dir = join(root, `w${++n}`);
  const ws = join(dir, "ws");
  const run = join(dir, "run");
  const upper = join(run, "upper");
  mkdirSync(ws, { recursive: true });
  mkdirSync(upper, { recursive: true });
  writeFileSync(join(ws, "a.txt"), "old a\n");
  writeFileSync(join(ws, "b.txt"), "old b\n");
  writeFileSync(join(upper, "a.txt"), "new a\n");
  writeFileSync(join(upper, "b.txt"), "new b\n");
  const put = (name: string): ApplyOp => ({
    kind: "put",
    target: join(ws, name),
    source: join(upper, name),
    type: "file",
    before: identityAt(join(ws, name)),
    keep: true,
    stripSetid: false,
  });
  const discarded: string[] = [];
  const kept = keepHeld(
    {
      run: { dir: run },
      command: "rewrite both",
      summary: "rewrites a.txt and b.txt",
      ops: [put("a.txt"), put("b.txt")],
      lostBytes: 0,
      store: effectStore(join(dir, "agent")),
      workspace: ws,
      bounds: DEFAULT_UNDO_BOUNDS,
      ...(now ? { now } : {}),
    },
    (r) => {
      discarded.push(r.dir);
      rmSync(r.dir, { recursive: true, force: true });
    },
  );
  return { ws, run, kept, discarded };
}

describe("held effects kept for approval", () => {
  test("applied once, exactly as kept, and the run's folders go", async () => {
    const w = world();
    const r = await w.kept.apply();
    assert.deepEqual(r, { kind: "applied", applied: 2, undoId: r.kind === "applied" ? r.undoId : undefined });
    assert.equal(readFileSync(join(w.ws, "a.txt"), "utf8"), "new a\n");
    assert.equal(readFileSync(join(w.ws, "b.txt"), "utf8"), "new b\n");
    assert.equal(existsSync(w.run), false);
    assert.equal((await w.kept.apply()).kind, "refused", "once");
  });

  test("a file changed since the command ran: nothing at all is applied", async () => {
    const w = world();
    writeFileSync(join(w.ws, "b.txt"), "the user's edit\n");
    const r = await w.kept.apply();
    assert.equal(r.kind, "refused");
    assert.match(r.kind === "refused" ? r.why : "", /changed since the command ran.*b\.txt/);
    assert.equal(readFileSync(join(w.ws, "a.txt"), "utf8"), "old a\n", "all or nothing: a.txt is untouched too");
    assert.equal(readFileSync(join(w.ws, "b.txt"), "utf8"), "the user's edit\n");
    assert.equal(existsSync(w.run), false);
  });

  test("after the keep time, nothing is applied", async () => {
    let t = 1_000;
    const w = world(() => t);
    t += KEEP_MS + 1;
    assert.equal((await w.kept.apply()).kind, "refused");
    assert.equal(readFileSync(join(w.ws, "a.txt"), "utf8"), "old a\n");
  });

  test(`at most ${KEPT_AT_MOST} are kept: the oldest go first`, () => {
    const ws = Array.from({ length: KEPT_AT_MOST + 1 }, () => world());
    assert.deepEqual(
      ws.map((w) => w.discarded.length),
      [1, ...Array.from({ length: KEPT_AT_MOST }, () => 0)],
    );
    for (const w of ws) w.kept.discard();
    assert.ok(
      ws.every((w) => !existsSync(w.run)),
      "discarding removes each run's folders",
    );
  });
});
