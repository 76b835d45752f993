// A tiny strict argument parser: `--flag VALUE`, `--flag=VALUE`, boolean `--flag`, positionals,
// and everything after `--` kept verbatim. Anything it does not know is an error rather than
// being ignored, because a mistyped flag on a security tool must not silently change the answer.

import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { CliError } from "./io.ts";

export type FlagKind = "string" | "boolean";

export interface CommandSpec {
  /** Long flag names without the dashes. */
  readonly flags: Readonly<Record<string, FlagKind>>;
  /** Names of the positional arguments, all required, in order. */
  readonly positionals: readonly string[];
  /** Names of optional positional arguments after the required ones. */
  readonly optional?: readonly string[];
  /** Whether the words after `--` are accepted. */
  readonly rest: boolean;
}

export interface ParsedArgs {
  readonly help: boolean;
  readonly strings: ReadonlyMap<string, string>;
  readonly booleans: ReadonlySet<string>;
  readonly positionals: readonly string[];
  /** The words after `--`, or undefined when there was no `--`. */
  readonly rest: readonly string[] | undefined;
}

export function parseArgs(command: string, argv: readonly string[], spec: CommandSpec): ParsedArgs {
  const strings = new Map<string, string>();
  const booleans = new Set<string>();
  const positionals: string[] = [];
  let rest: string[] | undefined;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      if (!spec.rest) throw new CliError(`${command}: unexpected "--" (this command takes no trailing words)`);
      rest = argv.slice(i + 1);
      break;
    }
    if (arg === "--help" || arg === "-h") {
      help = true;
      continue;
    }
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      const kind = spec.flags[name];
      if (kind === undefined) throw new CliError(`${command}: unknown option --${name}`);
      if (strings.has(name) || booleans.has(name)) throw new CliError(`${command}: --${name} given twice`);
      if (kind === "boolean") {
        if (eq !== -1) throw new CliError(`${command}: --${name} takes no value`);
        booleans.add(name);
        continue;
      }
      let value: string | undefined;
      if (eq !== -1) value = arg.slice(eq + 1);
      else {
        value = argv[i + 1];
        // `--input --json` almost certainly forgot the value; `--input=--json` says it on purpose.
        if (value === undefined || value === "--" || value.startsWith("--"))
          throw new CliError(`${command}: --${name} needs a value (write --${name}=VALUE if the value starts with --)`);
        i++;
      }
      strings.set(name, value);
      continue;
    }
    if (arg.startsWith("-") && arg !== "-") throw new CliError(`${command}: unknown option ${arg}`);
    positionals.push(arg);
  }
  if (!help) {
    const most = spec.positionals.length + (spec.optional?.length ?? 0);
    if (positionals.length > most) throw new CliError(`${command}: unexpected argument ${JSON.stringify(positionals[most])}`);
    if (positionals.length < spec.positionals.length) throw new CliError(`${command}: missing ${spec.positionals[positionals.length]}`);
  }
  return { help, strings, booleans, positionals, rest };
}

/** One value of a closed set, e.g. a backend name. */
export function oneOf<T extends string>(command: string, flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new CliError(
    `${command}: unknown --${flag} ${JSON.stringify(value)} (expected ${allowed.length > 1 ? `${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}` : allowed.join("")})`,
  );
}

/** A directory argument, resolved against `base` and with symlinks resolved, as Pi reports its cwd. */
export function directoryArg(command: string, flag: string, base: string, value: string): string {
  if (value === "") throw new CliError(`${command}: ${flag} needs a directory`);
  const abs = resolve(base, value);
  let isDir: boolean;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new CliError(`${command}: ${flag} ${value}: no such directory`);
  }
  if (!isDir) throw new CliError(`${command}: ${flag} ${value}: not a directory`);
  return realpathSync(abs);
}
