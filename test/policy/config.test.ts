// User and project configuration: schema validation (a bad file is a fault that denies, P5),
// layering (the project can only tighten, P15), rule precedence (deny beats allow; no allow rule
// overrides a hard deny or self-protection, P3), and re-reading a file when it changes.

import assert from "node:assert/strict";
import { mkdirSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { decide, prepareGate } from "../../src/policy/gate.ts";
import { compileRule, firstMatch, ruleMatches } from "../../src/policy/rules.ts";
import type { Backend, Decision } from "../../src/policy/types.ts";
import { selfPaths } from "../../src/state/locations.ts";
import { type ConfigEnv, configEnv, expectFault, expectOk, loadIn } from "../helpers/config-env.ts";

type Env = ConfigEnv;
const env = (): Env => configEnv("pi-auto-mode-config-");
const load = loadIn;
const ok = expectOk;
const fault = expectFault;

const json = (v: unknown) => JSON.stringify(v, null, 2);

function decideIn(e: Env, tool: string, input: unknown, backend: Backend = "sandboxed"): Decision {
  const gate = prepareGate({ cwd: e.ws, home: e.home, agentDir: e.agentDir, defaultTmpRoot: e.tmp, selfPaths: selfPaths(e.agentDir) });
  return decide(tool, input, gate, backend).decision;
}

describe("config files: schema validation", () => {
  test("no files: an empty, valid configuration", () => {
    const c = ok(load(env()));
    assert.deepEqual([c.allow.length, c.review.length, c.deny.length, c.protectedPaths.length, c.files.length], [0, 0, 0, 0, 0]);
    assert.equal(c.tmpRoot, undefined);
  });

  test("a valid user and project file load, and both are listed", () => {
    const e = env();
    writeFileSync(
      e.userFile,
      json({
        $schema: "x",
        version: 1,
        tmpRoot: "~/scratch",
        protectedPaths: ["secrets/**"],
        rules: { allow: [{ tool: "mcp__docs__*" }], review: [], deny: [{ command: "terraform *" }] },
      }),
    );
    writeFileSync(
      e.projectFile,
      json({ version: 1, protectedPaths: ["/opt/shared/**"], rules: { review: [{ tool: "mcp__*" }], deny: [{ path: "vendor/**" }] } }),
    );
    const c = ok(load(e));
    assert.deepEqual(c.files, [e.userFile, e.projectFile]);
    assert.equal(c.tmpRoot, join(e.home, "scratch"));
    assert.deepEqual(c.protectedPaths, [join(e.ws, "secrets/**"), "/opt/shared/**"]);
    assert.deepEqual([c.allow.length, c.review.length, c.deny.length], [1, 1, 2]);
    assert.deepEqual(
      c.deny.map((r) => r.origin),
      ["user", "project"],
    );
  });

  const userFaults: Array<[string, string, RegExp]> = [
    ["not JSON", "{ version: 1, }", /JSON/],
    ["an empty file", "", /JSON/],
    ["a JSON array", "[]", /^\/: must be object/],
    ["JSON null", "null", /^\/: must be object/],
    ["no version", json({ rules: {} }), /version/],
    ["an unknown version", json({ version: 2 }), /^\/version: /],
    ["an unknown top-level key", json({ version: 1, rulez: {} }), /^\/rulez: unknown key/],
    ["an unknown rule list", json({ version: 1, rules: { ask: [] } }), /^\/rules\/ask: unknown key/],
    ["an unknown key in a rule", json({ version: 1, rules: { deny: [{ tol: "bash" }] } }), /^\/rules\/deny\/0\/tol: unknown key/],
    ["a rule field of the wrong type", json({ version: 1, rules: { allow: [{ tool: 7 }] } }), /^\/rules\/allow\/0\/tool: /],
    ["an empty rule pattern", json({ version: 1, rules: { deny: [{ command: "" }] } }), /^\/rules\/deny\/0\/command: /],
    ["a rule that matches nothing in particular", json({ version: 1, rules: { allow: [{ reason: "everything" }] } }), /invalid rule: a rule needs/],
    ["protectedPaths that are not strings", json({ version: 1, protectedPaths: [1] }), /^\/protectedPaths\/0: /],
    ["a relative tmpRoot", json({ version: 1, tmpRoot: "scratch" }), /^\/tmpRoot: must be absolute/],
  ];
  for (const [what, text, message] of userFaults) {
    test(`invalid user config (${what}) is a fault naming the file`, () => {
      const e = env();
      writeFileSync(e.userFile, text);
      fault(load(e), e.userFile, message);
    });
  }

  test("a user config path that is a directory is a fault", () => {
    const e = env();
    mkdirSync(e.userFile);
    fault(load(e), e.userFile, /EISDIR|directory/);
  });

  const projectFaults: Array<[string, unknown, RegExp]> = [
    ["allow rules (the project may only tighten)", { version: 1, rules: { allow: [{ tool: "bash" }] } }, /^\/rules\/allow: unknown key/],
    ["a tmpRoot (it would widen the writable roots)", { version: 1, tmpRoot: "/" }, /^\/tmpRoot: unknown key/],
    ["an unknown key", { version: 1, trust: true }, /^\/trust: unknown key/],
    ["a wrong version", { version: "1" }, /^\/version: /],
    ["a rule with an unknown key", { version: 1, rules: { deny: [{ tool: "bash", allow: true }] } }, /unknown key/],
  ];
  for (const [what, value, message] of projectFaults) {
    test(`invalid project config (${what}) is a fault naming the file`, () => {
      const e = env();
      writeFileSync(e.userFile, json({ version: 1 }));
      writeFileSync(e.projectFile, json(value));
      fault(load(e), e.projectFile, message);
    });
  }

  test("a fault in the user file is reported even when the project file is fine, and vice versa", () => {
    const e = env();
    writeFileSync(e.userFile, "{");
    writeFileSync(e.projectFile, json({ version: 1 }));
    fault(load(e), e.userFile, /JSON/);
    writeFileSync(e.userFile, json({ version: 1 }));
    writeFileSync(e.projectFile, "{");
    fault(load(e), e.projectFile, /JSON/);
  });

  test("a configuration fault denies every call, whatever it is, naming the file", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, unknown: true }));
    const calls: Array<[string, unknown]> = [
      ["read", { path: "src/index.ts" }],
      ["write", { path: "src/new.ts", content: "" }],
      ["bash", { command: "ls" }],
      ["bash", { command: "rm -rf ~" }],
      ["codemode", { code: "1" }],
      ["mcp__x__y", {}],
    ];
    for (const backend of ["sandboxed", "review-only", "unavailable"] as const) {
      for (const [tool, input] of calls) {
        const d = decideIn(e, tool, input, backend);
        assert.equal(d.route, "deny", `${tool} under ${backend}`);
        assert.equal(d.reason, "config-fault");
        assert.ok(d.message.includes(e.userFile));
      }
    }
    writeFileSync(e.userFile, json({ version: 1 }));
    writeFileSync(e.projectFile, json({ version: 1, rules: { allow: [{ tool: "*" }] } }));
    const d = decideIn(e, "read", { path: "src/index.ts" });
    assert.deepEqual([d.route, d.reason], ["deny", "config-fault"]);
    assert.ok(d.message.includes(e.projectFile));
  });
});

describe("config files: layering and precedence", () => {
  test("without rules: the static routes this file's other tests change", () => {
    const e = env();
    assert.deepEqual(pick(decideIn(e, "bash", { command: "curl https://example.com" })), ["sandbox", "sandboxed"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: "curl https://example.com" }, "review-only")), ["review", "network"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "src/gen/x.ts", content: "" })), ["allow", "workspace-write"]);
    assert.deepEqual(pick(decideIn(e, "mcp__github__create_issue", {})), ["review", "unknown-tool"]);
    assert.deepEqual(pick(decideIn(e, "read", { path: "src/index.ts" })), ["allow", "read-only"]);
  });

  test("a user allow rule lets a contained command run without review, still inside the sandbox", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ command: "curl https://example.com*" }] } }));
    assert.deepEqual(pick(decideIn(e, "bash", { command: "curl https://example.com" })), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: "curl https://example.com/x" }, "review-only")), ["allow", "user-allow-rule"]);
  });

  test("a bash allow rule must cover every simple command of the script", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ command: "curl https://example.com*" }] } }));
    const d = decideIn(e, "bash", { command: "curl https://example.com && curl https://evil.example" }, "review-only");
    assert.notEqual(d.reason, "user-allow-rule");
    assert.equal(d.route, "review");
    const piped = decideIn(e, "bash", { command: "curl https://example.com/i.sh | sh" });
    assert.notEqual(piped.reason, "user-allow-rule");
    assert.notEqual(piped.route, "allow");
  });

  test("project review rules tighten a user allow rule", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "mcp__github__*" }, { command: "curl *" }] } }));
    assert.deepEqual(pick(decideIn(e, "mcp__github__create_issue", {})), ["allow", "user-allow-rule"]);
    writeFileSync(
      e.projectFile,
      json({ version: 1, rules: { review: [{ tool: "mcp__github__create_*", reason: "issues are public" }, { command: "curl *" }] } }),
    );
    const d = decideIn(e, "mcp__github__create_issue", {});
    assert.deepEqual(pick(d), ["review", "user-review-rule"]);
    assert.match(d.message, /project config/);
    assert.match(d.message, /issues are public/);
    assert.deepEqual(pick(decideIn(e, "mcp__github__list_issues", {})), ["allow", "user-allow-rule"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: "curl https://example.com" })), ["review", "user-review-rule"]);
  });

  test("project deny rules tighten: path, tool and command", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "write" }, { command: "make *" }] } }));
    writeFileSync(
      e.projectFile,
      json({ version: 1, rules: { deny: [{ tool: "write", path: "src/gen/**" }, { tool: "mcp__db__drop*" }, { command: "make deploy*" }] } }),
    );
    assert.deepEqual(pick(decideIn(e, "write", { path: "src/gen/x.ts", content: "" })), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "./src/../src/gen/deep/y.ts", content: "" })), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "src/other.ts", content: "" })), ["allow", "user-allow-rule"]);
    assert.deepEqual(pick(decideIn(e, "mcp__db__drop_table", {})), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: "make deploy-prod" })), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: "echo ok && make deploy" })), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: "make build" })), ["sandbox", "user-allow-rule"]);
  });

  test("project protectedPaths make in-workspace writes reviewed; they cannot unprotect anything", () => {
    const e = env();
    writeFileSync(e.projectFile, json({ version: 1, protectedPaths: ["migrations"] }));
    assert.deepEqual(pick(decideIn(e, "write", { path: "migrations/001.sql", content: "" })), ["review", "protected-path"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "migrations", content: "" })), ["review", "protected-path"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "src/x.ts", content: "" })), ["allow", "workspace-write"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: ".git/hooks/pre-commit", content: "" })), ["review", "protected-path"]);
  });

  test("deny beats allow, in the same file and across files", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "write" }, { tool: "*" }], deny: [{ tool: "write", path: "src/**" }] } }));
    assert.deepEqual(pick(decideIn(e, "write", { path: "src/a.ts", content: "" })), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "docs/a.md", content: "" })), ["allow", "user-allow-rule"]);
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "write" }] } }));
    writeFileSync(e.projectFile, json({ version: 1, rules: { deny: [{ tool: "write" }] } }));
    assert.deepEqual(pick(decideIn(e, "write", { path: "docs/a.md", content: "" })), ["deny", "user-deny-rule"]);
  });

  test("deny beats review, and review beats allow", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "mcp__*" }], review: [{ tool: "mcp__*" }], deny: [{ tool: "mcp__*" }] } }));
    assert.deepEqual(pick(decideIn(e, "mcp__a__b", {})), ["deny", "user-deny-rule"]);
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "mcp__*" }], review: [{ tool: "mcp__*" }] } }));
    assert.deepEqual(pick(decideIn(e, "mcp__a__b", {})), ["review", "user-review-rule"]);
  });

  test("an allow rule never overrides a hard deny", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "*" }, { command: "*" }, { command: "rm *" }] } }));
    for (const command of ["rm -rf ~", "rm -rf /", "mkfs.ext4 /dev/sda", "dd if=/dev/zero of=/dev/sda", "rm -rf ~/.pi/agent"]) {
      for (const backend of ["sandboxed", "review-only", "unavailable"] as const) {
        const d = decideIn(e, "bash", { command }, backend);
        assert.deepEqual(pick(d), ["deny", "hard-deny"], `${command} under ${backend}`);
      }
    }
    assert.deepEqual(pick(decideIn(e, "write", { path: "/dev/sda", content: "" })), ["deny", "hard-deny"]);
  });

  test("an allow rule never overrides self-protection", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "*" }, { tool: "write", path: `${e.agentDir}/**` }, { tool: "edit" }] } }));
    for (const path of [e.userFile, join(e.agentDir, "auto-mode", "state.json"), "~/.pi/agent/auto-mode.json"]) {
      assert.deepEqual(pick(decideIn(e, "write", { path, content: "{}" })), ["deny", "self-protection"], path);
      assert.deepEqual(pick(decideIn(e, "edit", { path, edits: [{ oldText: "a", newText: "b" }] })), ["deny", "self-protection"], path);
    }
  });

  test("an allow rule does not admit malformed input", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "*" }] } }));
    assert.deepEqual(pick(decideIn(e, "write", { path: 1, content: "" })), ["review", "malformed-input"]);
    assert.deepEqual(pick(decideIn(e, "bash", { command: ["ls"] })), ["review", "malformed-input"]);
  });

  test("an allow path rule must cover the real path too: a symlink out of the allowed tree is not allowed", () => {
    const e = env();
    const outside = join(e.root, "outside");
    mkdirSync(outside);
    symlinkSync(outside, join(e.ws, "out-link"));
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ tool: "write", path: `${e.ws}/**` }] } }));
    assert.deepEqual(pick(decideIn(e, "write", { path: "src/a.ts", content: "" })), ["allow", "user-allow-rule"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: "out-link/x.ts", content: "" })), ["review", "outside-writable-roots"]);
    // A deny path rule matches either spelling.
    writeFileSync(e.userFile, json({ version: 1, rules: { deny: [{ path: `${outside}/**` }] } }));
    assert.deepEqual(pick(decideIn(e, "write", { path: "out-link/x.ts", content: "" })), ["deny", "user-deny-rule"]);
  });

  test("a path deny rule sees every spelling of a path in a shell command", () => {
    const e = env();
    mkdirSync(join(e.ws, "secret"));
    writeFileSync(e.userFile, json({ version: 1, rules: { deny: [{ path: "secret/**", reason: "no secrets" }] } }));
    for (const command of [
      `cat ${e.ws}/secret/a`,
      "cat ./secret/a",
      "cat secret/a",
      "cat src/../secret/a",
      "cat .//secret/a",
      "echo hi > secret/a",
      "{ echo hi; } > ./secret/b",
      "sort --output=secret/c in.txt",
      "echo $(cat secret/d)",
      "./secret/run.sh",
      "for f in secret/e; do echo; done",
    ]) {
      assert.deepEqual(pick(decideIn(e, "bash", { command })), ["deny", "user-deny-rule"], command);
    }
    assert.notEqual(decideIn(e, "bash", { command: "cat src/index.ts" }).reason, "user-deny-rule");
  });

  test("a bash allow rule with a path needs every path the script names inside it", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { allow: [{ command: "cp *", path: "src/**" }] } }));
    assert.deepEqual(pick(decideIn(e, "bash", { command: "cp src/a.ts src/b.ts" })), ["sandbox", "user-allow-rule"]);
    assert.notEqual(decideIn(e, "bash", { command: `cp src/a.ts ${e.root}/elsewhere.ts` }).reason, "user-allow-rule");
  });

  test("the user's tmpRoot becomes the temporary writable root", () => {
    const e = env();
    const scratch = join(e.root, "scratch");
    mkdirSync(scratch);
    assert.deepEqual(pick(decideIn(e, "write", { path: join(scratch, "x"), content: "" })), ["review", "outside-writable-roots"]);
    writeFileSync(e.userFile, json({ version: 1, tmpRoot: scratch }));
    assert.deepEqual(pick(decideIn(e, "write", { path: join(scratch, "x"), content: "" })), ["allow", "workspace-write"]);
    assert.deepEqual(pick(decideIn(e, "write", { path: join(e.tmp, "x"), content: "" })), ["review", "outside-writable-roots"]);
  });
});

describe("config files: re-read when they change", () => {
  test("a change of size, of mtime only, a deletion and a repair are all seen at the next load", () => {
    const e = env();
    writeFileSync(e.userFile, json({ version: 1, rules: { deny: [{ tool: "aaaa" }] } }));
    assert.equal(ok(load(e)).deny[0]!.tool!.source, "^aaaa$");
    assert.equal(ok(load(e)).deny[0]!.tool!.source, "^aaaa$");

    // Different size.
    writeFileSync(e.userFile, json({ version: 1, rules: { deny: [{ tool: "bbbbbbbb" }] } }));
    assert.equal(ok(load(e)).deny[0]!.tool!.source, "^bbbbbbbb$");

    // Same size, and the mtime put back to where it was: the ctime still moves.
    const before = statSync(e.userFile);
    writeFileSync(e.userFile, json({ version: 1, rules: { deny: [{ tool: "cccccccc" }] } }));
    utimesSync(e.userFile, before.atime, before.mtime);
    assert.equal(statSync(e.userFile).size, before.size);
    assert.equal(ok(load(e)).deny[0]!.tool!.source, "^cccccccc$");

    // Same size, mtime moved explicitly.
    writeFileSync(e.userFile, json({ version: 1, rules: { deny: [{ tool: "dddddddd" }] } }));
    utimesSync(e.userFile, new Date(2000, 0, 1), new Date(2000, 0, 1));
    assert.equal(ok(load(e)).deny[0]!.tool!.source, "^dddddddd$");

    // Broken, then repaired: a fault is not sticky.
    writeFileSync(e.userFile, "{ broken");
    fault(load(e), e.userFile, /JSON/);
    writeFileSync(e.userFile, json({ version: 1 }));
    assert.equal(ok(load(e)).deny.length, 0);

    // Deleted: back to no configuration.
    unlinkSync(e.userFile);
    assert.deepEqual(ok(load(e)).files, []);
  });

  test("a project file created or changed after the first load is seen", () => {
    const e = env();
    assert.deepEqual(pick(decideIn(e, "mcp__a__b", {})), ["review", "unknown-tool"]);
    writeFileSync(e.projectFile, json({ version: 1, rules: { deny: [{ tool: "mcp__a__*" }] } }));
    assert.deepEqual(pick(decideIn(e, "mcp__a__b", {})), ["deny", "user-deny-rule"]);
    writeFileSync(e.projectFile, json({ version: 1, rules: { deny: [{ tool: "mcp__z__*" }] } }));
    assert.deepEqual(pick(decideIn(e, "mcp__a__b", {})), ["review", "unknown-tool"]);
  });
});

describe("rules: matching", () => {
  const home = "/h";
  const base = "/w";
  const rule = (spec: Parameters<typeof compileRule>[0]) => compileRule(spec, "user", home, base);
  const subject = (tool: string, commands: string[] = [], paths: string[] = []) => ({ tool, commands, paths });

  test("tool globs are anchored: * spans any characters, ? one", () => {
    const r = rule({ tool: "mcp__github__*" });
    assert.equal(ruleMatches(r, subject("mcp__github__create_issue")), true);
    assert.equal(ruleMatches(r, subject("mcp__github_x")), false);
    assert.equal(ruleMatches(r, subject("xmcp__github__a")), false);
    assert.equal(ruleMatches(rule({ tool: "r?ad" }), subject("read")), true);
    assert.equal(ruleMatches(rule({ tool: "r?ad" }), subject("rad")), false);
    assert.equal(ruleMatches(rule({ tool: "a.b" }), subject("axb")), false, "regex metacharacters are literal");
  });

  test("a command rule applies to bash only and normalizes whitespace in the pattern", () => {
    const r = rule({ command: "  git   push *" });
    assert.equal(ruleMatches(r, subject("bash", ["git push origin main"])), true);
    assert.equal(ruleMatches(r, subject("bash", ["git push"])), false);
    assert.equal(ruleMatches(r, subject("bash", ["git status"])), false);
    assert.equal(ruleMatches(r, subject("mcp__shell__run", ["git push origin main"])), false);
    assert.equal(ruleMatches(rule({ command: "echo *" }), subject("bash", ["echo a\nb"])), true, "* spans newlines");
  });

  test("path globs resolve against the cwd and expand ~", () => {
    assert.equal(ruleMatches(rule({ path: "src/**" }), subject("write", [], ["/w/src/a/b.ts"])), true);
    assert.equal(ruleMatches(rule({ path: "src/**" }), subject("write", [], ["/w/srcx/a.ts"])), false);
    assert.equal(ruleMatches(rule({ path: "~/.config/app/**" }), subject("write", [], ["/h/.config/app/x"])), true);
    assert.equal(ruleMatches(rule({ path: "**/.env" }), subject("read", [], ["/w/a/.env"])), true, "dot files match");
  });

  test("every field of a rule must match", () => {
    const r = rule({ tool: "write", path: "/etc/**" });
    assert.equal(ruleMatches(r, subject("write", [], ["/etc/hosts"])), true);
    assert.equal(ruleMatches(r, subject("read", [], ["/etc/hosts"])), false);
    assert.equal(ruleMatches(r, subject("write", [], ["/w/x"])), false);
  });

  test("path quantifier: deny/review need some path, allow needs every path (and at least one)", () => {
    const r = rule({ path: "/w/**" });
    const both = subject("write", [], ["/w/link/x", "/etc/x"]);
    assert.equal(ruleMatches(r, both), true);
    assert.equal(ruleMatches(r, both, "some"), true);
    assert.equal(ruleMatches(r, both, "every"), false);
    assert.equal(ruleMatches(r, subject("write", [], ["/w/a", "/w/b"]), "every"), true);
    assert.equal(ruleMatches(r, subject("write", [], []), "every"), false);
    assert.equal(ruleMatches(rule({ tool: "write" }), subject("write", [], []), "every"), true, "a rule without a path ignores paths");
    assert.equal(firstMatch([r], both, "every"), undefined);
  });

  test("firstMatch returns the first rule in order", () => {
    const rules = [rule({ tool: "a*", reason: "one" }), rule({ tool: "ab", reason: "two" })];
    assert.equal(firstMatch(rules, subject("ab"))?.reason, "one");
    assert.equal(firstMatch(rules, subject("b")), undefined);
  });

  test("an empty rule is rejected", () => {
    assert.throws(() => rule({}), /needs/);
    assert.throws(() => rule({ reason: "x" }), /needs/);
  });
});

function pick(d: Decision): [string, string] {
  return [d.route, d.reason];
}
