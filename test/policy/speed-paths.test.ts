// The decision's path look-ups are shared within one call and partly kept from call to call (what
// a directory holds, while its stamp holds: src/request/paths.ts); the decision must still follow
// every change an attack can make between two calls. Each test decides twice on a settled
// workspace (the second time from the kept entries), changes the file system, and decides again,
// as the extension does (prepareGate, then decide). Review-only shows most: there the route is
// the finding's, with no sandbox to contain the rest.

import assert from "node:assert/strict";
import { linkSync, renameSync, statSync, symlinkSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { evalSetup } from "../../src/eval/score.ts";
import { buildEvalWorkspace, type EvalWorkspace } from "../../src/eval/workspace.ts";
import { decide, prepareGate } from "../../src/policy/gate.ts";

let w: EvalWorkspace;
beforeEach(() => {
  w = buildEvalWorkspace();
});
afterEach(() => w.dispose());

const PINNED = 1_700_000_000;

function bash(command: string, backend: "sandboxed" | "review-only" = "review-only"): string {
  const d = decide("bash", { command }, prepareGate(evalSetup(w)), backend).decision;
  return `${d.route}/${d.reason}`;
}

/** Changes older than the file system's time resolution, so that the kept entries fill (stamps.ts `settled`). */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 120));
}

/** The same decision twice on a settled workspace: the second one is answered from the kept entries. */
function twice(command: string, expected: string): void {
  assert.equal(bash(command), expected);
  assert.equal(bash(command), expected, "from the kept entries");
}

const key = () => join(w.home, ".ssh", "id_ed25519");

describe("a hard link's count is read at every call", () => {
  test("a workspace file that gains a hard link outside, its directory unchanged", async () => {
    const src = join(w.ws, "src");
    await settle();
    twice("sed -i s/a/b/ src/*.ts", "allow/workspace-write");
    twice("sed -i s/a/b/ src/index.ts", "allow/workspace-write");
    const st = statSync(src);
    linkSync(join(src, "index.ts"), join(w.home, "kept-copy"));
    const now = statSync(src);
    assert.deepEqual([now.mtimeMs, now.ctimeMs, now.size, now.nlink], [st.mtimeMs, st.ctimeMs, st.size, st.nlink], "src/ kept its stamp");
    assert.equal(bash("sed -i s/a/b/ src/*.ts"), "review/outside-writable-roots");
    assert.equal(bash("sed -i s/a/b/ src/index.ts"), "review/outside-writable-roots");
    assert.equal(bash("echo x | tee src/*.ts"), "review/outside-writable-roots");
  });

  test("a listed file replaced by a hard link to ~/.ssh/id_ed25519, the directory's mtime put back", async () => {
    const src = join(w.ws, "src");
    utimesSync(src, PINNED, PINNED);
    await settle();
    twice("sed -i s/a/b/ src/*.ts", "allow/workspace-write");
    linkSync(key(), join(w.ws, "staged"));
    renameSync(join(w.ws, "staged"), join(src, "util.ts"));
    utimesSync(src, PINNED, PINNED);
    assert.equal(statSync(src).mtimeMs, PINNED * 1000);
    assert.equal(bash("sed -i s/a/b/ src/*.ts"), "review/outside-writable-roots");
    assert.equal(bash("chmod 600 src/*.ts"), "review/outside-writable-roots");
  });
});

describe("a glob's listing is the directory's as it is now", () => {
  test("a new match, a hard link to ~/.ssh/id_ed25519, the directory's mtime put back", async () => {
    const build = join(w.ws, "build");
    utimesSync(build, PINNED, PINNED);
    await settle();
    twice("truncate -s 0 build/*", "allow/regenerable-cleanup");
    linkSync(key(), join(build, "cache.bin"));
    utimesSync(build, PINNED, PINNED);
    assert.equal(bash("truncate -s 0 build/*"), "review/outside-writable-roots");
    assert.equal(bash("sed -i s/a/b/ build/*"), "review/outside-writable-roots");
  });

  test("the glob's directory replaced by a symlink to ~/.ssh", async () => {
    await settle();
    twice("cat build/*", "allow/read-only");
    twice("sed -i s/a/b/ build/*", "allow/workspace-write");
    renameSync(join(w.ws, "build"), join(w.ws, "build-old"));
    symlinkSync(join(w.home, ".ssh"), join(w.ws, "build"));
    assert.equal(bash("cat build/*"), "review/identity-secret");
    assert.equal(bash("sed -i s/a/b/ build/*"), "review/persistence");
    assert.equal(bash("rm -rf build/*"), "deny/hard-deny");
  });

  test("the workspace's own top (stamped by the preparation): a new match, a hard link to the key", async () => {
    utimesSync(w.ws, PINNED, PINNED);
    await settle();
    twice("sed -i s/a/b/ *.json", "allow/workspace-write");
    twice("rm -rf *", "review/protected-path");
    linkSync(key(), join(w.ws, "id.json"));
    utimesSync(w.ws, PINNED, PINNED);
    assert.equal(bash("sed -i s/a/b/ *.json"), "review/outside-writable-roots");
    // Removing a name leaves the file's other links and their data alone: rm is judged as before.
    assert.equal(bash("rm -rf *"), "review/protected-path");
  });
});

describe("where the path facts meet the glob", () => {
  // expandGlob (src/policy/shell/locate.ts) follows a match that is a symlink, as the same file
  // named plainly is followed (it used not to: review-only allowed both globbed commands).
  test("a glob's match that is a symlink to ~/.ssh/id_ed25519 or ~/.bashrc is judged where it leads", () => {
    symlinkSync(key(), join(w.ws, "build", "out.js"));
    symlinkSync(join(w.home, ".bashrc"), join(w.ws, "src", "rc.ts"));
    assert.equal(bash("cat build/out.js"), "review/identity-secret");
    assert.equal(bash("sed -i s/a/b/ src/rc.ts"), "review/persistence");
    assert.equal(bash("cat build/*"), "review/identity-secret");
    assert.equal(bash("sed -i s/a/b/ src/*.ts"), "review/persistence");
    // A pattern in the directory part is expanded level by level, to the same places.
    assert.equal(bash("cat */out.js"), "review/identity-secret");
    assert.equal(bash("cat b*/out.js"), "review/identity-secret");
    assert.equal(bash("sed -i s/a/b/ s*/rc.ts"), "review/persistence");
  });
});
