// The Linux driver: bubblewrap, called directly, with the hardened command line of bwrap.ts, the
// seccomp program of seccomp.ts, placeholders for missing protected paths, and resource limits.

import { existsSync, lstatSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { release, version as kernelVersion } from "node:os";
import { PROBE_REVISION } from "../probe.ts";
import data from "../data/sandbox.json" with { type: "json" };
import networkData from "../../policy/data/network.json" with { type: "json" };
import { sandboxEnv } from "../env.ts";
import { computeLayout } from "../layout.ts";
import { defaultRunDir, ensureRunDir } from "../run-dir.ts";
import type { DiskGuard, SpawnOutcome, SpawnSpec } from "../spawn.ts";
import { createLaunchPool } from "../launches.ts";
import { createRun, discardRun, pickStageRoot, removeRun, type StageRun, type StagedRootKind } from "../stage.ts";
import { RequestError, type Prepared, type RunRequest, type SandboxDriver, type StagingStatus, type StaticCheck } from "../types.ts";
import { isWithin, type Places } from "../../policy/places.ts";
import { bwrapArgs } from "./bwrap.ts";
import { ENDED_FD, FORWARDER_READY_FD, holderCommand, type HolderMode, type HolderNetwork } from "./holder.ts";
import { helperEntry } from "./spawner.ts";
import { hostEnv, hostToolsLine, resolveHostTool, toolUnderRoot, type HostTool, type HostToolName } from "./host-tools.ts";
import { proxyEnv, wantsNetwork } from "../network/proxy-env.ts";
import type { NetworkSpec } from "../../policy/network/types.ts";
import { createPidsCgroup, processLimitKind, removePidsCgroup, sandboxLimits, type Limits, type PidsCgroup } from "./limits.ts";
import { createPlaceholderPool, type PlaceholderPool } from "./placeholders.ts";
import { seccompArch, seccompProgram, type SeccompArch } from "./seccomp.ts";
import { startSpawner, type Spawner } from "./spawner.ts";

export interface LinuxDriverOptions {
  /** The bwrap to run; default: the system folders' (host-tools.ts). Held to the same checks either way. */
  readonly bwrapPath?: string;
  readonly runDir?: string;
  readonly limits?: Limits;
  readonly arch?: string;
  /** Use a pids cgroup when one can be made (default true). */
  readonly cgroup?: boolean;
  /** How long unused placeholders stay (ms); 0 removes them as soon as no command holds them. */
  readonly lingerMs?: number;
  /** Start sandboxes from the helper process (default true; see spawner.ts). */
  readonly spawner?: boolean;
  /** Stage folders to try, first that fits; default: auto mode's folder in the agent dir, then the run dir. */
  readonly stageRoots?: (places: Places) => readonly string[];
  /** Turn staging off (as if the machine could not stage): for tests of the unstaged fallback. */
  readonly staging?: false;
  /** The disk guard's bounds; default: sandbox.json's. */
  readonly disk?: { readonly reserveBytes: number; readonly maxWriteBytes: number; readonly intervalMs: number };
}

/** The git dirs inside a staged root whose refs are read after a command: the workspace's and a worktree's. */
function gitDirsIn(places: Places, root: string): string[] {
  const dotGit = join(places.workspace, ".git");
  const own = statSync(dotGit, { throwIfNoEntry: false })?.isDirectory() ? [dotGit] : [];
  return [...new Set([...own, ...places.gitDirs])].filter((g) => isWithin(root, g));
}

/** The folders a staged run's roots and the disk guard need. */
export function stagedRootsOf(places: Places): Array<{ kind: StagedRootKind; root: string }> {
  const roots: Array<{ kind: StagedRootKind; root: string }> = [{ kind: "workspace", root: places.workspace }];
  // A worktree's or submodule's git dir outside the workspace: staged too, so git can commit there.
  const outside = places.gitDirs.filter((g) => !isWithin(places.workspace, g) && !isWithin(places.tmpRoot, g));
  for (const g of outside.sort((a, b) => a.length - b.length)) if (!roots.some((r) => isWithin(r.root, g))) roots.push({ kind: "git-dir", root: g });
  return roots;
}

const SECCOMP_FD = 3;
const FORWARDER_PORT = networkData.forwarder.port;
const STARTED_FD = 4;
/** An unstaged run's environment, as bwrap options (spawn.ts fd6File). */
const ENV_FD = 6;
const STAGING_TOOLS = ["unshare", "mount", "bash"] as const;

export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * bubblewrap's version, remembered by its inode, size and time in the run folder: asking it is a
 * process (~5 ms) at every start otherwise.
 */
function bwrapVersion(bwrap: string, runDir: string): { version: string } | { problem: string } {
  const st = statSync(bwrap);
  const stamp = `${bwrap}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const file = join(runDir, "bwrap-version.json");
  try {
    // Read only from a folder known to be ours: one someone else planted could name any version.
    ensureRunDir(runDir);
    const known = JSON.parse(readFileSync(file, "utf8")) as { stamp?: unknown; version?: unknown };
    if (known.stamp === stamp && typeof known.version === "string" && /^\d+\.\d+(\.\d+)?$/.test(known.version)) return { version: known.version };
  } catch {
    // not remembered yet
  }
  const v = spawnSync(bwrap, ["--version"], { encoding: "utf8", timeout: 5000, env: hostEnv() });
  const version = /(\d+\.\d+(?:\.\d+)?)/.exec(v.stdout ?? "")?.[1];
  if (!version) return { problem: `${bwrap} --version did not answer (${(v.error?.message ?? v.stderr ?? "").trim() || `exit ${v.status}`})` };
  try {
    ensureRunDir(runDir);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ stamp, version }), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // remembering it is only a saving
  }
  return { version };
}

/** Install hints, by the package manager this system has. */
function installHint(): string {
  if (existsSync("/usr/bin/apt-get")) return "apt-get install bubblewrap";
  if (existsSync("/usr/bin/dnf")) return "dnf install bubblewrap";
  if (existsSync("/sbin/apk")) return "apk add bubblewrap";
  if (existsSync("/usr/bin/pacman")) return "pacman -S bubblewrap";
  return "install bubblewrap (the bwrap command)";
}

export function createLinuxDriver(opts: LinuxDriverOptions = {}): SandboxDriver {
  const runDir = opts.runDir ?? defaultRunDir();
  const registry = join(runDir, "placeholders");
  const pool: PlaceholderPool = createPlaceholderPool(registry, { lingerMs: opts.lingerMs });
  let bwrap: string | undefined;
  let arch: SeccompArch | undefined;
  let seccompFile: string | undefined;
  let limits: Limits | undefined;
  let cgroup: PidsCgroup | undefined;
  let spawner: Promise<Spawner> | undefined;
  let checked: StaticCheck | undefined;

  // Every program the host side runs, resolved once from the system folders (host-tools.ts), never
  // from the agent's PATH: a folder of the workspace on it would let a command choose them.
  let tools: Readonly<Record<HostToolName, HostTool>> | undefined;
  const hostTools = () =>
    (tools ??= {
      bwrap: resolveHostTool("bwrap", opts.bwrapPath),
      unshare: resolveHostTool("unshare"),
      mount: resolveHostTool("mount"),
      nsenter: resolveHostTool("nsenter"),
      bash: resolveHostTool("bash"),
      // The spawner and the network forwarder are node processes: the one running this, held to the same checks.
      node: resolveHostTool("node", process.execPath),
    });
  let staging: { status: StagingStatus; unshare?: string; mount?: string; shell?: string; mode?: HolderMode; nsenter?: string } | undefined;
  const stagingCheck = (): StagingStatus => {
    staging ??= findStaging();
    return staging.status;
  };
  const findStaging = (): NonNullable<typeof staging> => {
    const no = (reason: string) => ({ status: { available: false, reason } as const });
    if (opts.staging === false) return no("staging is turned off");
    try {
      if (!/\boverlay\b/.test(readFileSync("/proc/filesystems", "utf8"))) return no("the kernel has no overlay file system");
    } catch {
      return no("/proc/filesystems is not readable, so overlay support is unknown");
    }
    const t = hostTools();
    // bash: the holder reads the command with its own `read -d ''`, no process spent.
    for (const name of STAGING_TOOLS) {
      const tool = t[name];
      if (!tool.ok) return no(!tool.missing ? tool.reason : name === "bash" ? "bash is missing (/usr/bin/bash)" : `${name} (util-linux) is not installed`);
    }
    if (!t.unshare.ok || !t.mount.ok || !t.bash.ok) return no("the staging tools are missing");
    const euid = typeof process.geteuid === "function" ? process.geteuid() : -1;
    const mode: HolderMode = euid === 0 ? "root" : "userns";
    const how = mode === "root" ? "overlay in a private mount namespace (unshare -m)" : "overlay in a user and mount namespace (unshare -Urm, userxattr)";
    // The network's forwarder namespace is joined with nsenter (util-linux, like unshare).
    const nsenter = t.nsenter.ok ? t.nsenter.path : undefined;
    return { status: { available: true, how }, unshare: t.unshare.path, mount: t.mount.path, shell: t.bash.path, mode, ...(nsenter ? { nsenter } : {}) };
  };
  /** Why a staged run cannot have network here, or undefined when it can. */
  const networkProblem = (): string | undefined => {
    const st = stagingCheck();
    if (!st.available) return `the workspace cannot be staged (${st.reason}), and only a staged run has network`;
    if (!staging?.nsenter) {
      const n = hostTools().nsenter;
      return !n.ok && !n.missing ? n.reason : "nsenter (util-linux) is not installed";
    }
    return undefined;
  };
  /** The holder's network for a run, or undefined for none (no allow entry, or no way to give one). */
  const holderNetwork = (spec: NetworkSpec | undefined, runId: string): HolderNetwork | undefined => {
    if (!wantsNetwork(spec) || networkProblem() !== undefined) return undefined;
    const socket = join(runDir, "net", `${runId.slice(-8)}.sock`);
    // A unix socket path longer than sun_path cannot be bound: no network rather than a failed start.
    if (Buffer.byteLength(socket) > 104) return undefined;
    const node = hostTools().node;
    if (!node.ok) return undefined;
    return { nsenter: staging!.nsenter!, node: node.path, forwarder: helperEntry("forwarder-main").pathname, socket, port: FORWARDER_PORT };
  };
  /** The command's environment as bwrap options, in a private file of the run folder (removed at release). */
  const directEnvFile = (env: NodeJS.ProcessEnv): string => {
    const options = ["--clearenv", ...Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : ["--setenv", k, v]))];
    if (options.some((o) => o.includes("\0"))) throw new RequestError("an environment variable holds a NUL byte");
    ensureRunDir(runDir);
    const file = join(runDir, `env-${randomBytes(8).toString("hex")}`);
    writeFileSync(file, options.map((o) => `${o}\0`).join(""), { mode: 0o600, flag: "wx" });
    return file;
  };
  const stageCandidates = opts.stageRoots ?? ((places: Places) => [join(places.agentDir, "auto-mode", "staging"), join(runDir, "staging")]);

  // The holder launched ahead for the next staged command, and what the last one staged.
  let ahead: { key: string; run: StageRun; spec: SpawnSpec } | undefined;
  let next: { key: string; places: Places; stageRoot: string; network: NetworkSpec | undefined } | undefined;
  const local = createLaunchPool();
  const startedSpawner = () => {
    ensureCgroup();
    return (spawner ??= startSpawner(cgroup?.dir));
  };
  const launchKey = (places: Places, stageRoot: string, network: NetworkSpec | undefined) =>
    JSON.stringify([stagedRootsOf(places), stageRoot, gitDirsIn(places, places.workspace), wantsNetwork(network) ? network : null]);
  /** The holder for one run: everything but the sandbox's argv, which it reads when told to start. */
  const holderLaunch = (run: StageRun, places: Places, stageRoot: string, network: NetworkSpec | undefined): SpawnSpec => {
    const net = holderNetwork(network, run.id);
    if (net) ensureRunDir(join(runDir, "net"));
    const argsFile = join(run.dir, "argv");
    const commandFile = join(run.dir, "command");
    const h = holderCommand({
      unshare: staging!.unshare!,
      mount: staging!.mount!,
      shell: staging!.shell!,
      mode: staging!.mode!,
      roots: run.roots,
      bwrap: bwrap!,
      argsFile,
      commandFile,
      ...(net ? { network: net } : {}),
    });
    const roots = run.roots.map((r) => ({ root: r.root, upper: r.upper, merged: r.merged, gitDirs: gitDirsIn(places, r.root) }));
    void stageRoot;
    return {
      file: h.file,
      args: h.args,
      // The holder is on the host: a fixed PATH and nothing of the agent's environment (the command's is set by bwrap).
      env: hostEnv(),
      cwd: "/",
      fd3File: seccompFile!,
      startedFd: STARTED_FD,
      staged: { id: run.id, fd: ENDED_FD, roots, argsFile, commandFile },
      ...(net && network ? { network: { spec: network, socket: net.socket, readyFd: FORWARDER_READY_FD } } : {}),
    };
  };
  const cancelAhead = () => {
    const a = ahead;
    ahead = undefined;
    if (!a) return;
    if (opts.spawner === false) local.cancel(a.run.id);
    else
      void spawner?.then(
        (s) => s.cancel(a.run.id),
        () => {},
      );
    discardRun(a.run);
  };
  const launchAhead = () => {
    const n = next;
    if (!n || ahead?.key === n.key) return;
    cancelAhead();
    try {
      const run = createRun(n.stageRoot, stagedRootsOf(n.places));
      const spec = holderLaunch(run, n.places, n.stageRoot, n.network);
      ahead = { key: n.key, run, spec };
      if (opts.spawner === false) local.launch(inCgroup(spec));
      else
        void startedSpawner().then(
          (s) => s.launch(spec),
          () => {},
        );
    } catch {
      // launching ahead is an optimization; the next command launches its own holder
      ahead = undefined;
    }
  };

  let lastCheck: StaticCheck | undefined;
  const check = (): StaticCheck => {
    if (checked) return checked;
    checked = staticCheck();
    lastCheck = checked;
    return checked;
  };

  const staticCheck = (): StaticCheck => {
    const notes: string[] = [];
    try {
      if (/Microsoft/.test(readFileSync("/proc/sys/kernel/osrelease", "utf8")))
        return { ok: false, reason: "WSL 1 has no Linux namespaces; use WSL 2", missing: [] };
    } catch {
      // no osrelease: the functional probe decides
    }
    arch = seccompArch(opts.arch);
    if (!arch) return { ok: false, reason: `no seccomp program for the ${opts.arch ?? process.arch} architecture (only x64 and arm64)`, missing: [] };
    const found = hostTools().bwrap;
    if (!found.ok && found.missing) {
      const hint = installHint();
      return { ok: false, reason: `bubblewrap (bwrap) not installed: ${hint}`, missing: [hint] };
    }
    if (!found.ok) return { ok: false, reason: `bubblewrap cannot be trusted: ${found.reason}`, missing: [] };
    const node = hostTools().node;
    if (!node.ok) return { ok: false, reason: `node, which runs the sandbox's helper processes, cannot be trusted: ${node.reason}`, missing: [] };
    bwrap = found.path;
    if ((statSync(bwrap).mode & 0o4000) !== 0)
      return { ok: false, reason: `${bwrap} is setuid root; only an unprivileged bubblewrap is supported`, missing: [] };
    const asked = bwrapVersion(bwrap, runDir);
    if ("problem" in asked) return { ok: false, reason: asked.problem, missing: [] };
    const version = asked.version;
    if (compareVersions(version, data.bwrap.minVersion) < 0)
      return {
        ok: false,
        reason: `bubblewrap ${version} is too old: ${data.bwrap.minVersion} or later is needed for --disable-userns`,
        missing: [`bubblewrap >= ${data.bwrap.minVersion}`],
      };
    notes.push(`bubblewrap ${version} at ${bwrap}`);
    try {
      ensureRunDir(runDir);
      // Written under a fresh name and renamed, so a concurrent start never reads half a program.
      const program = seccompProgram(arch);
      seccompFile = join(runDir, `seccomp-${arch}.bpf`);
      let current: Buffer | undefined;
      try {
        current = readFileSync(seccompFile);
      } catch {
        current = undefined;
      }
      if (!current?.equals(program)) {
        const tmp = `${seccompFile}.${process.pid}.tmp`;
        writeFileSync(tmp, program, { mode: 0o400 });
        renameSync(tmp, seccompFile);
      }
    } catch (e) {
      return { ok: false, reason: `cannot prepare the sandbox's folder ${runDir}: ${(e as Error).message}`, missing: [] };
    }
    limits = sandboxLimits(opts.limits);
    notes.push(`memory limit ${Math.round(limits.dataBytes / 2 ** 20)} MiB of data per process`);
    return { ok: true, notes };
  };

  // The pids cgroup is made with the first command (making it costs a process and ~10 ms at start).
  let cgroupTried = false;
  const ensureCgroup = () => {
    if (cgroupTried || !limits) return;
    cgroupTried = true;
    cgroup = opts.cgroup === false ? undefined : createPidsCgroup(limits.processes);
  };
  // Without the spawner (one-shot runs: its start costs more than the cgroup move it saves), each
  // sandbox joins the cgroup itself before it starts.
  const inCgroup = (spec: SpawnSpec): SpawnSpec => {
    ensureCgroup();
    return cgroup ? { ...spec, cgroupProcs: join(cgroup.dir, "cgroup.procs") } : spec;
  };
  const limitNote = (): string | undefined => {
    if (!limits) return undefined;
    const euid = typeof process.geteuid === "function" ? process.geteuid() : -1;
    if (!cgroupTried && euid === 0 && opts.cgroup !== false) return `process limit ${limits.processes} (a pids cgroup, made with the first command)`;
    const kind = processLimitKind(cgroup, euid);
    return kind === "pids-cgroup"
      ? `process limit ${limits.processes} (pids cgroup ${cgroup!.dir})`
      : kind === "rlimit"
        ? `process limit ${limits.processes} (rlimit)`
        : "process limit: none (root is exempt from the process rlimit and no pids cgroup could be made)";
  };

  return {
    name: "bubblewrap",
    platform: "linux",
    check,
    stagingCheck,
    networkCheck: () => networkProblem(),
    probeCache() {
      const c = check();
      if (!c.ok || !bwrap || !seccompFile) return undefined;
      const stamp = (p: string | undefined) => {
        if (!p) return "absent";
        const st = statSync(p, { throwIfNoEntry: false });
        return st ? `${p}:${st.ino}:${st.size}:${st.mtimeMs}` : "absent";
      };
      const sysctl = (p: string) => {
        try {
          return readFileSync(p, "utf8").trim();
        } catch {
          return "absent";
        }
      };
      stagingCheck();
      const key = JSON.stringify({
        probe: PROBE_REVISION,
        bwrap: stamp(bwrap),
        notes: c.notes.filter((n) => !n.includes("cgroup")),
        tools: [staging?.unshare, staging?.mount, staging?.shell, staging?.nsenter, hostTools().node.ok ? process.execPath : undefined].map(stamp),
        staging: staging?.status,
        kernel: [release(), kernelVersion()],
        userns: [
          "/proc/sys/kernel/unprivileged_userns_clone",
          "/proc/sys/user/max_user_namespaces",
          "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ].map(sysctl),
        seccomp: createHash("sha256").update(readFileSync(seccompFile)).digest("hex"),
        euid: typeof process.geteuid === "function" ? process.geteuid() : -1,
        options: { limits, cgroup: opts.cgroup !== false, spawner: opts.spawner !== false },
      });
      return { file: join(runDir, "probe.json"), key };
    },
    prepare(req: RunRequest): Prepared {
      const c = check();
      if (!c.ok || !bwrap || !seccompFile || !limits) throw new Error(c.ok ? "the driver is not initialized" : c.reason);
      const places = req.scope.places;
      // A host tool the command could replace (the workspace is /usr, a tool links into the temporary root): nothing runs.
      const writableRoots = [places.workspace, places.tmpRoot, ...places.gitDirs];
      for (const tool of Object.values(hostTools())) {
        const why = tool.ok ? toolUnderRoot(tool, writableRoots) : undefined;
        if (why) throw new RequestError(why);
      }
      let run: StageRun | undefined;
      let stageRoot: string | undefined;
      let launch: SpawnSpec | undefined;
      if (req.workspace === "staged") {
        const st = stagingCheck();
        if (!st.available || !staging?.unshare || !staging.shell || !staging.mode)
          throw new Error(`the workspace cannot be staged: ${st.available ? "the staging tools are missing" : st.reason}`);
        const roots = stagedRootsOf(places);
        const picked = pickStageRoot(stageCandidates(places), [...roots.map((r) => r.root), places.tmpRoot]);
        if ("problem" in picked) throw new RequestError(picked.problem);
        stageRoot = picked.dir;
        const key = launchKey(places, stageRoot, req.network);
        // A holder launched after the last command, for the same roots: its mount is done already.
        if (ahead?.key === key) {
          ({ run, spec: launch } = ahead);
          ahead = undefined;
        } else {
          run = createRun(stageRoot, roots);
          launch = holderLaunch(run, places, stageRoot, req.network);
        }
        next = { key, places, stageRoot, network: req.network };
      }
      const layout = computeLayout({
        places,
        protectedGlobs: req.scope.protectedGlobs,
        ownPaths: [runDir],
        staged: run?.roots.map((r) => r.root),
        gitWritable: req.workspace === "direct-git",
      });
      const hold = pool.acquire(layout.missing);
      let args: string[];
      try {
        args = bwrapArgs({
          layout,
          placeholders: hold.placeholders,
          appeared: hold.existing,
          cwd: req.cwd,
          shell: req.shell,
          command: req.command,
          limits,
          fds: { seccomp: SECCOMP_FD, started: STARTED_FD },
          ...(run
            ? {
                views: new Map(run.roots.map((r) => [r.root, r.merged])),
                hidden: [stageRoot!],
                // The holder was started before the command's environment was known: bwrap sets it.
                env: launch?.network
                  ? { ...sandboxEnv(req.env, places.tmpRoot), ...proxyEnv(launch.network.spec, FORWARDER_PORT) }
                  : sandboxEnv(req.env, places.tmpRoot),
                ...(launch?.network ? { forwarderNetwork: true } : {}),
                ...(staging?.mode === "userns" ? { ids: { uid: process.getuid!(), gid: process.getgid!() } } : {}),
              }
            : {}),
        });
      } catch (e) {
        pool.release(hold);
        if (run) removeRun(run);
        throw e;
      }
      const bounds = opts.disk ?? data.disk;
      const disk: DiskGuard = {
        paths: [...new Set([stageRoot ?? places.workspace, places.tmpRoot, places.workspace])],
        reserveBytes: bounds.reserveBytes,
        maxBytes: bounds.maxWriteBytes,
        intervalMs: bounds.intervalMs,
      };
      // Unstaged, bwrap is the host child: it runs with the host's fixed environment, and the
      // command's reaches it as options on fd 6 (--args), out of the host's argv.
      let envFile: string | undefined;
      try {
        envFile = launch ? undefined : directEnvFile(sandboxEnv(req.env, layout.tmpRoot));
      } catch (e) {
        pool.release(hold);
        throw e;
      }
      const spec: SpawnSpec = launch
        ? { ...launch, staged: { ...launch.staged!, argv: args }, disk }
        : {
            file: bwrap,
            args: ["--args", String(ENV_FD), ...args],
            env: hostEnv(),
            cwd: req.cwd,
            fd3File: seccompFile,
            ...(envFile ? { fd6File: envFile } : {}),
            startedFd: STARTED_FD,
            disk,
          };
      return {
        layout,
        ...(run ? { stage: run } : {}),
        spec,
        release: () => {
          // A code-running git file the command created where no placeholder could stand: it goes.
          for (const f of layout.forbidden) if (lstatSync(f, { throwIfNoEntry: false })) rmSync(f, { recursive: true, force: true });
          if (envFile) rmSync(envFile, { force: true });
          pool.release(hold);
        },
      };
    },
    async exec(spec, io) {
      let outcome: SpawnOutcome;
      if (opts.spawner === false) outcome = await local.run(inCgroup(spec), io);
      else {
        let s: Spawner;
        try {
          s = await startedSpawner();
        } catch (e) {
          return { kind: "not-started", detail: (e as Error).message };
        }
        outcome = await s.exec(spec, io);
      }
      // The next command in this workspace will find its holder mounted and waiting.
      if (spec.staged) launchAhead();
      return outcome;
    },
    // A protected path or the working directory removed between the layout and the mount.
    transient: (detail) => /^bwrap: Can't (find source path|chdir|create file at|mkdir)/m.test(detail),
    settle() {
      // Nothing follows for now (the probe's scratch workspace, a test's last command): a holder
      // launched ahead would outlive what it mounts.
      next = undefined;
      cancelAhead();
      pool.flush();
    },
    stopNow() {
      try {
        next = undefined;
        cancelAhead();
        local.cancelAll();
        pool.flush();
      } finally {
        void spawner?.then(
          (x) => x.kill(),
          () => {},
        );
        // The cgroup stays until the helper is reaped; the next start removes it.
      }
    },
    async shutdown() {
      let failure: unknown;
      // A holder waiting for a command that will not come: nothing of any command ran in it.
      next = undefined;
      cancelAhead();
      local.cancelAll();
      try {
        pool.flush();
      } catch (e) {
        failure = e;
      }
      // The helper and the cgroup go either way; a placeholder that would not go is still reported.
      const s = spawner;
      spawner = undefined;
      if (s)
        await s.then(
          (x) => x.close(),
          () => {},
        );
      if (cgroup) await removePidsCgroup(cgroup);
      cgroup = undefined;
      cgroupTried = false;
      if (failure) throw failure;
      // A later start checks again, and makes a new cgroup.
      checked = undefined;
    },
    facts() {
      // What the last check found; checking again after a shutdown would make a new cgroup.
      const c = checked ?? lastCheck;
      if (!c) return [];
      const st = staging?.status;
      const stage = st ? [st.available ? `staging: ${st.how}` : `staging unavailable: ${st.reason}`] : [];
      const limit = c.ok ? limitNote() : undefined;
      // Whether runs get network is the probe's verdict, which the controller states.
      const used = tools ? [hostToolsLine(Object.values(tools))] : [];
      return [...(c.ok ? c.notes : [c.reason]), ...used, ...(limit ? [limit] : []), ...stage];
    },
  };
}
