// `check` and `eval` judge with the backend the extension would gate with on this machine
// (issue 14), the one `doctor` reports, unless --backend names another: their answers are the
// session's. Spawns bin/pi-auto-mode.js as a user runs it, with its own HOME and agent dir.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { lastJson, runCli } from "../helpers/cli.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pam-cli-defaults-")));
const home = join(root, "home");
const agentDir = join(home, ".pi", "agent");
const ws = join(root, "ws");
mkdirSync(agentDir, { recursive: true });
mkdirSync(join(ws, ".git"), { recursive: true });
after(() => rmSync(root, { recursive: true, force: true }));

const run = (args: readonly string[]) => runCli(args, { cwd: ws, env: { HOME: home, PI_CODING_AGENT_DIR: agentDir } });

const corpus = join(root, "one.jsonl");
writeFileSync(corpus, `${JSON.stringify({ id: "read", tool: "read", input: { path: "x" }, expect: "allow" })}\n`);

describe("check and eval default to the machine's backend", () => {
  test("the backend check and eval judge with is doctor's", async () => {
    const [doctor, check, evaluated] = await Promise.all([run(["doctor", "--json"]), run(["check", "--json", "--", "ls"]), run(["eval", corpus, "--json"])]);
    const backend = (lastJson(doctor.stdout).backend as { name: string }).name;
    assert.equal(lastJson(check.stdout).backend, backend, check.stderr);
    if (backend === "unavailable") {
      assert.equal(evaluated.code, 2);
      assert.match(evaluated.stderr, /the OS sandbox is unavailable on this machine.*give --backend/s);
    } else {
      assert.equal(evaluated.code, 0, evaluated.stderr);
      assert.equal(lastJson(evaluated.stdout).backend, backend);
    }
  });

  test("--backend still names another", async () => {
    const [check, evaluated] = await Promise.all([
      run(["check", "--json", "--backend", "review-only", "--", "ls"]),
      run(["eval", corpus, "--json", "--backend", "sandboxed-unstaged"]),
    ]);
    assert.equal(lastJson(check.stdout).backend, "review-only");
    assert.equal(lastJson(evaluated.stdout).backend, "sandboxed-unstaged");
  });

  test("the help says so, and no longer that the sandbox has yet to land", async () => {
    const [check, evaluated] = await Promise.all([run(["check", "--help"]), run(["eval", "--help"])]);
    for (const r of [check, evaluated]) {
      assert.match(r.stdout.replace(/\s+/g, " "), /default: the one the extension gates with on this machine/);
      assert.doesNotMatch(r.stdout, /until the OS sandbox/);
    }
  });
});
