// The path corpus: the gate must judge exactly the file a tool will touch. The central tests run
// Pi's own tools on odd inputs in a temp dir, observe which file they wrote or read, and check
// that the canonical request names that very file.

import assert from "node:assert/strict";
import { existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { access, mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { after, describe, test } from "node:test";
import {
  createEditToolDefinition,
  createFindToolDefinition,
  createLsToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
} from "@earendil-works/pi-coding-agent";
import { buildRequest, type ResolvedPath } from "../../src/request/canonical.ts";
import { PathFacts, resolveLikePi, resolvePhysical, resolveReadLikePi, resolveReal } from "../../src/request/paths.ts";
import { buildPlaces, classifyWrite, isIdentitySecret, isWithin, protectedComponent } from "../../src/policy/places.ts";
import { prepareGate, decide } from "../../src/policy/gate.ts";
import { selfPaths } from "../../src/state/locations.ts";

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function tempRoot(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-paths-")));
  made.push(root);
  return root;
}

function put(path: string, content: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

interface Fixture {
  readonly root: string;
  readonly ws: string;
  readonly home: string;
  readonly outside: string;
}

/**
 * root/ws (the cwd), root/home, root/outside, root/ws-evil, root/other, with symlinks in ws:
 * linkout -> ../outside, link-abs -> <root>/outside, linkdir -> ../other (other/dangling -> ../x-from-other.txt),
 * dangling-abs/-rel, a chain, a link to a file, loops, a link whose target climbs out of a missing dir.
 */
function fixture(): Fixture {
  const root = tempRoot();
  const ws = join(root, "ws");
  const home = join(root, "home");
  const outside = join(root, "outside");
  for (const d of [ws, home, outside, join(root, "ws-evil"), join(root, "other"), join(ws, "sub")]) mkdirSync(d, { recursive: true });
  put(join(ws, "plain.txt"), "read-plain");
  put(join(ws, "sub", "entry-sub"), "read-sub");
  put(join(home, "h.txt"), "read-home");
  put(join(outside, "o.txt"), "read-outside");
  put(join(outside, "target.txt"), "read-target");
  put(join(ws, "Screenshot 2024-01-01 at 10.00.00\u202FAM.txt"), "read-ampm");
  put(join(ws, "cafe\u0301.txt"), "read-nfd");
  put(join(ws, "d\u2019accord.txt"), "read-curly");
  put(join(ws, "Capture d\u2019e\u0301cran.txt"), "read-nfd-curly");
  put(join(ws, "a b.txt"), "read-space");
  put(join(ws, "caf\u00E9-both.txt"), "read-both-nfc");
  put(join(ws, "cafe\u0301-both.txt"), "read-both-nfd");
  symlinkSync("../outside", join(ws, "linkout"));
  symlinkSync(outside, join(ws, "link-abs"));
  symlinkSync("../other", join(ws, "linkdir"));
  symlinkSync("../x-from-other.txt", join(root, "other", "dangling"));
  symlinkSync(join(outside, "created-abs.txt"), join(ws, "dangling-abs"));
  symlinkSync("../outside/created-rel.txt", join(ws, "dangling-rel"));
  symlinkSync("chain2", join(ws, "chain1"));
  symlinkSync("../outside/created-chain.txt", join(ws, "chain2"));
  symlinkSync("../outside/target.txt", join(ws, "link-to-file"));
  symlinkSync("../outside/nodir", join(ws, "dangling-dir"));
  symlinkSync("loop", join(ws, "loop"));
  symlinkSync("loopb", join(ws, "loopa"));
  symlinkSync("loopa", join(ws, "loopb"));
  symlinkSync("nodir/../../outside/up.txt", join(ws, "up-missing"));
  return { root, ws, home, outside };
}

/** Regular files under `dir` (symlinks are not followed) whose content is exactly `content`. */
function filesWithContent(dir: string, content: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...filesWithContent(p, content));
    else if (st.isFile() && readFileSync(p, "utf8") === content) out.push(p);
  }
  return out;
}

async function withHome<T>(home: string, fn: () => Promise<T>): Promise<T> {
  // Pi expands "~" with os.homedir(), which reads $HOME on POSIX.
  const saved = process.env.HOME;
  process.env.HOME = home;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.HOME;
    else process.env.HOME = saved;
  }
}

function requestPath(tool: string, input: Record<string, unknown>, fx: Fixture): ResolvedPath | undefined {
  const r = buildRequest(tool, input, fx.ws, fx.home);
  assert.ok(r.ok, "the request must be supported");
  assert.ok(r.request.paths.length <= 1);
  return r.request.paths[0];
}

const NO_CTX = undefined as never;

describe("resolveLikePi: Pi's lexical normalization", () => {
  const cwd = "/w/ws";
  const home = "/h/me";
  const table: Array<[string, string]> = [
    ["a.txt", "/w/ws/a.txt"],
    ["./a.txt", "/w/ws/a.txt"],
    ["sub/../a.txt", "/w/ws/a.txt"],
    ["../ws-evil/a.txt", "/w/ws-evil/a.txt"],
    ["../../../../etc/passwd", "/etc/passwd"],
    ["/abs//x/./y/../z", "/abs/x/z"],
    ["", "/w/ws"],
    [".", "/w/ws"],
    ["dir/", "/w/ws/dir"],
    ["~", "/h/me"],
    ["~/", "/h/me"],
    ["~/.ssh/id_ed25519", "/h/me/.ssh/id_ed25519"],
    ["~user/x", "/w/ws/~user/x"],
    ["a/~/x", "/w/ws/a/~/x"],
    ["@a.txt", "/w/ws/a.txt"],
    ["@@a.txt", "/w/ws/@a.txt"],
    ["@~/x", "/h/me/x"],
    ["@/etc/passwd", "/etc/passwd"],
    ["a@b.txt", "/w/ws/a@b.txt"],
    ["a\u00A0b.txt", "/w/ws/a b.txt"],
    ["\u3000x\u2009y\u202Fz\u205F", "/w/ws/ x y z "],
    ["~\u00A0", "/w/ws/~ "],
    ["\u00A0~/x", "/w/ws/ ~/x"],
    ["file:///etc/passwd", "/etc/passwd"],
    ["file:///tmp/a%20b.txt", "/tmp/a b.txt"],
    ["file://localhost/tmp/x", "/tmp/x"],
    ["@file:///tmp/x", "/tmp/x"],
    ["FILE:///tmp/x", "/w/ws/FILE:/tmp/x"],
    ["file:/tmp/x", "/w/ws/file:/tmp/x"],
    ["caf\u00E9", "/w/ws/caf\u00E9"],
    ["cafe\u0301", "/w/ws/cafe\u0301"],
  ];
  for (const [input, expected] of table) {
    test(`${JSON.stringify(input)} -> ${expected}`, () => {
      assert.equal(resolveLikePi(input, cwd, home), expected);
    });
  }

  test("the cwd is normalized like Pi's base dir: '~' expands, Unicode spaces stay", () => {
    assert.equal(resolveLikePi("x", "~/proj", home), "/h/me/proj/x");
    assert.equal(resolveLikePi("x", "/w/a\u00A0b", home), "/w/a\u00A0b/x");
    assert.equal(resolveLikePi("x", "/w/@at", home), "/w/@at/x");
  });

  test("NUL bytes are rejected, also when a file URL encodes them", () => {
    assert.throws(() => resolveLikePi("a\0b", cwd, home), /NUL/);
    assert.throws(() => resolveLikePi("/etc/passwd\0.txt", cwd, home), /NUL/);
    assert.throws(() => resolveLikePi("file:///tmp/a%00b", cwd, home));
  });

  test("file URLs Pi cannot convert throw (a remote host, an encoded slash)", () => {
    assert.throws(() => resolveLikePi("file://evil.example/etc/passwd", cwd, home));
    assert.throws(() => resolveLikePi("file:///tmp/a%2Fb", cwd, home));
  });
});

describe("resolveReal: symlinks, missing ancestors, loops", () => {
  const fx = fixture();
  const r = (rel: string) => resolveReal(join(fx.ws, rel));

  test("an existing file resolves to itself", () => {
    assert.deepEqual(r("plain.txt"), { real: join(fx.ws, "plain.txt"), exists: true });
  });

  test("a new file below missing ancestors keeps the missing part", () => {
    assert.deepEqual(r("new/deep/missing/f.ts"), { real: join(fx.ws, "new/deep/missing/f.ts"), exists: false });
  });

  test("a symlinked directory leads outside, also for missing files below it", () => {
    assert.deepEqual(r("linkout/o.txt"), { real: join(fx.outside, "o.txt"), exists: true });
    assert.deepEqual(r("linkout/new/deep.txt"), { real: join(fx.outside, "new/deep.txt"), exists: false });
    assert.deepEqual(r("link-abs/new.txt"), { real: join(fx.outside, "new.txt"), exists: false });
  });

  test("dangling symlinks name the file a write would create", () => {
    assert.deepEqual(r("dangling-abs"), { real: join(fx.outside, "created-abs.txt"), exists: false });
    assert.deepEqual(r("dangling-rel"), { real: join(fx.outside, "created-rel.txt"), exists: false });
    assert.deepEqual(r("chain1"), { real: join(fx.outside, "created-chain.txt"), exists: false });
    assert.deepEqual(r("dangling-dir/x.txt"), { real: join(fx.outside, "nodir/x.txt"), exists: false });
  });

  test("a dangling link's relative target is taken from the real directory holding it", () => {
    // ws/linkdir -> ../other, other/dangling -> ../x-from-other.txt: the kernel lands in root/, not ws/.
    assert.deepEqual(r("linkdir/dangling"), { real: join(fx.root, "x-from-other.txt"), exists: false });
  });

  test("loops throw, as the kernel fails with ELOOP", () => {
    assert.throws(() => r("loop"), /symbolic links/);
    assert.throws(() => r("loopa"), /symbolic links/);
    assert.throws(() => r("loop/below.txt"));
  });

  test("a long chain resolves; one past the kernel's limit throws", () => {
    const dir = join(fx.root, "chains");
    mkdirSync(dir);
    const chain = (n: number, prefix: string) => {
      for (let i = 0; i < n; i++) symlinkSync(`${prefix}${i + 1}`, join(dir, `${prefix}${i}`));
      return join(dir, `${prefix}0`);
    };
    assert.deepEqual(resolveReal(chain(10, "s")), { real: join(dir, "s10"), exists: false });
    assert.throws(() => resolveReal(chain(60, "l")), /symbolic links/);
  });

  test("'..' that would climb out of a missing directory is rejected", () => {
    assert.throws(() => r("up-missing"), /does not exist/);
  });

  test("a file used as a directory throws (ENOTDIR), as the tool would fail", () => {
    assert.throws(() => r("plain.txt/x"));
  });

  test("hard links are not symlinks: each name resolves to itself", () => {
    linkSync(join(fx.outside, "o.txt"), join(fx.ws, "hard.txt"));
    assert.deepEqual(r("hard.txt"), { real: join(fx.ws, "hard.txt"), exists: true });
  });

  test("a Unicode-named dangling target keeps its exact spelling", () => {
    symlinkSync("../outside/cafe\u0301-new.txt", join(fx.ws, "uni-link"));
    assert.equal(r("uni-link").real, join(fx.outside, "cafe\u0301-new.txt"));
  });
});

interface WriteCase {
  readonly input: string;
  /** Where the file lands, relative to the fixture root; undefined when Pi's write fails. */
  readonly lands: string | undefined;
  readonly home?: boolean;
}

describe("resolvePhysical: paths as a shell command's system calls walk them", () => {
  const fx = fixture();

  test("'..' after a symlink climbs out of the link's target, not out of the workspace", () => {
    // ws/link-abs -> outside: the kernel reads outside/../outside/o.txt, which exists.
    assert.deepEqual(resolvePhysical(fx.ws, "link-abs/../outside/o.txt"), { real: join(fx.outside, "o.txt"), exists: true });
    assert.deepEqual(resolvePhysical(fx.ws, "sub/../plain.txt"), { real: join(fx.ws, "plain.txt"), exists: true });
  });

  test("absolute paths start at the root; a missing parent of '..' throws as the kernel fails", () => {
    assert.deepEqual(resolvePhysical(fx.ws, `${fx.ws}/link-abs/../ws/plain.txt`), { real: join(fx.ws, "plain.txt"), exists: true });
    assert.throws(() => resolvePhysical(fx.ws, "missing/../plain.txt"));
  });
});

describe("PathFacts: one decision's shared look-ups answer exactly as resolveReal and resolvePhysical", () => {
  const fx = fixture();
  const rels = [
    "plain.txt",
    "sub",
    "sub/entry-sub",
    "new/deep/missing/f.ts",
    "sub/new/deeper/x",
    "linkout/o.txt",
    "linkout/new/deep.txt",
    "link-abs/new.txt",
    "dangling-abs",
    "dangling-rel",
    "chain1",
    "dangling-dir/x.txt",
    "linkdir/dangling",
    "loop",
    "loopa",
    "loop/below.txt",
    "up-missing",
    "plain.txt/x",
    "link-to-file",
    "a b.txt",
    "",
  ];
  const direct = (abs: string) => {
    try {
      return resolveReal(abs);
    } catch {
      return "throws";
    }
  };
  const shared = (facts: PathFacts, abs: string) => {
    try {
      return facts.real(abs);
    } catch {
      return "throws";
    }
  };

  test("each path, on fresh facts and on facts shared with every other path in either order", () => {
    const paths = rels.map((r) => (r === "" ? fx.ws : join(fx.ws, r)));
    const forward = new PathFacts();
    const backward = new PathFacts();
    const answers = paths.map((p) => shared(forward, p));
    const reversed = [...paths]
      .reverse()
      .map((p) => shared(backward, p))
      .reverse();
    paths.forEach((p, i) => {
      const expected = direct(p);
      assert.deepEqual(shared(new PathFacts(), p), expected, p);
      assert.deepEqual(answers[i], expected, `${p} (shared, forward)`);
      assert.deepEqual(reversed[i], expected, `${p} (shared, backward)`);
    });
  });

  test("directories given as known keep their real form, and are still looked up", () => {
    const facts = new PathFacts(new Map([[fx.ws, fx.ws]]));
    assert.deepEqual(facts.real(join(fx.ws, "sub", "entry-sub")), resolveReal(join(fx.ws, "sub", "entry-sub")));
    assert.ok(facts.calls >= 1, "the known directory itself is checked");
    const missing = new PathFacts(new Map([[join(fx.root, "gone"), join(fx.root, "gone")]]));
    assert.deepEqual(missing.real(join(fx.root, "gone", "x")), { real: join(fx.root, "gone", "x"), exists: false });
  });

  test("a listing's entry kinds spare their look-ups; symlinks are still followed", () => {
    const facts = new PathFacts();
    const names = facts.list(fx.ws) ?? [];
    assert.ok(names.includes("plain.txt") && names.includes("linkout"));
    const before = facts.calls;
    assert.equal(facts.kind(join(fx.ws, "sub")), "directory");
    assert.equal(facts.kind(join(fx.ws, "linkout")), "symlink");
    assert.equal(facts.calls, before, "kinds come from the listing");
    assert.equal(facts.target(join(fx.ws, "linkout")), "directory");
    assert.deepEqual(facts.real(join(fx.ws, "linkout", "o.txt")), resolveReal(join(fx.ws, "linkout", "o.txt")));
    assert.equal(facts.list(join(fx.ws, "nope")), null);
  });

  test("link counts of regular files, through symlinks; none for directories", () => {
    const facts = new PathFacts();
    linkSync(join(fx.outside, "target.txt"), join(fx.ws, "hard-target.txt"));
    assert.equal(facts.fileLinks(join(fx.ws, "hard-target.txt")), 2);
    assert.equal(facts.fileLinks(join(fx.ws, "link-to-file")), 2, "the symlink leads to the same file");
    assert.equal(facts.fileLinks(join(fx.ws, "plain.txt")), 1);
    assert.equal(facts.fileLinks(join(fx.ws, "sub")), undefined);
    assert.equal(facts.fileLinks(join(fx.ws, "missing")), undefined);
  });

  test("physical walks match resolvePhysical", () => {
    const facts = new PathFacts();
    for (const rel of ["link-abs/../outside/o.txt", "sub/../plain.txt", `${fx.ws}/link-abs/../ws/plain.txt`, "missing/../plain.txt", "linkdir/../ws/sub"]) {
      let expected: unknown;
      try {
        expected = resolvePhysical(fx.ws, rel);
      } catch {
        expected = "throws";
      }
      let got: unknown;
      try {
        got = facts.physical(fx.ws, rel);
      } catch {
        got = "throws";
      }
      assert.deepEqual(got, expected, rel);
    }
  });
});

describe("the gate names the file Pi's write tool writes", () => {
  const cases: WriteCase[] = [
    { input: "plain-new.txt", lands: "ws/plain-new.txt" },
    { input: "plain.txt", lands: "ws/plain.txt" },
    { input: "./dot/slash.txt", lands: "ws/dot/slash.txt" },
    { input: "a/b/../c.txt", lands: "ws/a/c.txt" },
    { input: "../outside/escape.txt", lands: "outside/escape.txt" },
    { input: "../ws-evil/prefix.txt", lands: "ws-evil/prefix.txt" },
    { input: "ABS:outside/abs.txt", lands: "outside/abs.txt" },
    { input: "~/home-file.txt", lands: "home/home-file.txt", home: true },
    { input: "@~/at-home.txt", lands: "home/at-home.txt", home: true },
    { input: "~/new/dir/f.txt", lands: "home/new/dir/f.txt", home: true },
    { input: "@at.txt", lands: "ws/at.txt" },
    { input: "@@double.txt", lands: "ws/@double.txt" },
    { input: "nb\u00A0space.txt", lands: "ws/nb space.txt" },
    { input: "\u3000ideo\u2003.txt", lands: "ws/ ideo .txt" },
    { input: "FILEURL:ws/url%20enc.txt", lands: "ws/url enc.txt" },
    { input: "FILE:///x.txt", lands: "ws/FILE:/x.txt" },
    { input: "trail/", lands: "ws/trail" },
    { input: "caf\u00E9-new.txt", lands: "ws/caf\u00E9-new.txt" },
    { input: "cafe\u0301-new.txt", lands: "ws/cafe\u0301-new.txt" },
    { input: "new/deep/missing/file.txt", lands: "ws/new/deep/missing/file.txt" },
    { input: "linkout/escaped.txt", lands: "outside/escaped.txt" },
    { input: "linkout/new/deep.txt", lands: "outside/new/deep.txt" },
    { input: "link-abs/abs-link.txt", lands: "outside/abs-link.txt" },
    { input: "linkdir/../x.txt", lands: "ws/x.txt" },
    { input: "link-to-file", lands: "outside/target.txt" },
    { input: "dangling-abs", lands: "outside/created-abs.txt" },
    { input: "dangling-rel", lands: "outside/created-rel.txt" },
    { input: "chain1", lands: "outside/created-chain.txt" },
    { input: "linkdir/dangling", lands: "x-from-other.txt" },
    { input: "@linkdir/dangling", lands: "x-from-other.txt" },
    { input: "dangling-dir/x.txt", lands: undefined },
    { input: "up-missing", lands: undefined },
    { input: "loop", lands: undefined },
    { input: "loopa/x.txt", lands: undefined },
    { input: "plain.txt/x", lands: undefined },
    { input: "pl\0ain.txt", lands: undefined },
    { input: "~", lands: undefined, home: true },
  ];

  cases.forEach((c, i) => {
    test(`write ${JSON.stringify(c.input)} -> ${c.lands ?? "(Pi fails)"}`, async () => {
      const fx = fixture();
      const input = c.input.startsWith("ABS:")
        ? join(fx.root, c.input.slice(4))
        : c.input.startsWith("FILEURL:")
          ? pathToFileURL(join(fx.root, c.input.slice(8).replace(/%20/g, " "))).href
          : c.input;
      const marker = `marker-${i}-${c.input}`;
      const gate = (() => {
        const r = buildRequest("write", { path: input, content: marker }, fx.ws, fx.home);
        assert.ok(r.ok);
        return r.request.paths[0];
      })();
      let seen: string | undefined;
      let seenDir: string | undefined;
      const tool = createWriteToolDefinition(fx.ws, {
        operations: {
          mkdir: (d) => {
            seenDir = d;
            return mkdir(d, { recursive: true }).then(() => undefined);
          },
          writeFile: (p, content) => {
            seen = p;
            return writeFile(p, content, "utf-8");
          },
        },
      });
      let error: unknown;
      await withHome(fx.home, async () => {
        try {
          await tool.execute("call", { path: input, content: marker }, undefined, undefined, NO_CTX);
        } catch (e) {
          error = e;
        }
      });
      const landed = filesWithContent(fx.root, marker);
      if (c.lands === undefined) {
        assert.ok(error, "Pi's write was expected to fail");
        assert.deepEqual(landed, []);
        // The gate names nothing (a path it cannot resolve either) or the path Pi tried.
        if (gate) {
          assert.equal(dirname(gate.lexical), seenDir);
          if (seen !== undefined) assert.equal(gate.lexical, seen);
        }
        return;
      }
      assert.equal(error, undefined, `Pi's write failed: ${String(error)}`);
      assert.deepEqual(
        landed.map((p) => relative(fx.root, p)),
        [c.lands],
      );
      assert.ok(gate, "the gate resolved no path");
      assert.equal(gate.lexical, seen, "the gate's lexical path is the path Pi wrote to");
      assert.equal(gate.real, landed[0], "the gate's real path is the file that changed");
    });
  });

  test("a cwd with a Unicode space is used as is (only the argument's spaces are normalized)", async () => {
    const root = tempRoot();
    const cwd = join(root, "w\u00A0s");
    mkdirSync(cwd);
    mkdirSync(join(root, "w s"));
    const r = buildRequest("write", { path: "f\u00A0x.txt", content: "nbsp-cwd" }, cwd, root);
    assert.ok(r.ok);
    await createWriteToolDefinition(cwd).execute("call", { path: "f\u00A0x.txt", content: "nbsp-cwd" }, undefined, undefined, NO_CTX);
    const landed = filesWithContent(root, "nbsp-cwd");
    assert.deepEqual(landed, [join(cwd, "f x.txt")]);
    assert.equal(r.request.paths[0]!.real, landed[0]);
  });
});

describe("the gate names the file Pi's read tool reads", () => {
  const cases: Array<{ input: string; reads: string | undefined }> = [
    { input: "plain.txt", reads: "ws/plain.txt" },
    { input: "./plain.txt", reads: "ws/plain.txt" },
    { input: "@plain.txt", reads: "ws/plain.txt" },
    { input: "sub/../plain.txt", reads: "ws/plain.txt" },
    { input: "FILEURL:ws/plain.txt", reads: "ws/plain.txt" },
    { input: "~/h.txt", reads: "home/h.txt" },
    { input: "@~/h.txt", reads: "home/h.txt" },
    { input: "../outside/o.txt", reads: "outside/o.txt" },
    { input: "linkout/o.txt", reads: "outside/o.txt" },
    { input: "link-to-file", reads: "outside/target.txt" },
    { input: "Screenshot 2024-01-01 at 10.00.00 AM.txt", reads: "ws/Screenshot 2024-01-01 at 10.00.00\u202FAM.txt" },
    { input: "caf\u00E9.txt", reads: "ws/cafe\u0301.txt" },
    { input: "d'accord.txt", reads: "ws/d\u2019accord.txt" },
    { input: "Capture d'\u00E9cran.txt", reads: "ws/Capture d\u2019e\u0301cran.txt" },
    { input: "a\u00A0b.txt", reads: "ws/a b.txt" },
    { input: "caf\u00E9-both.txt", reads: "ws/caf\u00E9-both.txt" },
    { input: "cafe\u0301-both.txt", reads: "ws/cafe\u0301-both.txt" },
    { input: "missing.txt", reads: undefined },
    { input: "dangling-abs", reads: undefined },
    { input: "loop", reads: undefined },
    { input: "pl\0ain.txt", reads: undefined },
  ];

  for (const c of cases) {
    test(`read ${JSON.stringify(c.input)} -> ${c.reads ?? "(Pi fails)"}`, async () => {
      const fx = fixture();
      const input = c.input.startsWith("FILEURL:") ? pathToFileURL(join(fx.root, c.input.slice(8))).href : c.input;
      const gate = requestPath("read", { path: input }, fx);
      let seen: string | undefined;
      const tool = createReadToolDefinition(fx.ws, {
        operations: {
          access: (p) => {
            seen = p;
            return access(p);
          },
          readFile: (p) => readFile(p),
        },
      });
      let text: string | undefined;
      let error: unknown;
      await withHome(fx.home, async () => {
        try {
          const result = await tool.execute("call", { path: input }, undefined, undefined, NO_CTX);
          const first = result.content[0];
          text = first?.type === "text" ? first.text : undefined;
        } catch (e) {
          error = e;
        }
      });
      if (c.reads === undefined) {
        assert.ok(error, "Pi's read was expected to fail");
        assert.ok(gate === undefined || !gate.exists);
        return;
      }
      assert.equal(error, undefined, `Pi's read failed: ${String(error)}`);
      assert.equal(text, readFileSync(join(fx.root, c.reads), "utf8"));
      assert.ok(gate);
      assert.equal(gate.lexical, seen, "the gate's lexical path is the path Pi opened");
      assert.equal(gate.real, join(fx.root, c.reads), "the gate's real path is the file Pi read");
      assert.equal(gate.exists, true);
    });
  }
});

describe("the gate names the file Pi's edit tool changes", () => {
  const cases: Array<{ input: string; edits: string | undefined }> = [
    { input: "plain.txt", edits: "ws/plain.txt" },
    { input: "@plain.txt", edits: "ws/plain.txt" },
    { input: "~/h.txt", edits: "home/h.txt" },
    { input: "linkout/o.txt", edits: "outside/o.txt" },
    { input: "link-to-file", edits: "outside/target.txt" },
    { input: "a\u00A0b.txt", edits: "ws/a b.txt" },
    { input: "FILEURL:ws/plain.txt", edits: "ws/plain.txt" },
    // Edit has no macOS fallbacks: the NFC name is missing, so the edit fails and the gate names the NFC path.
    { input: "caf\u00E9.txt", edits: undefined },
    { input: "d'accord.txt", edits: undefined },
  ];

  for (const c of cases) {
    test(`edit ${JSON.stringify(c.input)} -> ${c.edits ?? "(Pi fails)"}`, async () => {
      const fx = fixture();
      const input = c.input.startsWith("FILEURL:") ? pathToFileURL(join(fx.root, c.input.slice(8))).href : c.input;
      const gate = requestPath("edit", { path: input, edits: [] }, fx);
      const before = c.edits ? readFileSync(join(fx.root, c.edits), "utf8") : "read-nfd";
      let seen: string | undefined;
      const tool = createEditToolDefinition(fx.ws, {
        operations: {
          access: (p) => access(p),
          readFile: (p) => readFile(p),
          writeFile: (p, content) => {
            seen = p;
            return writeFile(p, content, "utf-8");
          },
        },
      });
      let error: unknown;
      await withHome(fx.home, async () => {
        try {
          await tool.execute("call", { path: input, edits: [{ oldText: before, newText: `${before}-edited` }] }, undefined, undefined, NO_CTX);
        } catch (e) {
          error = e;
        }
      });
      assert.deepEqual(
        filesWithContent(fx.root, `${before}-edited`).map((p) => relative(fx.root, p)),
        c.edits ? [c.edits] : [],
      );
      assert.ok(gate);
      if (c.edits === undefined) {
        assert.ok(error);
        assert.equal(gate.exists, false);
        assert.equal(gate.lexical, resolveLikePi(input, fx.ws, fx.home));
        return;
      }
      assert.equal(error, undefined, `Pi's edit failed: ${String(error)}`);
      assert.equal(gate.lexical, seen);
      assert.equal(gate.real, join(fx.root, c.edits));
    });
  }
});

describe("the gate names the directory Pi's ls and find tools list", () => {
  // `entry` is a name only the expected directory holds.
  const cases: Array<{ path: string | undefined; lists: string; entry: string }> = [
    { path: undefined, lists: "ws", entry: "plain.txt" },
    { path: "", lists: "ws", entry: "plain.txt" },
    { path: ".", lists: "ws", entry: "plain.txt" },
    { path: "@sub", lists: "ws/sub", entry: "entry-sub" },
    { path: "sub/", lists: "ws/sub", entry: "entry-sub" },
    { path: "~", lists: "home", entry: "h.txt" },
    { path: "~/", lists: "home", entry: "h.txt" },
    { path: "linkout", lists: "outside", entry: "o.txt" },
    { path: "link-abs/", lists: "outside", entry: "o.txt" },
    // ".." is collapsed lexically before the file system sees the path: this lists ws, not root.
    { path: "@linkdir/..", lists: "ws", entry: "plain.txt" },
    { path: "..", lists: "", entry: "ws-evil" },
    { path: "FILEURL:ws/sub", lists: "ws/sub", entry: "entry-sub" },
  ];

  for (const c of cases) {
    test(`ls/find ${JSON.stringify(c.path)} -> ${c.lists || "(root)"}`, async () => {
      const fx = fixture();
      const path = c.path?.startsWith("FILEURL:") ? pathToFileURL(join(fx.root, c.path.slice(8))).href : c.path;
      const input = path === undefined ? {} : { path };
      const expected = join(fx.root, c.lists);
      let lsSeen: string | undefined;
      const ls = createLsToolDefinition(fx.ws, {
        operations: {
          exists: (p) => {
            lsSeen = p;
            return existsSync(p);
          },
          stat: (p) => stat(p),
          readdir: (p) => readdir(p),
        },
      });
      let findSeen: string | undefined;
      const find = createFindToolDefinition(fx.ws, {
        operations: {
          exists: (p) => existsSync(p),
          glob: (_pattern, cwd) => {
            findSeen = cwd;
            return [];
          },
        },
      });
      await withHome(fx.home, async () => {
        const listed = await ls.execute("call", input, undefined, undefined, NO_CTX);
        const first = listed.content[0];
        const names = first?.type === "text" ? first.text.split("\n").map((l) => l.replace(/\/$/, "")) : [];
        assert.ok(names.includes(c.entry), `ls listed ${names.join(", ")}`);
        const here = readdirSync(expected);
        assert.deepEqual(
          names.filter((n) => !here.includes(n)),
          [],
        );
        await find.execute("call", { pattern: "*", ...input }, undefined, undefined, NO_CTX);
      });
      for (const [tool, seen] of [
        ["ls", lsSeen],
        ["find", findSeen],
        ["grep", findSeen],
      ] as const) {
        const gate = requestPath(tool, tool === "ls" ? input : { pattern: "*", ...input }, fx);
        assert.ok(gate);
        assert.equal(gate.lexical, seen, `${tool}: the gate's lexical path is the directory Pi searched`);
        assert.equal(gate.real, realpathSync(expected));
      }
    });
  }
});

describe("protected paths and where a write lands", () => {
  const root = tempRoot();
  const ws = join(root, "ws");
  const tmp = join(root, "tmp");
  const home = join(root, "home");
  const agentDir = join(home, ".pi", "agent");
  for (const d of [ws, tmp, agentDir, join(root, "ws-evil"), join(root, "tmp-evil"), join(ws, ".git", "hooks"), join(ws, "safe")])
    mkdirSync(d, { recursive: true });
  put(join(ws, "src", "index.ts"), "x");
  symlinkSync(".git", join(ws, "docs-link"));
  symlinkSync("safe", join(ws, ".pi"));
  symlinkSync(tmp, join(ws, "tmp-link"));
  symlinkSync("/etc", join(ws, "link-out"));
  put(join(root, "elsewhere", "data.txt"), "data");
  linkSync(join(root, "elsewhere", "data.txt"), join(ws, "hardlinked.txt"));
  const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir, selfPaths: selfPaths(agentDir) });
  const kind = (p: string) => {
    const lexical = resolveLikePi(p, ws, home);
    return classifyWrite(places, lexical, resolveReal(lexical).real);
  };

  const protectedInputs = [
    ".git",
    ".git/config",
    ".git/hooks/pre-commit",
    // (.pi/settings.json loads auto mode: it is self-protected, test/policy/self-disable.test.ts)
    ".pi/auto-mode.json",
    ".agents/notes.md",
    ".codex/config.toml",
    ".github/workflows/ci.yml",
    ".github/workflows",
    ".husky/pre-commit",
    ".vscode/settings.json",
    "AGENTS.md",
    "CLAUDE.md",
    "src/deep/er/AGENTS.md",
    "packages/a/CLAUDE.md",
    // case variants (case-insensitive file systems open the same file)
    ".GIT/config",
    ".Git/hooks/post-checkout",
    ".PI/x",
    ".Agents/x",
    ".CODEX/x",
    ".GitHub/Workflows/x.yml",
    ".Husky/x",
    ".VSCode/x",
    "agents.md",
    "Claude.MD",
    "src/Agents.Md",
    // spellings other file systems fold onto a protected name (HFS+ ignorable code points, Windows trailing dots)
    ".g\u200Cit/hooks/pre-commit",
    "\uFEFF.git/config",
    ".git./config",
    "AGENTS.md.",
    ".github/workflows /x.yml",
    // through symlinks: a benign name into .git, and a protected name that is a symlink
    "docs-link/hooks/pre-push",
    "tmp-link/.git/config",
    "tmp-link/AGENTS.md",
    // in the temporary root too
    `${tmp}/.git/hooks/x`,
    `${tmp}/proj/.github/workflows/x.yml`,
  ];
  for (const p of protectedInputs) {
    test(`protected: ${p}`, () => {
      assert.equal(kind(p).kind, "protected");
    });
  }

  const insideInputs: Array<[string, "workspace" | "tmp"]> = [
    ["src/new.ts", "workspace"],
    ["new/deep/missing/f.ts", "workspace"],
    [".github/dependabot.yml", "workspace"],
    [".github/workflows-old/x.yml", "workspace"],
    ["src/AGENTS.md.bak", "workspace"],
    ["my.git/x", "workspace"],
    [".gitignore", "workspace"],
    ["docs/agents.md.txt", "workspace"],
    ["tmp-link/scratch.txt", "tmp"],
    [`${tmp}/scratch/new.txt`, "tmp"],
  ];
  for (const [p, rootName] of insideInputs) {
    test(`inside the ${rootName} root and not protected: ${p}`, () => {
      const t = kind(p);
      assert.equal(t.kind, "inside");
      assert.equal((t as { root: string }).root, rootName);
    });
  }

  test("prefix collisions are outside: /ws-evil next to /ws, /tmp-evil next to /tmp", () => {
    assert.equal(kind("../ws-evil/x.ts").kind, "outside");
    assert.equal(kind(`${root}/tmp-evil/x`).kind, "outside");
    assert.equal(isWithin(ws, `${ws}-evil/x`), false);
    assert.equal(isWithin(ws, `${ws}/x`), true);
    assert.equal(isWithin(ws, ws), true);
    assert.equal(isWithin("/", "/x"), true);
  });

  test("symlink escapes are judged where they land", () => {
    assert.equal(kind("link-out/hosts").kind, "outside");
    assert.equal(kind("link-out/profile").kind, "persistence");
    assert.equal(kind("../elsewhere/new.txt").kind, "outside");
  });

  test("an existing file with other hard links may change a file outside: not a plain inside write", () => {
    assert.equal(kind("hardlinked.txt").kind, "hardlinked");
    assert.equal(kind("src/index.ts").kind, "inside");
  });

  test("persistence locations in the home directory and the agent dir", () => {
    assert.equal(kind("~/.bashrc").kind, "persistence");
    assert.equal(kind("~/.config/systemd/user/x.service").kind, "persistence");
  });

  test("auto mode's own files are self-protected", () => {
    assert.equal(kind(`${agentDir}/auto-mode.json`).kind, "self");
    assert.equal(kind(`${agentDir}/auto-mode/state.json`).kind, "self");
  });

  test("Pi's own files in the agent dir and the project's extensions are self-protected (denied, not reviewed)", () => {
    for (const p of [
      `${agentDir}/extensions/evil.ts`,
      `${agentDir}/models.json`,
      `${agentDir}/auth.json`,
      `${agentDir}/sessions/x.jsonl`,
      ".pi/extensions/x.ts",
    ])
      assert.equal(kind(p).kind, "self", p);
  });

  test("devices: raw disks are hard-denied, /dev/null is harmless", () => {
    assert.equal(kind("/dev/sda").kind, "raw-device");
    assert.equal(kind("/dev/nvme0n1").kind, "raw-device");
    assert.equal(kind("/dev/null").kind, "harmless-device");
  });

  test("identity secrets are matched both lexically and after symlinks", () => {
    mkdirSync(join(home, ".ssh"), { recursive: true });
    put(join(home, ".ssh", "id_ed25519"), "key");
    symlinkSync(join(home, ".ssh"), join(ws, "keys"));
    const lexical = resolveLikePi("keys/id_ed25519", ws, home);
    assert.equal(isIdentitySecret(places, lexical, resolveReal(lexical).real), true);
    assert.equal(isIdentitySecret(places, join(home, ".ssh"), join(home, ".ssh")), true);
    assert.equal(isIdentitySecret(places, join(home, ".sshx"), join(home, ".sshx")), false);
  });

  test("protectedComponent names the protected entry and ignores paths above the root", () => {
    assert.equal(protectedComponent(".github/workflows/ci.yml"), ".github/workflows");
    assert.equal(protectedComponent("a/.GIT/x"), "a/.git");
    assert.equal(protectedComponent("../.git"), undefined);
    assert.equal(protectedComponent(""), undefined);
    assert.equal(protectedComponent("src/index.ts"), undefined);
  });
});

describe("git directories a .git file points to", () => {
  test("a worktree's gitdir and its commondir are protected even where they are writable", () => {
    const root = tempRoot();
    const ws = join(root, "ws");
    const tmp = join(root, "tmp");
    // A separate git dir (git init --separate-git-dir) and a worktree git dir, both in the tmp root,
    // under names that are not ".git", so only the .git file makes them protected.
    const common = join(tmp, "sepgit");
    const wtGit = join(common, "wt-meta");
    mkdirSync(join(common, "hooks"), { recursive: true });
    mkdirSync(wtGit, { recursive: true });
    writeFileSync(join(wtGit, "commondir"), "..\n");
    mkdirSync(ws);
    writeFileSync(join(ws, ".git"), `gitdir: ${relative(ws, wtGit)}\n`);
    const home = join(root, "home");
    const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi/agent"), selfPaths: [] });
    assert.deepEqual([...places.gitDirs].sort(), [common, wtGit].sort());
    const kind = (p: string) => classifyWrite(places, p, resolveReal(p).real).kind;
    assert.equal(kind(join(common, "hooks", "pre-commit")), "protected");
    assert.equal(kind(join(wtGit, "HEAD")), "protected");
    assert.equal(kind(join(ws, ".git")), "protected");
    assert.equal(kind(join(tmp, "other.txt")), "inside");
  });

  test("an absolute gitdir, CRLF line ending, and a .git symlink", () => {
    const root = tempRoot();
    const ws = join(root, "ws");
    const tmp = join(root, "tmp");
    const gd = join(tmp, "g1");
    mkdirSync(gd, { recursive: true });
    mkdirSync(ws);
    writeFileSync(join(ws, ".git"), `gitdir: ${gd}\r\n`);
    const p1 = buildPlaces({ workspace: ws, tmpRoot: tmp, home: root, agentDir: join(root, "agent"), selfPaths: [] });
    assert.deepEqual(p1.gitDirs, [gd]);
    assert.equal(classifyWrite(p1, join(gd, "config"), join(gd, "config")).kind, "protected");

    const ws2 = join(root, "ws2");
    const gd2 = join(tmp, "g2");
    mkdirSync(gd2);
    mkdirSync(ws2);
    symlinkSync(gd2, join(ws2, ".git"));
    const p2 = buildPlaces({ workspace: ws2, tmpRoot: tmp, home: root, agentDir: join(root, "agent"), selfPaths: [] });
    assert.deepEqual(p2.gitDirs, [gd2]);
    assert.equal(classifyWrite(p2, join(gd2, "hooks/x"), join(gd2, "hooks/x")).kind, "protected");
  });
});

describe("a .git file that appears after the gate first ran", () => {
  test("its git dir is protected at the next call (git init --separate-git-dir into the tmp root)", () => {
    const root = tempRoot();
    const ws = join(root, "ws");
    const tmp = join(root, "tmp");
    const home = join(root, "home");
    const agentDir = join(home, ".pi", "agent");
    const sep = join(tmp, "sep");
    for (const d of [ws, join(sep, "hooks"), agentDir]) mkdirSync(d, { recursive: true });
    const setup = { cwd: ws, home, agentDir, defaultTmpRoot: tmp, selfPaths: selfPaths(agentDir) };
    const hook = { path: join(sep, "hooks", "pre-commit"), content: "#!/bin/sh\n" };
    assert.equal(decide("write", hook, prepareGate(setup), "sandboxed").decision.route, "allow");
    writeFileSync(join(ws, ".git"), `gitdir: ${sep}\n`);
    const d = decide("write", hook, prepareGate(setup), "sandboxed").decision;
    assert.deepEqual([d.route, d.reason], ["review", "protected-path"]);
    // And when the .git file is rewritten to point elsewhere.
    const other = join(tmp, "other");
    mkdirSync(join(other, "hooks"), { recursive: true });
    writeFileSync(join(ws, ".git"), `gitdir: ${other}\n`);
    const d2 = decide("write", { ...hook, path: join(other, "hooks", "pre-push") }, prepareGate(setup), "sandboxed").decision;
    assert.deepEqual([d2.route, d2.reason], ["review", "protected-path"]);
  });
});

describe("self-protection when the agent dir is reached through a symlink", () => {
  test("the real location of a config file that does not exist yet is still auto mode's own", () => {
    const root = tempRoot();
    const home = join(root, "home");
    const realAgent = join(root, "data", "pi-agent");
    mkdirSync(realAgent, { recursive: true });
    mkdirSync(join(home, ".pi"), { recursive: true });
    symlinkSync(realAgent, join(home, ".pi", "agent"));
    const agentDir = join(home, ".pi", "agent");
    const ws = join(root, "ws");
    mkdirSync(ws);
    const places = buildPlaces({ workspace: ws, tmpRoot: join(root, "tmp"), home, agentDir, selfPaths: selfPaths(agentDir) });
    const viaReal = join(realAgent, "auto-mode.json");
    assert.equal(existsSync(viaReal), false);
    assert.equal(classifyWrite(places, viaReal, resolveReal(viaReal).real).kind, "self");
    const viaLink = join(agentDir, "auto-mode.json");
    assert.equal(classifyWrite(places, viaLink, resolveReal(viaLink).real).kind, "self");
  });
});

describe("the gate's decision for odd paths", () => {
  const fx = fixture();
  const agentDir = join(fx.home, ".pi", "agent");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(join(fx.ws, ".git", "hooks"), { recursive: true });
  const gate = prepareGate({ cwd: fx.ws, home: fx.home, agentDir, defaultTmpRoot: join(fx.root, "tmp"), selfPaths: selfPaths(agentDir) });
  const routeOf = (tool: string, input: Record<string, unknown>) => decide(tool, input, gate, "sandboxed").decision;

  test("a write inside the workspace is allowed; every escape is reviewed", () => {
    assert.equal(routeOf("write", { path: "src/new.ts", content: "" }).route, "allow");
    for (const path of ["dangling-abs", "dangling-rel", "chain1", "linkdir/dangling", "linkout/x", "../ws-evil/x", "link-to-file"]) {
      const d = routeOf("write", { path, content: "" });
      assert.equal(d.route, "review", path);
      assert.equal(d.reason, "outside-writable-roots", path);
    }
  });

  test("unresolvable paths (NUL, loops, '..' below a missing dir) are malformed, never allowed", () => {
    for (const path of ["a\0b", "loop", "loopa/x", "up-missing", "plain.txt/x"]) {
      for (const tool of ["write", "edit", "read"]) {
        const input = tool === "edit" ? { path, edits: [{ oldText: "a", newText: "b" }] } : tool === "write" ? { path, content: "" } : { path };
        const d = routeOf(tool, input);
        assert.equal(d.route, "review", `${tool} ${JSON.stringify(path)}`);
        assert.equal(d.reason, "malformed-input");
      }
    }
  });

  test("an empty path names no file to read, write or edit: malformed; the listing tools read it as their default '.'", () => {
    for (const tool of ["write", "edit", "read"]) {
      const input = tool === "edit" ? { path: "", edits: [{ oldText: "a", newText: "b" }] } : tool === "write" ? { path: "", content: "x" } : { path: "" };
      const d = routeOf(tool, input);
      assert.deepEqual([d.route, d.reason], ["review", "malformed-input"], tool);
    }
    for (const tool of ["ls", "find", "grep"]) {
      const input = tool === "ls" ? { path: "" } : { path: "", pattern: "x" };
      assert.deepEqual(routeOf(tool, input).route, routeOf(tool, { ...input, path: "." }).route, tool);
    }
  });

  test("every edit form Pi accepts is judged by its path; what Pi rejects stays malformed", () => {
    const forms = [{ oldText: "a", newText: "b" }, { edits: '[{"oldText":"a","newText":"b"}]' }, { edits: { oldText: "a", newText: "b" } }];
    for (const form of forms) {
      assert.equal(routeOf("edit", { path: "src/util.ts", ...form }).route, "allow", JSON.stringify(form));
      assert.deepEqual([routeOf("edit", { path: ".git/config", ...form }).reason], ["protected-path"], JSON.stringify(form));
    }
    for (const bad of [{ edits: "not json" }, { edits: [] }, {}])
      assert.equal(routeOf("edit", { path: "src/util.ts", ...bad }).reason, "malformed-input", JSON.stringify(bad));
  });

  test("spellings a case-insensitive file system folds together reach auto mode's files and secrets", () => {
    for (const path of ["~/.pi/agent/AUTO-MODE.json", "~/.pi/Agent/auto-mode/state.json", "~/.pi/agent/auto-mode.json.", "~/.pi/agent/auto-\u200Cmode.json"])
      assert.equal(routeOf("write", { path, content: "{}" }).reason, "self-protection", path);
    assert.equal(routeOf("read", { path: "~/.SSH/id_ed25519" }).reason, "identity-secret");
    assert.equal(routeOf("read", { path: "~/.ssh-notes.txt" }).reason, "read-only");
  });

  test("a thread's environment is as secret as the process's", () => {
    for (const path of ["/proc/self/environ", "/proc/self/task/1/environ", "/proc/1/task/1/environ", "file:///proc/thread-self/environ"])
      assert.equal(routeOf("read", { path }).reason, "identity-secret", path);
  });

  test("a write to the git hooks is reviewed as a protected path", () => {
    const d = routeOf("write", { path: ".git/hooks/pre-commit", content: "" });
    assert.deepEqual([d.route, d.reason], ["review", "protected-path"]);
  });

  test("resolveReadLikePi only differs from resolveLikePi when the plain path is missing", () => {
    assert.equal(resolveReadLikePi("plain.txt", fx.ws, fx.home), join(fx.ws, "plain.txt"));
    assert.equal(resolveReadLikePi("caf\u00E9-both.txt", fx.ws, fx.home), join(fx.ws, "caf\u00E9-both.txt"));
    assert.equal(resolveReadLikePi("caf\u00E9.txt", fx.ws, fx.home), join(fx.ws, "cafe\u0301.txt"));
    assert.equal(resolveReadLikePi("nothing.txt", fx.ws, fx.home), join(fx.ws, "nothing.txt"));
  });
});
