// Git commands that write .git run outside the sandbox (it keeps .git read-only). When the
// repository has hooks, those commands would run hook code outside the sandbox too: a reviewer
// judges them, and mixed with anything that needs the sandbox they are contained.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { evalGate } from "../../src/eval/score.ts";
import { buildEvalWorkspace } from "../../src/eval/workspace.ts";
import { decide } from "../../src/policy/gate.ts";

const w = buildEvalWorkspace();
after(() => w.dispose());

function route(command: string, backend: "sandboxed" | "sandboxed-unstaged" | "review-only" = "sandboxed"): string {
  const d = decide("bash", { command }, evalGate(w), backend).decision;
  return `${d.route}/${d.reason}`;
}

describe("git hooks and local git", () => {
  test("without hooks, a local commit runs in the sandbox over the staged workspace, unreviewed", () => {
    assert.equal(route("git add -A && git commit -m wip"), "sandbox/sandboxed");
    // Where nothing can be staged, a git write needs review; never the host (P6, P7).
    assert.equal(route("git add -A && git commit -m wip", "sandboxed-unstaged"), "review/git-local");
    assert.equal(route("git add -A && git commit -m wip", "review-only"), "allow/git-local");
  });

  test("sample hooks and non-executable files do not count", () => {
    writeFileSync(join(w.ws, ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n");
    chmodSync(join(w.ws, ".git", "hooks", "pre-commit.sample"), 0o755);
    writeFileSync(join(w.ws, ".git", "hooks", "notes.txt"), "not a hook\n");
    assert.equal(route("git commit -m wip"), "sandbox/sandboxed");
  });

  test("an active hook makes hook-running commands need review, under both backends", () => {
    const hook = join(w.ws, ".git", "hooks", "pre-commit");
    writeFileSync(hook, "#!/bin/sh\nnpx lint-staged\n");
    chmodSync(hook, 0o755);
    try {
      assert.equal(route("git commit -m wip"), "review/git-hooks");
      assert.equal(route("git merge feature", "review-only"), "review/git-hooks");
      assert.equal(route("git switch -c topic"), "review/git-hooks");
      assert.equal(route("git add -A"), "sandbox/sandboxed", "add runs no hooks");
      assert.equal(route("git status"), "sandbox/sandboxed", "reads stay sandboxed");
    } finally {
      chmodSync(hook, 0o644);
    }
  });

  test("mixed with a build, a hook-running commit is contained, never run bare", () => {
    const hook = join(w.ws, ".git", "hooks", "commit-msg");
    writeFileSync(hook, "#!/bin/sh\nexit 0\n");
    chmodSync(hook, 0o755);
    try {
      assert.equal(route("git commit -m wip && npm test"), "sandbox/sandboxed");
      assert.equal(route("git commit -m wip && curl -s https://example.com"), "sandbox/sandboxed");
    } finally {
      chmodSync(hook, 0o644);
    }
  });

  test("core.hooksPath pointing at a directory with hooks counts too", () => {
    mkdirSync(join(w.ws, ".husky"), { recursive: true });
    writeFileSync(join(w.ws, ".husky", "pre-commit"), "#!/bin/sh\nnpx lint-staged\n");
    chmodSync(join(w.ws, ".husky", "pre-commit"), 0o755);
    writeFileSync(join(w.ws, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n\thooksPath = .husky\n");
    assert.equal(route("git commit -m wip"), "review/git-hooks");
  });
});

describe("nested repositories", () => {
  test("git in a repository below the workspace root is contained, not trusted outside the sandbox", () => {
    const sub = join(w.ws, "vendor", "lib");
    mkdirSync(join(sub, ".git", "hooks"), { recursive: true });
    writeFileSync(join(sub, ".git", "HEAD"), "ref: refs/heads/main\n");
    assert.equal(route("cd vendor/lib && git commit -m wip"), "sandbox/sandboxed");
    assert.equal(route("git -C vendor/lib commit -m wip"), "sandbox/sandboxed");
    assert.equal(route("cd src && git stash"), "sandbox/sandboxed", "a plain subdirectory of the workspace repository is fine");
    assert.equal(route("cd src && git stash", "review-only"), "allow/git-local");
  });
});
