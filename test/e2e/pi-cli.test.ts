// The README's user path with the real `pi` command line, not the SDK: `pi install <checkout>`
// into a fake home, then a headless run whose scripted model (test/fixtures/pi-cli-faux-model.ts,
// loaded with -e) reads a file, tries `rm -rf ~` and a write to .git/hooks/pre-commit, and prints
// what each tool result said. The gate was active when the home and the hook are untouched and
// the printed denials name auto mode's automatic policy.

import { piCliEnv } from "../helpers/pi-cli-env.ts";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";

const repo = realpathSync(fileURLToPath(new URL("../..", import.meta.url)));
const piBin = join(repo, "node_modules", ".bin", "pi");
const fauxModel = join(repo, "test", "fixtures", "pi-cli-faux-model.ts");
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-cli-")));
const home = join(root, "home");
const agentDir = join(home, ".pi", "agent");
const ws = join(root, "ws");
after(() => rmSync(root, { recursive: true, force: true }));

const env = piCliEnv(home, agentDir);

function pi(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    // pi -p reads a piped stdin to its end as part of the prompt: give it an empty one.
    const child = execFile(piBin, args, { cwd: ws, env, timeout: 20_000, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
      done({ code, stdout: String(stdout), stderr: String(stderr) + (err && code === null ? `\n[spawn] ${err.message}` : "") });
    });
    child.stdin?.end();
  });
}

// Why the real CLI cannot run here, or undefined when it can.
function unavailable(): string | undefined {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major < 22 || (major === 22 && minor < 19))
    return `Pi 1.6 needs Node >= 22.19; this test runs on Node ${process.versions.node} (use node_modules/.bin/node)`;
  if (!existsSync(piBin)) return `the pi command line is not installed at ${piBin} (run npm install)`;
  if (process.platform === "win32") return "the pi bin shim is a shell script here; this test starts it directly, which Windows cannot";
  return undefined;
}

describe("the README's install path with the real pi CLI", { concurrency: false }, () => {
  const why = unavailable();
  if (why) console.log(`# e2e/pi-cli.test.ts skipped: ${why}`);

  test("pi install <checkout> registers the package at user level", { skip: why }, async () => {
    mkdirSync(agentDir, { recursive: true });
    mkdirSync(ws, { recursive: true });
    const r = await pi(["install", repo]);
    assert.equal(r.code, 0, `pi install failed:\n${r.stdout}\n${r.stderr}`);
    const settings = JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8")) as { packages?: unknown[] };
    const listed = (settings.packages ?? []).map((p) => (typeof p === "string" ? p : ((p as { source?: string }).source ?? "")));
    // Pi writes a local path relative to the settings file.
    assert.ok(
      listed.some((p) => resolve(agentDir, p) === repo),
      `settings.json lists this checkout: ${JSON.stringify(settings)}`,
    );
    const list = await pi(["list"]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /User packages/);
    assert.ok(list.stdout.includes(repo), `pi list shows ${repo}:\n${list.stdout}`);
  });

  test("a headless run is gated: the home and the git hook survive, the denials are auto mode's", { skip: why }, async () => {
    assert.ok(existsSync(join(agentDir, "settings.json")), "the install step ran first");
    writeFileSync(join(ws, "notes.txt"), "hello notes\n");
    mkdirSync(join(ws, ".git", "hooks"), { recursive: true });
    const canary = join(home, "canary");
    writeFileSync(canary, "alive");
    const hook = join(ws, ".git", "hooks", "pre-commit");

    const r = await pi(["-p", "--no-session", "--model", "scripted/m1", "-e", fauxModel, "look around and tidy up"]);
    const shown = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
    assert.equal(r.code, 0, shown);

    // The file system: nothing the gate denied happened.
    assert.equal(readFileSync(canary, "utf8"), "alive", "rm -rf ~ never ran");
    assert.equal(existsSync(hook), false, "the git hook was not written");

    // The output: the scripted model's summary of the tool results it was sent.
    const lines = r.stdout.split("\n");
    assert.ok(lines.includes("SUMMARY"), `the scripted model got to its last turn\n${shown}`);
    const result = (tool: string) => lines.find((l) => l.startsWith(`RESULT ${tool} `)) ?? "";
    assert.equal(result("read"), "RESULT read OK: hello notes", shown);
    const head = "ERR: Blocked by auto mode's automatic policy (not by the user):";
    assert.ok(result("bash").startsWith(`RESULT bash ${head} never allowed, and nothing overrides it.`), shown);
    assert.match(result("bash"), new RegExp(`rm recursively wipes ${home.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`), shown);
    assert.doesNotMatch(result("bash"), /ask the user/, shown);
    // A write under .git goes to review; with no reviewer configured, it is denied (fail closed).
    assert.ok(result("write").startsWith(`RESULT write ${head} needs review, and no reviewer is set.`), shown);
    assert.match(result("write"), /Why it needs review: .*Next: The user can choose a reviewer with \/perm-auto-model/, shown);

    // The run's denials, counted by class, on stderr: the exit status stays 0 (asserted above).
    const summary = r.stderr.split("\n").filter((l) => l.startsWith("pi-auto-mode: "));
    assert.deepEqual(summary, ["pi-auto-mode: 2 denials in this session (never allowed 1, needs review, no reviewer 1)"], shown);
    // Pi checks an installed package's manifest at every start (host-provided packages such as
    // typebox must be peers, not dependencies) and prints what it finds: a user sees nothing of it.
    assert.doesNotMatch(r.stderr, /Warning|Extension package/i, shown);
  });

  test("--mode json: the run ends with a pi-auto-mode/denials entry counting the denials by class", { skip: why }, async () => {
    assert.ok(existsSync(join(agentDir, "settings.json")), "the install step ran first");
    const r = await pi(["--mode", "json", "--no-session", "--model", "scripted/m1", "-e", fauxModel, "look around and tidy up"]);
    const shown = `stdout:\n${r.stdout.slice(-4000)}\nstderr:\n${r.stderr}`;
    assert.equal(r.code, 0, shown);
    const events = r.stdout
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as { type: string; entry?: { type: string; customType?: string; data?: unknown } });
    const entries = events.filter((e) => e.type === "entry_appended" && e.entry?.customType === "pi-auto-mode/denials").map((e) => e.entry!.data);
    assert.deepEqual(
      entries.map((d) => {
        const { at, ...rest } = d as { at: number };
        assert.equal(typeof at, "number");
        return rest;
      }),
      [
        {
          run: { denied: 2, byClass: { "hard-deny": 1, "no-reviewer": 1 } },
          session: { denied: 2, byClass: { "hard-deny": 1, "no-reviewer": 1 } },
        },
      ],
      shown,
    );
    // After the run's last event of its own, before Pi's agent_settled record.
    const at = events.findIndex((e) => e.type === "entry_appended" && e.entry?.customType === "pi-auto-mode/denials");
    assert.equal(events[at + 1]?.type, "agent_settled", shown);
    assert.match(r.stderr, /^pi-auto-mode: 2 denials in this session \(never allowed 1, needs review, no reviewer 1\)$/m, shown);
  });
});
