// The (route, reason) of every corpus line in the repository and of 2,000 generated commands, under
// every backend, against a snapshot kept in test/fixtures/route-snapshot.txt. Moving code must not
// move a decision: a refactor reproduces the snapshot exactly. A change of policy changes it on
// purpose, in a commit of its own that says why, regenerated with
//   PI_AUTO_MODE_UPDATE_SNAPSHOT=1 node --test test/policy/route-snapshot.test.ts

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { parseCorpus, substitute } from "../../src/eval/corpus.ts";
import { generator } from "../../src/eval/generate.ts";
import { decideLikeTheExtension, evalSetup } from "../../src/eval/score.ts";
import { buildEvalWorkspace, type EvalWorkspace } from "../../src/eval/workspace.ts";
import type { Backend } from "../../src/policy/types.ts";

const SNAPSHOT = fileURLToPath(new URL("../fixtures/route-snapshot.txt", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));
const BACKENDS: readonly Backend[] = ["sandboxed", "sandboxed-unstaged", "review-only", "unavailable"];
const GENERATED = 2000;

let w: EvalWorkspace;
before(() => {
  w = buildEvalWorkspace();
});
after(() => w.dispose());

function lines(): string[] {
  // The step bound decides, not the clock: a reading cut short by the 20 ms deadline depends on
  // the machine's load (two busy CPUs made one corpus line flip), and the snapshot must not.
  const setup = { ...evalSetup(w), analysisBudget: { deadlineMs: 60_000 } };
  const vars = { ws: w.ws, home: w.home, tmp: w.tmp };
  const calls: { key: string; tool: string; input: unknown }[] = [];
  for (const file of readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()) {
    for (const c of parseCorpus(readFileSync(`${FIXTURES}${file}`, "utf8"), file))
      calls.push({ key: `${file.replace(/\.jsonl$/, "")}:${c.id}`, tool: c.tool, input: substitute(c.input, vars) });
  }
  const next = generator(20240601);
  for (let i = 0; i < GENERATED; i++) {
    const command = next();
    // The command's digest, so a change of the generator reads as that and not as a policy change.
    calls.push({ key: `generated:${i}:${createHash("sha256").update(command).digest("hex").slice(0, 8)}`, tool: "bash", input: { command } });
  }
  const decided = (c: (typeof calls)[number], b: Backend) => {
    const d = decideLikeTheExtension(c.tool, c.input, setup, b).decision;
    return `${d.route}/${d.reason}`;
  };
  return calls.map((c) => `${c.key} ${BACKENDS.map((b) => decided(c, b)).join(" ")}`);
}

test(`every corpus line and ${GENERATED} generated commands route as the snapshot says, under ${BACKENDS.join(", ")}`, (t) => {
  const now = lines();
  if (process.env.PI_AUTO_MODE_UPDATE_SNAPSHOT === "1") {
    writeFileSync(SNAPSHOT, `# key ${BACKENDS.join(" ")}\n${now.join("\n")}\n`);
    t.diagnostic(`wrote ${now.length} lines to ${SNAPSHOT}`);
    return;
  }
  const kept = readFileSync(SNAPSHOT, "utf8")
    .split("\n")
    .filter((l) => l && !l.startsWith("#"));
  const was = new Map(kept.map((l) => [l.slice(0, l.indexOf(" ")), l]));
  const is = new Map(now.map((l) => [l.slice(0, l.indexOf(" ")), l]));
  const changed = now
    .filter((l) => was.get(l.slice(0, l.indexOf(" "))) !== l)
    .map((l) => `now ${l}\n was ${was.get(l.slice(0, l.indexOf(" "))) ?? "(no such line)"}`);
  const gone = kept.filter((l) => !is.has(l.slice(0, l.indexOf(" "))));
  t.diagnostic(`${now.length} calls x ${BACKENDS.length} backends compared`);
  assert.deepEqual(
    { changed: changed.slice(0, 20), changedCount: changed.length, gone: gone.slice(0, 20) },
    { changed: [], changedCount: 0, gone: [] },
    "a decision moved: if on purpose, regenerate the snapshot (see the header) in a commit of its own that says why",
  );
});
