// The `pi-auto-mode` command: dispatch to one module per subcommand. Returns the exit code
// instead of calling process.exit, so buffered output is flushed and tests can call it in-process.

import { CliError, EXIT, processIo, type Io } from "./io.ts";

/** A subcommand. Only the one asked for is loaded, and it loads the gate after its arguments are parsed. */
type Command = (argv: readonly string[], io: Io) => Promise<number>;

const COMMANDS: Readonly<Record<string, Command>> = {
  check: async (argv, io) => (await import("./check.ts")).runCheck(argv, io),
  eval: async (argv, io) => (await import("./eval.ts")).runEval(argv, io),
  config: async (argv, io) => (await import("./config.ts")).runConfig(argv, io),
  doctor: async (argv, io) => (await import("./doctor.ts")).runDoctor(argv, io),
  sandbox: async (argv, io) => (await import("./sandbox.ts")).runSandbox(argv, io),
  undo: async (argv, io) => (await import("./undo.ts")).runUndo(argv, io),
  audit: async (argv, io) => (await import("./audit.ts")).runAudit(argv, io),
};

export const MAIN_HELP = `Usage: pi-auto-mode <command> [options]

Fail-closed auto mode for the Pi coding agent: the deterministic gate, from the shell.

Commands:
  check    judge one tool call: --tool NAME --input JSON, or -- COMMAND... for bash
  eval     score a labelled corpus (JSON lines) against a fresh workspace
  config   the effective configuration and where each value came from; --defaults
  doctor   report Node, Pi, the install in Pi, configuration, backend and reviewer,
           and how to fix what is wrong
  sandbox  run one command in the OS sandbox as the agent's bash would: -- COMMAND...
  undo     undo the last commands whose staged changes auto mode applied: [--cwd DIR] [N]
  audit    the local audit: decisions, reviewer cost, friction and rule suggestions:
           [--days N] [--top N] [--min-count N] [--scope current|all] [--json]

Options:
  -h, --help     show this help (pi-auto-mode <command> --help for a command's)
  -V, --version  print the version

All commands honour PI_CODING_AGENT_DIR (Pi's agent dir, default ~/.pi/agent), where
the user configuration auto-mode.json lives.

Exit status: 0 success; 1 findings (eval: a safety violation, doctor: a problem it
names, config: an invalid file); 2 bad input (unknown command or option, missing
value, invalid JSON, unknown backend, unreadable or malformed corpus); 3 internal error.
`;

export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  try {
    const [first, ...rest] = argv;
    if (first === undefined) {
      io.err(MAIN_HELP);
      return EXIT.usage;
    }
    if (first === "--help" || first === "-h") {
      io.out(MAIN_HELP);
      return EXIT.ok;
    }
    if (first === "help") {
      // `help CMD` is `CMD --help`.
      if (rest.length === 0) {
        io.out(MAIN_HELP);
        return EXIT.ok;
      }
      const target = COMMANDS[rest[0]!];
      if (!target || rest.length > 1) throw new CliError(`help: unknown command ${JSON.stringify(rest.join(" "))}`);
      return await target(["--help"], io);
    }
    if (first === "--version" || first === "-V") {
      const { ownPackage } = await import("./doctor.ts");
      io.out(`${ownPackage().version ?? "unknown"}\n`);
      return EXIT.ok;
    }
    const command = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
    if (!command) {
      const what = first.startsWith("-") ? `unknown option ${first}` : `unknown command ${JSON.stringify(first)}`;
      throw new CliError(`${what} (commands: ${Object.keys(COMMANDS).join(", ")})`);
    }
    return await command(rest, io);
  } catch (e) {
    if (e instanceof CliError) {
      io.err(`pi-auto-mode: ${e.message}\n`);
      if (e.exitCode === EXIT.usage) io.err(`Run 'pi-auto-mode${commandOf(argv)} --help' for usage.\n`);
      return e.exitCode;
    }
    io.err(`pi-auto-mode: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
    return EXIT.internal;
  }
}

function commandOf(argv: readonly string[]): string {
  const first = argv[0];
  return first !== undefined && Object.hasOwn(COMMANDS, first) ? ` ${first}` : "";
}
