// The read-only git reader (src/sandbox/effects/git) against real repositories made with the git CLI:
// every answer is compared with git's own (cat-file, rev-parse, ls-files, for-each-ref,
// merge-base --is-ancestor, rev-list), for loose and packed objects (deltas, delta chains,
// REF_DELTA in the same pack and across object directories, 64-bit offsets), index versions 2-4,
// sha256 repositories, packed and loose refs, commit walks; and malformed data must read as absent.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { crc32, deflateSync } from "node:zlib";
import { commitsBetween, isAncestor, peelToCommit, reachableFromAny } from "../../src/sandbox/effects/git/history.ts";
import { parseIndexFile, readIndex, sameEntries, type GitIndex } from "../../src/sandbox/effects/git/index-file.ts";
import {
  applyDelta,
  hashObject,
  MAX_OBJECT_SIZE,
  openObjectStore,
  parseCommit,
  parseTree,
  treeEntryAt,
  type ObjectFormat,
  type ObjectStore,
  type ObjectType,
} from "../../src/sandbox/effects/git/objects.ts";
import { objectFormat, readRefs, reflogOids } from "../../src/sandbox/effects/git/refs.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-git-")));
after(() => rmSync(root, { recursive: true, force: true }));
const home = join(root, "home");
mkdirSync(home);

// Git sees only what the test sets: no system or user config, no GIT_* from a surrounding hook.
const baseEnv: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GIT_")));
Object.assign(baseEnv, { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), GIT_CONFIG_NOSYSTEM: "1", LC_ALL: "C", TZ: "UTC" });
const CONFIG = [
  ["user.name", "t"],
  ["user.email", "t@t"],
  ["init.defaultBranch", "main"],
  ["gc.auto", "0"],
  ["maintenance.auto", "false"],
  ["commit.gpgSign", "false"],
  ["core.autocrlf", "false"],
  ["core.quotePath", "false"],
  ["advice.detachedHead", "false"],
].flatMap(([k, v]) => ["-c", `${k}=${v}`]);

let clock = 1_700_000_000;

function gitBuf(cwd: string, args: readonly string[], opts: { input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): Buffer {
  return execFileSync("git", [...CONFIG, ...args], {
    cwd,
    env: { ...baseEnv, ...opts.env },
    input: opts.input,
    maxBuffer: 1 << 30,
    stdio: ["pipe", "pipe", "pipe"],
  });
}

function git(cwd: string, ...args: string[]): string {
  return gitBuf(cwd, args).toString("utf8").replace(/\n$/, "");
}

function gitOk(cwd: string, ...args: string[]): boolean {
  return spawnSync("git", [...CONFIG, ...args], { cwd, env: baseEnv, stdio: "ignore" }).status === 0;
}

/** A commit at a chosen (or the next) time, so walks by date are deterministic. */
function commit(cwd: string, message: string, time = (clock += 60)): string {
  const date = `${time} +0100`;
  gitBuf(cwd, ["commit", "-q", "--allow-empty", "-m", message], { env: { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } });
  return git(cwd, "rev-parse", "HEAD");
}

let repoCount = 0;
function newRepo(format: ObjectFormat = "sha1"): string {
  const dir = join(root, `repo${repoCount++}`);
  mkdirSync(dir);
  git(dir, "init", "-q", `--object-format=${format}`);
  return dir;
}

function write(repo: string, rel: string, content: string | Buffer): void {
  const path = join(repo, rel);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, content);
}

type Obj = { type: ObjectType; data: Buffer };

/** Every object of the repository as git reads it: `cat-file --batch-all-objects --batch`. */
function allObjects(repo: string): Map<string, Obj> {
  const out = gitBuf(repo, ["cat-file", "--batch-all-objects", "--batch"]);
  const objects = new Map<string, Obj>();
  let p = 0;
  while (p < out.length) {
    const nl = out.indexOf(10, p);
    const [oid, type, size] = out.toString("latin1", p, nl).split(" ");
    const start = nl + 1;
    objects.set(oid!, { type: type as ObjectType, data: out.subarray(start, start + Number(size)) });
    p = start + Number(size) + 1;
  }
  return objects;
}

function objectsDir(repo: string): string {
  return join(repo, ".git", "objects");
}

/** Reads every object git knows through the store and checks type and bytes; returns the count. */
function compareAll(repo: string, store: ObjectStore): number {
  const expected = allObjects(repo);
  assert.ok(expected.size > 0);
  for (const [oid, want] of expected) {
    const got = store.read(oid);
    assert.ok(got, `object ${oid} (${want.type}) not read`);
    assert.equal(got.type, want.type, oid);
    assert.ok(got.data.equals(want.data), `content of ${oid}`);
    assert.equal(store.has(oid), true);
  }
  return expected.size;
}

function packFiles(repo: string): string[] {
  const dir = join(objectsDir(repo), "pack");
  return readdirSync(dir)
    .filter((n) => n.endsWith(".pack"))
    .map((n) => join(dir, n));
}

type PackEntry = { oid: string; type: string; offset: number; depth: number; base: string | undefined };

/** `git verify-pack -v`: every entry with its offset, chain depth and base. */
function verifyPack(repo: string, pack: string): PackEntry[] {
  const idx = pack.replace(/\.pack$/, ".idx");
  return git(repo, "verify-pack", "-v", idx)
    .split("\n")
    .filter((l) => /^[0-9a-f]{40,64} /.test(l))
    .map((l) => {
      const f = l.split(/\s+/);
      return { oid: f[0]!, type: f[1]!, offset: Number(f[4]), depth: Number(f[5] ?? 0), base: f[6] };
    });
}

/** The raw pack entry type at an offset: 6 OFS_DELTA, 7 REF_DELTA, 1-4 whole objects. */
function rawEntryType(pack: string, offset: number): number {
  return (readFileSync(pack)[offset]! >> 4) & 7;
}

/** A file changed in many commits (so packs get deltas and long chains), plus other files. */
function historyWithDeltas(repo: string, commits: number): void {
  let text = "";
  for (let i = 0; i < 400; i++) text += `line ${i} of a file that is long enough to be worth deltifying\n`;
  for (let i = 0; i < commits; i++) {
    text = text.replace(`line ${(i * 7) % 400} `, `line ${(i * 7) % 400} changed in ${i} `);
    write(repo, "big.txt", text);
    write(repo, `dir/sub/file${i % 5}.txt`, `version ${i}\n`.repeat(50));
    git(repo, "add", "-A");
    commit(repo, `change ${i}`);
  }
}

describe("git objects: loose", () => {
  const repo = newRepo();
  write(repo, "a.txt", "hello\n");
  write(repo, "dir/sub/b.txt", "nested\n");
  write(repo, "exe.sh", "#!/bin/sh\n");
  chmodSync(join(repo, "exe.sh"), 0o755);
  symlinkSync("a.txt", join(repo, "link"));
  write(repo, "empty", "");
  write(repo, "ünïcode name.txt", "x\n");
  git(repo, "add", "-A");
  const c1 = commit(repo, "first\n\nwith a body");
  write(repo, "a.txt", "hello again\n");
  git(repo, "add", "-A");
  const c2 = commit(repo, "second");
  git(repo, "tag", "-a", "-m", "annotated", "v1", c1);

  test("every object reads back as git has it", () => {
    const store = openObjectStore([objectsDir(repo)]);
    try {
      assert.equal(packFiles(repo).length, 0, "nothing packed yet");
      compareAll(repo, store);
    } finally {
      store.close();
    }
  });

  test("parseCommit, parseTree, treeEntryAt and hashObject agree with git", () => {
    const store = openObjectStore([objectsDir(repo)]);
    try {
      const c = parseCommit(store.read(c2)!.data, "sha1")!;
      assert.equal(c.tree, git(repo, "rev-parse", `${c2}^{tree}`));
      assert.deepEqual(c.parents, [c1]);
      assert.equal(c.author, git(repo, "log", "-1", "--format=%an <%ae> %at", c2) + " +0100");
      assert.equal(c.committer, git(repo, "log", "-1", "--format=%cn <%ce> %ct", c2) + " +0100");
      assert.equal(parseCommit(store.read(c1)!.data)!.message, "first\n\nwith a body\n");
      assert.deepEqual(parseCommit(store.read(c1)!.data)!.parents, []);

      const tree = parseTree(store.read(c.tree)!.data)!;
      const lsTree = git(repo, "ls-tree", c.tree)
        .split("\n")
        .map((l) => {
          const [meta, name] = l.split("\t");
          const [mode, , oid] = meta!.split(" ");
          return { mode: mode!, name: name!, oid: oid! };
        });
      assert.deepEqual(
        tree.map((e) => ({ ...e, mode: e.mode.padStart(6, "0") })),
        lsTree,
      );
      for (const path of ["a.txt", "dir", "dir/sub", "dir/sub/b.txt", "link", "exe.sh", "ünïcode name.txt"]) {
        const e = treeEntryAt(store, c.tree, path);
        assert.equal(e?.oid, git(repo, "rev-parse", `${c2}:${path}`), path);
      }
      assert.equal(treeEntryAt(store, c.tree, "exe.sh")?.mode, "100755");
      assert.equal(treeEntryAt(store, c.tree, "link")?.mode, "120000");
      assert.equal(treeEntryAt(store, c.tree, "dir")?.mode, "40000");
      assert.equal(treeEntryAt(store, c.tree, "")?.oid, c.tree);
      assert.equal(treeEntryAt(store, c.tree, "missing"), undefined);
      assert.equal(treeEntryAt(store, c.tree, "a.txt/below"), undefined, "a blob has no entries");
      assert.equal(treeEntryAt(store, c.tree, "dir//sub"), undefined);

      for (const content of ["", "hello\n", "\0binary\xff"]) {
        const buf = Buffer.from(content, "latin1");
        assert.equal(hashObject("blob", buf), gitBuf(repo, ["hash-object", "--stdin"], { input: buf }).toString().trim());
      }
      const tag = store.read(git(repo, "rev-parse", "v1"))!;
      assert.equal(tag.type, "tag");
      assert.equal(peelToCommit(store, git(repo, "rev-parse", "v1")), c1);
      assert.equal(peelToCommit(store, c.tree), "other");
    } finally {
      store.close();
    }
  });

  test("parseCommit skips gpgsig, mergetag and other multi-line headers", () => {
    const tree = git(repo, "rev-parse", `${c2}^{tree}`);
    const raw =
      `tree ${tree}\nparent ${c1}\nparent ${c2}\n` +
      "author A U Thor <a@b> 1700000000 +0100\ncommitter C O Mitter <c@d> 1700000001 -0200\n" +
      "encoding UTF-8\n" +
      "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n" +
      `mergetag object ${c1}\n type commit\n tag x\n tagger t <t@t> 1 +0000\n \n msg\n` +
      "\nthe message\n\nbody\n";
    const oid = gitBuf(repo, ["hash-object", "-t", "commit", "-w", "--stdin"], { input: raw }).toString().trim();
    const store = openObjectStore([objectsDir(repo)]);
    try {
      const c = parseCommit(store.read(oid)!.data, "sha1")!;
      assert.deepEqual(c, {
        tree,
        parents: [c1, c2],
        author: "A U Thor <a@b> 1700000000 +0100",
        committer: "C O Mitter <c@d> 1700000001 -0200",
        message: "the message\n\nbody\n",
      });
      assert.equal(c.message, git(repo, "log", "-1", "--format=%B", oid));
      assert.equal(git(repo, "rev-parse", `${oid}^2`), c2);
    } finally {
      store.close();
    }
    assert.equal(parseCommit(Buffer.from(`parent ${c1}\ntree ${tree}\n`)), undefined, "tree comes first");
    assert.equal(parseCommit(Buffer.from(`tree ${tree}\ncommitter x <y> 1 +0000\n\n`)), undefined, "author is required");
    assert.equal(parseCommit(Buffer.from(`tree ${tree}\nauthor x <y> 1 +0000\ncommitter x <y> 1 +0000\n\nm`), "sha256"), undefined);
  });

  test("parseTree refuses names that make paths ambiguous", () => {
    const oid = Buffer.alloc(20, 0xab);
    const entry = (mode: string, name: string | Buffer): Buffer => Buffer.concat([Buffer.from(`${mode} `), Buffer.from(name), Buffer.from([0]), oid]);
    assert.equal(parseTree(entry("100644", "ok"))?.[0]?.oid, "ab".repeat(20));
    for (const bad of ["", ".", "..", "a/b"]) assert.equal(parseTree(entry("100644", bad)), undefined, bad);
    assert.equal(parseTree(Buffer.concat([entry("100644", "x"), entry("40000", "x")])), undefined, "duplicate name");
    assert.equal(parseTree(entry("100644", Buffer.from([0xff, 0xfe]))), undefined, "not UTF-8");
    assert.equal(parseTree(entry("10x644", "a")), undefined, "mode not octal");
    assert.equal(parseTree(entry("100644", "a").subarray(0, 20)), undefined, "truncated id");
  });
});

describe("git objects: packs", () => {
  const repo = newRepo();
  historyWithDeltas(repo, 120);

  test("after git gc, everything reads from the pack", () => {
    const copy = join(root, "gc-copy");
    cpSync(repo, copy, { recursive: true });
    git(copy, "gc", "-q", "--prune=now");
    assert.match(git(copy, "count-objects", "-v"), /^count: 0$/m, "no loose objects left");
    const store = openObjectStore([objectsDir(copy)]);
    try {
      compareAll(copy, store);
    } finally {
      store.close();
    }
  });

  test("deep OFS_DELTA chains (repack --depth=50 --window=50)", (t) => {
    git(repo, "repack", "-adfq", "--depth=50", "--window=50");
    git(repo, "prune-packed");
    const [pack] = packFiles(repo);
    assert.ok(pack);
    const entries = verifyPack(repo, pack);
    const deltas = entries.filter((e) => e.base !== undefined);
    assert.ok(deltas.length > 50, `deltas: ${deltas.length}`);
    assert.ok(Math.max(...entries.map((e) => e.depth)) >= 20, "a chain of 20 or more deltas");
    assert.ok(
      deltas.every((e) => rawEntryType(pack, e.offset) === 6),
      "repack writes OFS_DELTA",
    );
    const store = openObjectStore([objectsDir(repo)]);
    try {
      const start = performance.now();
      const n = compareAll(repo, store);
      t.diagnostic(`${n} objects, ${deltas.length} deltas, read and compared in ${(performance.now() - start).toFixed(0)} ms`);
      // Oldest first: the worst order for a chain (each version is a delta of a newer one).
      const blobs = git(repo, "log", "--reverse", "--format=%H")
        .split("\n")
        .map((c) => git(repo, "rev-parse", `${c}:big.txt`));
      const fresh = openObjectStore([objectsDir(repo)]);
      const t0 = performance.now();
      for (const b of blobs) assert.equal(hashObject("blob", fresh.read(b)!.data), b);
      t.diagnostic(`${blobs.length} versions of a deltified file, oldest first: ${(performance.now() - t0).toFixed(0)} ms`);
      fresh.close();
    } finally {
      store.close();
    }
  });

  test("REF_DELTA entries in the same pack (useDeltaBaseOffset=false)", () => {
    const copy = join(root, "ref-delta-copy");
    cpSync(repo, copy, { recursive: true });
    gitBuf(copy, ["-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--depth=50", "--window=50"]);
    const [pack] = packFiles(copy);
    const deltas = verifyPack(copy, pack!).filter((e) => e.base !== undefined);
    assert.ok(deltas.length > 50);
    assert.ok(
      deltas.every((e) => rawEntryType(pack!, e.offset) === 7),
      "every delta is a REF_DELTA",
    );
    const store = openObjectStore([objectsDir(copy)]);
    try {
      compareAll(copy, store);
    } finally {
      store.close();
    }
  });

  test("a thin pack in another directory: REF_DELTA bases come from the next directory", () => {
    const a = newRepo();
    historyWithDeltas(a, 12);
    const old = git(a, "rev-parse", "HEAD~6");
    const thin = gitBuf(a, ["pack-objects", "--thin", "--stdout", "--revs", "-q"], { input: `HEAD\n^${old}\n` });
    // git never leaves a thin pack on disk: index-pack --fix-thin appends the missing bases. Its
    // index gives the thin entries' ids, offsets and CRCs (unchanged: the bases go at the end),
    // from which we write the index of the thin pack as it was.
    const fixedPack = join(root, "fixed.pack");
    gitBuf(a, ["index-pack", "--stdin", "--fix-thin", "-o", join(root, "fixed.idx"), fixedPack], { input: thin });
    const fixed = readFileSync(fixedPack);
    const thinEnd = thin.length - 20;
    assert.ok(fixed.subarray(12, thinEnd).equals(thin.subarray(12, thinEnd)), "fix-thin kept the thin entries");
    const rows = gitBuf(a, ["show-index"], { input: readFileSync(join(root, "fixed.idx")) })
      .toString()
      .trim()
      .split("\n")
      .map((l) => {
        const [off, oid, crc] = l.split(" ");
        return { offset: Number(off), oid: oid!, crc: parseInt(crc!.slice(1, -1), 16) };
      })
      .filter((r) => r.offset < thinEnd);
    assert.equal(rows.length, thin.readUInt32BE(8));
    const refDeltas = rows.filter((r) => rawEntryTypeOf(thin, r.offset) === 7);
    assert.ok(refDeltas.length > 0, "the thin pack has REF_DELTA entries");
    for (const r of rows) assert.equal(crc32(thin.subarray(r.offset, nextOffset(rows, r.offset, thinEnd))), r.crc);

    const dirB = join(root, "thin-objects");
    mkdirSync(join(dirB, "pack"), { recursive: true });
    writeFileSync(join(dirB, "pack", "pack-thin.pack"), thin);
    writeFileSync(join(dirB, "pack", "pack-thin.idx"), buildIdx(rows, thin.subarray(thinEnd)));

    const both = openObjectStore([dirB, objectsDir(a)]);
    const alone = openObjectStore([dirB]);
    try {
      let externalBase = 0;
      for (const r of rows) {
        const want = gitBuf(a, ["cat-file", git(a, "cat-file", "-t", r.oid), r.oid]);
        assert.ok(both.read(r.oid)?.data.equals(want), r.oid);
        if (rawEntryTypeOf(thin, r.offset) === 7 && alone.read(r.oid) === undefined) externalBase++;
      }
      assert.ok(externalBase > 0, "some deltas need a base from the other directory");
    } finally {
      both.close();
      alone.close();
    }
  });

  test("64-bit offsets and a version-1 index", () => {
    const copy = join(root, "large-offset-copy");
    cpSync(repo, copy, { recursive: true });
    const [pack] = packFiles(copy);
    const idx = pack!.replace(/\.pack$/, ".idx");
    const size32 = readFileSync(idx).length;
    // A test-suite option of index-pack: entries above offset 1000 go in the 64-bit table.
    rmSync(idx);
    git(copy, "index-pack", "--index-version=2,1000", "-o", idx, pack!);
    const count = verifyPack(copy, pack!).filter((e) => e.offset > 1000).length;
    assert.equal(readFileSync(idx).length, size32 + 8 * count, "the large offset table is there");
    let store = openObjectStore([objectsDir(copy)]);
    try {
      compareAll(copy, store);
    } finally {
      store.close();
    }
    rmSync(idx);
    git(copy, "index-pack", "--index-version=1", "-o", idx, pack!);
    store = openObjectStore([objectsDir(copy)]);
    try {
      const some = git(copy, "rev-parse", "HEAD");
      assert.equal(store.has(some), false, "a version-1 index is not read");
      assert.equal(store.read(some), undefined);
    } finally {
      store.close();
    }
  });
});

function rawEntryTypeOf(pack: Buffer, offset: number): number {
  return (pack[offset]! >> 4) & 7;
}

function nextOffset(rows: ReadonlyArray<{ offset: number }>, offset: number, end: number): number {
  const later = rows.map((r) => r.offset).filter((o) => o > offset);
  return later.length ? Math.min(...later) : end;
}

/** A version-2 pack index (sha1) for the given entries. */
function buildIdx(rows: ReadonlyArray<{ oid: string; offset: number; crc: number }>, packChecksum: Buffer): Buffer {
  const sorted = [...rows].sort((x, y) => (x.oid < y.oid ? -1 : 1));
  const head = Buffer.alloc(8 + 1024);
  head.writeUInt32BE(0xff744f63, 0);
  head.writeUInt32BE(2, 4);
  for (let b = 0; b < 256; b++) head.writeUInt32BE(sorted.filter((r) => parseInt(r.oid.slice(0, 2), 16) <= b).length, 8 + 4 * b);
  const u32 = (v: number): Buffer => {
    const x = Buffer.alloc(4);
    x.writeUInt32BE(v >>> 0);
    return x;
  };
  const body = Buffer.concat([
    head,
    ...sorted.map((r) => Buffer.from(r.oid, "hex")),
    ...sorted.map((r) => u32(r.crc)),
    ...sorted.map((r) => u32(r.offset)),
    packChecksum,
  ]);
  return Buffer.concat([body, createHash("sha1").update(body).digest()]);
}

describe("git index", () => {
  const repo = newRepo();
  write(repo, "a.txt", "a\n");
  write(repo, "src/lib/one.ts", "1\n");
  write(repo, "src/lib/two.ts", "2\n");
  write(repo, "src/main.ts", "m\n");
  write(repo, "ünï.txt", "u\n");
  write(repo, "run.sh", "#!/bin/sh\n");
  chmodSync(join(repo, "run.sh"), 0o755);
  symlinkSync("a.txt", join(repo, "link"));
  write(repo, `${"long-dir-name/".repeat(20)}deep.txt`, "deep\n"); // a long path, prefix-compressed in version 4
  git(repo, "add", "-A");
  commit(repo, "base");
  const indexPath = join(repo, ".git", "index");

  /** `git ls-files -s --debug`, parsed. */
  function gitEntries(): Array<Record<string, string | number>> {
    const lines = git(repo, "ls-files", "-s", "--debug").split("\n");
    const out: Array<Record<string, string | number>> = [];
    for (let i = 0; i < lines.length; i += 6) {
      const [meta, path] = lines[i]!.split("\t");
      const [mode, oid, stage] = meta!.split(" ");
      const nums = lines
        .slice(i + 1, i + 6)
        .join(" ")
        .match(/\d+/g)!
        .map(Number);
      out.push({
        path: path!,
        mode: parseInt(mode!, 8),
        oid: oid!,
        stage: Number(stage),
        ctimeSeconds: nums[0]!,
        ctimeNanoseconds: nums[1]!,
        mtimeSeconds: nums[2]!,
        mtimeNanoseconds: nums[3]!,
        dev: nums[4]!,
        ino: nums[5]!,
        uid: nums[6]!,
        gid: nums[7]!,
        size: nums[8]!,
      });
    }
    return out;
  }

  function check(version: number): GitIndex {
    const idx = readIndex(indexPath)!;
    assert.ok(idx, "index read");
    assert.equal(idx.version, version);
    assert.equal(readFileSync(indexPath).readUInt32BE(4), version);
    const want = gitEntries();
    assert.equal(idx.entries.length, want.length);
    idx.entries.forEach((e, i) => {
      for (const [k, v] of Object.entries(want[i]!)) assert.equal((e as Record<string, unknown>)[k], v, `${e.path}: ${k}`);
    });
    return idx;
  }

  test("version 2, stat data and all", () => {
    check(2);
  });

  test("version 3: intent-to-add and skip-worktree", () => {
    write(repo, "later.txt", "later\n");
    git(repo, "add", "-N", "later.txt");
    git(repo, "update-index", "--skip-worktree", "src/main.ts");
    const idx = check(3);
    assert.equal(idx.entries.find((e) => e.path === "later.txt")?.intentToAdd, true);
    assert.equal(idx.entries.find((e) => e.path === "src/main.ts")?.skipWorktree, true);
    assert.equal(idx.entries.find((e) => e.path === "a.txt")?.skipWorktree, false);
  });

  test("version 4: prefix-compressed paths", () => {
    git(repo, "update-index", "--index-version", "4");
    check(4);
    git(repo, "update-index", "--no-skip-worktree", "src/main.ts");
    git(repo, "rm", "-q", "--cached", "later.txt");
    check(4);
  });

  test("a path longer than the 12-bit length field (0xfff), in versions 2 and 4", () => {
    const r = newRepo();
    const blob = gitBuf(r, ["hash-object", "-w", "--stdin"], { input: "x\n" }).toString().trim();
    const long = `${"component/".repeat(450)}end.txt`; // 4507 bytes: flags hold 0xfff, a NUL ends it
    // --cacheinfo stages a path without a file, so the file system's own limits do not apply.
    git(r, "update-index", "--add", "--cacheinfo", `100644,${blob},${long}`);
    git(r, "update-index", "--add", "--cacheinfo", `100644,${blob},${long}2`);
    git(r, "update-index", "--add", "--cacheinfo", `100644,${blob},short`);
    for (const version of [2, 4]) {
      git(r, "update-index", "--index-version", String(version));
      const idx = readIndex(join(r, ".git", "index"))!;
      assert.equal(idx.version, version);
      assert.deepEqual(
        idx.entries.map((e) => `${e.mode.toString(8)} ${e.oid} ${e.stage}\t${e.path}`),
        git(r, "ls-files", "-s").split("\n"),
      );
      assert.equal(idx.entries[0]!.path.length, 4507);
    }
  });

  test("conflict stages", () => {
    const c = newRepo();
    write(c, "f.txt", "base\n");
    git(c, "add", "-A");
    commit(c, "base");
    git(c, "switch", "-q", "-c", "other");
    write(c, "f.txt", "other\n");
    git(c, "commit", "-qam", "other");
    git(c, "switch", "-q", "main");
    write(c, "f.txt", "main\n");
    git(c, "commit", "-qam", "main");
    assert.equal(gitOk(c, "merge", "-q", "other"), false);
    const idx = readIndex(join(c, ".git", "index"))!;
    const stages = git(c, "ls-files", "-s")
      .split("\n")
      .map((l) => {
        const [meta, path] = l.split("\t");
        const [mode, oid, stage] = meta!.split(" ");
        return { path: path!, mode: parseInt(mode!, 8), oid: oid!, stage: Number(stage) };
      });
    assert.deepEqual(
      idx.entries.map((e) => ({ path: e.path, mode: e.mode, oid: e.oid, stage: e.stage })),
      stages,
    );
    assert.deepEqual(
      idx.entries.map((e) => e.stage),
      [1, 2, 3],
    );
  });

  test("sameEntries: a stat refresh keeps them, staging and flags change them", () => {
    git(repo, "update-index", "--index-version", "2");
    const before = readIndex(indexPath)!;
    const future = new Date((clock + 86400) * 1000);
    utimesSync(join(repo, "a.txt"), future, future);
    git(repo, "update-index", "--refresh");
    git(repo, "status", "--porcelain");
    const refreshed = readIndex(indexPath)!;
    assert.notDeepEqual(refreshed.entries.find((e) => e.path === "a.txt")?.mtimeSeconds, before.entries.find((e) => e.path === "a.txt")?.mtimeSeconds);
    assert.equal(sameEntries(before, refreshed), true);
    git(repo, "update-index", "--index-version", "4");
    assert.equal(sameEntries(before, readIndex(indexPath)!), true, "the version is not content");
    write(repo, "a.txt", "changed\n");
    git(repo, "add", "a.txt");
    assert.equal(sameEntries(before, readIndex(indexPath)!), false);
    git(repo, "reset", "-q");
    const reset = readIndex(indexPath)!;
    assert.equal(sameEntries(before, reset), true);
    git(repo, "update-index", "--assume-unchanged", "src/main.ts");
    assert.equal(sameEntries(reset, readIndex(indexPath)!), false, "hiding a path from status is a change");
    git(repo, "update-index", "--no-assume-unchanged", "src/main.ts");
  });

  test("malformed: wrong checksum, truncated, unknown required extension, absent", () => {
    const good = readFileSync(indexPath);
    assert.ok(parseIndexFile(good));
    const flipped = Buffer.from(good);
    flipped[20] = flipped[20]! ^ 1;
    assert.equal(parseIndexFile(flipped), undefined, "checksum");
    assert.equal(parseIndexFile(good.subarray(0, good.length - 30)), undefined, "truncated");
    const zeroed = Buffer.from(good);
    zeroed.fill(0, zeroed.length - 20);
    assert.ok(parseIndexFile(zeroed), "an all-zero trailer is index.skipHash, as git 2.40+ writes");
    const body = good.subarray(0, good.length - 20);
    const withExt = (sig: string): Buffer => {
      const ext = Buffer.concat([Buffer.from(sig), Buffer.from([0, 0, 0, 4]), Buffer.from("data")]);
      const b = Buffer.concat([body, ext]);
      return Buffer.concat([b, createHash("sha1").update(b).digest()]);
    };
    assert.ok(parseIndexFile(withExt("ZZZZ")), "optional extensions are skipped");
    assert.equal(parseIndexFile(withExt("link")), undefined, "a split index is not read from one file");
    assert.equal(readIndex(join(repo, "no-such-index")), undefined);
    execFileSync("mkfifo", [join(root, "fifo-index")]);
    assert.equal(readIndex(join(root, "fifo-index")), undefined, "a FIFO does not hang the reader");
    assert.equal(readIndex(indexPath, "sha256"), undefined, "wrong format");
  });
});

describe("git sha256 repository", () => {
  const repo = newRepo("sha256");
  historyWithDeltas(repo, 30);
  git(repo, "tag", "-a", "-m", "t", "v1");

  test("objects loose and packed, index, refs", () => {
    assert.equal(objectFormat(join(repo, ".git")), "sha256");
    const head = git(repo, "rev-parse", "HEAD");
    assert.equal(head.length, 64);
    let store = openObjectStore([objectsDir(repo)], "sha256");
    try {
      compareAll(repo, store);
      assert.equal(treeEntryAt(store, parseCommit(store.read(head)!.data)!.tree, "dir/sub/file1.txt")?.oid, git(repo, "rev-parse", "HEAD:dir/sub/file1.txt"));
      assert.equal(isAncestor(store, git(repo, "rev-parse", "HEAD~10"), head), true);
      assert.throws(() => store.read(head.slice(0, 40)), TypeError);
    } finally {
      store.close();
    }
    git(repo, "repack", "-adfq", "--depth=50", "--window=50");
    git(repo, "prune-packed");
    assert.ok(verifyPack(repo, packFiles(repo)[0]!).some((e) => e.depth > 5));
    store = openObjectStore([objectsDir(repo)], "sha256");
    try {
      compareAll(repo, store);
    } finally {
      store.close();
    }
    const idx = readIndex(join(repo, ".git", "index"), "sha256")!;
    assert.deepEqual(
      idx.entries.map((e) => `${e.mode.toString(8)} ${e.oid} ${e.stage}\t${e.path}`),
      git(repo, "ls-files", "-s").split("\n"),
    );
    assert.equal(readIndex(join(repo, ".git", "index"), "sha1"), undefined);
    const refs = readRefs(join(repo, ".git"))!;
    assert.equal(refs.refs.get("refs/heads/main"), head);
    assert.equal(refs.refs.get("refs/tags/v1"), git(repo, "rev-parse", "v1"));
  });
});

describe("git refs", () => {
  const repo = newRepo();
  const gitDir = join(repo, ".git");
  const c1 = commit(repo, "one");
  const c2 = commit(repo, "two");
  const c3 = commit(repo, "three");
  git(repo, "branch", "feature", c1);
  git(repo, "branch", "nested/deep/name", c2);
  git(repo, "tag", "light", c1);
  git(repo, "tag", "-a", "-m", "annotated", "heavy", c2);
  git(repo, "update-ref", "refs/remotes/origin/main", c2);
  git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main");

  function forEachRef(): Map<string, string> {
    return new Map(
      git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
        .split("\n")
        .map((l) => l.split(" ") as [string, string]),
    );
  }

  test("loose refs, a symbolic ref and HEAD", () => {
    const snap = readRefs(gitDir)!;
    assert.deepEqual(snap.refs, forEachRef());
    assert.deepEqual(snap.head, { kind: "symbolic", target: git(repo, "symbolic-ref", "HEAD") });
    assert.deepEqual([...snap.symbolic], [["refs/remotes/origin/HEAD", "refs/remotes/origin/main"]]);
    assert.equal(objectFormat(gitDir), "sha1");
  });

  test("packed-refs with peeled tags; loose refs override and add", () => {
    git(repo, "pack-refs", "--all");
    assert.match(readFileSync(join(gitDir, "packed-refs"), "utf8"), /^\^[0-9a-f]{40}$/m, "a peeled line");
    assert.deepEqual(readRefs(gitDir)!.refs, forEachRef());
    git(repo, "update-ref", "refs/heads/feature", c3); // loose, overriding the packed value
    git(repo, "update-ref", "refs/heads/fresh", c2);
    git(repo, "update-ref", "-d", "refs/heads/nested/deep/name");
    const snap = readRefs(gitDir)!;
    assert.deepEqual(snap.refs, forEachRef());
    assert.equal(snap.refs.get("refs/heads/feature"), c3);
    assert.equal(snap.refs.has("refs/heads/nested/deep/name"), false);
  });

  test("detached HEAD", () => {
    git(repo, "checkout", "-q", "--detach", c2);
    assert.deepEqual(readRefs(gitDir)!.head, { kind: "detached", oid: c2 });
    git(repo, "checkout", "-q", "main");
  });

  test("names git ignores are skipped; a dangling symbolic ref is left out of refs", () => {
    writeFileSync(join(gitDir, "refs", "heads", "main.lock"), `${c1}\n`);
    writeFileSync(join(gitDir, "refs", "heads", ".hidden"), "junk");
    git(repo, "symbolic-ref", "refs/remotes/origin/GONE", "refs/remotes/origin/nothing");
    try {
      const snap = readRefs(gitDir)!;
      assert.deepEqual(snap.refs, forEachRef());
      assert.equal(snap.symbolic.get("refs/remotes/origin/GONE"), "refs/remotes/origin/nothing");
      assert.equal(snap.refs.has("refs/remotes/origin/GONE"), false);
    } finally {
      unlinkSync(join(gitDir, "refs", "heads", "main.lock"));
      unlinkSync(join(gitDir, "refs", "heads", ".hidden"));
      unlinkSync(join(gitDir, "refs", "remotes", "origin", "GONE"));
    }
  });

  test("a broken ref, a FIFO or a symlink makes the snapshot undefined (and never hangs)", () => {
    const bad = join(gitDir, "refs", "heads", "bad");
    writeFileSync(bad, "not an id\n");
    assert.equal(readRefs(gitDir), undefined);
    unlinkSync(bad);
    execFileSync("mkfifo", [bad]);
    assert.equal(readRefs(gitDir), undefined);
    unlinkSync(bad);
    symlinkSync("/dev/zero", bad);
    assert.equal(readRefs(gitDir), undefined);
    unlinkSync(bad);
    const packed = join(gitDir, "packed-refs");
    const saved = readFileSync(packed);
    appendFileSync(packed, "garbage line\n");
    assert.equal(readRefs(gitDir), undefined);
    writeFileSync(packed, saved);
    assert.ok(readRefs(gitDir));
  });

  test("reflog ids, and the object format from config", () => {
    const ids = reflogOids(gitDir, "refs/heads/main");
    const fromGit = git(repo, "log", "-g", "--format=%H", "refs/heads/main").split("\n");
    assert.deepEqual([...new Set(fromGit)].reverse(), ids);
    assert.deepEqual(reflogOids(gitDir, "refs/heads/feature").at(-1), c3);
    assert.deepEqual(reflogOids(gitDir, "refs/heads/none"), []);
    assert.throws(() => reflogOids(gitDir, "refs/../../etc/passwd"), TypeError);
    const other = join(root, "cfg");
    mkdirSync(other);
    assert.equal(objectFormat(other), "sha1", "no config");
    writeFileSync(join(other, "config"), '[core]\n\tbare = true\n[Extensions] objectFormat = "SHA256" ; comment\n');
    assert.equal(objectFormat(other), "sha256");
    writeFileSync(join(other, "config"), "[extensions]\n\tobjectformat = sha512\n");
    assert.equal(objectFormat(other), undefined, "an unknown format is not guessed");
  });
});

describe("git objects: malformed data reads as absent", () => {
  const repo = newRepo();
  write(repo, "a.txt", "content a\n");
  write(repo, "b.txt", "content b\n");
  git(repo, "add", "-A");
  const head = commit(repo, "one");
  const a = git(repo, "rev-parse", "HEAD:a.txt");
  const b = git(repo, "rev-parse", "HEAD:b.txt");
  const loose = (oid: string): string => join(objectsDir(repo), oid.slice(0, 2), oid.slice(2));

  test("truncated, misnamed, mis-sized and oversized loose objects", () => {
    const saved = readFileSync(loose(a));
    const store = (): ObjectStore => openObjectStore([objectsDir(repo)]);
    try {
      chmodSync(loose(a), 0o644);
      truncateSync(loose(a), saved.length - 4);
      assert.equal(store().read(a), undefined, "truncated");
      copyFileSync(loose(b), loose(a));
      assert.equal(store().read(a), undefined, "another object's content under this id");
      writeFileSync(loose(a), deflateSync(Buffer.from("blob 99\0content a\n")));
      assert.equal(store().read(a), undefined, "size in the header is wrong");
      writeFileSync(loose(a), deflateSync(Buffer.from("blob\0content a\n")));
      assert.equal(store().read(a), undefined, "no size");
      writeFileSync(loose(a), deflateSync(Buffer.from(`blob ${MAX_OBJECT_SIZE + 1}\0x`)));
      assert.equal(store().read(a), undefined, "beyond the size bound");
      writeFileSync(loose(a), Buffer.from("not zlib at all"));
      assert.equal(store().read(a), undefined, "not zlib");
      rmSync(loose(a));
      execFileSync("mkfifo", [loose(a)]);
      assert.equal(store().read(a), undefined, "a FIFO does not hang the reader");
      rmSync(loose(a));
      symlinkSync(loose(b), loose(a));
      assert.equal(store().read(a), undefined, "a symlink is not followed");
    } finally {
      rmSync(loose(a), { force: true });
      writeFileSync(loose(a), saved);
    }
    assert.ok(store().read(a));
    assert.throws(() => store().read(a.slice(1)), TypeError, "a short id is a programmer error");
    assert.throws(() => store().read(a.toUpperCase()), TypeError);
  });

  test("corrupted pack index, pack data and truncated pack", () => {
    const copy = join(root, "corrupt-pack");
    cpSync(repo, copy, { recursive: true });
    git(copy, "repack", "-adq");
    git(copy, "prune-packed");
    const [pack] = packFiles(copy);
    const idx = pack!.replace(/\.pack$/, ".idx");
    const dirs = [objectsDir(copy)];
    const idxSaved = readFileSync(idx);
    const packSaved = readFileSync(pack!);
    chmodSync(idx, 0o644);
    chmodSync(pack!, 0o644);
    {
      const s = openObjectStore(dirs);
      assert.ok(s.read(head) && s.read(a));
      s.close();
    }
    const badIdx = Buffer.from(idxSaved);
    badIdx[8 + 1024 + 3] = badIdx[8 + 1024 + 3]! ^ 0x40; // inside the sorted id table
    writeFileSync(idx, badIdx);
    {
      const s = openObjectStore(dirs);
      assert.equal(s.read(head), undefined, "an index failing its checksum is not used");
      assert.equal(s.has(head), false);
      s.close();
    }
    writeFileSync(idx, idxSaved.subarray(0, idxSaved.length - 10));
    assert.equal(openObjectStore(dirs).read(head), undefined, "truncated index");
    writeFileSync(idx, idxSaved);

    const entry = verifyPack(copy, pack!).find((e) => e.oid === a)!;
    const badPack = Buffer.from(packSaved);
    badPack[entry.offset + 4] = badPack[entry.offset + 4]! ^ 0xff; // in the compressed data
    writeFileSync(pack!, badPack);
    {
      const s = openObjectStore(dirs);
      assert.equal(s.read(a), undefined, "corrupt entry data");
      assert.ok(s.read(b), "other entries still read");
      s.close();
    }
    writeFileSync(pack!, packSaved.subarray(0, packSaved.length - 30));
    assert.equal(openObjectStore(dirs).read(a), undefined, "truncated pack (trailer does not match the index)");
    writeFileSync(pack!, packSaved);
    const s = openObjectStore(dirs);
    assert.ok(s.read(a));
    s.close();
    assert.throws(() => s.read(a), /closed/);
  });

  test("a hand-made pack: a REF_DELTA cycle and an OFS_DELTA into the middle of an entry", () => {
    const delta = deflateSync(Buffer.from([1, 1, 0x01, 0x78])); // base 1 byte, result 1 byte: insert "x"
    const [x, y] = ["11".repeat(20), "22".repeat(20)];
    const blob = hashObject("blob", Buffer.from("x"));
    const e1 = Buffer.concat([Buffer.from([(7 << 4) | 4]), Buffer.from(y, "hex"), delta]); // x: delta on y
    const e2 = Buffer.concat([Buffer.from([(7 << 4) | 4]), Buffer.from(x, "hex"), delta]); // y: delta on x
    const off1 = 12;
    const off2 = off1 + e1.length;
    const off3 = off2 + e2.length;
    const e3 = Buffer.concat([Buffer.from([(6 << 4) | 4, off3 - (off1 + 1)]), delta]); // base: inside e1
    const off4 = off3 + e3.length;
    const e4 = Buffer.concat([Buffer.from([(3 << 4) | 1]), deflateSync(Buffer.from("x"))]);
    const head = Buffer.alloc(12);
    head.write("PACK");
    head.writeUInt32BE(2, 4);
    head.writeUInt32BE(4, 8);
    const body = Buffer.concat([head, e1, e2, e3, e4]);
    const sum = createHash("sha1").update(body).digest();
    const z = "33".repeat(20);
    const dir = join(root, "handmade");
    mkdirSync(join(dir, "pack"), { recursive: true });
    writeFileSync(join(dir, "pack", "pack-h.pack"), Buffer.concat([body, sum]));
    const rows = [
      { oid: x, offset: off1, crc: crc32(e1) },
      { oid: y, offset: off2, crc: crc32(e2) },
      { oid: z, offset: off3, crc: crc32(e3) },
      { oid: blob, offset: off4, crc: crc32(e4) },
    ];
    writeFileSync(join(dir, "pack", "pack-h.idx"), buildIdx(rows, sum));
    const store = openObjectStore([dir]);
    try {
      const t0 = performance.now();
      assert.equal(store.read(x), undefined, "a delta cycle ends at the chain bound");
      assert.ok(performance.now() - t0 < 5000);
      assert.equal(store.read(y), undefined);
      assert.equal(store.read(z), undefined, "an OFS_DELTA base must be an entry start");
      assert.equal(store.read(blob)?.data.toString(), "x");
      assert.equal(store.has(x), true, "listed, though unreadable");
    } finally {
      store.close();
    }
  });

  test("applyDelta checks every size and bound", () => {
    const base = Buffer.from("0123456789");
    // base size 10, result 4: copy offset 2 size 3, insert "x"
    const ok = Buffer.from([10, 4, 0x80 | 0x01 | 0x10, 2, 3, 1, 0x78]);
    assert.equal(applyDelta(base, ok)?.toString(), "234x");
    assert.equal(applyDelta(Buffer.from("short"), ok), undefined, "base size mismatch");
    assert.equal(applyDelta(base, Buffer.from([10, 5, 0x91, 2, 3, 1, 0x78])), undefined, "result too short");
    assert.equal(applyDelta(base, Buffer.from([10, 3, 0x91, 2, 3, 1, 0x78])), undefined, "result too long");
    assert.equal(applyDelta(base, Buffer.from([10, 3, 0x91, 9, 3])), undefined, "copy beyond the base");
    assert.equal(applyDelta(base, Buffer.from([10, 1, 0])), undefined, "reserved opcode 0");
    assert.equal(applyDelta(base, Buffer.from([10, 2, 3, 0x61])), undefined, "insert runs past the end");
    assert.equal(applyDelta(base, Buffer.from([10, 0xff, 0xff, 0xff, 0xff, 0x7f])), undefined, "result beyond the size bound");
  });
});

describe("git history", () => {
  const repo = newRepo();
  const at = (n: number): number => 1_750_000_000 + n * 3600;
  const c1 = commit(repo, "c1", at(1));
  const c2 = commit(repo, "c2", at(2));
  git(repo, "switch", "-q", "-c", "topic");
  const t1 = commit(repo, "t1", at(3));
  const t2 = commit(repo, "t2", at(5));
  git(repo, "switch", "-q", "main");
  const c3 = commit(repo, "c3", at(4));
  gitBuf(repo, ["merge", "-q", "--no-ff", "-m", "merge topic", "topic"], { env: { GIT_AUTHOR_DATE: `${at(6)} +0000`, GIT_COMMITTER_DATE: `${at(6)} +0000` } });
  const m1 = git(repo, "rev-parse", "HEAD");
  git(repo, "switch", "-q", "-c", "side", c3);
  const s1 = commit(repo, "s1", at(7));
  const s2 = commit(repo, "s2", at(7)); // equal times: order must still follow git's
  const s3 = commit(repo, "s3", at(7));
  git(repo, "switch", "-q", "main");
  const c4 = commit(repo, "c4", at(8));
  // A commit dated 12 hours before its parent: within the day of slack.
  const c5 = commit(repo, "c5", at(8) - 12 * 3600);
  const c6 = commit(repo, "c6", at(9));
  git(repo, "switch", "-q", "side");
  gitBuf(repo, ["rebase", "-q", "main"], { env: { GIT_COMMITTER_DATE: `${at(10)} +0000` } });
  const r3 = git(repo, "rev-parse", "HEAD");
  git(repo, "switch", "-q", "main");
  const all = [c1, c2, t1, t2, c3, m1, s1, s2, s3, c4, c5, c6, r3, git(repo, "rev-parse", "side~1"), git(repo, "rev-parse", "side~2")];

  test("isAncestor agrees with git merge-base --is-ancestor for every pair", () => {
    const store = openObjectStore([objectsDir(repo)]);
    try {
      for (const x of all) {
        for (const y of all) {
          assert.equal(isAncestor(store, x, y), gitOk(repo, "merge-base", "--is-ancestor", x, y), `${x} ancestor of ${y}`);
        }
      }
      assert.equal(reachableFromAny(store, s1, [c6, r3]), false, "the rebase left the old side behind");
      assert.equal(reachableFromAny(store, s1, [c6, s3]), true);
      assert.equal(reachableFromAny(store, c1, []), false);
      assert.equal(reachableFromAny(store, c1, [git(repo, "rev-parse", `${c6}^{tree}`)]), false, "a tree reaches no commit");
    } finally {
      store.close();
    }
  });

  test("commitsBetween agrees with git rev-list, order included", () => {
    const store = openObjectStore([objectsDir(repo)]);
    const cases: Array<[string, string[]]> = [
      [c6, []],
      [r3, []],
      [c6, [c2]],
      [m1, [c3]],
      [m1, [t2]],
      [s3, [r3]],
      [r3, [s3]],
      [r3, [c6]],
      [c6, [s3, t1]],
      [r3, [r3]],
      [c1, [c6]],
      [s3, [c5, t2]],
    ];
    try {
      for (const [from, not] of cases) {
        const want = git(repo, "rev-list", from, ...not.map((n) => `^${n}`));
        assert.deepEqual(commitsBetween(store, from, not), want === "" ? [] : want.split("\n"), `${from} ^${not.join(" ^")}`);
      }
    } finally {
      store.close();
    }
  });

  test("walk limits and missing commits answer unknown", () => {
    const store = openObjectStore([objectsDir(repo)]);
    try {
      assert.equal(isAncestor(store, c1, c6, 3), "unknown");
      assert.equal(isAncestor(store, c5, c6, 3), true, "found within the limit");
      assert.equal(commitsBetween(store, c6, [], 3), "unknown");
      assert.equal(commitsBetween(store, c6, [c5], 3), "unknown");
      assert.deepEqual(commitsBetween(store, c6, [c5], 10), [c6]);
      assert.equal(isAncestor(store, "0".repeat(40), c6), "unknown");
    } finally {
      store.close();
    }
    const copy = join(root, "missing-commit");
    cpSync(repo, copy, { recursive: true });
    // c2 is on every path from c6 to c1 (through c3 and through the topic branch).
    rmSync(join(objectsDir(copy), c2.slice(0, 2), c2.slice(2)));
    const holed = openObjectStore([objectsDir(copy)]);
    try {
      assert.equal(isAncestor(holed, c4, c6), true, "found before the hole");
      assert.equal(isAncestor(holed, c1, c6), "unknown", "the answer is behind the hole");
      assert.equal(commitsBetween(holed, c6, [c2]), "unknown");
    } finally {
      holed.close();
    }
  });
});

describe("git: 10,000 commits from a pack", () => {
  test("a long history walks and reads like git's", (t) => {
    const repo = newRepo();
    const n = 10_000;
    const parts: string[] = [];
    for (let i = 0; i < n; i++) {
      const msg = `commit ${i}\n`;
      const body = `value ${i}\n`;
      parts.push(
        `commit refs/heads/main\ncommitter t <t@t> ${1_600_000_000 + i * 60} +0000\ndata ${msg.length}\n${msg}` +
          `M 100644 inline file${i % 10}.txt\ndata ${body.length}\n${body}\n`,
      );
    }
    gitBuf(repo, ["fast-import", "--quiet"], { input: parts.join("") });
    git(repo, "repack", "-adq");
    git(repo, "prune-packed");
    const tip = git(repo, "rev-parse", "main");
    const store = openObjectStore([objectsDir(repo)]);
    try {
      let t0 = performance.now();
      const walked = commitsBetween(store, tip, [], 20_000);
      const walkMs = performance.now() - t0;
      assert.ok(Array.isArray(walked));
      assert.deepEqual(walked, git(repo, "rev-list", "main").split("\n"));
      const cold = openObjectStore([objectsDir(repo)]);
      t0 = performance.now();
      const first = git(repo, "rev-list", "--max-parents=0", "main");
      assert.equal(isAncestor(cold, first, tip, 20_000), true);
      const ancestorMs = performance.now() - t0;
      cold.close();
      assert.equal(isAncestor(store, first, tip, 5000), "unknown");
      t.diagnostic(`commitsBetween over ${n} commits: ${walkMs.toFixed(0)} ms; isAncestor root..tip on a cold store: ${ancestorMs.toFixed(0)} ms`);
      t0 = performance.now();
      const count = compareAll(repo, store);
      t.diagnostic(`${count} objects read and compared: ${(performance.now() - t0).toFixed(0)} ms (includes git cat-file)`);
    } finally {
      store.close();
    }
  });
});
