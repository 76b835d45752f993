// The design's layering, checked on the source (docs/architecture.md §2, §3): Pi is imported only at the
// edges, and a core folder imports only folders that come before it on the path of one tool call,
// so the CLI and the tests can drive the core without Pi, and no two core folders depend on each
// other.

import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** The core, in the order of one tool call; state sits beside the request and policy it records. */
const CORE = ["request", "policy", "state", "review", "grants", "sandbox", "audit", "eval"] as const;
/** Where Pi is touched; they may import anything. */
// broker.ts is the package's face to other extensions (pi-auto-mode/broker): an edge, though it needs no Pi.
const EDGES = ["extension.ts", "broker.ts", "tools", "commands", "ui", "cli"] as const;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : n.endsWith(".ts") ? [p] : [];
  });
}

/** The top-level part of src/ a file belongs to: a folder, or extension.ts. */
const partOf = (file: string): string => relative(SRC, file).split("/")[0]!;

interface Import {
  readonly file: string;
  readonly spec: string;
}

function imports(file: string): Import[] {
  const text = readFileSync(file, "utf8");
  const out: Import[] = [];
  // Static imports and re-exports (type-only ones too: they are a dependency of the source), and dynamic import().
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g))
    out.push({ file, spec: m[1] ?? m[2]! });
  return out;
}

const all = sources(SRC).flatMap(imports);

test("the import reader sees the imports it should (static, type-only, re-export, dynamic)", () => {
  const seen = (f: string) => new Set(all.filter((i) => relative(SRC, i.file) === f).map((i) => i.spec));
  assert.ok(seen("tools/reviewer-models.ts").has("@earendil-works/pi-ai"));
  assert.ok(seen("review/engine.ts").has("./models.ts"), "a type-only import and a re-export");
  assert.ok(seen("cli/check.ts").has("./sandbox.ts"), "a dynamic import");
  assert.ok(all.length > 300, `${all.length} imports`);
});

test("only extension.ts, tools/, commands/, ui/ and cli/ import Pi (@earendil-works/*)", () => {
  const leaks = all.filter((i) => i.spec.startsWith("@earendil-works/") && !(EDGES as readonly string[]).includes(partOf(i.file)));
  assert.deepEqual(
    leaks.map((i) => `${relative(SRC, i.file)} imports ${i.spec}`),
    [],
  );
});

test(`core folders import only earlier ones (${CORE.join(" < ")}) and never an edge`, () => {
  const wrong: string[] = [];
  for (const i of all) {
    if (!i.spec.startsWith(".")) continue;
    const from = partOf(i.file);
    const to = partOf(resolve(dirname(i.file), i.spec));
    if (from === to || (EDGES as readonly string[]).includes(from)) continue;
    const a = (CORE as readonly string[]).indexOf(from);
    const b = (CORE as readonly string[]).indexOf(to);
    if (a < 0) wrong.push(`${relative(SRC, i.file)}: ${from} is neither core nor an edge`);
    else if (b < 0 || b > a) wrong.push(`${relative(SRC, i.file)} (${from}) imports ${i.spec} (${to})`);
  }
  assert.deepEqual(wrong, []);
});
