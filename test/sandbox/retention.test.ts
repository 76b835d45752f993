// The order-sensitive measure of what a rewrite keeps (retention.ts): checked against the exact
// word-level subsequence on inputs small enough to solve by the table, and by what ordinary edits
// and destructive rewrites keep.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import fc from "fast-check";
import { lostBytes, retention } from "../../src/sandbox/effects/retention.ts";
import { FUZZ_SEED, fuzzRuns } from "../helpers/fuzz.ts";

const B = (s: string) => Buffer.from(s);
const wordsOf = (s: string) => s.match(/[\p{L}\p{N}_]+/gu) ?? [];

/** The weighted longest common subsequence by the full table: the measure's definition. */
function reference(a: string, b: string): number {
  const x = wordsOf(a);
  const y = wordsOf(b);
  const t = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = 1; i <= x.length; i++)
    for (let j = 1; j <= y.length; j++)
      t[i]![j] = Math.max(t[i - 1]![j]!, t[i]![j - 1]!, x[i - 1] === y[j - 1] ? t[i - 1]![j - 1]! + Buffer.byteLength(x[i - 1]!) : 0);
  return t[x.length]![y.length]!;
}

const word = fc.constantFrom("a", "b", "cc", "ddd", "the", "x1", "héllo", "_z");
const text = fc.array(word, { maxLength: 60 }).map((w) => w.join(" "));

test("what it keeps is the exact subsequence on small inputs", () => {
  fc.assert(
    fc.property(text, text, (a, b) => {
      assert.equal(retention(B(a), B(b)).kept, reference(a, b));
    }),
    { seed: FUZZ_SEED, numRuns: fuzzRuns(300) },
  );
});

test("on large inputs it never reports more kept than the exact subsequence", () => {
  // Large enough that the table is not used whole: prefix, suffix and anchors do the work.
  const many = fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 600, maxLength: 900 }).map((ns) => ns.map((n) => `w${n}`).join(" "));
  fc.assert(
    fc.property(many, many, (a, b) => {
      const r = retention(B(a), B(b));
      assert.ok(r.kept <= reference(a, b), `kept ${r.kept} > ${reference(a, b)}`);
      assert.ok(r.kept >= 0 && r.kept <= r.total);
    }),
    { seed: FUZZ_SEED, numRuns: fuzzRuns(8, 0.01) },
  );
});

const prose = Array.from({ length: 4000 }, (_, i) => ["the", "work", `item${i}`, "of", "a", "user", `note${i % 97}`][i % 7]).join(" ");

test("ordinary edits keep almost everything", () => {
  const cases: [string, string][] = [
    ["a one-word sed edit", prose.replace("item700", "changed700")],
    [
      "reindenting and requoting",
      prose
        .split(" ")
        .map((w) => `  "${w}",`)
        .join("\n"),
    ],
    ["a paragraph appended", `${prose}\nmore text at the end`],
    ["a line inserted in the middle", `${prose.slice(0, 9000)} inserted words here ${prose.slice(9000)}`],
  ];
  for (const [what, after] of cases) {
    const r = retention(B(prose), B(after));
    assert.ok(r.kept / r.total > 0.99, `${what}: kept ${((r.kept / r.total) * 100).toFixed(1)} %`);
  }
});

test("a permutation keeps almost nothing, though every word is still there", () => {
  const ws = prose.split(" ");
  let seed = 7;
  const shuffled = [...ws].sort(() => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 < 0.5 ? -1 : 1));
  for (const [what, after] of [
    ["sorted words", [...ws].sort().join("\n")],
    ["reversed", [...ws].reverse().join(" ")],
    ["shuffled", shuffled.join(" ")],
  ] as const) {
    const r = retention(B(prose), B(after));
    // Five of its seven words repeat all through it, so the longest chain keeps more than a real text would.
    assert.ok(r.kept / r.total < 0.25, `${what}: kept ${((r.kept / r.total) * 100).toFixed(1)} %`);
  }
  const source = readFileSync(fileURLToPath(import.meta.url));
  for (const [what, after] of [
    ["this file's lines sorted", source.toString().split("\n").sort().join("\n")],
    ["this file's words sorted", wordsOf(source.toString()).sort().join("\n")],
  ] as const) {
    const r = retention(source, B(after));
    assert.ok(r.kept / r.total < 0.3, `${what}: kept ${((r.kept / r.total) * 100).toFixed(1)} %`);
  }
});

test("emptying loses everything, also of a file with no words", () => {
  assert.equal(lostBytes(B(prose), B("")), retention(B(prose), B("")).total);
  assert.equal(lostBytes(B("{}\n...\n"), B("")), 7);
  assert.equal(lostBytes(B(prose), B(prose)), 0);
});

test("binary content keeps the blocks still in place", () => {
  const a = Buffer.alloc(5 * 4096, 1);
  a[0] = 0;
  const b = Buffer.from(a);
  b[4096 * 2 + 5] = 9;
  assert.deepEqual(retention(a, b), { total: a.length, kept: 4 * 4096 });
});
