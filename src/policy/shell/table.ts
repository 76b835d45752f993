// Typed access to data/commands.json.

import type { CommandClass } from "../types.ts";
import data from "../data/commands.json" with { type: "json" };
import pathData from "../data/paths.json" with { type: "json" };
import { globToRegExp } from "./env.ts";

export interface WrapperSpec {
  readonly valueOptions: readonly string[];
  readonly positionals?: number;
  readonly assignments?: boolean;
  readonly raise?: CommandClass;
  readonly reason?: string;
  readonly lookupOptions?: readonly string[];
  readonly scriptArgs?: boolean;
  /** Options whose value (with the words after it) is a whole command line (`env -S`). */
  readonly scriptOptions?: readonly string[];
}

export interface SubcommandTable {
  readonly byName: ReadonlyMap<string, CommandClass>;
  readonly fallback: CommandClass;
  /** Class when the tool is run with no subcommand at all. */
  readonly empty: CommandClass | undefined;
}

const TABLE_CLASSES: readonly CommandClass[] = ["read", "workspace-write", "cleanup", "git-local", "build", "contain", "review", "deny"];

function loadSubcommands(): ReadonlyMap<string, SubcommandTable> {
  const out = new Map<string, SubcommandTable>();
  for (const [tool, spec] of Object.entries(data.subcommands) as Array<[string, Record<string, unknown>]>) {
    const byName = new Map<string, CommandClass>();
    for (const cls of TABLE_CLASSES) {
      const names = spec[cls];
      if (Array.isArray(names)) for (const n of names) byName.set(String(n), cls);
    }
    out.set(tool, {
      byName,
      fallback: (spec.default as CommandClass | undefined) ?? "contain",
      empty: spec.empty as CommandClass | undefined,
    });
  }
  return out;
}

function loadSimple(): ReadonlyMap<string, CommandClass> {
  const out = new Map<string, CommandClass>();
  for (const [cls, names] of Object.entries(data.simple)) for (const n of names) out.set(n, cls as CommandClass);
  return out;
}

export const WRAPPERS: ReadonlyMap<string, WrapperSpec> = new Map(Object.entries(data.wrappers) as Array<[string, WrapperSpec]>);
export const SHELLS: ReadonlySet<string> = new Set(data.shells);
export const INTERPRETERS: ReadonlySet<string> = new Set(data.interpreters);
export const INLINE_CODE_OPTIONS: ReadonlySet<string> = new Set(data.inlineCodeOptions);
export const SIMPLE: ReadonlyMap<string, CommandClass> = loadSimple();
export const SUBCOMMANDS: ReadonlyMap<string, SubcommandTable> = loadSubcommands();
export const DENY_PREFIXES: readonly string[] = data.denyPrefixes;
export const NPX_LOCAL_TOOLS: ReadonlySet<string> = new Set(data.npxLocalTools);
export const PYTHON_MODULES: ReadonlyMap<string, CommandClass> = new Map([
  ...data.pythonModules.build.map((m): [string, CommandClass] => [m, "build"]),
  ...data.pythonModules.contain.map((m): [string, CommandClass] => [m, "contain"]),
]);
export const GIT_SAFE_CONFIG_KEYS: ReadonlySet<string> = new Set(data.gitSafeConfigKeys);
export const PROTECTED_BRANCHES: ReadonlySet<string> = new Set(data.protectedBranches);
export const CODE_LOADING_ENV: ReadonlySet<string> = new Set(data.codeLoadingEnv);
export const SECRET_SOURCES: ReadonlySet<string> = new Set(data.secretSources);
export const NAMES_ONLY_READERS: ReadonlySet<string> = new Set(data.namesOnlyReaders);

/** Directories whose recursive removal, chmod or chown wrecks the machine. */
export const CRITICAL_DIRS: readonly string[] = data.criticalDirs;

/** Name patterns of files a build or tool run recreates (`*.pyc`); lower case. */
export const REGENERABLE_FILES: readonly { readonly pattern: string; readonly re: RegExp }[] = pathData.regenerableFiles.map((p) => ({
  pattern: p.toLowerCase(),
  re: globToRegExp(p.toLowerCase()),
}));

/** Container runtimes and the run options that reach past the OS sandbox to the host. */
export const CONTAINER_HOST_ACCESS = data.containerHostAccess;

/** Options that make a subcommand print a credential, by "tool subcommand". */
export const SECRET_OPTIONS: ReadonlyMap<string, readonly string[]> = new Map(
  Object.entries(data.secretOptions).filter(([k]) => !k.startsWith("_")) as Array<[string, string[]]>,
);

export const NETWORK_TOOLS: ReadonlySet<string> = new Set(data.networkTools);
export const SECRET_PRINTERS: ReadonlySet<string> = new Set(data.secretPrinters);
/** Variable names that hold credentials by convention (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY). */
export const SECRET_VARIABLE: RegExp = new RegExp(data.secretVariablePattern, "i");

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const CREDENTIAL_ENDPOINT_RE = new RegExp(`(^|[^\\w.:-])(${data.credentialEndpoints.map(escapeRe).join("|")})(?![\\w.-])`, "i");
/** The host a word names that hands out the machine's cloud credentials (instance metadata), if any. */
export function credentialEndpoint(word: string): string | undefined {
  // Substring checks first: this runs on every word of every command.
  const lower = /[A-Z]/.test(word) ? word.toLowerCase() : word;
  if (!data.credentialEndpoints.some((e) => lower.includes(e))) return undefined;
  return CREDENTIAL_ENDPOINT_RE.exec(lower)?.[2];
}
/** kubectl resources whose `get` or `edit` prints credentials (`secret`, `secrets/db`, `secret,configmap`). */
export const CLUSTER_SECRET_RESOURCE: RegExp = new RegExp(data.clusterSecretResources, "i");

/** An option whose value is a command line the command runs; with `prefix`, only values starting with it (stripped). */
export interface CommandOption {
  readonly option: string;
  readonly prefix: string;
}
export const COMMAND_OPTIONS: ReadonlyMap<string, readonly CommandOption[]> = new Map(
  Object.entries(data.commandOptions).map(([name, entries]) => [
    name,
    entries.map((e) => {
      const [option, prefix = ""] = e.split(" ");
      return { option: option!, prefix };
    }),
  ]),
);
/** Options that make a command run code the gate does not read; with `prefix`, only values starting with it. */
export const CODE_OPTIONS: ReadonlyMap<string, readonly CommandOption[]> = new Map(
  Object.entries(data.codeOptions)
    .filter(([k]) => !k.startsWith("_"))
    .map(([name, entries]) => [
      name,
      (entries as string[]).map((e) => {
        const [option, prefix = ""] = e.split(" ");
        return { option: option!, prefix };
      }),
    ]),
);
/** Pi's own command line: see piCli in commands.json. */
export const PI_CLI = {
  packageNames: new Set(data.piCli.packageNames),
  valueOptions: new Set(data.piCli.valueOptions),
  disablingOptions: new Set(data.piCli.disablingOptions),
  secretSubcommands: data.piCli.secretSubcommands.map((s) => s.split(" ")),
} as const;
/** Options of a names-only reader (`file -f`, `du --files0-from`) that read a file's contents. */
export const NAMES_ONLY_CONTENT_OPTIONS: ReadonlyMap<string, readonly string[]> = new Map(
  Object.entries(data.namesOnlyContentOptions).filter(([k]) => !k.startsWith("_")) as Array<[string, string[]]>,
);
/** `ssh -o Key=VALUE` settings whose value runs on this machine. */
export const SSH_COMMAND_OPTIONS: ReadonlySet<string> = new Set(data.sshCommandOptions.map((k) => k.toLowerCase()));

export interface OutputSpec {
  readonly short: readonly string[];
  readonly long: readonly string[];
}
export const OUTPUT_OPTIONS: ReadonlyMap<string, OutputSpec> = new Map(Object.entries(data.outputOptions) as Array<[string, OutputSpec]>);

export type HazardReason = "identity-secret" | "destructive" | "dynamic-command" | "self-protection" | "persistence";
export interface CodeHazard {
  readonly reason: HazardReason;
  readonly re: RegExp;
}

function hazards(table: Partial<Record<HazardReason, readonly string[]>>): CodeHazard[] {
  return (Object.entries(table) as Array<[HazardReason, readonly string[]]>).flatMap(([reason, patterns]) =>
    patterns.map((p) => ({ reason, re: new RegExp(p) })),
  );
}

/** Patterns in inline interpreter code that no sandbox makes safe to run unreviewed, by reason. */
export const INLINE_CODE_HAZARDS: readonly CodeHazard[] = hazards(data.inlineCodeHazards);
/** Inline code that names auto mode's files or Pi's settings (names) and writes, moves or removes files (writes). */
export const INLINE_CODE_SELF_DISABLING = {
  names: data.inlineCodeSelfDisabling.names.map((p) => new RegExp(p)),
  writes: data.inlineCodeSelfDisabling.writes.map((p) => new RegExp(p)),
} as const;
/** Extra patterns of one language (Perl and Ruby backticks run shell commands; JavaScript's do not). */
export const INTERPRETER_HAZARDS: ReadonlyMap<string, readonly CodeHazard[]> = new Map(
  Object.entries(data.inlineCodeHazardsByInterpreter).map(([name, table]) => [name, hazards(table)]),
);

export interface RunSubcommand {
  readonly subcommands: readonly string[];
  readonly valueOptions: readonly string[];
}
/** `bundle exec CMD`, `poetry run CMD`: CMD runs as if typed directly. */
export const RUN_SUBCOMMANDS: ReadonlyMap<string, RunSubcommand> = new Map(Object.entries(data.runSubcommands) as Array<[string, RunSubcommand]>);

/** Commands that are another command in disguise (`rimraf X` is `rm -rf X`; `shx CMD` is CMD). */
export const COMMAND_ALIASES: ReadonlyMap<string, readonly string[]> = new Map(Object.entries(data.commandAliases));

/** Package scripts and make targets that by convention serve, deploy or install outside the workspace. */
export const SERVING_SCRIPTS = {
  runners: new Set(data.servingScripts.runners),
  names: new Set(data.servingScripts.names),
  taskRunners: new Set(data.servingScripts.taskRunners),
  makeTargets: new Set(data.servingScripts.makeTargets),
} as const;
