// Property tests of the canonical request (P8: a verdict binds to one exact text and hash) and of
// the path policy (the gate judges the file Pi's tool will open): canonical text does not depend
// on key order, keeps every string exactly as written (NFC and NFD spellings stay apart, as
// test/request/canonical-json.test.ts says) and round-trips; and on random paths the gate resolves
// exactly as Pi 1.6's own read, write, edit, ls, grep and find do.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { resolveReadPath, resolveToCwd } from "../../node_modules/@earendil-works/pi-coding-agent/dist/core/tools/path-utils.js";
import { canonicalJson, type JsonValue } from "../../src/request/canonical-json.ts";
import { buildRequest } from "../../src/request/canonical.ts";
import { resolveLikePi, resolveReadLikePi } from "../../src/request/paths.ts";
import { checkProperty, fuzzRuns } from "../helpers/fuzz.ts";

function text(v: unknown): string {
  const r = canonicalJson(v);
  assert.ok(r.ok, `a JSON value is supported: ${r.ok ? "" : r.reason}`);
  return r.text;
}

/** The same value with the keys of every object inserted in another order. */
function reordered(v: JsonValue, order: readonly number[], depth = 0): JsonValue {
  if (Array.isArray(v)) return v.map((x) => reordered(x, order, depth + 1));
  if (v === null || typeof v !== "object") return v;
  const keys = Object.keys(v);
  // A different rotation and direction per depth and size, so siblings are not all shuffled alike.
  const k = keys.length === 0 ? 0 : (order[depth % order.length] ?? 0) % keys.length;
  const turned = [...keys.slice(k), ...keys.slice(0, k)];
  if ((order[(depth + 1) % order.length] ?? 0) % 2 === 1) turned.reverse();
  // fromEntries defines own properties: an own "__proto__" key (JSON.parse makes one) stays data.
  return Object.fromEntries(turned.map((key) => [key, reordered(v[key]!, order, depth + 1)]));
}

/** Every string (keys included) in one Unicode normalization form. */
function normalized(v: JsonValue, form: "NFC" | "NFD" | "NFKC" | "NFKD"): JsonValue {
  if (typeof v === "string") return v.normalize(form);
  if (Array.isArray(v)) return v.map((x) => normalized(x, form));
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.normalize(form), normalized(x, form)]));
}

/** Strings rich in what normalization changes: precomposed and decomposed letters, compatibility forms, Hangul. */
const unicodeString = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 6 }),
  fc
    .array(
      fc.constantFrom(
        "e",
        "\u00e9",
        "e\u0301",
        "\u212b",
        "A\u030a",
        "\u00c5",
        "\ufb01",
        "fi",
        "\u1100\u1161",
        "\uac00",
        "\u0041",
        "\u2126",
        "\u03a9",
        "\ud83d\ude00",
        "\ud800",
        "\u00a0",
        " ",
      ),
      { maxLength: 5 },
    )
    .map((xs) => xs.join("")),
);
/** JSON values as a tool input carries them (JSON has no -0: it reads back as 0). */
const jsonValue = fc.jsonValue({ maxDepth: 4, stringUnit: "grapheme" }).map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);
const unicodeJson = fc
  .letrec<{ v: JsonValue }>((tie) => ({
    v: fc.oneof(
      { depthSize: "small", maxDepth: 3 },
      unicodeString,
      fc.integer(),
      fc.dictionary(unicodeString, tie("v"), { maxKeys: 4 }),
      fc.array(tie("v"), { maxLength: 3 }),
    ),
  }))
  .v.map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);

function sameValue(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

describe("canonical requests: one text per value, whatever the key order, every string as written", () => {
  test("key order never changes the text or the request hash; the text reads back as the value", async (t) => {
    await checkProperty(
      t,
      fc.property(
        fc.oneof(jsonValue, unicodeJson),
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        fc.constantFrom("bash", "write", "mcp__x__y"),
        (v, order, tool) => {
          const w = reordered(v, order);
          assert.equal(text(w), text(v));
          assert.deepStrictEqual(JSON.parse(text(v)), v);
          const a = buildRequest(tool, v, "/work", "/home/u");
          const b = buildRequest(tool, w, "/work", "/home/u");
          assert.ok(a.ok && b.ok);
          assert.equal(a.request.hash, b.request.hash);
        },
      ),
      { runs: fuzzRuns(3000) },
    );
  });

  test("two values have one text exactly when they are equal: NFC, NFD and compatibility spellings stay apart", async (t) => {
    await checkProperty(
      t,
      fc.property(
        unicodeJson,
        fc.constantFrom("NFC", "NFD", "NFKC", "NFKD") as fc.Arbitrary<"NFC" | "NFD" | "NFKC" | "NFKD">,
        unicodeJson,
        (v, form, other) => {
          for (const w of [normalized(v, form), other]) {
            assert.equal(text(v) === text(w), sameValue(v, w), `${JSON.stringify(v)} and ${JSON.stringify(w)}`);
            const a = buildRequest("write", { path: "x", content: v }, "/work", "/home/u");
            const b = buildRequest("write", { path: "x", content: w }, "/work", "/home/u");
            assert.ok(a.ok && b.ok);
            assert.equal(a.request.hash === b.request.hash, sameValue(v, w));
          }
        },
      ),
      { runs: fuzzRuns(3000) },
    );
  });
});

// Pi's tools expand "~" with os.homedir(), which reads $HOME: the comparison runs with HOME set to
// the fixture's home directory, the one the gate is given.
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-fuzz-paths-")));
const home = join(root, "home");
const ws = join(root, "ws");
const savedHome = process.env.HOME;
before(() => {
  mkdirSync(join(ws, "src", "caf\u00e9"), { recursive: true });
  mkdirSync(join(home, ".ssh"), { recursive: true });
  // Names Pi's read tool finds by its macOS fallbacks: NFD, curly apostrophe, narrow no-break space before PM.
  for (const name of ["cafe\u0301.txt", "Capture d\u2019e\u0301cran.png", "Screenshot 2024-01-01 at 1.00.00\u202fPM.png", "it\u2019s.md", "plain.txt"])
    writeFileSync(join(ws, name), "x");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "key");
  symlinkSync("loop", join(ws, "loop"));
  symlinkSync(join(home, ".ssh"), join(ws, "keys"));
  process.env.HOME = home;
});
after(() => {
  if (savedHome === undefined) delete process.env.HOME;
  else process.env.HOME = savedHome;
  rmSync(root, { recursive: true, force: true });
});

const SEGMENTS = [
  "a",
  "src",
  "..",
  ".",
  "",
  "~",
  "@x",
  ".ssh",
  "id_ed25519",
  "caf\u00e9",
  "cafe\u0301",
  "cafe\u0301.txt",
  "caf\u00e9.txt",
  "it's.md",
  "Capture d'\u00e9cran.png",
  "Screenshot 2024-01-01 at 1.00.00 PM.png",
  "a\u00a0b",
  "a\u2003b",
  "a\u3000b",
  " ",
  "%20",
  "%00",
  "file:",
  "x\u0000y",
  "\u202f",
  "plain.txt",
  "\\",
  "C:",
  "loop",
  "keys",
];
const PREFIXES = [
  "",
  "",
  "",
  "~/",
  "~",
  "/",
  "@",
  "@~/",
  "@/",
  "./",
  "../",
  "file://",
  "file:///",
  "file://localhost/",
  " ~/",
  "\u00a0~/",
  "@@",
  "~user/",
  "\u3000@",
];
const piPath = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.constantFrom(...PREFIXES), fc.array(fc.constantFrom(...SEGMENTS), { maxLength: 5 }), fc.constantFrom("", "/", "//"))
      .map(([p, s, end]) => p + s.join("/") + end),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 8 }) },
);
const cwd = fc.constantFrom(ws, join(ws, "src"), `${ws}/`, "~/proj", "~", `file://${ws}`, `${ws}/src/../src`);

/**
 * Where the gate resolves no path (the call is judged malformed), the input must be malformed or
 * the file system must refuse Pi's path too: a NUL byte anywhere in what the model sent (refused
 * even where a later ".." would take it away: P5, malformed input is never judged as something
 * else), a file used as a directory (ENOTDIR), a symlink loop (ELOOP).
 */
function unopenable(pi: ReturnType<typeof attempt>, raw: string): boolean {
  if (!pi.ok || pi.path.includes("\0") || raw.includes("\0")) return true;
  try {
    statSync(pi.path);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/** Pi's answer, or that it throws. */
function attempt(f: () => string): { ok: true; path: string } | { ok: false; error: string } {
  try {
    return { ok: true, path: f() };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

/**
 * The gate agrees with Pi: the same path, or both refuse it. The gate refuses one thing Pi passes
 * on, a path with a NUL byte anywhere (see unopenable).
 */
function assertSameAsPi(pi: ReturnType<typeof attempt>, gate: ReturnType<typeof attempt>, what: string, raw: string): void {
  if (gate.ok) {
    assert.ok(pi.ok, `${what}: the gate resolves ${JSON.stringify(gate.path)} where Pi throws (${pi.ok ? "" : pi.error})`);
    assert.equal(gate.path, pi.path, what);
  } else
    assert.ok(
      !pi.ok || pi.path.includes("\0") || raw.includes("\0"),
      `${what}: the gate refuses (${gate.error}) what Pi opens as ${pi.ok ? JSON.stringify(pi.path) : ""}`,
    );
}

describe("paths: the gate resolves a tool's path exactly as Pi's tools do", () => {
  test('write and edit (resolveToCwd), and ls, grep and find (with "" as ".")', async (t) => {
    await checkProperty(
      t,
      fc.property(piPath, cwd, (p, dir) => {
        const what = `${JSON.stringify(p)} from ${JSON.stringify(dir)}`;
        assertSameAsPi(
          attempt(() => resolveToCwd(p, dir)),
          attempt(() => resolveLikePi(p, dir, home)),
          what,
          p,
        );
        // Through the canonical request, as the gate builds it for each tool.
        if (!dir.startsWith("/")) return;
        for (const tool of ["write", "edit", "ls", "grep", "find"]) {
          const built = buildRequest(tool, { path: p }, dir, home);
          assert.ok(built.ok);
          const pi = attempt(() => resolveToCwd(tool === "write" || tool === "edit" ? p : p || ".", dir));
          const lexical = built.request.paths[0]?.lexical;
          if (lexical === undefined)
            assert.ok(unopenable(pi, p) || p === "", `${tool} ${what}: the gate resolved nothing where Pi opens ${pi.ok ? pi.path : ""}`);
          else assertSameAsPi(pi, { ok: true, path: lexical }, `${tool} ${what}`, p);
        }
      }),
      { runs: fuzzRuns(8000) },
    );
  });

  test("read, with Pi's fallbacks to the NFD, curly-apostrophe and narrow-space spellings of a missing name", async (t) => {
    await checkProperty(
      t,
      fc.property(piPath, cwd, (p, dir) => {
        const what = `read ${JSON.stringify(p)} from ${JSON.stringify(dir)}`;
        assertSameAsPi(
          attempt(() => resolveReadPath(p, dir)),
          attempt(() => resolveReadLikePi(p, dir, home)),
          what,
          p,
        );
        if (!dir.startsWith("/") || p === "") return;
        const built = buildRequest("read", { path: p }, dir, home);
        assert.ok(built.ok);
        const lexical = built.request.paths[0]?.lexical;
        const pi = attempt(() => resolveReadPath(p, dir));
        if (lexical === undefined) assert.ok(unopenable(pi, p), `${what}: the gate resolved nothing where Pi opens ${pi.ok ? pi.path : ""}`);
        else assertSameAsPi(pi, { ok: true, path: lexical }, what, p);
      }),
      { runs: fuzzRuns(8000) },
    );
  });
});

describe("paths with a NUL byte", () => {
  // The path property found that Pi's tools open "x\0y/../f.txt" as "f.txt" (the ".." takes the
  // NUL's component away). The gate still refuses it: a NUL in a path is malformed input (P5),
  // and "src/index.ts\0/../../x" would otherwise be judged as a read of "x".
  test('a NUL anywhere in the path is malformed, also in a component a later ".." takes away', () => {
    for (const p of ["x\0y/..", "x\0y/../f.txt", "a/x\0y/../../f.txt", "x\0y", "x\0y/f.txt", "f.txt/..\0"]) {
      assert.throws(() => resolveLikePi(p, ws, home), /NUL/, JSON.stringify(p));
      const built = buildRequest("write", { path: p, content: "" }, ws, home);
      assert.ok(built.ok);
      assert.deepEqual(built.request.paths, [], JSON.stringify(p));
    }
  });
});
