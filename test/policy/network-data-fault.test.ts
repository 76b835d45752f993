// The shipped network data (src/policy/data/network.json) is checked when the effective network is
// first asked for, not at every start. If that check fails (a bug of ours), sandboxed commands get
// no network at all, never the unchecked list, and doctor names the fault. A module hook hands the
// code a broken file, as an edit of the installed one would.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import shipped from "../../src/policy/data/network.json" with { type: "json" };
import { BIN, lastJson, runCli } from "../helpers/cli.ts";
import { jsonOverride } from "../helpers/module-hook.ts";

describe("shipped network data that fails its check gives no network", () => {
  let dir: string;
  let register: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "pam-netdata-"));
    const broken = structuredClone(shipped) as Record<string, unknown> & { proxy: Record<string, unknown> };
    broken.proxy.connectTimeoutMs = "soon";
    register = jsonOverride(dir, "/policy/data/network.json", broken);
    mkdirSync(join(dir, "agent"), { recursive: true });
    mkdirSync(join(dir, "ws"), { recursive: true });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("the configuration loads, and its effective network allows nothing", () => {
    const probe = join(dir, "probe.ts");
    const load = JSON.stringify(pathToFileURL(join(import.meta.dirname, "../../src/policy/config/load.ts")).href);
    writeFileSync(
      probe,
      `import { loadPolicyConfig } from ${load};
const r = loadPolicyConfig({ agentDir: ${JSON.stringify(join(dir, "agent"))}, cwd: ${JSON.stringify(join(dir, "ws"))}, home: ${JSON.stringify(dir)} });
console.log(JSON.stringify(r.ok ? { ok: true, network: r.config.network } : r));`,
    );
    const r = spawnSync(process.execPath, ["--import", register, probe], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { ok: true, network: { allow: [], deny: [], reviewUnlisted: false } });
  });

  test("doctor reports the fault as a problem", async () => {
    const r = await runCli(["doctor", "--json"], {
      cwd: join(dir, "ws"),
      env: { PI_CODING_AGENT_DIR: join(dir, "agent"), HOME: dir, NODE_OPTIONS: `--import=${register}` },
      bin: BIN,
    });
    const j = lastJson(r.stdout) as { problems: Array<{ level: string; what: string }> };
    const p = j.problems.find((x) => /shipped network data is at fault/.test(x.what));
    assert.ok(p, r.stdout.slice(-3000));
    assert.match(p.what, /connectTimeoutMs|proxy/);
    assert.match(p.what, /sandboxed commands have no network/);
  });
});
