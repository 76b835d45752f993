// Resource limits, so a fork bomb or a runaway build inside the sandbox cannot exhaust the host.
//
// Measured on the target machines (Debian 12, kernel 6.x, cgroup v1 with a pids hierarchy):
// - RLIMIT_NPROC, set inside the sandbox, counts only the sandbox's own processes (rlimits are
//   counted per user namespace), but the kernel exempts uid 0, and a root caller's sandbox is
//   uid 0 on the host. So as root it does nothing.
// - A pids cgroup does hold root. Where our pids cgroup is writable (root, cgroup v1 or a
//   delegated v2 subtree with the pids controller), the sandbox runs in a child cgroup of ours.
// - RLIMIT_DATA bounds each process's heap without counting address space that is only reserved
//   (RLIMIT_AS breaks WebAssembly and the JVM, which reserve many GiB up front).

import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import data from "../data/sandbox.json" with { type: "json" };
import { processStart } from "./placeholders.ts";
import { hostEnv } from "./host-tools.ts";

export interface Limits {
  readonly processes: number;
  readonly dataBytes: number;
  /** Size of the sandbox's own /dev/shm (a tmpfs: RAM). */
  readonly shmBytes: number;
}

/** Where the process limit comes from, for doctor and the probe. */
export type ProcessLimitKind = "pids-cgroup" | "rlimit" | "none";

export interface PidsCgroup {
  readonly dir: string;
  readonly max: number;
}

function hardLimit(line: string | undefined): number {
  const hard = line?.trim().split(/\s{2,}/)[2];
  return hard === undefined || hard === "unlimited" ? Infinity : Number(hard);
}

/** The configured limits, lowered to what this process may set (a child cannot raise a hard limit). */
export function sandboxLimits(requested: Limits = data.limits, limitsFile = "/proc/self/limits"): Limits {
  let text = "";
  try {
    text = readFileSync(limitsFile, "utf8");
  } catch {
    return requested;
  }
  const lines = text.split("\n");
  const procs = hardLimit(lines.find((l) => l.startsWith("Max processes")));
  const dataHard = hardLimit(lines.find((l) => l.startsWith("Max data size")));
  return { ...requested, processes: Math.min(requested.processes, procs), dataBytes: Math.min(requested.dataBytes, dataHard) };
}

/** The directory of this process's cgroup in the hierarchy that has the pids controller, if any. */
function ownPidsCgroupDir(): string | undefined {
  let cgroups: string;
  let mountinfo: string;
  try {
    cgroups = readFileSync("/proc/self/cgroup", "utf8");
    mountinfo = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return undefined;
  }
  for (const line of mountinfo.split("\n")) {
    // mountinfo: id parent major:minor root mountpoint options ... - fstype source superoptions
    const [pre, post] = line.split(" - ");
    if (!pre || !post) continue;
    const [fstype, , superOptions = ""] = post.split(" ");
    const fields = pre.split(" ");
    const root = fields[3];
    const mountpoint = fields[4];
    if (!mountpoint || root !== "/") continue;
    if (fstype === "cgroup" && superOptions.split(",").includes("pids")) {
      const own = cgroups.split("\n").find((l) => l.split(":")[1]?.split(",").includes("pids"));
      if (own) return join(mountpoint, own.slice(own.indexOf(":", own.indexOf(":") + 1) + 1));
    }
    if (fstype === "cgroup2") {
      const own = cgroups.split("\n").find((l) => l.startsWith("0::"));
      if (!own) continue;
      const dir = join(mountpoint, own.slice(3));
      try {
        if (readFileSync(join(dir, "cgroup.controllers"), "utf8").split(/\s+/).includes("pids")) return dir;
      } catch {
        // not readable: not usable either
      }
    }
  }
  return undefined;
}

const CGROUP_PREFIX = "pi-auto-mode-";

/**
 * A child pids cgroup for this process's sandboxes, or undefined where we cannot make one (then
 * the rlimit is all there is). Leftovers of processes that died are removed on the way.
 */
export function createPidsCgroup(max: number): PidsCgroup | undefined {
  const parent = ownPidsCgroupDir();
  if (!parent) return undefined;
  try {
    for (const name of readdirSync(parent)) {
      if (!name.startsWith(CGROUP_PREFIX)) continue;
      const [pid, start] = name.slice(CGROUP_PREFIX.length).split("-");
      if (pid && start && processStart(Number(pid)) !== start) {
        try {
          rmdirSync(join(parent, name));
        } catch {
          // still has processes, or not ours to remove
        }
      }
    }
  } catch {
    return undefined;
  }
  // One per driver, never shared: Pi loads a fresh copy of this module per session, so a counter
  // would repeat, and one driver's cleanup would find another's processes in its cgroup.
  const dir = join(parent, `${CGROUP_PREFIX}${process.pid}-${processStart(process.pid) ?? "0"}-${randomBytes(4).toString("hex")}`);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, "pids.max"), String(max));
    // Cgroup v2 only takes members where the parent delegates the controller, which our own
    // cgroup cannot while we are in it: try a move once now rather than fail every command.
    const moved = spawnSync("/bin/sh", ["-c", 'echo $$ > "$0/cgroup.procs"', dir], { stdio: "ignore", env: hostEnv() });
    if (moved.status !== 0) throw new Error("cannot move a process into the cgroup");
    return { dir, max };
  } catch {
    try {
      rmdirSync(dir);
    } catch {
      // nothing was created, or it is busy: left for the next start to clean up
    }
    return undefined;
  }
}

/** How long removePidsCgroup waits for the cgroup to empty, and after how long it kills what is left in it. */
const REMOVE_WAIT_MS = 10_000;
const KILL_LEFTOVERS_AFTER_MS = 500;

/**
 * Remove the cgroup, when its sandboxes have ended. A process just killed leaves it only once it
 * is reaped, and one that filled its memory limit can take seconds to give its pages back; after a
 * short wait whatever is still in it (only this driver's sandboxes can be) is killed. Rejects when
 * it is still busy after that.
 */
export async function removePidsCgroup(cg: PidsCgroup, waitMs: number = REMOVE_WAIT_MS): Promise<void> {
  const started = performance.now();
  let killed = false;
  for (;;) {
    try {
      rmdirSync(cg.dir);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return;
      const waited = performance.now() - started;
      if (code !== "EBUSY" || waited >= waitMs) throw e;
      if (!killed && waited >= KILL_LEFTOVERS_AFTER_MS) {
        killed = true;
        killMembers(cg.dir);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** SIGKILL every process the cgroup still holds (cgroup.procs lists them, v1 and v2 alike). */
function killMembers(dir: string): void {
  let pids: number[];
  try {
    pids = readFileSync(join(dir, "cgroup.procs"), "utf8")
      .split("\n")
      .filter((l) => /^\d+$/.test(l))
      .map(Number);
  } catch {
    return;
  }
  for (const pid of pids) {
    if (pid === process.pid) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
}

export function processLimitKind(cg: PidsCgroup | undefined, euid: number): ProcessLimitKind {
  if (cg) return "pids-cgroup";
  return euid === 0 ? "none" : "rlimit";
}
