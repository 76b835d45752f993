// `pi-auto-mode sandbox -- COMMAND...` and the sandbox part of `pi-auto-mode doctor`, spawned the
// way a user runs them. Effects are judged on the host.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { commandLine, shellQuote } from "../../src/cli/sandbox.ts";
import { createController } from "../../src/sandbox/controller.ts";
import { runCli, type CliRun } from "../helpers/cli.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-sbcli-")));
const home = join(root, "home");
const ws = join(root, "ws");
const outside = join(root, "outside");
for (const d of [join(home, ".pi", "agent"), ws, outside]) mkdirSync(d, { recursive: true });
// Pi loads this checkout (as after pi install), so the sandbox is what decides doctor's exit status here.
writeFileSync(join(home, ".pi", "agent", "settings.json"), JSON.stringify({ packages: [fileURLToPath(new URL("../..", import.meta.url))] }));
after(() => rmSync(root, { recursive: true, force: true }));

let unavailable: string | undefined;
before(async () => {
  const s = await createController().ready();
  if (s.backend !== "sandboxed") unavailable = s.reason;
});

function run(args: readonly string[]): Promise<CliRun> {
  return runCli(args, { cwd: ws, env: { HOME: home, PI_CODING_AGENT_DIR: join(home, ".pi", "agent") } });
}

describe("pi-auto-mode sandbox", { concurrency: 2 }, () => {
  test("streams output and returns the command's exit code", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const r = await run(["sandbox", "--", "echo hello from the sandbox; exit 3"]);
    assert.equal(r.code, 3);
    assert.match(r.stdout, /hello from the sandbox/);
  });

  test("writes the workspace (--cwd), never outside it", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const dir = join(root, "other-ws");
    mkdirSync(dir);
    const r = await run(["sandbox", "--cwd", dir, "--", `echo in > in.txt; echo out > ${join(outside, "out.txt")}`]);
    assert.notEqual(r.code, 0);
    assert.equal(readFileSync(join(dir, "in.txt"), "utf8"), "in\n");
    assert.equal(existsSync(join(outside, "out.txt")), false);
    assert.deepEqual(readdirSync(dir), ["in.txt"], "no placeholder is left when the command ends");
  });

  test("several words are one command and its arguments", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const r = await run(["sandbox", "--", "printf", "[%s]", "a b", "it's"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "[a b][it's]");
  });

  test("--timeout stops the command with 124", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const t0 = Date.now();
    const r = await run(["sandbox", "--timeout", "1", "--", "sleep 10"]);
    assert.equal(r.code, 124);
    assert.ok(Date.now() - t0 < 8000);
  });

  test("the command runs over a staged workspace: held changes are discarded with 122, and stderr says why", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const dir = join(root, "held-ws");
    mkdirSync(dir);
    const notes = `${Array.from({ length: 2000 }, (_, i) => `note${i}`).join(" ")}\n`;
    writeFileSync(join(dir, "notes.txt"), notes);
    const r = await run(["sandbox", "--cwd", dir, "--", "echo built > out.js; : > notes.txt; echo finished"]);
    assert.equal(r.code, 122, r.stderr);
    assert.match(r.stdout, /finished/);
    assert.match(r.stderr, /held because the command/);
    assert.match(r.stderr, /notes\.txt \(emptied/);
    assert.match(r.stderr, /exited with 0; its changes were not applied/);
    assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), notes);
    assert.equal(existsSync(join(dir, "out.js")), false);
  });

  test("pi-auto-mode undo restores what applied commands overwrote, newest first, and refuses after a later edit", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const dir = join(root, "undo-ws");
    mkdirSync(dir);
    writeFileSync(join(dir, "a.txt"), "one\n");
    assert.equal((await run(["sandbox", "--cwd", dir, "--", "echo two > a.txt"])).code, 0);
    assert.equal((await run(["sandbox", "--cwd", dir, "--", "echo three > a.txt; echo new > b.txt"])).code, 0);
    const list = await run(["undo", "--cwd", dir, "--list"]);
    assert.equal(list.code, 0);
    assert.match(list.stdout, /^1 .*echo three > a\.txt/m);
    assert.match(list.stdout, /^2 .*echo two > a\.txt/m);
    const one = await run(["undo", "--cwd", dir]);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "two\n");
    assert.equal(existsSync(join(dir, "b.txt")), false, "what it created goes");
    writeFileSync(join(dir, "a.txt"), "edited by the user\n");
    const refused = await run(["undo", "--cwd", dir]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /changed since `echo two > a\.txt` ran: .*a\.txt/);
    assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "edited by the user\n", "a later edit is never thrown away");
    assert.equal((await run(["undo", "--cwd", dir, "0"])).code, 2);
  });

  test("usage errors exit 2", async () => {
    assert.equal((await run(["sandbox"])).code, 2);
    assert.equal((await run(["sandbox", "--timeout", "soon", "--", "true"])).code, 2);
    assert.equal((await run(["sandbox", "--cwd", join(root, "missing"), "--", "true"])).code, 2);
    const help = await run(["sandbox", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage:\n {2}pi-auto-mode sandbox/);
  });

  test("command words are quoted for bash", () => {
    assert.equal(commandLine(["npm test && echo ok"]), "npm test && echo ok");
    assert.equal(commandLine(["printf", "%s", "a b", "it's"]), "printf %s 'a b' 'it'\\''s'");
    assert.equal(shellQuote("plain-word_1.0"), "plain-word_1.0");
  });
});

describe("pi-auto-mode doctor: the sandbox", () => {
  test("reports the backend, the probe and the sandbox's facts", async (t) => {
    const r = await run(["doctor", "--json"]);
    const d = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as {
      backend: { name: string; why: string };
      sandbox: { probe: { ok: boolean; ms: number; reason: string | null } | null; missing: string[]; facts: string[] };
    };
    if (unavailable) {
      assert.equal(r.code, 1, "an unavailable sandbox is a problem doctor reports");
      assert.equal(d.backend.name, "unavailable");
      assert.equal(d.sandbox.probe?.reason, unavailable);
      return t.skip(`sandbox unavailable: ${unavailable}`);
    }
    assert.equal(r.code, 0, r.stderr);
    assert.equal(d.backend.name, "sandboxed");
    assert.equal(d.sandbox.probe?.ok, true);
    assert.ok(d.sandbox.facts.some((f) => /bubblewrap \d/.test(f)));
    assert.ok(d.sandbox.facts.some((f) => /process limit/.test(f)));
    assert.deepEqual(d.sandbox.missing, []);
    const human = await run(["doctor"]);
    assert.match(
      human.stdout,
      /^backend\s+sandboxed: bubblewrap over a staged workspace \(overlay in a (private|user and) mount namespace.*\), probe passed in \d+ ms$/m,
    );
    assert.match(human.stdout, /^\s+staging: overlay/m);
    assert.match(human.stdout, /^probe\s+ok in \d+ ms/m);
    // Every program the host side runs, by its absolute path from the system folders (P18).
    assert.match(
      human.stdout,
      /^\s+host tools \(PATH \/usr\/sbin:\/usr\/bin:\/sbin:\/bin\): bwrap \/\S+; unshare \/\S+; mount \/\S+; nsenter \/\S+; bash \/\S+; node \/\S+$/m,
    );
  });
});
