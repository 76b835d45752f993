// P12 with the gate: tool calls that would write auto mode's own state (the state file, the
// watermarks, the lock, temp files, the state dir itself) or the user config are denied
// statically, before any review, for every tool and every spelling the path policy resolves,
// under every backend. The files checked are the ones the durable store really creates.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, describe, test } from "node:test";
import { decide, prepareGate, type GateContext } from "../../src/policy/gate.ts";
import { BACKENDS } from "../../src/policy/types.ts";
import { LOCK_NAME } from "../../src/state/artifacts.ts";
import { tempName } from "../../src/state/durable-fs.ts";
import { createDurableGlobalState } from "../../src/state/durable-store.ts";
import { selfPaths } from "../../src/state/locations.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-state-self-")));
after(() => rmSync(root, { recursive: true, force: true }));
const home = join(root, "home");
const agentDir = join(home, ".pi", "agent");
const cwd = join(root, "work");
const tmp = join(root, "tmp");
mkdirSync(agentDir, { recursive: true });
mkdirSync(cwd);
mkdirSync(tmp);

const store = createDurableGlobalState({ agentDir });
await store.setEnabled(true);
const S = store.dir;
// The files the store really made, plus the names it uses only for a moment: its lock and temp files.
const stateFiles = [...readdirSync(S), LOCK_NAME, tempName("state.json"), tempName("revision.json"), tempName("revision.recovery.json")];
mkdirSync(join(S, LOCK_NAME));
writeFileSync(join(agentDir, "auto-mode.json"), `${JSON.stringify({ version: 1 })}\n`);
symlinkSync(S, join(cwd, "link"));
symlinkSync(join(S, "state.json"), join(cwd, "file-link"));
symlinkSync(join(S, "not-yet"), join(cwd, "dangling"));
// PI_CODING_AGENT_DIR may itself name the agent dir through a symlink.
const agentLink = join(root, "agent-link");
symlinkSync(agentDir, agentLink);

function gateFor(dir: string): GateContext {
  return prepareGate({ cwd, home, agentDir: dir, defaultTmpRoot: tmp, selfPaths: selfPaths(dir) });
}
const gates = { direct: gateFor(agentDir), "through a symlinked agent dir": gateFor(agentLink) };

function assertDenied(tool: string, input: unknown, label: string): void {
  for (const [how, gate] of Object.entries(gates))
    for (const backend of BACKENDS) {
      const d = decide(tool, input, gate, backend).decision;
      assert.deepEqual([d.route, d.reason], ["deny", "self-protection"], `${label} (${how}, ${backend}): ${d.message}`);
    }
}

describe("P12: writes to auto mode's own state are denied statically", () => {
  test("the store's files live in the protected state dir", () => {
    assert.equal(S, selfPaths(agentDir)[1]);
    assert.ok(stateFiles.length >= 6);
  });

  test("write and edit, every state file, every spelling", () => {
    const rel = relative(cwd, S);
    for (const f of stateFiles) {
      const spellings = [
        join(S, f),
        `~/.pi/agent/auto-mode/${f}`,
        `@${join(S, f)}`,
        `file://${join(S, f)}`,
        join(rel, f),
        `./${rel}/${f}`,
        `${agentDir}//auto-mode/./${f}`,
        `${agentDir}/sessions/../auto-mode/${f}`,
        `${agentLink}/auto-mode/${f}`,
        `link/${f}`,
      ];
      for (const path of spellings) {
        assertDenied("write", { path, content: "{}" }, `write ${path}`);
        assertDenied("edit", { path, edits: [{ oldText: "true", newText: "false" }] }, `edit ${path}`);
      }
    }
  });

  test("the state dir itself, a file inside the lock, symlinks into the state dir, the user config", () => {
    for (const path of [S, `${S}/`, join(S, LOCK_NAME, "held"), "file-link", "dangling", join(agentDir, "auto-mode.json"), "~/.pi/agent/auto-mode.json"])
      assertDenied("write", { path, content: "x" }, `write ${path}`);
  });

  test("bash: redirections, file commands, directory changes, globs, variables", () => {
    const commands = [
      "echo x > ~/.pi/agent/auto-mode/state.json",
      "echo '{\"watermark\":99}' > $HOME/.pi/agent/auto-mode/revision.json",
      'printf x > "$HOME"/.pi/agent/auto-mode/revision.recovery.json',
      "echo x >> ~/.pi/agent/../agent/auto-mode/state.json",
      "rm -rf ~/.pi/agent/auto-mode",
      "rm ~/.pi/agent/auto-mode/revision.recovery.json",
      "unlink ~/.pi/agent/auto-mode/state.json",
      "rmdir ~/.pi/agent/auto-mode/state.lock",
      "mkdir ~/.pi/agent/auto-mode/state.lock",
      "touch ~/.pi/agent/auto-mode/.state.json.1.a.tmp",
      "mv /tmp/x ~/.pi/agent/auto-mode/state.json",
      "mv ~/.pi/agent/auto-mode /tmp/elsewhere",
      "cp x ~/.pi/agent/auto-mode/state.json",
      "install -m 600 x ~/.pi/agent/auto-mode/state.json",
      "rsync -a x ~/.pi/agent/auto-mode/",
      "tee ~/.pi/agent/auto-mode/state.json < /dev/null",
      "sed -i s/true/false/ ~/.pi/agent/auto-mode/state.json",
      "ln -sf /dev/null ~/.pi/agent/auto-mode/state.json",
      "chmod 000 ~/.pi/agent/auto-mode/state.json",
      "truncate -s 0 ~/.pi/agent/auto-mode/state.json",
      `dd if=/dev/zero of=${S}/state.json`,
      "find ~/.pi/agent/auto-mode -delete",
      "cd ~/.pi/agent && rm -r auto-mode",
      "cd ~/.pi/agent/auto-mode && rm -f *",
      "rm -rf link",
      "echo x > link/state.json",
      "echo x > file-link",
      "echo x > dangling",
      `echo x > ${agentLink}/auto-mode/state.json`,
    ];
    for (const command of commands) assertDenied("bash", { command }, command);
  });

  test("removing or moving a directory that holds the state is denied too (as a hard deny)", () => {
    for (const command of ["rm -rf ~/.pi/agent", "rm -rf ~/.pi", "mv ~/.pi/agent ~/.pi/old", "chmod -R 000 ~/.pi/agent"]) {
      for (const backend of BACKENDS) {
        const d = decide("bash", { command }, gates.direct, backend).decision;
        assert.equal(d.route, "deny", `${command} (${backend}): ${d.reason}`);
      }
    }
  });

  test("the revision anchor beside the state dir: every tool, every spelling, and the copy-back itself", () => {
    const anchor = selfPaths(agentDir)[2]!;
    assert.equal(anchor, join(agentDir, "auto-mode.anchor"), "the path the store really writes");
    for (const path of [
      anchor,
      "~/.pi/agent/auto-mode.anchor",
      `@${anchor}`,
      `file://${anchor}`,
      `${agentLink}/auto-mode.anchor`,
      `${agentDir}/sessions/../auto-mode.anchor`,
    ]) {
      assertDenied("write", { path, content: '{"watermark":0}\n' }, `write ${path}`);
      assertDenied("edit", { path, edits: [{ oldText: "9", newText: "1" }] }, `edit ${path}`);
    }
    for (const command of [
      "rm ~/.pi/agent/auto-mode.anchor",
      "echo '{\"watermark\":1}' > ~/.pi/agent/auto-mode.anchor",
      "cp /tmp/old.anchor ~/.pi/agent/auto-mode.anchor",
      "mv ~/.pi/agent/auto-mode.anchor /tmp/x",
      "touch -d 2000-01-01 ~/.pi/agent/auto-mode.anchor",
      // The rollback the anchor catches, tried by a tool call: already denied as a write to the state dir.
      "cp -a /tmp/saved-auto-mode/. ~/.pi/agent/auto-mode/",
      "rsync -a --delete /tmp/saved-auto-mode/ ~/.pi/agent/auto-mode/",
    ])
      assertDenied("bash", { command }, command);
  });

  test("git -C into the state dir", () => {
    assertDenied("bash", { command: "git -C ~/.pi/agent/auto-mode init" }, "git -C init");
  });

  test("reading the state is not denied (it holds no secret)", () => {
    const d = decide("read", { path: join(S, "state.json") }, gates.direct, "sandboxed").decision;
    assert.equal(d.route, "allow");
  });
});
