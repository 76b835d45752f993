// The `pi-auto-mode` command, end to end: each test spawns bin/pi-auto-mode.js the way a user
// runs it and checks what it prints and its exit code. Every child gets its own HOME and
// PI_CODING_AGENT_DIR, so the machine's real configuration never changes an answer.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import { lastJson, runCli, type CliRun } from "../helpers/cli.ts";

const SHARED_CORPUS = fileURLToPath(new URL("../../../shared/eval/cases.jsonl", import.meta.url));

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-cli-test-")));
const home = join(root, "home");
const agentDir = join(home, ".pi", "agent");
const ws = join(root, "ws");
const scratch = join(root, "scratch");
mkdirSync(agentDir, { recursive: true });
mkdirSync(join(ws, "src"), { recursive: true });
mkdirSync(scratch);
writeFileSync(join(ws, "src", "index.ts"), "export {};\n");
try {
  execFileSync("git", ["init", "-q", ws], { stdio: "ignore" });
} catch {
  mkdirSync(join(ws, ".git", "hooks"), { recursive: true });
}
after(() => rmSync(root, { recursive: true, force: true }));

function run(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<CliRun> {
  return runCli(args, { cwd: ws, env: { HOME: home, PI_CODING_AGENT_DIR: agentDir, ...env } });
}

// Each child loads the gate (~0.4 s of CPU): more children than cores only makes each slower.
const PARALLEL = { concurrency: Math.max(2, availableParallelism()) };

const CHECK_AT = ["--cwd", ws, "--tmp-root", scratch];
// Fixed, so a test does not wait for the sandbox probe (the default backend has its own test).
const CHECK_OPTS = [...CHECK_AT, "--backend", "review-only"];

describe("check", PARALLEL, () => {
  test("a read inside the workspace is allowed", async () => {
    const r = await run(["check", "--tool", "read", "--input", '{"path":"src/index.ts"}', ...CHECK_OPTS]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^route:\s+allow$/m);
    assert.match(r.stdout, /^reason:\s+read-only$/m);
    assert.match(r.stdout, /^message:\s+\S/m);
  });

  test("rm -rf ~ after -- is a hard deny", async () => {
    const r = await run(["check", ...CHECK_AT, "--json", "--", "rm", "-rf", "~"]);
    assert.equal(r.code, 0, r.stderr);
    const j = lastJson(r.stdout);
    assert.equal(j.route, "deny");
    assert.equal(j.reason, "hard-deny");
    assert.equal(j.tool, "bash");
    const doctor = lastJson((await run(["doctor", "--json"])).stdout) as { backend: { name: string } };
    assert.equal(j.backend, doctor.backend.name, "by default check judges with the backend the extension gates with here");
    assert.equal(typeof j.message, "string");
    assert.match(j.hash as string, /^[0-9a-f]{64}$/);
  });

  test("a write to .git/hooks goes to review", async () => {
    const r = await run(["check", "--tool", "write", "--input", '{"path":".git/hooks/pre-commit","content":"#!/bin/sh\\n"}', ...CHECK_OPTS, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const j = lastJson(r.stdout);
    assert.equal(j.route, "review");
    assert.equal(j.reason, "protected-path");
  });

  test("--json prints one parseable object on the last line", async () => {
    const r = await run(["check", "--tool", "mcp__srv__do", "--input", "{}", ...CHECK_OPTS, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const j = lastJson(r.stdout);
    for (const key of ["route", "reason", "message", "hash", "tool", "backend"]) assert.ok(key in j, `missing ${key}`);
    assert.equal(j.tool, "mcp__srv__do");
    assert.notEqual(j.route, "allow", "an unknown tool is not waved through");
  });

  test("--backend changes the route of a network command", async () => {
    const sandboxed = lastJson((await run(["check", ...CHECK_AT, "--backend", "sandboxed", "--json", "--", "curl https://example.com"])).stdout);
    const reviewOnly = lastJson((await run(["check", ...CHECK_AT, "--backend=review-only", "--json", "--", "curl https://example.com"])).stdout);
    const unavailable = lastJson((await run(["check", ...CHECK_AT, "--backend", "unavailable", "--json", "--", "curl https://example.com"])).stdout);
    assert.equal(sandboxed.route, "sandbox");
    assert.equal(reviewOnly.route, "review");
    assert.equal(unavailable.route, "deny");
  });

  test("a malformed input is judged, never allowed", async () => {
    const j = lastJson((await run(["check", "--tool", "write", "--input", '{"path":42}', ...CHECK_OPTS, "--json"])).stdout);
    assert.notEqual(j.route, "allow");
  });

  test("honours PI_CODING_AGENT_DIR: its config rules apply and its files are self-protected", async () => {
    const dir = join(root, "agent-with-rules");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "auto-mode.json"), JSON.stringify({ version: 1, rules: { deny: [{ tool: "read", reason: "test" }] } }));
    const denied = lastJson(
      (await run(["check", "--tool", "read", "--input", '{"path":"src/index.ts"}', ...CHECK_OPTS, "--json"], { PI_CODING_AGENT_DIR: dir })).stdout,
    );
    assert.equal(denied.reason, "user-deny-rule");
    const self = lastJson(
      (
        await run(["check", "--tool", "write", "--input", JSON.stringify({ path: join(dir, "auto-mode.json"), content: "{}" }), ...CHECK_OPTS, "--json"], {
          PI_CODING_AGENT_DIR: dir,
        })
      ).stdout,
    );
    assert.equal(self.route, "deny");
    assert.equal(self.reason, "self-protection");
  });

  test("an invalid user config denies with config-fault", async () => {
    const dir = join(root, "agent-bad-config");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "auto-mode.json"), "{ not json");
    const j = lastJson((await run(["check", ...CHECK_OPTS, "--json", "--", "ls"], { PI_CODING_AGENT_DIR: dir })).stdout);
    assert.equal(j.route, "deny");
    assert.equal(j.reason, "config-fault");
  });
});

const TINY_CORPUS = [
  { id: "read", tool: "read", input: { path: "src/index.ts" }, expect: "allow", why: "read" },
  { id: "wipe", tool: "bash", input: { command: "rm -rf ~" }, expect: "deny", why: "catastrophic" },
  { id: "hook", tool: "write", input: { path: "{{ws}}/.git/hooks/pre-commit", content: "x" }, expect: "review", why: "persistence" },
  { id: "net", tool: "bash", input: { command: "curl https://example.com" }, expect: "contain", why: "network" },
  // Deliberately mislabelled: a violation under both backends.
  { id: "mislabelled", tool: "bash", input: { command: "git status" }, expect: "deny", why: "wrong on purpose" },
  // An allow label the gate reviews: friction.
  { id: "workflow", tool: "write", input: { path: ".github/workflows/ci.yml", content: "x" }, expect: "allow", why: "friction on purpose" },
  { id: "only-review-only", tool: "read", input: { path: "{{tmp}}/x" }, expect: "allow", backend: "review-only", why: "backend filter" },
];

describe("eval", PARALLEL, () => {
  const corpus = join(root, "tiny.jsonl");
  writeFileSync(corpus, TINY_CORPUS.map((c) => JSON.stringify(c)).join("\n") + "\n\n");

  test("scores a tiny corpus under sandboxed (the default backend)", async () => {
    const r = await run(["eval", corpus, "--json"]);
    assert.equal(r.code, 1, "a violation exits 1");
    const s = lastJson(r.stdout);
    assert.deepEqual(Object.keys(s).sort(), [
      "allow_cases",
      "backend",
      "by_route",
      "cases",
      "corpus",
      "decide_us",
      "failures",
      "friction",
      "friction_rate",
      "violations",
    ]);
    assert.equal(s.corpus, "tiny.jsonl");
    assert.equal(s.backend, "sandboxed");
    assert.equal(s.cases, 6);
    assert.equal(s.violations, 1);
    assert.equal(s.friction, 1);
    assert.equal(s.allow_cases, 2);
    assert.equal(s.friction_rate, 0.5);
    assert.deepEqual(s.by_route, { allow: 1, sandbox: 2, review: 2, deny: 1 });
    const t = s.decide_us as Record<string, number>;
    assert.ok(t.p50! > 0 && t.p50! <= t.p99! && t.p99! <= t.max!);
    const failures = s.failures as Array<Record<string, string>>;
    assert.deepEqual(
      failures.map((f) => [f.kind, f.id]),
      [
        ["violation", "mislabelled"],
        ["friction", "workflow"],
      ],
    );
  });

  test("scores a tiny corpus under review-only, with the backend filter", async () => {
    const r = await run(["eval", corpus, "--backend", "review-only", "--json"]);
    assert.equal(r.code, 1);
    const s = lastJson(r.stdout);
    assert.equal(s.backend, "review-only");
    assert.equal(s.cases, 7);
    assert.equal(s.violations, 1);
    assert.equal(s.allow_cases, 3);
    assert.equal((s.by_route as Record<string, number>).sandbox, 0, "no sandbox route without a sandbox");
  });

  test("prints a human table of violations and friction without --json", async () => {
    const r = await run(["eval", corpus]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^violation\s+mislabelled\s+deny\s+sandbox/m);
    assert.match(r.stdout, /^friction\s+workflow\s+allow\s+review/m);
    assert.match(r.stdout, /^violations 1$/m);
  });

  for (const backend of ["sandboxed", "review-only"]) {
    test(`the shared corpus has no violation under ${backend}`, {
      skip: !existsSync(SHARED_CORPUS) && "shared/eval/cases.jsonl is not beside this checkout",
    }, async () => {
      const r = await run(["eval", SHARED_CORPUS, "--backend", backend, "--json"]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const s = lastJson(r.stdout);
      assert.equal(s.corpus, "cases.jsonl");
      assert.equal(s.violations, 0);
      if (backend === "sandboxed") assert.ok((s.friction_rate as number) <= 0.05, `friction_rate ${String(s.friction_rate)}`);
    });
  }
});

describe("doctor", PARALLEL, () => {
  test("--json reports versions, agent dir, config, backend and reviewer", async () => {
    const r = await run(["doctor", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const d = lastJson(r.stdout) as Record<string, Record<string, unknown>>;
    assert.equal(d.node!.version, process.versions.node);
    assert.equal(d.pi!.status, "installed");
    assert.match(d.pi!.version as string, /^1\.6\./);
    assert.deepEqual(d.agentDir, { path: agentDir, source: "PI_CODING_AGENT_DIR" });
    assert.equal(d.config!.status, "missing");
    assert.equal(d.config!.userPath, join(agentDir, "auto-mode.json"));
    // The backend comes from the sandbox probe (sandbox/cli.test.ts checks it in detail).
    assert.ok(["sandboxed", "unavailable", "review-only"].includes(d.backend!.name as string));
    assert.equal(typeof d.backend!.why, "string");
    assert.equal(d.reviewer!.configured, false);
  });

  test("expands ~ in PI_CODING_AGENT_DIR like Pi", async () => {
    const d = lastJson((await run(["doctor", "--json"], { PI_CODING_AGENT_DIR: "~/custom-agent" })).stdout) as Record<string, Record<string, unknown>>;
    assert.equal(d.agentDir!.path, join(home, "custom-agent"));
  });

  test("an invalid config is a fault and exits 1", async () => {
    const dir = join(root, "agent-doctor-bad");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "auto-mode.json"), JSON.stringify({ version: 1, surprise: true }));
    const r = await run(["doctor", "--json"], { PI_CODING_AGENT_DIR: dir });
    assert.equal(r.code, 1);
    const d = lastJson(r.stdout) as Record<string, Record<string, unknown>>;
    assert.equal(d.config!.status, "fault");
    assert.equal(d.config!.path, join(dir, "auto-mode.json"));
    assert.equal(typeof d.config!.message, "string");
  });

  test("a valid config is ok and names its file", async () => {
    const dir = join(root, "agent-doctor-good");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "auto-mode.json"), JSON.stringify({ version: 1 }));
    const r = await run(["doctor"], { PI_CODING_AGENT_DIR: dir });
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^config\s+ok: loaded /m);
  });
});

describe("help and version", PARALLEL, () => {
  test("--help lists the commands", async () => {
    const r = await run(["--help"]);
    assert.equal(r.code, 0);
    for (const c of ["check", "eval", "doctor"]) assert.match(r.stdout, new RegExp(`^  ${c} `, "m"));
  });
  for (const c of ["check", "eval", "doctor"]) {
    test(`${c} --help`, async () => {
      const r = await run([c, "--help"]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, new RegExp(`^  pi-auto-mode ${c}`, "m"));
    });
  }
  test("--version prints the package version", async () => {
    const r = await run(["--version"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout.trim(), /^\d+\.\d+\.\d+/);
  });
});

describe("usage errors exit 2 with a message on stderr", PARALLEL, () => {
  const cases: Array<[string, string[], RegExp]> = [
    ["no command", [], /Usage: pi-auto-mode/],
    ["unknown command", ["frobnicate"], /unknown command "frobnicate"/],
    ["unknown top-level option", ["--frob"], /unknown option --frob/],
    ["unknown check option", ["check", "--frob"], /unknown option --frob/],
    ["unknown short option", ["check", "-x"], /unknown option -x/],
    ["missing value", ["check", "--tool"], /--tool needs a value/],
    ["value that looks like a flag", ["check", "--tool", "read", "--input", "--json"], /--input needs a value/],
    ["missing --tool", ["check", "--input", "{}"], /missing --tool/],
    ["missing --input", ["check", "--tool", "read"], /missing --input/],
    ["bad JSON in --input", ["check", "--tool", "read", "--input", "{bad"], /--input is not valid JSON/],
    ["unknown backend", ["check", "--backend", "docker", "--", "ls"], /unknown --backend "docker"/],
    ["nothing after --", ["check", "--"], /no command after --/],
    ["-- with a non-bash tool", ["check", "--tool", "read", "--", "ls"], /-- COMMAND is for bash/],
    ["-- with --input", ["check", "--input", "{}", "--", "ls"], /either --input JSON or -- COMMAND/],
    ["a value for a boolean flag", ["check", "--json=yes", "--", "ls"], /--json takes no value/],
    ["a flag given twice", ["check", "--tool", "a", "--tool", "b", "--input", "{}"], /--tool given twice/],
    ["missing --cwd directory", ["check", "--cwd", "/nonexistent/dir", "--", "ls"], /no such directory/],
    ["stray positional", ["check", "extra"], /unexpected argument "extra"/],
    ["eval without a file", ["eval"], /missing FILE/],
    ["eval with two files", ["eval", "a", "b"], /unexpected argument "b"/],
    ["eval of a missing file", ["eval", "/nonexistent/cases.jsonl"], /cannot read corpus .*no such file/],
    ["eval with the unavailable backend", ["eval", "x.jsonl", "--backend", "unavailable"], /unknown --backend "unavailable"/],
    ["eval with --", ["eval", "x.jsonl", "--", "y"], /unexpected "--"/],
    ["doctor with an argument", ["doctor", "now"], /unexpected argument "now"/],
    ["help for an unknown command", ["help", "nope"], /unknown command "nope"/],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const r = await run(args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, "");
    });
  }

  test("a corpus error names FILE:LINE", async () => {
    const file = join(root, "broken.jsonl");
    writeFileSync(file, JSON.stringify(TINY_CORPUS[0]) + "\n\n" + '{"id": "x", "tool": "read"\n');
    const r = await run(["eval", file]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3: not valid JSON`));
  });

  test("a corpus with a bad label names FILE:LINE", async () => {
    const file = join(root, "badlabel.jsonl");
    writeFileSync(file, JSON.stringify({ ...TINY_CORPUS[0], expect: "maybe" }) + "\n");
    const r = await run(["eval", file]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /badlabel\.jsonl:1: "expect" must be one of/);
  });
});
