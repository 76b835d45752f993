// Canonical JSON and the canonical request: one stable text (and hash) per value, and every value
// JSON cannot carry exactly makes the request unsupported (P5).

import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { canonicalJson, DEFAULT_JSON_LIMITS, type CanonicalJson } from "../../src/request/canonical-json.ts";
import { buildRequest } from "../../src/request/canonical.ts";

function text(v: unknown): string {
  const r = canonicalJson(v);
  assert.equal(r.ok, true, `expected supported: ${r.ok ? "" : r.reason}`);
  return (r as Extract<CanonicalJson, { ok: true }>).text;
}

function unsupported(v: unknown, reason?: RegExp): string {
  const r = canonicalJson(v);
  assert.equal(r.ok, false, `expected unsupported, got ${r.ok ? r.text : ""}`);
  const why = (r as Extract<CanonicalJson, { ok: false }>).reason;
  if (reason) assert.match(why, reason);
  return why;
}

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-canon-")));
after(() => rmSync(root, { recursive: true, force: true }));

describe("canonical JSON: stable text", () => {
  test("keys are sorted at every depth, whatever the insertion order", () => {
    const a = { b: 1, a: { z: [1, { y: 2, x: 3 }], c: null }, "": true };
    const b = { "": true, a: { c: null, z: [1, { x: 3, y: 2 }] }, b: 1 };
    assert.equal(text(a), text(b));
    assert.equal(text(a), '{"":true,"a":{"c":null,"z":[1,{"x":3,"y":2}]},"b":1}');
  });

  test("array order is kept (arrays are not sets)", () => {
    assert.notEqual(text([1, 2]), text([2, 1]));
  });

  test("integer-like keys sort as strings, not in the engine's numeric order", () => {
    assert.equal(text({ 10: "a", 9: "b", b: 1, a: 2 }), '{"10":"a","9":"b","a":2,"b":1}');
  });

  test("non-ASCII and astral keys sort deterministically whatever the insertion order", () => {
    const keys = ["é", "e", "\u{1F600}", "\uFF5E", "z", "Z", "\u00E9\u0301", "\u{10000}", "a"];
    const forward = Object.fromEntries(keys.map((k, i) => [k, i]));
    const backward = Object.fromEntries([...keys].reverse().map((k) => [k, keys.indexOf(k)]));
    assert.equal(text(forward), text(backward));
    // Code-unit order: the astral characters (surrogates D800-DBFF) sort before U+FF5E.
    const order = Object.keys(JSON.parse(text(forward)) as object);
    assert.deepEqual(order, ["Z", "a", "e", "z", "é", "\u00E9\u0301", "\u{1F600}", "\u{10000}", "\uFF5E"].sort());
    assert.ok(order.indexOf("\u{1F600}") < order.indexOf("\uFF5E"));
  });

  test("the text round-trips to an equal value", () => {
    const v = { s: 'line\nquote"back\\slash\u2028', n: -12.5e-7, t: true, f: false, z: null, a: [[], {}] };
    assert.deepEqual(JSON.parse(text(v)), v);
  });

  test("objects without a prototype are plain data", () => {
    const o = Object.create(null) as Record<string, unknown>;
    o.b = 1;
    o.a = 2;
    assert.equal(text(o), '{"a":2,"b":1}');
  });

  test("an own __proto__ key (as JSON.parse makes it) is data, not a prototype", () => {
    const v = JSON.parse('{"__proto__":{"x":1},"a":1}') as unknown;
    assert.equal(text(v), '{"__proto__":{"x":1},"a":1}');
  });

  test("-0 and 0 have one text; 1e21 uses JSON's exponent form", () => {
    assert.equal(text(-0), "0");
    assert.equal(text(1e21), "1e+21");
  });
});

describe("canonical JSON: Unicode strings hash as written", () => {
  test("NFC and NFD spellings differ", () => {
    const nfc = "caf\u00E9";
    const nfd = "cafe\u0301";
    assert.equal(nfc.normalize("NFD"), nfd);
    assert.notEqual(text({ path: nfc }), text({ path: nfd }));
    assert.notEqual(text({ [nfc]: 1 }), text({ [nfd]: 1 }));
  });

  test("lone surrogates are escaped, distinct and deterministic", () => {
    const hi = text("\uD800");
    const lo = text("\uDC00");
    assert.equal(hi, '"\\ud800"');
    assert.equal(lo, '"\\udc00"');
    assert.notEqual(hi, lo);
    assert.notEqual(hi, text("\uFFFD"));
    assert.equal(text("\uD800"), hi);
    // The text is well-formed: encoding it as UTF-8 loses nothing.
    assert.equal(Buffer.from(hi, "utf8").toString("utf8"), hi);
    // A lone surrogate key is escaped the same way.
    assert.equal(text({ "\uDC00": 1 }), '{"\\udc00":1}');
  });

  test("a valid surrogate pair is kept as the character", () => {
    assert.equal(text("\u{1F600}"), '"\u{1F600}"');
  });
});

describe("canonical JSON: every unsupported value", () => {
  test("cycles, direct and through arrays", () => {
    const o: Record<string, unknown> = { a: 1 };
    o.self = o;
    unsupported(o, /cyclic/);
    const arr: unknown[] = [];
    arr.push({ back: arr });
    unsupported(arr, /cyclic/);
  });

  test("a shared (non-cyclic) object is fine", () => {
    const shared = { x: 1 };
    assert.equal(text({ a: shared, b: shared }), '{"a":{"x":1},"b":{"x":1}}');
  });

  test("getters and setters, even when they return plain values", () => {
    unsupported(
      {
        get path() {
          return "a";
        },
      },
      /accessor/,
    );
    const setterOnly = {};
    Object.defineProperty(setterOnly, "path", { set() {}, enumerable: true });
    unsupported(setterOnly, /accessor/);
    const arr = [1];
    Object.defineProperty(arr, "0", { get: () => 1 });
    unsupported(arr, /accessor/);
  });

  test("non-enumerable own properties", () => {
    const o = {};
    Object.defineProperty(o, "hidden", { value: "x", enumerable: false });
    unsupported(o, /non-enumerable/);
  });

  test("functions, symbols, bigint, undefined, at the top and nested", () => {
    for (const bad of [() => 1, Symbol("s"), 10n, undefined]) {
      unsupported(bad);
      unsupported({ a: bad });
      unsupported([bad]);
    }
  });

  test("NaN and the infinities", () => {
    for (const n of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      unsupported(n, /non-finite/);
      unsupported({ timeout: n }, /non-finite/);
    }
  });

  test("class instances: Date, Map, Set, Buffer, RegExp, boxed primitives, user classes", () => {
    class Point {
      x = 1;
    }
    const instances: unknown[] = [
      new Date(0),
      new Map([["a", 1]]),
      new Set([1]),
      Buffer.from("x"),
      new Uint8Array(2),
      /x/,
      new String("s"),
      new Number(1),
      new Point(),
      new Error("e"),
      Promise.resolve(1),
    ];
    for (const v of instances) {
      unsupported(v, /non-plain/);
      unsupported({ v }, /non-plain/);
    }
  });

  test("array subclasses and arrays with extra properties", () => {
    class MyArray extends Array<number> {}
    unsupported(MyArray.from([1]), /non-plain array/);
    const extra: unknown[] = [1];
    (extra as unknown as Record<string, unknown>).note = "x";
    unsupported(extra, /extra properties/);
    const sym: unknown[] = [1];
    (sym as unknown as Record<symbol, unknown>)[Symbol("s")] = 1;
    unsupported(sym, /extra properties/);
  });

  test("sparse arrays (holes), including a huge length", () => {
    // biome-ignore lint/suspicious/noSparseArray: a sparse array is the input under test
    unsupported([1, , 3], /sparse/);
    const long: unknown[] = [];
    long.length = 1_000_000_000;
    unsupported(long, /sparse/);
  });

  test("symbol keys", () => {
    unsupported({ [Symbol("k")]: 1, a: 1 }, /symbol/);
  });

  test("proxies: a throwing trap, a revoked proxy, and even a quiet one that could lie", () => {
    const throwing = new Proxy(
      { a: 1 },
      {
        ownKeys() {
          throw new Error("trap!");
        },
      },
    );
    unsupported(throwing);
    unsupported({ nested: throwing });
    const { proxy, revoke } = Proxy.revocable({ a: 1 }, {});
    revoke();
    unsupported(proxy);
    unsupported([proxy]);
    // The descriptors say "ls", but the tool would read "rm -rf ~" through the get trap.
    const lying = new Proxy({ command: "ls" }, { get: (t, k) => (k === "command" ? "rm -rf ~" : Reflect.get(t, k)) });
    assert.equal((lying as { command: string }).command, "rm -rf ~");
    unsupported(lying, /proxy/);
    unsupported(new Proxy([1, 2], {}), /proxy/);
  });

  test("a trap that throws a non-Error is still contained", () => {
    const odd = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw "string thrown";
        },
      },
    ); // eslint-disable-line no-throw-literal
    unsupported({ odd });
  });
});

describe("canonical JSON: limits", () => {
  const nest = (depth: number): unknown => {
    let v: unknown = "leaf";
    for (let i = 0; i < depth; i++) v = [v];
    return v;
  };

  test("depth: the limit is reached exactly, one more level is unsupported", () => {
    text(nest(DEFAULT_JSON_LIMITS.maxDepth));
    unsupported(nest(DEFAULT_JSON_LIMITS.maxDepth + 1), /nested deeper/);
  });

  test("depth: 100,000 levels fail cleanly, without a stack overflow", () => {
    unsupported(nest(100_000), /nested deeper/);
    let o: Record<string, unknown> = {};
    const top = o;
    for (let i = 0; i < 100_000; i++) {
      const next = {};
      o.a = next;
      o = next;
    }
    unsupported(top, /nested deeper/);
  });

  test("node count: at the limit is fine, one more value is unsupported", () => {
    const limits = { ...DEFAULT_JSON_LIMITS, maxNodes: 10 };
    assert.equal(canonicalJson(new Array(9).fill(0), limits).ok, true); // the array itself + 9
    const r = canonicalJson(new Array(10).fill(0), limits);
    assert.equal(r.ok, false);
    assert.match((r as { reason: string }).reason, /more than 10 values/);
  });

  test("node count: an object with too many keys is refused", () => {
    const wide = Object.fromEntries(Array.from({ length: DEFAULT_JSON_LIMITS.maxNodes + 1 }, (_, i) => [`k${i}`, 0]));
    unsupported(wide, /values/);
  });

  test("bytes are counted in UTF-8, not in UTF-16 code units", () => {
    const limits = { ...DEFAULT_JSON_LIMITS, maxBytes: 100 };
    assert.equal(canonicalJson("a".repeat(98), limits).ok, true); // 98 + 2 quotes
    assert.equal(canonicalJson("a".repeat(99), limits).ok, false);
    // 40 "é" are 40 code units but 80 bytes: with the quotes 82 fit, 60 (122 bytes) do not.
    assert.equal(canonicalJson("é".repeat(40), limits).ok, true);
    const r = canonicalJson("é".repeat(60), limits);
    assert.equal(r.ok, false);
    assert.match((r as { reason: string }).reason, /larger than 100 bytes/);
    // Astral characters are 4 bytes each.
    assert.equal(canonicalJson("\u{1F600}".repeat(30), limits).ok, false);
  });

  test("the default byte limit holds for a large multi-byte string", () => {
    unsupported("é".repeat(600_000), /larger than/);
    text("a".repeat(1000));
  });
});

describe("canonical request", () => {
  const cwd = root;
  const home = join(root, "home");

  test("the hash is stable across key order and changes with any field", () => {
    const a = buildRequest("write", { path: "a.txt", content: "x" }, cwd, home);
    const b = buildRequest("write", { content: "x", path: "a.txt" }, cwd, home);
    assert.ok(a.ok && b.ok);
    assert.equal(a.request.hash, b.request.hash);
    assert.match(a.request.hash, /^[0-9a-f]{64}$/);
    const variants = [
      buildRequest("edit", { path: "a.txt", content: "x" }, cwd, home),
      buildRequest("write", { path: "a.txt", content: "y" }, cwd, home),
      buildRequest("write", { path: "b.txt", content: "x" }, cwd, home),
      buildRequest("write", { path: "a.txt", content: "x" }, join(cwd, "sub"), home),
    ];
    for (const v of variants) {
      assert.ok(v.ok);
      assert.notEqual(v.request.hash, a.request.hash);
    }
  });

  test("the canonical text is sorted-key JSON of tool, input, cwd and resolved paths", () => {
    const r = buildRequest("write", { path: "./d/../a.txt", content: "x" }, cwd, home);
    assert.ok(r.ok);
    const parsed = JSON.parse(r.request.canonical) as Record<string, unknown>;
    assert.deepEqual(Object.keys(parsed), ["cwd", "input", "paths", "tool"]);
    assert.deepEqual(parsed.paths, [{ exists: false, lexical: join(cwd, "a.txt"), raw: "./d/../a.txt", real: join(cwd, "a.txt") }]);
    // The spliced text is exactly what canonical JSON of the same object gives.
    const again = canonicalJson(parsed);
    assert.ok(again.ok);
    assert.equal(again.text, r.request.canonical);
  });

  test("NFC and NFD paths make different requests", () => {
    const a = buildRequest("read", { path: "caf\u00E9.txt" }, cwd, home);
    const b = buildRequest("read", { path: "cafe\u0301.txt" }, cwd, home);
    assert.ok(a.ok && b.ok);
    assert.notEqual(a.request.hash, b.request.hash);
  });

  test("lone surrogates in a path give distinct, repeatable hashes", () => {
    const hashes = ["\uD800.txt", "\uDC00.txt", "\uFFFD.txt", "\uD800.txt"].map((p) => {
      const r = buildRequest("read", { path: p }, cwd, home);
      assert.ok(r.ok);
      return r.request.hash;
    });
    assert.equal(new Set(hashes).size, 3);
    assert.equal(hashes[0], hashes[3]);
  });

  test("every unsupported input makes the request unsupported", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.c = cyclic;
    const bad: unknown[] = [
      cyclic,
      {
        get command() {
          return "ls";
        },
      },
      { command: () => "ls" },
      { command: Symbol("ls") },
      { timeout: 1n },
      { timeout: undefined },
      { timeout: Number.NaN },
      { timeout: Number.POSITIVE_INFINITY },
      { when: new Date(0) },
      { m: new Map() },
      { b: Buffer.from("x") },
      // biome-ignore lint/suspicious/noSparseArray: a sparse array is the input under test
      { list: [1, , 2] },
      { [Symbol("k")]: 1 },
      new Proxy({ command: "ls" }, {}),
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error("boom");
          },
        },
      ),
      { deep: JSON.parse("[".repeat(200) + "]".repeat(200)) as unknown },
    ];
    for (const input of bad) {
      const r = buildRequest("bash", input, cwd, home);
      assert.equal(r.ok, false, `expected unsupported: ${String((r as { request?: { canonical: string } }).request?.canonical)}`);
    }
  });

  test("a path Pi could not open (NUL byte) leaves no resolved path, and the request is still hashed", () => {
    const r = buildRequest("write", { path: "a\0b", content: "" }, cwd, home);
    assert.ok(r.ok);
    assert.deepEqual(r.request.paths, []);
  });

  test("tools without a path argument resolve no path; ls/grep/find default to the cwd", () => {
    const bash = buildRequest("bash", { command: "ls" }, cwd, home);
    assert.ok(bash.ok);
    assert.deepEqual(bash.request.paths, []);
    for (const tool of ["ls", "grep", "find"]) {
      const r = buildRequest(tool, { pattern: "x" }, cwd, home);
      assert.ok(r.ok);
      assert.equal(r.request.paths.length, 1);
      assert.equal(r.request.paths[0]!.real, cwd);
      assert.equal(r.request.paths[0]!.exists, true);
    }
  });
});
