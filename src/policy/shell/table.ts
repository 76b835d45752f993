// Typed access to data/commands.json: the per-program records of programs.ts, turned into the
// look-ups the analysis makes. A policy that does not load is a fault every shell command is
// denied for (POLICY_FAULT); the tables are then empty.

import type { CommandClass } from "../types.ts";
import data from "../data/commands.json" with { type: "json" };
import pathData from "../data/paths.json" with { type: "json" };
import { globToRegExp } from "./env.ts";
import type { FindingReason } from "./finding.ts";
import { type CommandPolicyData, type HandlerName, loadCommandPolicy, type ProgramRecord, tableReason } from "./programs.ts";

import type { HazardReason } from "./programs.ts";
export type { HazardReason };

// Pi's loader (jiti) hands a JSON module over with itself as its `default` too: that is not a key
// of the file, and the schema would rightly refuse it.
const own = data as Record<string, unknown>;
const loaded = loadCommandPolicy(Object.fromEntries(Object.entries(own).filter(([k, v]) => !(k === "default" && v === own))));

/** Why the command policy did not load, if it did not: every shell command is denied then. */
export const POLICY_FAULT: string | undefined = loaded.kind === "fault" ? loaded.problem : undefined;

const EMPTY_POLICY: CommandPolicyData = {
  doc: "",
  programs: {},
  optionSets: { doc: "", sets: {} },
  shared: {
    doc: "",
    inlineCodeOptions: [],
    denyPrefixes: [],
    npxLocalTools: [],
    pythonModules: { build: [], contain: [] },
    gitSafeConfigKeys: [],
    protectedBranches: [],
    codeLoadingEnv: [],
    criticalDirs: [],
    credentialEndpoints: [],
    clusterSecretResources: "^$",
    sshCommandOptions: [],
    inlineCodeHazards: {},
    inlineCodeSelfDisabling: { doc: "", names: [], writes: [] },
    piCli: { doc: "", packageNames: [], valueOptions: [], disablingOptions: [], secretSubcommands: [] },
    servingScripts: { doc: "", names: [], makeTargets: [] },
    containerHostAccess: { doc: "", subcommands: [], options: [], mountOptions: [] },
  },
};

const policy: CommandPolicyData = loaded.kind === "ok" ? loaded.data : EMPTY_POLICY;
const shared = policy.shared;
const records: ReadonlyArray<readonly [string, ProgramRecord]> = Object.entries(policy.programs);
const having = (has: (r: ProgramRecord) => unknown): ReadonlySet<string> => new Set(records.filter(([, r]) => has(r)).map(([n]) => n));

/** Every program the policy has a record for. */
export const PROGRAMS: ReadonlyMap<string, ProgramRecord> = new Map(records);

/** The handler that reads each program's arguments, for the programs judged by code. */
export const HANDLED: ReadonlyMap<string, HandlerName> = new Map(records.flatMap(([n, r]) => (r.handler ? [[n, r.handler] as const] : [])));

/** The reason a finding of class `cls` from `program`'s table gives (its record may name its own). */
export function reasonOf(program: string, cls: CommandClass): FindingReason {
  return tableReason(cls, PROGRAMS.get(program)?.reason);
}

export type WrapperSpec = NonNullable<ProgramRecord["wrapper"]>;
export type OperandSpec = NonNullable<ProgramRecord["operands"]>;

export interface SubcommandTable {
  /** The program whose table this is (pip3 shares pip's). */
  readonly tool: string;
  readonly byName: ReadonlyMap<string, CommandClass>;
  readonly fallback: CommandClass;
  /** Class when the tool is run with no subcommand at all. */
  readonly empty: CommandClass | undefined;
}

const TABLE_CLASSES: readonly CommandClass[] = ["read", "workspace-write", "cleanup", "git-local", "build", "contain", "review", "deny"];

function loadSubcommands(): ReadonlyMap<string, SubcommandTable> {
  const out = new Map<string, SubcommandTable>();
  for (const [tool, r] of records) {
    const owner = typeof r.subcommands === "string" ? r.subcommands : tool;
    const spec = policy.programs[owner]?.subcommands;
    if (typeof spec !== "object") continue;
    const byName = new Map<string, CommandClass>();
    for (const cls of TABLE_CLASSES) for (const n of (spec as Record<string, readonly string[] | undefined>)[cls] ?? []) byName.set(n, cls);
    out.set(tool, { tool: owner, byName, fallback: spec.default, empty: spec.empty });
  }
  return out;
}

export const WRAPPERS: ReadonlyMap<string, WrapperSpec> = new Map(records.flatMap(([n, r]) => (r.wrapper ? [[n, r.wrapper] as const] : [])));
export const OPERANDS: ReadonlyMap<string, OperandSpec> = new Map(records.flatMap(([n, r]) => (r.operands ? [[n, r.operands] as const] : [])));
export const SHELLS: ReadonlySet<string> = having((r) => r.handler === "shell");
export const INTERPRETERS: ReadonlySet<string> = having((r) => r.interpreter);
export const INLINE_CODE_OPTIONS: ReadonlySet<string> = new Set(shared.inlineCodeOptions);
export const SIMPLE: ReadonlyMap<string, CommandClass> = new Map(records.flatMap(([n, r]) => (r.class ? [[n, r.class] as const] : [])));
export const SUBCOMMANDS: ReadonlyMap<string, SubcommandTable> = loadSubcommands();
export const DENY_PREFIXES: readonly string[] = shared.denyPrefixes;
export const NPX_LOCAL_TOOLS: ReadonlySet<string> = new Set(shared.npxLocalTools);
export const PYTHON_MODULES: ReadonlyMap<string, CommandClass> = new Map([
  ...shared.pythonModules.build.map((m): [string, CommandClass] => [m, "build"]),
  ...shared.pythonModules.contain.map((m): [string, CommandClass] => [m, "contain"]),
]);
export const GIT_SAFE_CONFIG_KEYS: ReadonlySet<string> = new Set(shared.gitSafeConfigKeys);
export const PROTECTED_BRANCHES: ReadonlySet<string> = new Set(shared.protectedBranches);
export const CODE_LOADING_ENV: ReadonlySet<string> = new Set(shared.codeLoadingEnv);
export const SECRET_SOURCES: ReadonlySet<string> = having((r) => r.secretSource);
export const NAMES_ONLY_READERS: ReadonlySet<string> = having((r) => r.namesOnly);

/** Directories whose recursive removal, chmod or chown wrecks the machine. */
export const CRITICAL_DIRS: readonly string[] = shared.criticalDirs;

/** Name patterns of files a build or tool run recreates (`*.pyc`); lower case. */
export const REGENERABLE_FILES: readonly { readonly pattern: string; readonly re: RegExp }[] = pathData.regenerableFiles.map((p) => ({
  pattern: p.toLowerCase(),
  re: globToRegExp(p.toLowerCase()),
}));

/** Container runtimes and the run options that reach past the OS sandbox to the host. */
export const CONTAINER_HOST_ACCESS = { ...shared.containerHostAccess, tools: [...having((r) => r.containerRuntime)] } as const;

/** Options that make a subcommand print a credential, by "tool subcommand". */
export const SECRET_OPTIONS: ReadonlyMap<string, readonly string[]> = new Map(
  records.flatMap(([n, r]) => Object.entries(r.secretOptions ?? {}).map(([sub, options]) => [`${n} ${sub}`, options] as const)),
);

export const NETWORK_TOOLS: ReadonlySet<string> = having((r) => r.network);
export const SECRET_PRINTERS: ReadonlySet<string> = having((r) => r.secretPrinter);

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const CREDENTIAL_ENDPOINT_RE = new RegExp(`(^|[^\\w.:-])(${shared.credentialEndpoints.map(escapeRe).join("|")})(?![\\w.-])`, "i");
/** The host a word names that hands out the machine's cloud credentials (instance metadata), if any. */
export function credentialEndpoint(word: string): string | undefined {
  // Substring checks first: this runs on every word of every command.
  const lower = /[A-Z]/.test(word) ? word.toLowerCase() : word;
  if (!shared.credentialEndpoints.some((e) => lower.includes(e))) return undefined;
  return CREDENTIAL_ENDPOINT_RE.exec(lower)?.[2];
}
/** kubectl resources whose `get` or `edit` prints credentials (`secret`, `secrets/db`, `secret,configmap`). */
export const CLUSTER_SECRET_RESOURCE: RegExp = new RegExp(shared.clusterSecretResources, "i");

/** An option whose value is a command line the command runs; with `prefix`, only values starting with it (stripped). */
export interface CommandOption {
  readonly option: string;
  readonly prefix: string;
}
function optionList(list: ProgramRecord["codeOptions"]): readonly CommandOption[] {
  const entries = typeof list === "string" ? (policy.optionSets.sets[list] ?? []) : (list ?? []);
  return entries.map((e) => {
    const [option, prefix = ""] = e.split(" ");
    return { option: option!, prefix };
  });
}
export const COMMAND_OPTIONS: ReadonlyMap<string, readonly CommandOption[]> = new Map(
  records.flatMap(([n, r]) => (r.commandOptions ? [[n, optionList(r.commandOptions)] as const] : [])),
);
/** Options that make a command run code the gate does not read; with `prefix`, only values starting with it. */
export const CODE_OPTIONS: ReadonlyMap<string, readonly CommandOption[]> = new Map(
  records.flatMap(([n, r]) => (r.codeOptions ? [[n, optionList(r.codeOptions)] as const] : [])),
);
/** Pi's own command line: see shared.piCli in commands.json. */
export const PI_CLI = {
  packageNames: new Set(shared.piCli.packageNames),
  valueOptions: new Set(shared.piCli.valueOptions),
  disablingOptions: new Set(shared.piCli.disablingOptions),
  secretSubcommands: shared.piCli.secretSubcommands.map((s) => s.split(" ")),
} as const;
/** Options of a names-only reader (`file -f`, `du --files0-from`) that read a file's contents. */
export const NAMES_ONLY_CONTENT_OPTIONS: ReadonlyMap<string, readonly string[]> = new Map(
  records.flatMap(([n, r]) => (r.contentOptions ? [[n, r.contentOptions] as const] : [])),
);
/** `ssh -o Key=VALUE` settings whose value runs on this machine. */
export const SSH_COMMAND_OPTIONS: ReadonlySet<string> = new Set(shared.sshCommandOptions.map((k) => k.toLowerCase()));

export interface OutputSpec {
  readonly short: readonly string[];
  readonly long: readonly string[];
}
export const OUTPUT_OPTIONS: ReadonlyMap<string, OutputSpec> = new Map(records.flatMap(([n, r]) => (r.outputOptions ? [[n, r.outputOptions] as const] : [])));

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
export const INLINE_CODE_HAZARDS: readonly CodeHazard[] = hazards(shared.inlineCodeHazards);
/** Inline code that names auto mode's files or Pi's settings (names) and writes, moves or removes files (writes). */
export const INLINE_CODE_SELF_DISABLING = {
  names: shared.inlineCodeSelfDisabling.names.map((p) => new RegExp(p)),
  writes: shared.inlineCodeSelfDisabling.writes.map((p) => new RegExp(p)),
} as const;
/** Extra patterns of one language (Perl and Ruby backticks run shell commands; JavaScript's do not). */
export const INTERPRETER_HAZARDS: ReadonlyMap<string, readonly CodeHazard[]> = new Map(
  records.flatMap(([n, r]) => (r.hazards ? [[n, hazards(r.hazards)] as const] : [])),
);

export interface RunSubcommand {
  readonly subcommands: readonly string[];
  readonly valueOptions: readonly string[];
}
/** `bundle exec CMD`, `poetry run CMD`: CMD runs as if typed directly. */
export const RUN_SUBCOMMANDS: ReadonlyMap<string, RunSubcommand> = new Map(records.flatMap(([n, r]) => (r.run ? [[n, r.run] as const] : [])));

/** Commands that are another command in disguise (`rimraf X` is `rm -rf X`; `shx CMD` is CMD). */
export const COMMAND_ALIASES: ReadonlyMap<string, readonly string[]> = new Map(records.flatMap(([n, r]) => (r.alias ? [[n, r.alias] as const] : [])));

/** Package scripts and make targets that by convention serve, deploy or install outside the workspace. */
export const SERVING_SCRIPTS = {
  runners: having((r) => r.servingRunner),
  names: new Set(shared.servingScripts.names),
  taskRunners: having((r) => r.handler === "task-runner"),
  makeTargets: new Set(shared.servingScripts.makeTargets),
} as const;
