// The network forwarder (linux/forwarder-main.ts) never outlives its run. It runs in a bwrap of its
// own with --new-session, so the host's SIGKILL of the holder's process group (timeout, abort, a
// launched-ahead holder cancelled at drain) does not reach it; --die-with-parent alone left it
// reparented to init whenever that kill caught its bwrap still setting up. Here without a pids
// cgroup (as for an unprivileged user, where no cgroup removal kills what is left): a run killed
// mid-way, one hitting the memory limit, and holders launched ahead and cancelled at once leave no
// forwarder process. The forwarder is found by its pid, from /proc, by the run folder's socket path
// in its argv; the one that served the killed run is seen alive first.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildPlaces } from "../../src/policy/places.ts";
import type { NetworkSpec } from "../../src/policy/network/types.ts";
import { createController, type RunResult, type SandboxController } from "../../src/sandbox/controller.ts";
import { createLinuxDriver } from "../../src/sandbox/linux/driver.ts";
import { launchSandbox } from "../../src/sandbox/spawn.ts";
import type { SandboxDriver } from "../../src/sandbox/types.ts";
import { probeDriver } from "../../src/sandbox/probe.ts";
import type { ProbeResult } from "../../src/sandbox/types.ts";

const PY = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : undefined;
const NETWORK: NetworkSpec = { allow: ["127.0.0.1:9"], deny: [], reviewUnlisted: false };

let scratch: string;
let runDir: string;
let probe: ProbeResult = { ok: false, ms: 0, driver: "bubblewrap", reason: "not probed yet", missing: [] };
let controller: SandboxController;
let networkProblem: string | undefined = "not checked yet";
let seq = 0;
let driver: SandboxDriver;

/** The pids of the forwarders started for this file's runs: their argv names a socket in our run folder. */
function forwarders(): number[] {
  const mark = join(runDir, "net");
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (argv.some((a) => a.endsWith("forwarder-main.ts")) && argv.some((a) => a.startsWith(mark))) pids.push(Number(name));
    } catch {
      // gone
    }
  }
  return pids;
}

const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
};

/** Forwarders still there after up to `ms` (they exit within milliseconds of their end). */
async function leftAfter(ms: number, pids?: number[]): Promise<number[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = (pids ?? forwarders()).filter(alive);
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function killLeft(pids: number[]): void {
  for (const p of pids)
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // gone
    }
}

function request(script: string) {
  const root = join(scratch, `w${++seq}`);
  const ws = join(root, "ws");
  const tmp = join(root, "tmp");
  const home = join(root, "home");
  for (const d of [ws, tmp, home]) mkdirSync(d, { recursive: true });
  spawnSync("git", ["init", "-q"], { cwd: ws });
  const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
  return {
    command: script,
    cwd: ws,
    scope: { places, protectedGlobs: [] },
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C" },
    shell: "/bin/bash",
    workspace: "staged" as const,
    network: NETWORK,
  };
}

function run(c: SandboxController, script: string, timeout = 60): Promise<RunResult> {
  return c.run(request(script), { onData: () => {}, timeout });
}

before(async () => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-fwd-life-")));
  runDir = join(scratch, "run");
  // No pids cgroup: removing one kills what is left in it, which would hide a forwarder left behind.
  driver = createLinuxDriver({ runDir, cgroup: false, lingerMs: 0, limits: { processes: 512, dataBytes: 256 * 2 ** 20, shmBytes: 2 ** 26 } });
  probe = await probeDriver(driver);
  if (!probe.ok) return;
  networkProblem = probe.staging.available ? driver.networkCheck?.() : `no staging: ${probe.staging.reason}`;
  controller = createController({ platform: "linux", driver, probe: async () => probe });
  await controller.ready();
});

after(async () => {
  if (controller) await controller.drain();
  if (scratch) {
    killLeft(forwarders());
    rmSync(scratch, { recursive: true, force: true });
  }
});

const skip = () => (!probe.ok ? `sandbox unavailable: ${probe.reason}` : networkProblem ? `no network here: ${networkProblem}` : undefined);

describe("the network forwarder ends with its run, without a pids cgroup", { concurrency: 1 }, () => {
  test("a run killed mid-way (timeout): its forwarder is gone, and so is the one launched ahead", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const seen = new Set<number>();
    const watch = setInterval(() => {
      for (const p of forwarders()) seen.add(p);
    }, 20);
    const r = await run(controller, "sleep 30", 2);
    clearInterval(watch);
    assert.equal(r.kind, "timeout", `the run was killed: ${r.kind}`);
    assert.ok(seen.size > 0, "the run's forwarder was seen alive");
    await controller.drain();
    const left = await leftAfter(3000, [...seen, ...forwarders()]);
    killLeft(left);
    assert.deepEqual(left, [], "no forwarder outlives the killed run");
  });

  test("a run hitting the memory limit, then drained at once: no forwarder is left", { skip: PY ? undefined : "no python3" }, async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    for (let i = 0; i < 5; i++) {
      const r = await run(controller, `${PY} -c 'b = bytearray(768 * 1024 * 1024); open("allocated.txt", "w").write("yes")'`);
      assert.equal(r.kind, "exited", `the command ran: ${r.kind}`);
      // The holder launched ahead for the next command is cancelled here, its forwarder still starting.
      await controller.drain();
    }
    const left = await leftAfter(3000);
    killLeft(left);
    assert.deepEqual(left, [], "no forwarder outlives its run or its cancelled holder");
  });

  test("a holder whose process group is SIGKILLed while its forwarder starts: no forwarder is left", async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    // The host's cancel (and timeout, abort) SIGKILLs the holder's group; at some point of the
    // forwarder's bwrap setup that kill takes its monitor but not the forwarder.
    for (let ms = 0; ms <= 60; ms += 2) {
      const prepared = driver.prepare(request("true"));
      const launched = launchSandbox(prepared.spec);
      await new Promise((r) => setTimeout(r, ms));
      launched.cancel();
      await new Promise((r) => setTimeout(r, 30));
      prepared.release();
    }
    const left = await leftAfter(3000);
    killLeft(left);
    assert.deepEqual(left, [], "no forwarder outlives its killed holder");
  });
});
