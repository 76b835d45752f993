// The promise manifest (test/promises.json) maps every promise of docs/architecture.md to test files and
// test-name fragments. Deleting the evidence for a promise fails here.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const designPath = join(root, "docs", "architecture.md");

interface Evidence {
  readonly file: string;
  readonly names: readonly string[];
}
type Entry = { readonly tests: readonly Evidence[] } | { readonly pending: string };

const manifest = JSON.parse(readFileSync(join(root, "test", "promises.json"), "utf8")) as Record<string, Entry>;

/** The first string argument of every test(...), it(...) and describe(...) call in a file (and attack(...), the attack pass's test). */
function testNames(file: string): string[] {
  const src = readFileSync(join(root, file), "utf8");
  const names: string[] = [];
  const re = /\b(?:test|it|describe|attack)\(\s*(`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/g;
  for (const m of src.matchAll(re)) names.push(m[1]!.slice(1, -1));
  return names;
}

describe("promise manifest", () => {
  test("covers exactly the promises docs/architecture.md lists", () => {
    const ids = [...readFileSync(designPath, "utf8").matchAll(/^\| (P\d+) \|/gm)].map((m) => m[1]!);
    assert.ok(ids.length >= 16, "docs/architecture.md lists its promises");
    assert.deepEqual(Object.keys(manifest).sort(), [...ids].sort());
  });

  for (const [id, entry] of Object.entries(manifest)) {
    if ("pending" in entry) {
      test(`${id} is pending with a reason`, () => assert.ok(entry.pending.length > 10, `${id} needs a reason`));
      continue;
    }
    test(`${id} has named tests that exist`, () => {
      assert.ok(entry.tests.length > 0);
      for (const ev of entry.tests) {
        assert.ok(existsSync(join(root, ev.file)), `${id}: ${ev.file} is missing`);
        const names = testNames(ev.file);
        for (const fragment of ev.names)
          assert.ok(
            names.some((n) => n.includes(fragment)),
            `${id}: no test named like "${fragment}" in ${ev.file}`,
          );
      }
    });
  }
});
