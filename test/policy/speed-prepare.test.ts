// The per-call preparation (prepareGate) looks up as little as it can: each path once per call,
// and the workspace's `.git` directory only when the workspace's entries changed (its stamp
// vouches for `.git` otherwise: gate.ts `holds`). Where a path lies is kept per Places value
// (places.ts memoByPlaces), a file's link count looked up at every call. Each test makes a call
// on a settled file system, checks that the cheap path was taken, changes the file system
// between two calls the way an attack would, and checks that the next call sees the change.

import assert from "node:assert/strict";
import { linkSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { evalSetup } from "../../src/eval/score.ts";
import { buildEvalWorkspace, type EvalWorkspace } from "../../src/eval/workspace.ts";
import { decide, prepareGate, type GateContext } from "../../src/policy/gate.ts";
import type { StampBook } from "../../src/request/stamps.ts";

let w: EvalWorkspace;
beforeEach(() => {
  w = buildEvalWorkspace();
});
afterEach(() => w.dispose());

const prepare = () => prepareGate(evalSetup(w));
const bookOf = (gate: GateContext) => (gate.judge.shell as unknown as { book: StampBook }).book;

function route(tool: string, input: unknown, backend: "sandboxed" | "review-only" = "sandboxed"): string {
  const d = decide(tool, input, prepare(), backend).decision;
  return `${d.route}/${d.reason}`;
}
const bash = (command: string, backend: "sandboxed" | "review-only" = "sandboxed") => route("bash", { command }, backend);

/** Waits until a fresh change's times can be told apart (stamps.ts), so caches fill settled. */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 120));
}

/** Prepares until the places come from the cache (the first calls after a change may not trust it). */
async function warm(): Promise<GateContext> {
  await settle();
  for (let i = 0; i < 40; i++) {
    const a = prepare();
    const b = prepare();
    if (a.judge.places === b.judge.places && a.config === b.config) return b;
    await settle();
  }
  assert.fail("the places never came from the cache");
}

/** Whether this call's preparation looked up the workspace's `.git` itself. */
const lookedUpDotGit = (gate: GateContext) => bookOf(gate).seen(join(w.ws, ".git")) !== undefined || hasLookedUp(gate, join(w.ws, ".git"));
function hasLookedUp(gate: GateContext, p: string): boolean {
  // seen() answers undefined both for "not looked up" and for "looked up, missing": ask the map.
  return (bookOf(gate) as unknown as { lstats: Map<string, unknown> }).lstats.has(p);
}

describe("the preparation's look-ups", () => {
  test("a settled workspace vouches for its .git directory: no look-up of it, one of each other path", async () => {
    const gate = await warm();
    assert.equal(lookedUpDotGit(gate), false);
    const book = bookOf(gate);
    // The agent dir, the project's .pi, the workspace, the temporary root, the home directory.
    for (const p of [w.agentDir, join(w.ws, ".pi"), w.ws, w.tmp, w.home]) assert.ok(hasLookedUp(gate, p), p);
    assert.equal(book.calls, 5);
  });

  test("after the workspace's entries change, one call looks .git up, and the next ones need not", async () => {
    await warm();
    writeFileSync(join(w.ws, "new-file.txt"), "x\n");
    assert.equal(lookedUpDotGit(prepare()), true, "the workspace changed: .git is looked up");
    await settle();
    assert.equal(lookedUpDotGit(prepare()), true, "the changed stamp was too recent to vouch: looked up again");
    assert.equal(lookedUpDotGit(prepare()), false, "vouched by the workspace's new (settled) stamp");
  });
});

describe("a change between two calls is seen by the second", () => {
  test("a user config that appears: its rules apply at the next call", async () => {
    await warm();
    assert.equal(bash("npm test"), "sandbox/sandboxed");
    writeFileSync(join(w.agentDir, "auto-mode.json"), JSON.stringify({ version: 1, rules: { deny: [{ command: "npm *" }] } }));
    assert.equal(bash("npm test"), "deny/user-deny-rule");
  });

  test("a project config that appears: its rules apply at the next call", async () => {
    await warm();
    assert.equal(bash("npm test"), "sandbox/sandboxed");
    writeFileSync(join(w.ws, ".pi", "auto-mode.json"), JSON.stringify({ version: 1, rules: { review: [{ command: "npm *" }] } }));
    assert.equal(bash("npm test"), "review/user-review-rule");
  });

  test("a project config whose .pi directory appears: its rules apply at the next call", async () => {
    rmSync(join(w.ws, ".pi"), { recursive: true });
    await warm();
    assert.equal(bash("npm test"), "sandbox/sandboxed");
    mkdirSync(join(w.ws, ".pi"));
    writeFileSync(join(w.ws, ".pi", "auto-mode.json"), JSON.stringify({ version: 1, rules: { review: [{ command: "npm *" }] } }));
    assert.equal(bash("npm test"), "review/user-review-rule");
  });

  test("the workspace replaced by a symlink to ~/.ssh: a read in it reads a key", async () => {
    await warm();
    assert.equal(bash("cat id_ed25519"), "sandbox/sandboxed");
    assert.equal(route("read", { path: "id_ed25519" }), "allow/read-only");
    renameSync(w.ws, join(w.root, "ws-old"));
    symlinkSync(join(w.home, ".ssh"), w.ws);
    assert.equal(bash("cat id_ed25519"), "review/identity-secret");
    assert.equal(route("read", { path: "id_ed25519" }), "review/identity-secret");
  });

  test("the workspace replaced by another directory whose .git file names a git dir: its hooks are protected", async () => {
    const sep = join(w.tmp, "sep");
    mkdirSync(join(sep, "hooks"), { recursive: true });
    const hook = { path: join(sep, "hooks", "pre-commit"), content: "#!/bin/sh\n" };
    await warm();
    assert.equal(route("write", hook), "allow/workspace-write", "scratch space in the temporary root so far");
    const other = join(w.root, "ws-new");
    mkdirSync(other);
    writeFileSync(join(other, ".git"), `gitdir: ${sep}\n`);
    renameSync(w.ws, join(w.root, "ws-old"));
    renameSync(other, w.ws);
    assert.equal(route("write", hook), "review/protected-path");
  });

  for (const [what, replace] of [
    ["a .git file naming another git dir", (dotGit: string, sep: string) => writeFileSync(dotGit, `gitdir: ${sep}\n`)],
    ["a symlink to another git dir", (dotGit: string, sep: string) => symlinkSync(sep, dotGit)],
  ] as const) {
    test(`the .git directory replaced by ${what}, once the workspace vouched for it: that dir's hooks are protected`, async () => {
      const sep = join(w.tmp, "sep");
      mkdirSync(join(sep, "hooks"), { recursive: true });
      const hook = { path: join(sep, "hooks", "pre-commit"), content: "#!/bin/sh\n" };
      assert.equal(lookedUpDotGit(await warm()), false, "vouched by the workspace's stamp");
      assert.equal(route("write", hook), "allow/workspace-write");
      const dotGit = join(w.ws, ".git");
      renameSync(dotGit, join(w.root, "old-git"));
      replace(dotGit, sep);
      assert.equal(route("write", hook), "review/protected-path");
      assert.equal(bash(`echo x > ${sep}/hooks/post-checkout`), "review/protected-path");
    });
  }

  test("the .git directory replaced right after an unrelated change (the workspace's stamp too recent to vouch)", async () => {
    const sep = join(w.tmp, "sep");
    mkdirSync(join(sep, "hooks"), { recursive: true });
    const hook = { path: join(sep, "hooks", "pre-commit"), content: "#!/bin/sh\n" };
    await warm();
    writeFileSync(join(w.ws, "new-file.txt"), "x\n");
    assert.equal(route("write", hook), "allow/workspace-write");
    const dotGit = join(w.ws, ".git");
    renameSync(dotGit, join(w.root, "old-git"));
    writeFileSync(dotGit, `gitdir: ${sep}\n`);
    assert.equal(route("write", hook), "review/protected-path");
  });

  test("a .git file that appears right after an unrelated change, in a workspace that had none (same link count and size)", async () => {
    rmSync(join(w.ws, ".git"), { recursive: true });
    const sep = join(w.tmp, "sep");
    mkdirSync(join(sep, "hooks"), { recursive: true });
    const hook = { path: join(sep, "hooks", "pre-commit"), content: "#!/bin/sh\n" };
    await warm();
    writeFileSync(join(w.ws, "new-file.txt"), "x\n");
    assert.equal(route("write", hook), "allow/workspace-write");
    // Likely within the same tick of the file system's clock: only the settled rule tells it apart.
    writeFileSync(join(w.ws, ".git"), `gitdir: ${sep}\n`);
    assert.equal(route("write", hook), "review/protected-path");
  });

  test("a .git file that appears in a workspace that had none", async () => {
    rmSync(join(w.ws, ".git"), { recursive: true });
    const sep = join(w.tmp, "sep");
    mkdirSync(join(sep, "hooks"), { recursive: true });
    const hook = { path: join(sep, "hooks", "pre-commit"), content: "#!/bin/sh\n" };
    assert.equal(lookedUpDotGit(await warm()), false, "a missing .git is vouched for too");
    assert.equal(route("write", hook), "allow/workspace-write");
    writeFileSync(join(w.ws, ".git"), `gitdir: ${sep}\n`);
    assert.equal(route("write", hook), "review/protected-path");
  });

  test("a file given a second hard link between two calls: the write is judged as hard-linked (the answer kept per places is not)", async () => {
    const gate = await warm();
    const file = join(w.ws, "README.md");
    const write = { path: file, content: "# changed\n" };
    assert.equal(route("write", write), "allow/workspace-write");
    assert.equal(route("write", write), "allow/workspace-write", "kept answer");
    assert.equal(bash(`truncate -s 0 ${file}`, "review-only"), "allow/workspace-write");
    // Outside every directory the places were read from: the places stay the same object.
    linkSync(file, join(w.root, "README-link.md"));
    assert.equal(prepare().judge.places, gate.judge.places);
    assert.equal(route("write", write), "review/outside-writable-roots");
    assert.equal(bash(`truncate -s 0 ${file}`, "review-only"), "review/outside-writable-roots");
  });

  test("~/.ssh replaced by a symlink: its new real location is written and read as ~/.ssh (answers kept per places)", async () => {
    const vault = join(w.home, "vault");
    mkdirSync(vault);
    writeFileSync(join(vault, "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    await warm();
    const write = { path: join(vault, "authorized_keys"), content: "ssh-ed25519 AAAA x\n" };
    const before = route("write", write);
    assert.equal(route("write", write), before, "kept answer");
    assert.equal(route("read", { path: join(vault, "id_rsa") }), "allow/read-only");
    renameSync(join(w.home, ".ssh"), join(w.home, ".ssh-old"));
    symlinkSync(vault, join(w.home, ".ssh"));
    const after = route("write", write);
    assert.notEqual(after, before);
    assert.equal(route("write", { path: join(w.home, ".ssh", "authorized_keys"), content: write.content }), after);
    assert.equal(route("read", { path: join(vault, "id_rsa") }), "review/identity-secret");
  });
});
