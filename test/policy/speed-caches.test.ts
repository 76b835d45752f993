// The per-call preparation is cached (configuration, places, repository facts) and each decision
// shares its path look-ups; none of it may ever judge a file system that changed. Each test makes
// a decision, changes the file system the way an attack (or an ordinary edit) would, and decides
// again, as the extension does: prepareGate, then decide. Rewrites keep the size and put the old
// times back, so only what the stamps cannot fake (inode, ctime) or the content itself tells.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, renameSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import type { Stats } from "node:fs";
import { evalSetup } from "../../src/eval/score.ts";
import { buildEvalWorkspace, type EvalWorkspace } from "../../src/eval/workspace.ts";
import { decide, prepareGate } from "../../src/policy/gate.ts";
import { analyzeShell } from "../../src/policy/shell/analyze.ts";
import { settled } from "../../src/request/stamps.ts";

let w: EvalWorkspace;
beforeEach(() => {
  w = buildEvalWorkspace();
});
afterEach(() => w.dispose());

function route(tool: string, input: unknown, backend: "sandboxed" | "review-only" = "sandboxed"): string {
  const d = decide(tool, input, prepareGate(evalSetup(w)), backend).decision;
  return `${d.route}/${d.reason}`;
}
const bash = (command: string, backend: "sandboxed" | "review-only" = "sandboxed") => route("bash", { command }, backend);

/** Times every file of these tests is given: the same second, before and after a rewrite. */
const PINNED = 1_700_000_000;
function pin(path: string): void {
  utimesSync(path, PINNED, PINNED);
}

/** Rewrite a (pinned) file with new content of the same size, and pin its times again. */
function rewriteSameSizeSameTimes(path: string, content: string): void {
  const st = statSync(path);
  assert.equal(Buffer.byteLength(content), st.size, "same size");
  assert.equal(st.mtimeMs, PINNED * 1000, "pinned before");
  writeFileSync(path, content);
  pin(path);
  const now = statSync(path);
  assert.deepEqual([now.size, now.mtimeMs, now.ino], [st.size, st.mtimeMs, st.ino], "same size, mtime and inode");
}

/** Waits until the file system's times of a fresh change can be told apart (stamps.ts), so caches fill settled. */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 120));
}

describe("no cache judges a file system that changed", () => {
  test("a symlink that appears between two calls is seen: path facts live for one decision", async () => {
    const key = join(w.home, ".ssh", "id_ed25519");
    assert.equal(bash("cat notes/id_ed25519"), "sandbox/sandboxed");
    symlinkSync(join(w.home, ".ssh"), join(w.ws, "notes"));
    assert.equal(bash("cat notes/id_ed25519"), "review/identity-secret");
    assert.equal(route("read", { path: "notes/id_ed25519" }), "review/identity-secret");
    assert.ok(statSync(key).isFile());
  });

  test("~/.ssh replaced by a symlink: its new real location is an identity secret at the next call", async () => {
    const vault = join(w.home, "vault");
    mkdirSync(vault);
    writeFileSync(join(vault, "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    await settle();
    assert.equal(bash(`cat ${vault}/id_rsa`), "sandbox/sandboxed");
    assert.equal(bash(`cat ${vault}/id_rsa`), "sandbox/sandboxed", "cached places");
    renameSync(join(w.home, ".ssh"), join(w.home, ".ssh-old"));
    symlinkSync(vault, join(w.home, ".ssh"));
    assert.equal(bash(`cat ${vault}/id_rsa`), "review/identity-secret");
    assert.equal(route("read", { path: join(vault, "id_rsa") }), "review/identity-secret");
  });

  test("a .git file rewritten to name another git dir, same size, same times: that dir's hooks are protected", async () => {
    const sepA = join(w.tmp, "sepA");
    const sepB = join(w.tmp, "sepB");
    for (const d of [sepA, sepB]) mkdirSync(join(d, "hooks"), { recursive: true });
    const dotGit = join(w.ws, ".git");
    renameSync(dotGit, join(w.root, "old-git"));
    writeFileSync(dotGit, `gitdir: ${sepA}\n`);
    pin(dotGit);
    await settle();
    const hook = (dir: string) => ({ path: join(dir, "hooks", "pre-commit"), content: "#!/bin/sh\n" });
    assert.equal(route("write", hook(sepA)), "review/protected-path");
    assert.equal(route("write", hook(sepB)), "allow/workspace-write", "sepB is only scratch space so far");
    rewriteSameSizeSameTimes(dotGit, `gitdir: ${sepB}\n`);
    assert.equal(route("write", hook(sepB)), "review/protected-path");
    assert.equal(bash(`echo x > ${sepB}/hooks/post-checkout`), "review/protected-path");
  });

  test("a config file rewritten with the same size within the same mtime: the new rules apply", async () => {
    const config = join(w.agentDir, "auto-mode.json");
    const rules = (cmd: string) => JSON.stringify({ version: 1, rules: { deny: [{ command: `${cmd} *` }] } });
    writeFileSync(config, rules("ls"));
    pin(config);
    assert.equal(bash("ls -la"), "deny/user-deny-rule");
    assert.equal(bash("cp a b"), "sandbox/sandboxed");
    rewriteSameSizeSameTimes(config, rules("cp"));
    assert.equal(bash("ls -la"), "sandbox/sandboxed");
    assert.equal(bash("cp a b"), "deny/user-deny-rule");
    // And once the file is old enough for its stamp alone to be trusted.
    await settle();
    assert.equal(bash("cp a b"), "deny/user-deny-rule");
    rewriteSameSizeSameTimes(config, rules("ls"));
    assert.equal(bash("cp a b"), "sandbox/sandboxed");
    assert.equal(bash("ls -la"), "deny/user-deny-rule");
  });

  test("a project config that appears, changes and goes is followed at every call", () => {
    const project = join(w.ws, ".pi", "auto-mode.json");
    assert.equal(bash("npm test"), "sandbox/sandboxed");
    writeFileSync(project, JSON.stringify({ version: 1, rules: { review: [{ command: "npm *" }] } }));
    assert.equal(bash("npm test"), "review/user-review-rule");
    writeFileSync(project, "{ not json");
    assert.equal(bash("npm test"), "deny/config-fault");
  });

  test("a hook made executable between two calls makes the next commit need review", async () => {
    const hook = join(w.ws, ".git", "hooks", "pre-commit");
    writeFileSync(hook, "#!/bin/sh\nexit 0\n");
    chmodSync(hook, 0o644);
    await settle();
    assert.equal(bash("git commit -m wip"), "sandbox/sandboxed");
    assert.equal(bash("git commit -m wip"), "sandbox/sandboxed", "cached repository facts");
    chmodSync(hook, 0o755);
    assert.equal(bash("git commit -m wip"), "review/git-hooks");
  });

  test("HEAD rewritten to another branch of the same length: the protected branch follows", async () => {
    const head = join(w.ws, ".git", "HEAD");
    writeFileSync(head, "ref: refs/heads/main\n");
    pin(head);
    await settle();
    assert.equal(bash("git push --force"), "deny/hard-deny");
    rewriteSameSizeSameTimes(head, "ref: refs/heads/feat\n");
    assert.equal(bash("git push --force"), "review/force-push");
  });

  test("core.hooksPath set in a global git config between two calls is followed", async () => {
    const hooks = join(w.ws, "my-hooks");
    mkdirSync(hooks);
    await settle();
    assert.equal(bash("git commit -m wip"), "sandbox/sandboxed");
    writeFileSync(join(w.home, ".gitconfig"), `[core]\n\thooksPath = ${hooks}\n`);
    // Hooks in a directory the agent may write run outside the sandbox: contained, not trusted.
    assert.equal(bash("git commit -m wip", "review-only"), "review/sandboxed");
  });
});

describe("what a directory holds is kept from call to call only while the directory is unchanged", () => {
  // Each test first makes the same decision twice on a settled file system (the second one is
  // answered from what the directories were seen to hold), then changes a directory's entries.
  const twice = (command: string, expected: string) => {
    assert.equal(bash(command), expected);
    assert.equal(bash(command), expected, "from the kept entries");
  };

  test("a name found missing in the workspace that appears as a symlink to ~/.ssh", async () => {
    await settle();
    twice("cat notes/id_ed25519", "sandbox/sandboxed");
    symlinkSync(join(w.home, ".ssh"), join(w.ws, "notes"));
    assert.equal(bash("cat notes/id_ed25519"), "review/identity-secret");
  });

  test("a file below the workspace's top replaced by a symlink to a key", async () => {
    await settle();
    twice("cat src/index.ts", "sandbox/sandboxed");
    renameSync(join(w.ws, "src", "index.ts"), join(w.ws, "index.old"));
    symlinkSync(join(w.home, ".ssh", "id_ed25519"), join(w.ws, "src", "index.ts"));
    assert.equal(bash("cat src/index.ts"), "review/identity-secret");
  });

  test("a directory replaced by a symlink to ~/.ssh", async () => {
    await settle();
    twice("cat build/id_ed25519", "sandbox/sandboxed");
    renameSync(join(w.ws, "build"), join(w.ws, "build-old"));
    symlinkSync(join(w.home, ".ssh"), join(w.ws, "build"));
    assert.equal(bash("cat build/id_ed25519"), "review/identity-secret");
  });

  test("a glob's listing: a protected name that appears is matched", async () => {
    await settle();
    twice("truncate -s 0 build/*", "sandbox/sandboxed");
    writeFileSync(join(w.ws, "build", "AGENTS.md"), "# agents\n");
    assert.equal(bash("truncate -s 0 build/*"), "review/protected-path");
  });

  test("a user config that appears after calls that found none", async () => {
    await settle();
    twice("ls -la", "sandbox/sandboxed");
    writeFileSync(join(w.agentDir, "auto-mode.json"), JSON.stringify({ version: 1, rules: { deny: [{ command: "ls *" }] } }));
    assert.equal(bash("ls -la"), "deny/user-deny-rule");
  });

  test("a project config that appears after calls that found none", async () => {
    await settle();
    twice("npm test", "sandbox/sandboxed");
    writeFileSync(join(w.ws, ".pi", "auto-mode.json"), JSON.stringify({ version: 1, rules: { review: [{ command: "npm *" }] } }));
    assert.equal(bash("npm test"), "review/user-review-rule");
  });

  test("a global git config that appears after calls that found none", async () => {
    const hooks = join(w.ws, "my-hooks");
    mkdirSync(hooks);
    await settle();
    twice("git commit -m wip", "sandbox/sandboxed");
    writeFileSync(join(w.home, ".gitconfig"), `[core]\n\thooksPath = ${hooks}\n`);
    assert.equal(bash("git commit -m wip", "review-only"), "review/sandboxed");
  });

  test("once the workspace's entries are known, its paths cost no look-up of their own", async () => {
    await settle();
    const command = "cat README.md missing.txt && ls -la build && rm -rf dist";
    bash(command);
    bash(command);
    const gate = prepareGate(evalSetup(w));
    assert.equal(analyzeShell(command, gate.judge.shell).fsCalls, 0);
    // One level further down: one look-up of the directory vouches for all it holds.
    const deeper = "cat src/index.ts src/util.ts src/missing.ts";
    bash(deeper);
    bash(deeper);
    assert.equal(analyzeShell(deeper, prepareGate(evalSetup(w)).judge.shell).fsCalls, 1);
  });
});

describe("caches hit when nothing changed", () => {
  test("the places and the configuration are the same objects from call to call", async () => {
    writeFileSync(join(w.agentDir, "auto-mode.json"), JSON.stringify({ version: 1 }));
    // Stamps of changes too recent to tell apart are not trusted (on a coarse file system for a few seconds).
    let a = prepareGate(evalSetup(w));
    let b = prepareGate(evalSetup(w));
    for (let i = 0; i < 40 && (a.judge.places !== b.judge.places || a.config !== b.config); i++) {
      await settle();
      a = prepareGate(evalSetup(w));
      b = prepareGate(evalSetup(w));
    }
    assert.equal(a.judge.places, b.judge.places);
    assert.equal(a.config, b.config);
  });
});

describe("stamps: a change too recent for the file system's clock is not trusted", () => {
  const stat = (ctimeMs: number) => ({ ctimeMs }) as Stats;
  test("fine-grained times: settled 50 ms after the change", () => {
    const now = 1_700_000_000_123.5;
    assert.equal(settled(stat(now - 10.25), now), false);
    assert.equal(settled(stat(now - 60.25), now), true);
  });
  test("times on whole seconds (a coarse file system): only after 2.5 s", () => {
    const now = 1_700_000_001_500;
    assert.equal(settled(stat(1_700_000_000_000), now), false);
    assert.equal(settled(stat(1_699_999_998_000), now), true);
  });
  test("a missing file has nothing to change within a tick", () => {
    assert.equal(settled(undefined, Date.now()), true);
  });
});
