// The command policy (data/commands.json): one record per program, checked against a schema and
// the rules a schema cannot state when the gate loads. Data that does not pass is a fault, and a
// faulty policy denies every shell command (see table.ts): a record that lost a field must not
// quietly become "unknown, run contained".

import { type Static, Type } from "typebox";
import { Value } from "typebox/value";
import type { CommandClass } from "../types.ts";
import { type FindingReason, REASON_CLASS } from "./finding.ts";

const CLASSES = ["read", "workspace-write", "cleanup", "git-local", "build", "contain", "review", "deny"] as const satisfies readonly CommandClass[];
const Class = Type.Union(CLASSES.map((c) => Type.Literal(c)));
const Names = Type.Array(Type.String({ minLength: 1 }));

/** Code that reads a program's arguments, by name: one per family in handlers/. */
export const HANDLER_NAMES = [
  "awk",
  "crontab",
  "dd",
  "emacs",
  "eval",
  "find",
  "git",
  "httpie",
  "hyperfine",
  "interpreter",
  "kill",
  "kubectl",
  "ln",
  "make",
  "netcat",
  "npx",
  "parallel",
  "patch",
  "pi",
  "rsync",
  "sed",
  "shell",
  "socat",
  "source",
  "sqlite",
  "subcommand-table",
  "tar",
  "task-runner",
  "transfer",
  "trap",
  "unzip",
  "vim",
  "xargs",
  "zip",
] as const;
export type HandlerName = (typeof HANDLER_NAMES)[number];

/** What a file operator does to its operands. */
export const OPERAND_ROLES = ["remove", "copy", "move", "write", "mode", "compress"] as const;
export type OperandRole = (typeof OPERAND_ROLES)[number];

/** Short option letters (`rR` for -r, -R, -rf, ...) and long options. */
const Flags = Type.Object({ short: Type.String(), long: Names }, { additionalProperties: false });

const Operands = Type.Object(
  {
    role: Type.Union(OPERAND_ROLES.map((r) => Type.Literal(r))),
    /** Options that make a removal recursive. */
    recursive: Type.Optional(Flags),
    /** The removal cannot be undone from the staged copy's view (shred overwrites first). */
    irrecoverable: Type.Optional(Type.Literal(true)),
    /** Options that take a value (that value is not an operand). */
    valueOptions: Type.Optional(Names),
    /** Leading operands that are not files (split's prefix is the last). */
    skipOperands: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

const Wrapper = Type.Object(
  {
    valueOptions: Names,
    positionals: Type.Optional(Type.Integer({ minimum: 1 })),
    assignments: Type.Optional(Type.Literal(true)),
    /** What running a command through it is besides the command (sudo: privilege), if anything. */
    reason: Type.Optional(Type.Union([Type.Literal("privilege"), Type.Literal("dynamic-command")])),
    lookupOptions: Type.Optional(Names),
    scriptArgs: Type.Optional(Type.Literal(true)),
    /** Options whose value (with the words after it) is a whole command line (`env -S`). */
    scriptOptions: Type.Optional(Names),
  },
  { additionalProperties: false },
);

const SubcommandTable = Type.Object(
  {
    ...Object.fromEntries(CLASSES.map((c) => [c, Type.Optional(Names)])),
    default: Class,
    /** Class when the tool is run with no subcommand at all. */
    empty: Type.Optional(Class),
  },
  { additionalProperties: false },
);

/** Why a pattern in inline code needs review (naming auto mode's own files without writing them is protected-path). */
const HAZARD_REASONS = ["identity-secret", "destructive", "dynamic-command", "protected-path", "persistence"] as const satisfies readonly FindingReason[];
export type HazardReason = (typeof HAZARD_REASONS)[number];
const Hazards = Type.Object(Object.fromEntries(HAZARD_REASONS.map((r) => [r, Type.Optional(Names)])), { additionalProperties: false });

/** A list of options, or the name of a shared one (optionSets). */
const OptionList = Type.Union([Names, Type.String({ minLength: 1 })]);

const TABLE_REASONS: readonly FindingReason[] = [
  "read-only",
  "build-test",
  "network",
  "unknown-command",
  "privilege",
  "persistence",
  "foreign-process",
  "dynamic-command",
  "destructive",
  "hard-deny",
] as const;

const ProgramRecord = Type.Object(
  {
    doc: Type.Optional(Type.String()),
    // How the program is judged: exactly one of class, wrapper, handler, operands, alias.
    class: Type.Optional(Class),
    wrapper: Type.Optional(Wrapper),
    handler: Type.Optional(Type.Union(HANDLER_NAMES.map((h) => Type.Literal(h)))),
    operands: Type.Optional(Operands),
    alias: Type.Optional(Names),
    /** Why its class (or its subcommands' review class) is what it is, where the class's own reason is not it. */
    reason: Type.Optional(Type.Union(TABLE_REASONS.map((r) => Type.Literal(r)))),
    /** Its first word selects what it does; a string names the program whose table it shares. */
    subcommands: Type.Optional(Type.Union([SubcommandTable, Type.String({ minLength: 1 })])),
    // Roles.
    interpreter: Type.Optional(Type.Literal(true)),
    network: Type.Optional(Type.Literal(true)),
    namesOnly: Type.Optional(Type.Literal(true)),
    secretSource: Type.Optional(Type.Literal(true)),
    secretPrinter: Type.Optional(Type.Literal(true)),
    servingRunner: Type.Optional(Type.Literal(true)),
    containerRuntime: Type.Optional(Type.Literal(true)),
    // Option grammar.
    contentOptions: Type.Optional(Names),
    codeOptions: Type.Optional(OptionList),
    commandOptions: Type.Optional(OptionList),
    /** Options whose value is a file the program writes. */
    outputOptions: Type.Optional(Type.Object({ short: Names, long: Names }, { additionalProperties: false })),
    run: Type.Optional(Type.Object({ subcommands: Names, valueOptions: Names }, { additionalProperties: false })),
    hazards: Type.Optional(Hazards),
    secretOptions: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Names)),
    /** Commands that must classify as given when run in the workspace: test/policy/programs.test.ts runs them. */
    examples: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Class)),
  },
  { additionalProperties: false },
);
export type ProgramRecord = Static<typeof ProgramRecord>;

const Shared = Type.Object(
  {
    doc: Type.String(),
    inlineCodeOptions: Names,
    denyPrefixes: Names,
    npxLocalTools: Names,
    pythonModules: Type.Object({ build: Names, contain: Names }, { additionalProperties: false }),
    gitSafeConfigKeys: Names,
    protectedBranches: Names,
    codeLoadingEnv: Names,
    criticalDirs: Names,
    credentialEndpoints: Names,
    clusterSecretResources: Type.String(),
    sshCommandOptions: Names,
    inlineCodeHazards: Hazards,
    inlineCodeSelfDisabling: Type.Object({ doc: Type.String(), names: Names, writes: Names }, { additionalProperties: false }),
    piCli: Type.Object(
      { doc: Type.String(), packageNames: Names, valueOptions: Names, disablingOptions: Names, secretSubcommands: Names },
      { additionalProperties: false },
    ),
    servingScripts: Type.Object({ doc: Type.String(), names: Names, makeTargets: Names }, { additionalProperties: false }),
    containerHostAccess: Type.Object({ doc: Type.String(), subcommands: Names, options: Names, mountOptions: Names }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

export const CommandPolicySchema = Type.Object(
  {
    doc: Type.String(),
    programs: Type.Record(Type.String({ minLength: 1 }), ProgramRecord),
    optionSets: Type.Object({ doc: Type.String(), sets: Type.Record(Type.String({ minLength: 1 }), Names) }, { additionalProperties: false }),
    shared: Shared,
  },
  { additionalProperties: false },
);
export type CommandPolicyData = Static<typeof CommandPolicySchema>;

/** The reason of a table class when the record names none (one table, used by every handler). */
const CLASS_REASON: Readonly<Record<CommandClass, FindingReason>> = {
  read: "read-only",
  "workspace-write": "workspace-write",
  cleanup: "regenerable-cleanup",
  "git-local": "git-local",
  build: "build-test",
  contain: "network",
  review: "privilege",
  deny: "hard-deny",
};

/** The reason a finding of `cls` from a program's table gives: the record's own where it names that class. */
export function tableReason(cls: CommandClass, reason: FindingReason | undefined): FindingReason {
  return reason !== undefined && REASON_CLASS[reason] === cls ? reason : CLASS_REASON[cls];
}

const DISPATCH = ["class", "wrapper", "handler", "operands", "alias"] as const;

export type CommandPolicyLoad = { readonly kind: "ok"; readonly data: CommandPolicyData } | { readonly kind: "fault"; readonly problem: string };

/**
 * The policy, or the first thing wrong with it: the schema, then what it cannot say (a key that
 * is a comment, a record judged two ways or none, a subcommand in two classes, a name that refers
 * to nothing, a reason that disagrees with its class).
 */
export function loadCommandPolicy(raw: unknown): CommandPolicyLoad {
  const comment = commentKey(raw, "");
  if (comment) return { kind: "fault", problem: `${comment}: a comment key (use a doc field)` };
  if (!Value.Check(CommandPolicySchema, raw)) {
    const first = [...Value.Errors(CommandPolicySchema, raw)][0];
    const what = first?.message === "schema is false" ? "unknown key" : first?.message;
    return { kind: "fault", problem: first ? `${first.instancePath || "/"}: ${what}` : "does not match the schema" };
  }
  const data = raw as CommandPolicyData;
  for (const [name, r] of Object.entries(data.programs)) {
    const problem = recordProblem(r, data);
    if (problem) return { kind: "fault", problem: `/programs/${name}: ${problem}` };
  }
  return { kind: "ok", data };
}

function recordProblem(r: ProgramRecord, data: CommandPolicyData): string | undefined {
  const ways = DISPATCH.filter((k) => r[k] !== undefined);
  if (ways.length !== 1)
    return ways.length === 0 ? "judged no way (give a class, wrapper, handler, operands or alias)" : `judged two ways (${ways.join(", ")})`;
  if (r.reason !== undefined) {
    const classes = new Set<CommandClass>([
      ...(r.class ? [r.class] : []),
      ...(typeof r.subcommands === "object" ? CLASSES.filter((c) => (r.subcommands as Record<string, unknown>)[c] !== undefined) : []),
      ...(typeof r.subcommands === "object" ? [r.subcommands.default, ...(r.subcommands.empty ? [r.subcommands.empty] : [])] : []),
    ]);
    if (!classes.has(REASON_CLASS[r.reason])) return `reason ${r.reason} is for class ${REASON_CLASS[r.reason]}, which the record does not give`;
  }
  if (typeof r.subcommands === "string") {
    const other = data.programs[r.subcommands]?.subcommands;
    if (typeof other !== "object") return `subcommands refers to ${r.subcommands}, which has no table of its own`;
  } else if (r.subcommands) {
    const seen = new Map<string, CommandClass>();
    for (const c of CLASSES)
      for (const s of (r.subcommands as Record<string, readonly string[] | undefined>)[c] ?? []) {
        const was = seen.get(s);
        if (was) return `subcommand ${s} is in two classes (${was}, ${c})`;
        seen.set(s, c);
      }
  }
  if (r.handler === "subcommand-table" && r.subcommands === undefined) return "the subcommand-table handler needs subcommands";
  for (const k of ["codeOptions", "commandOptions"] as const) {
    const v = r[k];
    if (typeof v === "string" && !data.optionSets.sets[v]) return `${k} refers to the option set ${v}, which does not exist`;
  }
  if (r.contentOptions && !r.namesOnly) return "contentOptions without namesOnly";
  return undefined;
}

function commentKey(v: unknown, at: string): string | undefined {
  if (v === null || typeof v !== "object") return undefined;
  for (const [k, x] of Object.entries(v)) {
    if (!Array.isArray(v) && (k.startsWith("_") || k.startsWith("$"))) return `${at}/${k}`;
    const inner = commentKey(x, `${at}/${k}`);
    if (inner) return inner;
  }
  return undefined;
}
