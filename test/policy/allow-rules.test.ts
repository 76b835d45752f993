// What a user's allow rule may spare (issue 14): the review, never the sandbox, and never the
// review of a protected path, an identity secret, a location that runs code later or a write
// outside the writable roots. Those open only with the rule's own `paths`; running outside the
// sandbox only with `unsandboxed` (an escalation the rule approves). Hostile: every call here is
// one a plain allow rule for the command must not open. A project still adds no allow rule (P15).

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadPolicyConfig, PROJECT_CONFIG_FILE, USER_CONFIG_FILE } from "../../src/policy/config/load.ts";
import { decide, prepareGate } from "../../src/policy/gate.ts";
import { rulesRunUnsandboxed } from "../../src/policy/route.ts";
import { BACKENDS, type Backend, type Decision } from "../../src/policy/types.ts";
import { selfPaths } from "../../src/state/locations.ts";

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

interface World {
  readonly ws: string;
  readonly home: string;
  readonly agentDir: string;
  readonly tmp: string;
}

function world(user: unknown, project?: unknown): World {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pam-allow-rules-")));
  made.push(root);
  const ws = join(root, "ws");
  const home = join(root, "home");
  const agentDir = join(home, ".pi", "agent");
  const tmp = join(root, "tmp");
  for (const d of [join(ws, ".git", "hooks"), join(ws, "src"), join(home, ".ssh"), join(home, ".config", "app"), agentDir, tmp])
    mkdirSync(d, { recursive: true });
  writeFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
  writeFileSync(join(ws, "src", "a.ts"), "export {};\n");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
  writeFileSync(join(agentDir, USER_CONFIG_FILE), JSON.stringify({ version: 1, ...(user as object) }));
  if (project !== undefined) {
    mkdirSync(join(ws, ".pi"), { recursive: true });
    writeFileSync(join(ws, PROJECT_CONFIG_FILE), JSON.stringify({ version: 1, ...(project as object) }));
  }
  return { ws, home, agentDir, tmp };
}

function gateOf(w: World) {
  return prepareGate({ cwd: w.ws, home: w.home, agentDir: w.agentDir, defaultTmpRoot: w.tmp, selfPaths: selfPaths(w.agentDir) });
}

function at(w: World, tool: string, input: unknown, backend: Backend): Decision {
  return decide(tool, input, gateOf(w), backend).decision;
}

const pick = (d: Decision) => [d.route, d.reason];
const bash = (command: string) => ({ command });
const RUNNING: readonly Backend[] = BACKENDS.filter((b) => b !== "unavailable");

describe("a plain allow rule spares the review, not protected paths (issue 14)", () => {
  const touch = { rules: { allow: [{ command: "touch *" }] } };

  test("it still allows ordinary work: in the sandbox where there is one", () => {
    const w = world(touch);
    assert.deepEqual(pick(at(w, "bash", bash("touch src/b.ts"), "sandboxed")), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "bash", bash("touch src/b.ts"), "sandboxed-unstaged")), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "bash", bash("touch src/b.ts"), "review-only")), ["allow", "user-allow-rule"]);
  });

  const hostile: Array<[string, string, string]> = [
    ["a file in .git", "touch .git/x", "protected-path"],
    ["a git hook", "touch .git/hooks/pre-commit", "protected-path"],
    ["AGENTS.md", "touch AGENTS.md", "protected-path"],
    ["a protected name after an ordinary one", "touch src/ok.ts .git/config", "protected-path"],
    ["the shell's startup file", "touch ~/.bashrc", "persistence"],
    ["the ssh directory", "touch ~/.ssh/authorized_keys", "persistence"],
  ];
  for (const [name, command, reason] of hostile)
    test(`${name} (${command}) still needs review on every backend`, () => {
      const w = world(touch);
      for (const b of RUNNING) {
        const d = at(w, "bash", bash(command), b);
        assert.notEqual(d.reason, "user-allow-rule", `${b}: ${d.message}`);
        assert.deepEqual(pick(d), ["review", reason], `${b}: ${d.message}`);
        assert.match(d.message, /allow rule .* does not open/, "the message says why the rule did not apply");
      }
    });

  test("a write outside the writable roots is not opened where it would run on the host", () => {
    const w = world(touch);
    // In the sandbox it cannot land (the home is read-only there): the rule's sandbox route stands.
    assert.deepEqual(pick(at(w, "bash", bash("touch ~/x"), "sandboxed")), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "bash", bash("touch ~/x"), "review-only")), ["review", "outside-writable-roots"]);
    assert.deepEqual(pick(at(w, "bash", bash('touch "$X"'), "review-only")), ["review", "outside-writable-roots"]);
  });

  test("a rule for every command does not open them either", () => {
    const w = world({ rules: { allow: [{ command: "*" }, { tool: "bash" }] } });
    for (const b of RUNNING) {
      assert.equal(at(w, "bash", bash("cat ~/.ssh/id_ed25519"), b).reason, "identity-secret", b);
      assert.equal(at(w, "bash", bash("echo x > .git/hooks/post-checkout"), b).reason, "protected-path", b);
      assert.equal(at(w, "bash", bash("git config core.fsmonitor ./x"), b).reason, "git-config", b);
    }
  });

  test("file tools: a tool rule opens neither protected paths, secrets nor the home", () => {
    const w = world({ rules: { allow: [{ tool: "write" }, { tool: "edit" }, { tool: "read" }] } });
    for (const b of RUNNING) {
      assert.deepEqual(pick(at(w, "write", { path: "src/new.ts", content: "" }, b)), ["allow", "user-allow-rule"], b);
      assert.deepEqual(pick(at(w, "write", { path: ".git/config", content: "" }, b)), ["review", "protected-path"], b);
      assert.deepEqual(pick(at(w, "write", { path: "AGENTS.md", content: "" }, b)), ["review", "protected-path"], b);
      assert.deepEqual(pick(at(w, "write", { path: "~/notes.txt", content: "" }, b)), ["review", "outside-writable-roots"], b);
      assert.deepEqual(pick(at(w, "write", { path: "~/.bashrc", content: "" }, b)), ["review", "persistence"], b);
      assert.deepEqual(pick(at(w, "read", { path: "~/.ssh/id_ed25519" }, b)), ["review", "identity-secret"], b);
    }
  });

  test("what the rule may spare it still spares: a destructive command, a network call", () => {
    const w = world({ rules: { allow: [{ command: "rm *" }, { command: "curl *" }] } });
    assert.deepEqual(pick(at(w, "bash", bash("rm -rf src"), "sandboxed")), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "bash", bash("rm -rf src"), "review-only")), ["allow", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "bash", bash("curl -s https://example.com"), "review-only")), ["allow", "user-allow-rule"]);
  });

  test("hard denies and self-protection stay whatever the rule says", () => {
    const w = world({ rules: { allow: [{ command: "*", paths: ["/"], unsandboxed: true }] } });
    for (const b of RUNNING) {
      assert.deepEqual(pick(at(w, "bash", bash("rm -rf ~"), b)), ["deny", "hard-deny"], b);
      assert.deepEqual(pick(at(w, "bash", bash(`echo {} > ${join(w.agentDir, "auto-mode.json")}`), b)), ["deny", "self-protection"], b);
    }
  });
});

describe("paths: the protected places an allow rule names, and only those", () => {
  test("paths opens exactly what it names, for the commands the rule covers", () => {
    const w = world({
      rules: {
        allow: [
          { command: "touch *", paths: [".git/hooks"] },
          { tool: "write", paths: ["~/.config/app"] },
        ],
      },
    });
    assert.deepEqual(pick(at(w, "bash", bash("touch .git/hooks/pre-commit"), "review-only")), ["allow", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "bash", bash("touch .git/hooks/pre-commit"), "sandboxed")), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(at(w, "write", { path: "~/.config/app/settings.json", content: "{}" }, "sandboxed")), ["allow", "user-allow-rule"]);
    // Not named: still reviewed.
    assert.deepEqual(pick(at(w, "bash", bash("touch .git/config"), "review-only")), ["review", "protected-path"]);
    assert.deepEqual(pick(at(w, "write", { path: "~/.config/other.json", content: "{}" }, "sandboxed")), ["review", "outside-writable-roots"]);
    assert.deepEqual(
      pick(at(w, "write", { path: ".git/hooks/pre-push", content: "" }, "sandboxed")),
      ["review", "protected-path"],
      "the bash rule's paths are its own",
    );
  });

  const hostile: Array<[string, string]> = [
    ["a named path next to one that is not", "touch .git/hooks/a .git/config"],
    ["a word only known at run time", 'touch .git/hooks/a "$TARGET"'],
    ["a change of directory", "cd .git && touch hooks/../config"],
    ["a directory stack", "pushd .git && touch hooks/../config"],
    ["a glob", "touch .git/hooks/../*"],
  ];
  for (const [name, command] of hostile)
    test(`not opened by ${name}: ${command}`, () => {
      const w = world({ rules: { allow: [{ command: "*", paths: [".git/hooks"] }] } });
      for (const b of RUNNING) assert.equal(at(w, "bash", bash(command), b).route, "review", `${b}: ${at(w, "bash", bash(command), b).message}`);
    });

  test("a symlink to a protected place is judged by where it leads", () => {
    const w = world({ rules: { allow: [{ tool: "write", paths: ["src/**"] }] } });
    symlinkSync(join(w.ws, ".git", "config"), join(w.ws, "src", "cfg"));
    assert.deepEqual(pick(at(w, "write", { path: "src/cfg", content: "" }, "sandboxed")), ["review", "protected-path"]);
  });

  test("paths and unsandboxed belong to allow rules in the user's file only (P15)", () => {
    const load = (w: World) => loadPolicyConfig({ agentDir: w.agentDir, cwd: w.ws, home: w.home });
    const userDeny = load(world({ rules: { deny: [{ command: "x *", paths: ["/"] }] } }));
    assert.equal(userDeny.ok, false);
    assert.match(userDeny.ok ? "" : userDeny.message, /^\/rules\/deny\/0\/paths: unknown key/);
    const userReview = load(world({ rules: { review: [{ command: "x *", unsandboxed: true }] } }));
    assert.equal(userReview.ok, false);
    for (const project of [
      { rules: { allow: [{ command: "touch *", paths: [".git"] }] } },
      { rules: { review: [{ command: "touch *", paths: [".git"] }] } },
      { rules: { deny: [{ command: "touch *", unsandboxed: true }] } },
    ]) {
      const r = load(world({}, project));
      assert.equal(r.ok, false, JSON.stringify(project));
    }
    const empty = load(world({ rules: { allow: [{ command: "touch *", paths: [] }] } }));
    assert.equal(empty.ok, false, "an empty paths list opens nothing: a mistake, not a rule");
  });
});

describe("unsandboxed: the rule approves an escalation, the sandbox stays the default", () => {
  test("a plain allow rule never runs a command on the host where a sandbox exists", () => {
    const w = world({ rules: { allow: [{ command: "docker *" }] } });
    const g = gateOf(w);
    const r = decide("bash", { command: "docker ps", sandbox_permissions: "require_escalated", justification: "the socket" }, g, "sandboxed");
    assert.deepEqual(pick(r.decision), ["sandbox", "user-allow-rule"]);
    assert.equal(rulesRunUnsandboxed(r.judgement!, g.config), false);
  });

  test("with unsandboxed the rule approves the escalation of what it covers, and only that", () => {
    const w = world({ rules: { allow: [{ command: "docker *", unsandboxed: true }, { command: "echo *" }] } });
    const g = gateOf(w);
    const run = (command: string) => {
      const r = decide("bash", { command, sandbox_permissions: "require_escalated", justification: "the socket" }, g, "sandboxed");
      return rulesRunUnsandboxed(r.judgement!, g.config);
    };
    assert.equal(run("docker ps"), true);
    assert.equal(run("docker ps && echo done"), false, "echo's rule does not say unsandboxed");
    assert.equal(run("docker ps > .git/hooks/pre-commit"), false, "protected paths stay reviewed");
    assert.equal(run("docker ps > ~/y"), false, "a write outside the writable roots would land on the host");
    assert.equal(run("curl -s https://example.com"), false);
  });

  test("a shell the sandbox cannot contain runs on the host only with unsandboxed", () => {
    const plain = world({ rules: { allow: [{ tool: "powershell" }] } });
    const opted = world({ rules: { allow: [{ tool: "powershell", unsandboxed: true }] } });
    for (const b of ["sandboxed", "sandboxed-unstaged", "unavailable"] as const) {
      assert.deepEqual(pick(at(plain, "powershell", { command: "Get-ChildItem" }, b)), ["deny", "uncontained-shell"], b);
      assert.deepEqual(pick(at(opted, "powershell", { command: "Get-ChildItem" }, b)), ["allow", "user-allow-rule"], b);
    }
    // Without an OS sandbox everything runs on the host: the plain rule is enough there.
    assert.deepEqual(pick(at(plain, "powershell", { command: "Get-ChildItem" }, "review-only")), ["allow", "user-allow-rule"]);
  });
});
