// The sandbox's pids cgroup goes when the driver closes, also when a process is still in it (a
// command that filled its memory limit can take seconds to exit): after a short wait whatever the
// cgroup still holds is killed, so cleanup does not fail and poison the backend for a straggler.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createPidsCgroup, removePidsCgroup } from "../../src/sandbox/linux/limits.ts";

const cg = process.platform === "linux" ? createPidsCgroup(64) : undefined;
const why = cg ? undefined : "no pids cgroup can be made here (not Linux, not root, or no delegated pids controller): the rlimit is the only process limit";

test("a process left in the cgroup is killed and the cgroup removed", { skip: why }, async () => {
  const c = cg!;
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  const ended = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_code, signal) => r(signal)));
  writeFileSync(join(c.dir, "cgroup.procs"), String(child.pid));
  const t = performance.now();
  await removePidsCgroup(c, 5_000);
  assert.equal(existsSync(c.dir), false, "the cgroup is gone");
  assert.equal(await ended, "SIGKILL", "the straggler was killed");
  assert.ok(performance.now() - t < 5_000);
});
