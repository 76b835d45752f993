// Typed access to data/commands.json.

import type { CommandClass } from "../types.ts";
import data from "../data/commands.json" with { type: "json" };

export interface WrapperSpec {
  readonly valueOptions: readonly string[];
  readonly positionals?: number;
  readonly assignments?: boolean;
  readonly raise?: CommandClass;
  readonly reason?: string;
  readonly lookupOptions?: readonly string[];
  readonly scriptArgs?: boolean;
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
      fallback: (spec["default"] as CommandClass | undefined) ?? "contain",
      empty: spec["empty"] as CommandClass | undefined,
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
