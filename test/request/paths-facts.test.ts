// PathFacts' shortcuts, each against the file system it may not judge stale: a listing's entry
// kinds are read lazily but only within the call that listed (or validated) the directory; a
// link count is read from the file at every call, whatever its directory's stamp says; and
// resolveReal looks a path's own entry up once. Each test fills the kept entries on a settled
// directory (so that the next PathFacts is answered from them), changes the file system as an
// attack would, and asks again.

import assert from "node:assert/strict";
import fs, { linkSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, mock, test } from "node:test";
import { type EntryKind, PathFacts, resolveReal } from "../../src/request/paths.ts";

let root: string;
let dir: string;
let secret: string;
const made: string[] = [];

/** Times a directory is given before and after a change: the same second, so only its ctime can tell. */
const PINNED = 1_700_000_000;

/** A directory whose change is older than the file system's time resolution (stamps.ts `settled`). */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 120));
}

function freshRoot(): string {
  const r = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-paths-facts-")));
  made.push(r);
  return r;
}

/** root/ws/d with files, a subdirectory and symlinks; root/home/.ssh/id_ed25519 as the secret. */
function build(r: string): { dir: string; secret: string } {
  const d = join(r, "ws", "d");
  mkdirSync(join(d, "sub"), { recursive: true });
  mkdirSync(join(r, "home", ".ssh"), { recursive: true });
  const s = join(r, "home", ".ssh", "id_ed25519");
  writeFileSync(s, "-----BEGIN OPENSSH PRIVATE KEY-----\n");
  writeFileSync(join(d, "a.ts"), "a\n");
  writeFileSync(join(d, "b.ts"), "b\n");
  writeFileSync(join(d, "sub", "c.ts"), "c\n");
  symlinkSync(s, join(d, "key-link"));
  symlinkSync("sub", join(d, "sub-link"));
  symlinkSync("missing-target", join(d, "dangling"));
  return { dir: d, secret: s };
}

before(async () => {
  root = freshRoot();
  ({ dir, secret } = build(root));
  await settle();
});
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function directKind(p: string): EntryKind | undefined | "throws" {
  try {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st) return undefined;
    return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "other";
  } catch {
    return "throws";
  }
}
function directReal(p: string): unknown {
  try {
    return resolveReal(p);
  } catch {
    return "throws";
  }
}
function directLinks(p: string): number | undefined {
  const st = statSync(p, { throwIfNoEntry: false });
  return st?.isFile() ? st.nlink : undefined;
}
function sharedReal(f: PathFacts, p: string): unknown {
  try {
    return f.real(p);
  } catch {
    return "throws";
  }
}
function sharedKind(f: PathFacts, p: string): EntryKind | undefined | "throws" {
  try {
    return f.kind(p);
  } catch {
    return "throws";
  }
}

/** Every question PathFacts answers, for `p`, against the same question put to the file system directly. */
function assertSameAsDirect(f: PathFacts, p: string, label: string): void {
  assert.equal(sharedKind(f, p), directKind(p), `${label}: kind of ${p}`);
  assert.deepEqual(sharedReal(f, p), directReal(p), `${label}: real form of ${p}`);
  const real = directReal(p);
  const leads = typeof real === "object" && real !== null && (real as { exists: boolean }).exists ? directKind((real as { real: string }).real) : undefined;
  assert.equal(f.target(p), leads, `${label}: what ${p} leads to`);
  assert.equal(f.fileLinks(p), directLinks(p), `${label}: link count of ${p}`);
}

const NAMES = ["a.ts", "b.ts", "sub", "sub/c.ts", "key-link", "sub-link", "sub-link/c.ts", "dangling", "missing.ts", "missing/x.ts", "a.ts/x"];

describe("PathFacts after listings: the same answers as direct look-ups", () => {
  for (const order of ["listed first", "looked up first"] as const) {
    test(`cold and warm (answered from the kept entries), ${order}`, () => {
      for (const label of ["cold", "warm", "warm again"]) {
        const f = new PathFacts();
        const paths = NAMES.map((n) => join(dir, n));
        if (order === "looked up first") for (const p of paths) sharedKind(f, p);
        assert.deepEqual([...(f.list(dir) ?? [])].sort(), ["a.ts", "b.ts", "dangling", "key-link", "sub", "sub-link"]);
        assert.deepEqual(f.list(join(dir, "sub")), ["c.ts"]);
        for (const p of paths) assertSameAsDirect(f, p, `${label}, ${order}`);
      }
    });
  }

  test("a listed name's kind costs no look-up, nor does a name the listing lacks (warm)", () => {
    new PathFacts().list(dir);
    const f = new PathFacts();
    f.real(dir);
    f.list(dir);
    const before = f.calls;
    assert.equal(f.kind(join(dir, "a.ts")), "file");
    assert.equal(f.kind(join(dir, "key-link")), "symlink");
    assert.deepEqual(f.real(join(dir, "missing.ts")), { real: join(dir, "missing.ts"), exists: false });
    assert.equal(f.calls, before);
    // What a symlink leads to is still resolved, and a link count still read from the file.
    assert.equal(f.target(join(dir, "key-link")), "file");
    assert.deepEqual(f.real(join(dir, "key-link")), { real: secret, exists: true });
    assert.ok(f.calls > before);
    const afterLink = f.calls;
    assert.equal(f.fileLinks(join(dir, "a.ts")), 1);
    assert.equal(f.calls, afterLink + 1, "one lstat of the file for its link count");
  });
});

describe("nothing a listing told outlives the call", () => {
  test("a listed file replaced by a symlink to the secret, the directory's mtime put back", async () => {
    const r = freshRoot();
    const { dir: d, secret: s } = build(r);
    utimesSync(d, PINNED, PINNED);
    await settle();
    for (let i = 0; i < 2; i++) {
      const f = new PathFacts();
      f.list(d);
      assert.equal(f.kind(join(d, "a.ts")), "file");
    }
    const st = statSync(d);
    renameSync(join(d, "a.ts"), join(r, "a.old"));
    symlinkSync(s, join(d, "a.ts"));
    utimesSync(d, PINNED, PINNED);
    assert.deepEqual([statSync(d).mtimeMs, statSync(d).size], [st.mtimeMs, st.size], "the directory's mtime and size are back");
    const f = new PathFacts();
    assert.ok(f.list(d)?.includes("a.ts"));
    assert.equal(f.kind(join(d, "a.ts")), "symlink");
    assert.deepEqual(f.real(join(d, "a.ts")), { real: s, exists: true });
    assert.equal(f.fileLinks(join(d, "a.ts")), 1, "the secret's own count, through the link");
  });

  test("a listed file replaced by a symlink, asked by a call that does not list the directory", async () => {
    const r = freshRoot();
    const { dir: d, secret: s } = build(r);
    await settle();
    for (let i = 0; i < 2; i++) {
      const f = new PathFacts();
      f.list(d);
      assert.equal(f.kind(join(d, "b.ts")), "file");
    }
    renameSync(join(d, "b.ts"), join(r, "b.old"));
    symlinkSync(s, join(d, "b.ts"));
    const f = new PathFacts();
    assert.equal(f.kind(join(d, "b.ts")), "symlink");
    assert.equal(f.target(join(d, "b.ts")), "file");
    assert.deepEqual(f.real(join(d, "b.ts")), { real: s, exists: true });
  });

  test("a directory replaced by a symlink to ~/.ssh: its new listing is the secret's directory", async () => {
    const r = freshRoot();
    const { dir: d } = build(r);
    await settle();
    for (let i = 0; i < 2; i++) {
      const f = new PathFacts();
      f.list(d);
      f.list(join(d, "sub"));
    }
    renameSync(join(d, "sub"), join(r, "sub.old"));
    symlinkSync(join(r, "home", ".ssh"), join(d, "sub"));
    const f = new PathFacts();
    assert.equal(f.kind(join(d, "sub")), "symlink");
    const real = f.real(join(d, "sub"));
    assert.deepEqual(real, { real: join(r, "home", ".ssh"), exists: true });
    assert.deepEqual(f.list(real.real), ["id_ed25519"]);
  });

  test("a new entry (a hard link to the secret) is listed, and has its own link count", async () => {
    const r = freshRoot();
    const { dir: d, secret: s } = build(r);
    utimesSync(d, PINNED, PINNED);
    await settle();
    for (let i = 0; i < 2; i++) new PathFacts().list(d);
    linkSync(s, join(d, "new.ts"));
    utimesSync(d, PINNED, PINNED);
    assert.equal(statSync(d).mtimeMs, PINNED * 1000, "the directory's mtime is back");
    const f = new PathFacts();
    assert.ok(f.list(d)?.includes("new.ts"), "the new name is in the listing");
    assert.equal(f.kind(join(d, "new.ts")), "file");
    assert.equal(f.fileLinks(join(d, "new.ts")), 2);
  });

  test("an entry looked up during the call answers over the kind its listing gave", async () => {
    const r = freshRoot();
    const { dir: d, secret: s } = build(r);
    await settle();
    const f = new PathFacts();
    f.list(d);
    renameSync(join(d, "b.ts"), join(r, "b.old"));
    symlinkSync(s, join(d, "b.ts"));
    assert.equal(f.lstat(join(d, "b.ts"))?.isSymbolicLink(), true);
    assert.equal(f.kind(join(d, "b.ts")), "symlink");
  });
});

describe("link counts are read from the file at every call", () => {
  test("a workspace file that gains a hard link elsewhere, its directory unchanged", async () => {
    const r = freshRoot();
    const { dir: d } = build(r);
    await settle();
    for (let i = 0; i < 2; i++) {
      const f = new PathFacts();
      f.list(d);
      assert.equal(f.fileLinks(join(d, "a.ts")), 1);
    }
    const st = statSync(d);
    linkSync(join(d, "a.ts"), join(r, "home", "elsewhere"));
    const now = statSync(d);
    assert.deepEqual([now.mtimeMs, now.ctimeMs, now.nlink, now.size], [st.mtimeMs, st.ctimeMs, st.nlink, st.size], "the directory's stamp did not move");
    const f = new PathFacts();
    f.list(d);
    assert.equal(f.fileLinks(join(d, "a.ts")), 2);
  });
});

describe("resolveReal looks the path's own entry up once", () => {
  /** The lstat and realpath calls fn makes (paths.ts imports them by name: the ESM bindings are synced). */
  function counted(fn: () => unknown): { lstat: string[]; realpath: string[] } {
    const seen = { lstat: [] as string[], realpath: [] as string[] };
    const realLstat = fs.lstatSync;
    const realNative = fs.realpathSync.native;
    const lstatMock = mock.method(fs, "lstatSync", (p: string, o?: object) => {
      seen.lstat.push(p);
      return realLstat(p, o as never);
    });
    const nativeMock = mock.method(fs.realpathSync, "native", (p: string) => {
      seen.realpath.push(p);
      return realNative(p);
    });
    syncBuiltinESMExports();
    try {
      fn();
    } finally {
      lstatMock.mock.restore();
      nativeMock.mock.restore();
      syncBuiltinESMExports();
    }
    return seen;
  }

  test("a new file: its own lstat, its directory's, and one realpath", () => {
    const p = join(dir, "new.ts");
    let got: unknown;
    const seen = counted(() => {
      got = resolveReal(p);
    });
    assert.deepEqual(got, { real: p, exists: false });
    assert.deepEqual(seen.lstat, [p, dir]);
    assert.deepEqual(seen.realpath, [dir]);
  });

  test("an existing file: one lstat, one realpath", () => {
    const p = join(dir, "a.ts");
    const seen = counted(() => resolveReal(p));
    assert.deepEqual(seen, { lstat: [p], realpath: [p] });
  });

  test("a dangling symlink is still followed to the file a write would create, also below it", () => {
    assert.deepEqual(resolveReal(join(dir, "dangling")), { real: join(dir, "missing-target"), exists: false });
    assert.deepEqual(resolveReal(join(dir, "key-link")), { real: secret, exists: true });
    assert.throws(() => resolveReal(join(dir, "a.ts", "x")));
  });
});
