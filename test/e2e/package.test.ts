// The package as an npm install would place it: under node_modules, where Node refuses to strip
// TypeScript types. The command line and the sandbox helper must then run from the build in dist/.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { createController } from "../../src/sandbox/controller.ts";
import { spawnerEntry } from "../../src/sandbox/linux/spawner.ts";
import { runCli } from "../helpers/cli.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-pkg-")));
const installed = join(root, "node_modules", "pi-auto-mode");

before(() => {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
    files: string[];
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
  };
  mkdirSync(installed, { recursive: true });
  for (const f of pkg.files) if (f !== "dist" && existsSync(join(repo, f))) cpSync(join(repo, f), join(installed, f), { recursive: true });
  cpSync(join(repo, "package.json"), join(installed, "package.json"));
  execFileSync(process.execPath, [join(repo, "scripts", "build.ts"), join(installed, "dist")], { stdio: "ignore" });
  // Dependencies and peers resolve from the install's node_modules, as npm would lay them out.
  for (const dep of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]) {
    const link = join(root, "node_modules", dep);
    mkdirSync(join(link, ".."), { recursive: true });
    if (!existsSync(link)) symlinkSync(join(repo, "node_modules", dep), link);
  }
});
after(() => rmSync(root, { recursive: true, force: true }));

describe("the installed package", () => {
  test("the build holds what the code reads at run time", () => {
    for (const f of [
      "cli/main.js",
      "extension.js",
      "sandbox/linux/spawner-main.js",
      "policy/data/commands.json",
      "policy/data/paths.json",
      "review/data/reviewer-prompt.md",
      "review/data/schema-reminder.md",
    ])
      assert.ok(existsSync(join(installed, "dist", f)), f);
  });

  test("another extension finds the boundary broker at pi-auto-mode/broker", () => {
    assert.ok(existsSync(join(installed, "dist", "broker.js")));
    const out = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", 'const m = await import("pi-auto-mode/broker"); console.log(typeof m.getBoundaryBroker, String(m.BROKER_SYMBOL));'],
      { cwd: root, encoding: "utf8" },
    );
    assert.equal(out.trim(), "function Symbol(pi-auto-mode:boundary-broker)");
  });

  test("the command runs from dist under node_modules", async () => {
    const home = join(root, "home");
    mkdirSync(home, { recursive: true });
    const r = await runCli(["check", "--json", "--", "rm -rf ~"], {
      bin: join(installed, "bin", "pi-auto-mode.js"),
      cwd: root,
      env: { HOME: home, PI_CODING_AGENT_DIR: join(home, ".pi", "agent") },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /"route":"deny"/);
  });

  test("the sandbox runs a command from the installed build", async (t) => {
    const status = await createController().ready();
    if (status.backend !== "sandboxed") return t.skip(`sandbox unavailable: ${status.reason}`);
    const home = join(root, "home");
    mkdirSync(join(root, "ws"), { recursive: true });
    const r = await runCli(["sandbox", "--cwd", join(root, "ws"), "--", "echo contained"], {
      bin: join(installed, "bin", "pi-auto-mode.js"),
      cwd: root,
      env: { HOME: home, PI_CODING_AGENT_DIR: join(home, ".pi", "agent") },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "contained");
  });

  test("an installed source tree starts the sandbox helper from its build", () => {
    const fromSource = pathToFileURL(join(installed, "src", "sandbox", "linux", "spawner.ts")).href;
    const helper = spawnerEntry(fromSource);
    assert.equal(fileURLToPath(helper), join(installed, "dist", "sandbox", "linux", "spawner-main.js"));
    assert.ok(existsSync(helper), "the helper the installed sources would start exists");
    const checkout = spawnerEntry(pathToFileURL(join(repo, "src", "sandbox", "linux", "spawner.ts")).href);
    assert.ok(fileURLToPath(checkout).endsWith(join("src", "sandbox", "linux", "spawner-main.ts")), "a checkout runs its sources");
  });
});
