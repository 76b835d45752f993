// Running one sandbox process, and knowing for certain whether the command inside it started.
//
// The sandbox's first shell writes one byte to an extra pipe before it hands over to the
// command (see the prelude in linux/bwrap.ts). No byte means the command never ran: a start
// failure of the sandbox itself, whose stderr then says why. A byte means it may have done
// anything, so whatever happens next, the call is never run again (P9).

import { spawn, type StdioOptions } from "node:child_process";
import { closeSync, openSync, statfsSync, writeFileSync } from "node:fs";
import { constants as osConstants } from "node:os";
import type { Socket } from "node:net";
import { collectFacts, type FactsPlanRoot, type StagedFacts } from "./effects/facts.ts";
import { startRunNetwork, type RunNetwork, type SpawnNetwork } from "./network/run.ts";
import type { Destination, NetReport } from "../policy/network/types.ts";

export interface SpawnSpec {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** A file whose content is handed to the child as fd 3 (the seccomp program), if any. */
  readonly fd3File?: string;
  /**
   * A file handed to the child as fd 6: an unstaged run's environment as bwrap options (read with
   * `--args 6`), so bwrap itself runs on the host with a clean one and no value shows in its argv.
   */
  readonly fd6File?: string;
  /** The fd number the started byte arrives on (4). */
  readonly startedFd: number;
  /** A staged run: the holder's protocol (see linux/holder.ts). */
  readonly staged?: StagedLaunch;
  /** Stop the command before it fills the disks its writes land on. */
  readonly disk?: DiskGuard;
  /**
   * A pids cgroup's `cgroup.procs` the child joins before it becomes the sandbox, where no spawner
   * helper already lives in the cgroup (a one-shot run): a child that cannot join does not start.
   */
  readonly cgroupProcs?: string;
  /** A staged run with network: the proxy it gets, and the forwarder the holder starts (network/run.ts). */
  readonly network?: SpawnNetwork;
}

/** The file and argv to spawn: the spec's own, or a shell that joins the cgroup and then becomes it (same pid). */
function commandOf(spec: SpawnSpec): [string, string[]] {
  if (spec.cgroupProcs === undefined) return [spec.file, [...spec.args]];
  return ["/bin/sh", ["-c", 'echo $$ >"$0" && exec "$@"', spec.cgroupProcs, spec.file, ...spec.args]];
}

/**
 * A holder mounts the staged roots, then waits on `fd` for the word to start: the sandbox's argv is
 * in `argsFile` by then (so a holder can be launched before its command is known). When the
 * command has ended it says so on `fd` and waits again, so the merged views can be read (through
 * /proc/<pid>/root) before they go.
 */
export interface StagedLaunch {
  /** Identifies the launch, so a holder started ahead of time can be claimed for its command. */
  readonly id: string;
  readonly fd: number;
  readonly roots: readonly FactsPlanRoot[];
  /** Where bwrap's options go (NUL-separated, read with --args) and where the shell and command go. */
  readonly argsFile: string;
  readonly commandFile: string;
  /** bwrap's argv, when the command is known: options, "--", the shell, "-c", the command. */
  readonly argv?: readonly string[];
}

export interface DiskGuard {
  /** Paths on each file system the command can write (the stage folder, the temporary root, ...). */
  readonly paths: readonly string[];
  /** Free space the command must leave on each of them. */
  readonly reserveBytes: number;
  /** How much free space the command may use up on any one of them. */
  readonly maxBytes: number;
  readonly intervalMs: number;
}

export interface SpawnIo {
  readonly onData: (data: Buffer) => void;
  readonly signal?: AbortSignal;
  /** Seconds, as Pi's bash tool takes them. */
  readonly timeout?: number;
  /** An unlisted destination, when the network spec says to ask: true allows this one connection. */
  readonly reviewDestination?: (dest: Destination) => Promise<boolean>;
}

export type SpawnOutcome = SpawnEnd & {
  /** With network: the destinations the command reached and the ones refused. */
  readonly network?: NetReport;
};

type SpawnEnd =
  /** `facts`: for a staged run, what the command left in its upper layers (absent: unreadable). */
  | { readonly kind: "exited"; readonly exitCode: number; readonly facts?: StagedFacts }
  /** Stopped because it was filling a disk; nothing it staged is applied. */
  | { readonly kind: "disk-full"; readonly detail: string }
  /** The command never started; `detail` is the sandbox's own complaint. */
  | { readonly kind: "not-started"; readonly detail: string }
  | { readonly kind: "aborted"; readonly started: boolean }
  | { readonly kind: "timeout"; readonly started: boolean; readonly seconds: number };

const MAX_DETAIL = 2000;
const CLOSE_GRACE_MS = 200;

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    // The sandbox runs in its own process group; bwrap's --die-with-parent and the pid
    // namespace take everything inside down with it.
    process.kill(-pid, "SIGKILL");
  } catch {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Spawn a sandbox and wait for it. Never rejects: every way it can end is an outcome. */
export function spawnSandbox(spec: SpawnSpec, io: SpawnIo): Promise<SpawnOutcome> {
  return launchSandbox(spec).run(io, spec.staged?.argv, spec.disk);
}

/** A sandbox process spawned, waiting (staged) or already on its way (direct). */
export interface Launched {
  /** Start it (staged: with this argv) and wait for it. Call once. Never rejects. */
  run(io: SpawnIo, argv?: readonly string[], disk?: DiskGuard): Promise<SpawnOutcome>;
  /** A launched holder that will never run: stop it (nothing of any command ran). */
  cancel(): void;
  /** It is gone already (it failed to mount, or was killed): claiming it would only fail. */
  readonly gone: () => boolean;
}

export function launchSandbox(spec: SpawnSpec): Launched {
  let fd3: number | undefined;
  let fd6: number | undefined;
  try {
    if (spec.fd3File !== undefined) fd3 = openSync(spec.fd3File, "r");
    if (spec.fd6File !== undefined) fd6 = openSync(spec.fd6File, "r");
  } catch (e) {
    if (fd3 !== undefined) closeSync(fd3);
    const detail = `cannot open ${fd3 === undefined ? spec.fd3File : spec.fd6File}: ${(e as Error).message}`;
    return { run: async () => ({ kind: "not-started", detail }), cancel() {}, gone: () => true };
  }
  const closeFiles = () => {
    if (fd3 !== undefined) closeSync(fd3);
    if (fd6 !== undefined) closeSync(fd6);
  };
  // The network's proxy listens before the holder starts the forwarder that connects to it.
  let net: RunNetwork | undefined;
  if (spec.network && spec.staged) {
    try {
      net = startRunNetwork(spec.network);
    } catch (e) {
      closeFiles();
      const detail = `cannot start the sandbox's network proxy: ${(e as Error).message}`;
      return { run: async () => ({ kind: "not-started", detail }), cancel() {}, gone: () => true };
    }
  }
  const pipes = new Set([spec.startedFd, spec.staged?.fd, net ? spec.network?.readyFd : undefined].filter((f): f is number => f !== undefined));
  const stdio: StdioOptions = ["ignore", "pipe", "pipe"];
  const files = new Map<number, number>([...(fd3 !== undefined ? ([[3, fd3]] as const) : []), ...(fd6 !== undefined ? ([[6, fd6]] as const) : [])]);
  const lastFd = Math.max(...pipes, ...files.keys());
  for (let fd = 3; fd <= lastFd; fd++) stdio.push(pipes.has(fd) ? "pipe" : (files.get(fd) ?? "ignore"));
  let child: ReturnType<typeof spawn>;
  try {
    const [file, args] = commandOf(spec);
    child = spawn(file, args, { cwd: spec.cwd, env: spec.env, stdio, detached: true });
  } catch (e) {
    void net?.close();
    throw e;
  } finally {
    closeFiles();
  }
  // The host's end of the forwarder's fd: the forwarder exits when it closes (forwarder-main.ts). It
  // closes as soon as the holder has exited, however it ended: a SIGKILL of the holder's group can
  // catch the forwarder's bwrap mid-setup, which leaves the forwarder without a parent-death signal.
  const forwarderLife = net && spec.network ? (child.stdio[spec.network.readyFd] as Socket | null) : null;
  const releaseForwarder = () => forwarderLife?.destroy();
  let exit: { code: number | null; signal: NodeJS.Signals | null; error?: Error } | undefined;
  let onClose: (() => void) | undefined;
  let closed = false;
  const close = (code: number | null, signal: NodeJS.Signals | null, error?: Error) => {
    if (closed) return;
    closed = true;
    exit = { code, signal, ...(error ? { error } : {}) };
    releaseForwarder();
    // The proxy never outlives its sandbox: every connection of the run ends with it.
    void net?.close();
    onClose?.();
  };
  child.on("error", (e) => close(null, null, e));
  // 'close' waits for every stdio stream, so the started byte and all output are in. The pid
  // namespace ends every process of the sandbox with it, so close follows exit closely; the
  // grace period only guards against a descendant that somehow kept a pipe.
  child.on("close", (code, signal) => close(code, signal));
  child.on("exit", (code, signal) => {
    releaseForwarder();
    setTimeout(() => {
      if (closed) return;
      for (const s of child.stdio) s?.destroy();
      close(code, signal);
    }, CLOSE_GRACE_MS).unref();
  });
  // Until the start byte, output can only be the sandbox's own (the holder's or bwrap's complaints).
  let started = false;
  const early: Buffer[] = [];
  let sink: ((b: Buffer) => void) | undefined;
  const onOutput = (chunk: Buffer) => {
    if (started && sink) sink(chunk);
    else early.push(chunk);
  };
  child.stdout?.on("data", onOutput);
  child.stderr?.on("data", onOutput);
  const startedStream = child.stdio[spec.startedFd];
  startedStream?.on("data", () => {
    if (started) return;
    started = true;
    if (sink) for (const c of early.splice(0)) sink(c);
  });
  startedStream?.on("error", () => {});

  const channel = spec.staged ? (child.stdio[spec.staged.fd] as Socket | null) : null;
  // The forwarder's "ready <pid>": only then may the command start (it would find no proxy before).
  const forwarder = net && spec.network ? net.forwarderReady(child.stdio[spec.network.readyFd] as Socket | null) : undefined;
  let facts: StagedFacts | undefined;
  if (spec.staged && channel) {
    const plan = spec.staged;
    let said = "";
    channel.on("data", (chunk: Buffer) => {
      said += chunk.toString("latin1");
      if (facts !== undefined || !said.includes("\n")) return;
      // Every process of the command is gone; the holder keeps the merged views until we answer.
      facts = child.pid === undefined ? { ok: false, reason: "the holder has no pid" } : collectFacts(plan.roots, `/proc/${child.pid}/root`);
      channel.end("go\n");
    });
    channel.on("error", () => {});
  }

  let claimed = false;
  return {
    gone: () => closed || child.exitCode !== null || child.signalCode !== null,
    cancel() {
      claimed = true;
      killGroup(child.pid);
      void net?.close();
    },
    run(io, argv, disk) {
      if (net) net.reviewer = io.reviewDestination;
      const withNetwork = (o: SpawnOutcome): SpawnOutcome => (net ? { ...o, network: net.report() } : o);
      return new Promise<SpawnOutcome>((resolveEnd) => {
        const resolve = (o: SpawnOutcome) => resolveEnd(withNetwork(o));
        if (claimed) return resolve({ kind: "not-started", detail: "this sandbox was already used" });
        claimed = true;
        sink = io.onData;
        if (started) for (const c of early.splice(0)) sink(c);
        if (io.signal?.aborted) {
          killGroup(child.pid);
          return resolve({ kind: "aborted", started: false });
        }
        let timedOut = false;
        let aborted = false;
        let diskFull: string | undefined;
        const onAbort = () => {
          aborted = true;
          killGroup(child.pid);
        };
        io.signal?.addEventListener("abort", onAbort, { once: true });
        const timer =
          io.timeout !== undefined
            ? setTimeout(() => {
                timedOut = true;
                killGroup(child.pid);
              }, io.timeout * 1000)
            : undefined;
        const diskTimer = disk
          ? watchDisks(disk, (why) => {
              diskFull = why;
              killGroup(child.pid);
            })
          : undefined;
        const finish = () => {
          const { code, signal, error } = exit!;
          if (timer) clearTimeout(timer);
          if (diskTimer) clearInterval(diskTimer);
          io.signal?.removeEventListener("abort", onAbort);
          if (aborted) return resolve({ kind: "aborted", started });
          if (timedOut) return resolve({ kind: "timeout", started, seconds: io.timeout ?? 0 });
          if (diskFull !== undefined) return resolve({ kind: "disk-full", detail: diskFull });
          if (!started) {
            const text = Buffer.concat(early).toString("utf8").trim().slice(0, MAX_DETAIL);
            const why = error ? `${spec.file}: ${error.message}` : text || `${spec.file} exited with ${code ?? signal} before the command started`;
            return resolve({ kind: "not-started", detail: why });
          }
          const exitCode = code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : 1);
          if (!spec.staged) return resolve({ kind: "exited", exitCode });
          resolve({ kind: "exited", exitCode, facts: facts ?? { ok: false, reason: "the sandbox ended without reporting the end of the command" } });
        };
        if (closed) return finish();
        onClose = finish;
        if (spec.staged) {
          // The sandbox's argv, then the word to start.
          try {
            const all = argv ?? [];
            const dash = all.indexOf("--");
            if (dash < 0 || all.length < dash + 4 || all[dash + 2] !== "-c") throw new Error("the sandbox's argv does not end in -- SHELL -c COMMAND");
            if (all.some((a) => a.includes("\0"))) throw new Error("an argument holds a NUL byte");
            writeFileSync(
              spec.staged.argsFile,
              all
                .slice(0, dash)
                .map((a) => `${a}\0`)
                .join(""),
              { mode: 0o600 },
            );
            writeFileSync(spec.staged.commandFile, `${all[dash + 1]}\0${all[dash + 3]}\0`, { mode: 0o600 });
          } catch (e) {
            killGroup(child.pid);
            early.push(Buffer.from(`cannot hand the sandbox its arguments: ${(e as Error).message}`));
            return;
          }
          if (!forwarder) channel?.write("go\n");
          else
            void forwarder.then((ready) => {
              if (closed) return;
              if ("pid" in ready) return void channel?.write(`go ${ready.pid}\n`);
              killGroup(child.pid);
              early.push(Buffer.from(`the sandbox's network forwarder did not start: ${ready.problem}`));
            });
        }
      });
    },
  };
}

/**
 * Poll the free space of every file system the command writes: a command that would leave less
 * than the reserve, or use up more than its share, is stopped. Polling, not quotas: neither the
 * overlay nor a bind mount can carry a quota, and a statfs is a few microseconds.
 */
function watchDisks(guard: DiskGuard, stop: (why: string) => void): NodeJS.Timeout {
  const free = (p: string): number | undefined => {
    try {
      const s = statfsSync(p);
      return s.bavail * s.bsize;
    } catch {
      return undefined;
    }
  };
  const start = guard.paths.map(free);
  const t = setInterval(() => {
    guard.paths.forEach((p, i) => {
      const now = free(p);
      const before = start[i];
      if (now === undefined || before === undefined) return;
      if (now < guard.reserveBytes && now < before) stop(`it left less than ${mib(guard.reserveBytes)} free on the file system of ${p}`);
      else if (before - now > guard.maxBytes) stop(`it wrote more than ${mib(guard.maxBytes)} to the file system of ${p}`);
    });
  }, guard.intervalMs);
  t.unref();
  return t;
}

const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
