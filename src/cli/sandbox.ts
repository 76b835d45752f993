// `pi-auto-mode sandbox [--cwd DIR] [--timeout S] -- COMMAND...`: run one command in the OS
// sandbox exactly as the agent's bash would (same layout, same protected paths, same filtered
// environment, same limits), streaming its output and returning its exit code. Users try their
// build here before they trust auto mode with it. Also the sandbox's part of `doctor`.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import type { PolicyConfig, undoBounds as UndoBoundsOf } from "../policy/config/load.ts";
import type { Places } from "../policy/places.ts";
import type { Backend } from "../policy/types.ts";
import { parseArgs, type CommandSpec } from "./args.ts";
import { CliError, EXIT, type Io } from "./io.ts";

export const SANDBOX_HELP = `Usage:
  pi-auto-mode sandbox [--cwd DIR] [--timeout SECONDS] -- COMMAND...

Run one command in the OS sandbox exactly as the agent's bash tool would: over a staged
(copy-on-write) copy of DIR (default: the current directory) whose changes are judged when
the command ends, the temporary root writable, protected paths read-only, identity secrets
hidden, credentials removed from the environment, no network, process and memory limits.
Output is streamed; the exit status is the command's. What became of its changes is
printed on stderr: applied, or held and discarded (there is no reviewer here: changes that
would destroy uncommitted work, rewrite git history or touch protected paths never land).

One word after -- is a shell command line (pi-auto-mode sandbox -- 'npm test && echo ok');
several words are one command and its arguments, quoted for you.

Options:
  --cwd DIR          the workspace (and working directory) of the command
  --timeout SECONDS  stop the command after this many seconds
  -h, --help         show this help

Exit status: the command's; 122 when its changes were held or could not be applied and so
were discarded; 124 when it timed out (also while its changes were judged: then none are
applied); 125 when the sandbox is unavailable or could not run the command (the reason is
printed); 130 when interrupted (likewise).
`;

const SPEC: CommandSpec = { flags: { cwd: "string", timeout: "string" }, positionals: [], rest: true };

export const SANDBOX_EXIT = { discarded: 122, timeout: 124, unavailable: 125, interrupted: 130 } as const;

/** Quote one word for bash. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The command line the sandbox runs for the words after `--`. */
export function commandLine(words: readonly string[]): string {
  return words.length === 1 ? words[0]! : words.map(shellQuote).join(" ");
}

/** What a test hands in place of the real thing. */
export interface SandboxDeps {
  /** The judgement's worker (judge-run.ts); the real one by default. */
  readonly judgeEntry?: URL;
}

export async function runSandbox(argv: readonly string[], io: Io, deps: SandboxDeps = {}): Promise<number> {
  const args = parseArgs("sandbox", argv, SPEC);
  if (args.help) {
    io.out(SANDBOX_HELP);
    return EXIT.ok;
  }
  if (!args.rest || args.rest.length === 0) throw new CliError("sandbox: missing the command (pi-auto-mode sandbox -- COMMAND...)");
  const cwd = resolve(io.cwd, args.strings.get("cwd") ?? ".");
  if (!existsSync(cwd)) throw new CliError(`sandbox: --cwd ${cwd} does not exist`);
  const timeoutText = args.strings.get("timeout");
  const timeout = timeoutText === undefined ? undefined : Number(timeoutText);
  if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0))
    throw new CliError(`sandbox: --timeout must be a positive number of seconds, not ${JSON.stringify(timeoutText)}`);

  const [{ loadPolicyConfig, undoBounds }, { buildPlaces }, { agentDirFromEnv, selfPaths }, { TempSession }] = await Promise.all([
    import("../policy/config/load.ts"),
    import("../policy/places.ts"),
    import("../state/locations.ts"),
    import("../state/temp-root.ts"),
  ]);
  const home = homedir();
  const agentDir = agentDirFromEnv(io.env, home);
  // The same places and configuration the gate judges the agent's calls against (policy/gate.ts);
  // the gate's shell analysis is not needed to run a command.
  const config = loadPolicyConfig({ agentDir, cwd, home });
  if (!config.ok) {
    io.err(`pi-auto-mode sandbox: the configuration ${config.path} is invalid (${config.message}); auto mode runs nothing until it is fixed\n`);
    return SANDBOX_EXIT.unavailable;
  }
  // This run is a session of its own: a private temp folder in the (checked) temp root, removed at its end (P18).
  const temp = new TempSession();
  const folder = temp.folder(config.config.tmpRoot);
  if (!folder.ok) {
    io.err(`pi-auto-mode sandbox: ${folder.reason}; auto mode runs nothing until it is fixed\n`);
    return SANDBOX_EXIT.unavailable;
  }
  if (folder.note) io.err(`pi-auto-mode sandbox: ${folder.note}\n`);
  const places = buildPlaces({ workspace: cwd, tmpRoot: folder.path, home, agentDir, selfPaths: selfPaths(agentDir) });
  try {
    return await runOne(io, { rest: args.rest, cwd, timeout, agentDir, places, config, undoBounds }, deps);
  } finally {
    temp.close();
  }
}

async function runOne(
  io: Io,
  a: {
    readonly rest: readonly string[];
    readonly cwd: string;
    readonly timeout: number | undefined;
    readonly agentDir: string;
    readonly places: Places;
    readonly config: { readonly ok: true; readonly config: PolicyConfig };
    readonly undoBounds: typeof UndoBoundsOf;
  },
  deps: SandboxDeps,
): Promise<number> {
  const { cwd, timeout, agentDir, places, config } = a;
  const protectedGlobs = config.config.protectedPaths;
  const [{ effectStore }, { settleEffects }, { reportText }, { repairStaging }, { createController }, linux] = await Promise.all([
    import("../sandbox/effects/store.ts"),
    import("../sandbox/effects/settle.ts"),
    import("../sandbox/effects/report.ts"),
    import("../sandbox/effects/repair.ts"),
    import("../sandbox/controller.ts"),
    import("../sandbox/linux/driver.ts"),
  ]);
  const store = effectStore(agentDir);
  const bounds = a.undoBounds(config);
  await repairStaging(agentDir, cwd, (text) => io.err(`${text}\n`));
  // One command: started from this process, without the spawner helper the agent keeps for its
  // many (starting the helper costs more than it saves once).
  const controller = createController(process.platform === "linux" ? { driver: linux.createLinuxDriver({ spawner: false }) } : {});
  const status = await controller.ready();
  if (status.backend !== "sandboxed" && status.backend !== "sandboxed-unstaged") {
    io.err(`pi-auto-mode sandbox: no OS sandbox (${status.backend}): ${status.reason}\n`);
    return SANDBOX_EXIT.unavailable;
  }
  if (status.backend === "sandboxed-unstaged")
    io.err(`pi-auto-mode sandbox: the workspace cannot be staged here (${status.reason}); the command writes it in place\n`);
  // The shell inside the sandbox (bwrap looks a bare name up there, not on the host).
  const shell = ["/bin/bash", "/usr/bin/bash"].find((b) => existsSync(b)) ?? "bash";
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const command = commandLine(a.rest);
    const startedAt = Date.now();
    const r = await controller.run(
      {
        command,
        cwd,
        scope: { places, protectedGlobs },
        env: io.env,
        shell,
        workspace: status.backend === "sandboxed" ? "staged" : "direct",
        // No reviewer here: held effects are discarded (P17).
        // Ctrl-C and --timeout hold while the effects are judged too: the judgement stops, nothing is applied.
        settle: (end) =>
          settleEffects({
            ...end,
            places,
            protectedGlobs,
            command,
            store,
            bounds,
            signal: abort.signal,
            ...(timeout !== undefined ? { deadlineMs: Math.max(1, timeout * 1000 - (Date.now() - startedAt)) } : {}),
            ...(deps.judgeEntry ? { judgeEntry: deps.judgeEntry } : {}),
          }),
      },
      { onData: (b) => io.out(b.toString("utf8")), signal: abort.signal, timeout },
    );
    switch (r.kind) {
      case "exited": {
        const text = r.effects ? reportText(r.effects, places.workspace) : "";
        if (text) io.err(`${text}\n`);
        if (r.effects?.outcome === "discarded" && r.effects.why === "stopped" && abort.signal.aborted) return SANDBOX_EXIT.interrupted;
        if (r.effects?.outcome === "discarded" && r.effects.why === "deadline" && timeout !== undefined) {
          io.err(`pi-auto-mode sandbox: timed out after ${timeout} s while its changes were judged; they were not applied\n`);
          return SANDBOX_EXIT.timeout;
        }
        if (r.effects?.outcome === "discarded") {
          io.err(`pi-auto-mode sandbox: the command exited with ${r.exitCode}; its changes were not applied\n`);
          return SANDBOX_EXIT.discarded;
        }
        return r.exitCode;
      }
      case "stopped":
        io.err(`pi-auto-mode sandbox: ${r.reason}; its changes were not applied\n`);
        return SANDBOX_EXIT.discarded;
      case "timeout":
        io.err(`pi-auto-mode sandbox: timed out after ${r.seconds} s\n`);
        return SANDBOX_EXIT.timeout;
      case "aborted":
        return SANDBOX_EXIT.interrupted;
      case "refused":
      case "not-started":
      case "ambiguous":
        io.err(`pi-auto-mode sandbox: ${r.kind === "ambiguous" ? "the sandbox failed while the command ran" : "the command did not run"}: ${r.reason}\n`);
        return SANDBOX_EXIT.unavailable;
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await controller.drain();
  }
}

export interface SandboxDoctor {
  readonly name: Backend;
  readonly why: string;
  readonly probe: { readonly ok: boolean; readonly ms: number; readonly driver: string; readonly reason: string | null } | null;
  /** What to install, when something is missing. */
  readonly missing: readonly string[];
  /** Driver facts: versions, process and memory limits. */
  readonly facts: readonly string[];
}

/** The backend the extension would gate with on this machine: a remembered probe pass, or the probe. */
export async function machineBackend(): Promise<Backend> {
  const [{ createController }, { probeWithCache }] = await Promise.all([import("../sandbox/controller.ts"), import("../sandbox/probe.ts")]);
  const linux = process.platform === "linux" ? await import("../sandbox/linux/driver.ts") : undefined;
  const controller = createController({ ...(linux ? { driver: linux.createLinuxDriver({ spawner: false }) } : {}), probe: (d) => probeWithCache(d) });
  const status = await controller.ready();
  await controller.drain();
  return status.backend;
}

/** The backend this machine gives the gate, and why: runs the capability probe. */
export async function sandboxDoctor(): Promise<SandboxDoctor> {
  const { createController } = await import("../sandbox/controller.ts");
  const { probeWithCache } = await import("../sandbox/probe.ts");
  // doctor looks at the machine as it is now: a fresh probe (which also renews the remembered pass).
  const controller = createController({ probe: (d) => probeWithCache(d, true) });
  const status = await controller.ready();
  const p = controller.probeResult();
  const facts = status.backend === "review-only" ? [] : controller.facts();
  await controller.drain();
  return {
    name: status.backend,
    why: `${status.backend}: ${status.reason}`,
    probe: p ? { ok: p.ok, ms: p.ms, driver: p.driver, reason: p.ok ? null : p.reason } : null,
    missing: p && !p.ok ? p.missing : [],
    facts,
  };
}
