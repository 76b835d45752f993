// Loading, validating and layering the user and project configuration. Any problem with a file
// that exists (unreadable, not JSON, wrong shape) is a fault: reported, and every call denies.
// Files are re-read only when their stat changes (or changed too recently for the stat to show a
// second change: then the text is compared), and rules are compiled again only when a file's
// content did, so this is cheap to call at every gate.

import { readFileSync, statSync, type Stats } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { Value } from "typebox/value";
import { ProjectConfigSchema, UserConfigSchema, type ProjectConfig, type RuleSpec, type UserConfig } from "./schema.ts";
import { PROJECT_CONFIG_FILE, USER_CONFIG_FILE } from "./files.ts";
import { compileRule, type CompiledRule, type RuleOrigin } from "../rules.ts";
import { DEFAULT_UNDO_BOUNDS, type UndoBounds } from "./undo-bounds.ts";
import { type AuditSettings, DEFAULT_AUDIT_SETTINGS } from "./audit-settings.ts";
import { absenceOf, fullStamp, sameStamp, settled, type Absence, type Stamp, type StampBook } from "../../request/stamps.ts";
import { networkData } from "../network/data.ts";
import {
  type EffectiveNetwork,
  effectiveNetwork,
  type NetworkOrigins,
  networkListProblem,
  type ProjectNetworkSettings,
  type UserNetworkSettings,
} from "../network/entries.ts";
import type { NetworkSpec } from "../network/types.ts";

export { PROJECT_CONFIG_FILE, USER_CONFIG_FILE };

export interface PolicyConfig {
  readonly tmpRoot: string | undefined;
  /** Reviewer limits from the user file (a project cannot set them). */
  readonly reviewer: {
    readonly maxInputTokens?: number;
    readonly deadlineMs?: number;
    /** The classifier engine's thresholds (checked: rejected below satisfied) and confirmUncertain. */
    readonly classifier?: {
      readonly thresholds?: Readonly<Record<string, { readonly satisfied: number; readonly rejected: number }>>;
      readonly confirmUncertain?: boolean;
    };
  };
  /** The undo store's bounds from the user file. */
  readonly undo: { readonly maxCommands?: number; readonly maxBytes?: number };
  /** Extra protected path globs (absolute), from either file. */
  readonly protectedPaths: readonly string[];
  readonly allow: readonly CompiledRule[];
  readonly review: readonly CompiledRule[];
  readonly deny: readonly CompiledRule[];
  readonly files: readonly string[];
  /** /perm-break-glass is allowed: neither the user's file nor the project's turned it off. */
  readonly breakGlass: boolean;
  /**
   * Where sandboxed commands may connect: the user's allow list (the defaults without one; `[]`
   * is none) less what the project removes, the denies of both, and reviewUnlisted unless either
   * file leaves it off. Every entry has been checked against the grammar.
   */
  readonly network: NetworkSpec;
  /** Where each part of `network` came from (for doctor). */
  readonly networkOrigins: NetworkOrigins;
  /** The local audit: off when either file turns it off; a project can only shorten its retention. */
  readonly audit: AuditSettings;
}

export type ConfigResult = { readonly ok: true; readonly config: PolicyConfig } | { readonly ok: false; readonly path: string; readonly message: string };

// Without valid shipped data there is no default list to fall back on: no network (doctor says
// why: it checks the data itself).
const NO_NETWORK: EffectiveNetwork = {
  spec: { allow: [], deny: [], reviewUnlisted: false },
  origins: { allow: [], deny: [], removed: [], reviewUnlisted: "default" },
};

// Checked when first needed, not when Pi loads the extension: the data's schema check costs ~10 ms.
let defaults: EffectiveNetwork | undefined;
const DEFAULT_NETWORK = (): EffectiveNetwork => (defaults ??= effectiveOrNone(undefined, undefined));

export const EMPTY_CONFIG: PolicyConfig = {
  tmpRoot: undefined,
  reviewer: {},
  undo: {},
  protectedPaths: [],
  allow: [],
  review: [],
  deny: [],
  files: [],
  breakGlass: true,
  audit: DEFAULT_AUDIT_SETTINGS,
  get network() {
    return DEFAULT_NETWORK().spec;
  },
  get networkOrigins() {
    return DEFAULT_NETWORK().origins;
  },
};

/** The undo store's bounds: the user's, or the defaults (also when the configuration is at fault). */
export function undoBounds(config: ConfigResult): UndoBounds {
  const u = config.ok ? config.config.undo : {};
  return { maxCommands: u.maxCommands ?? DEFAULT_UNDO_BOUNDS.maxCommands, maxBytes: u.maxBytes ?? DEFAULT_UNDO_BOUNDS.maxBytes };
}

type FileRead<T> = { kind: "missing" } | { kind: "ok"; value: T } | { kind: "fault"; message: string };

interface CacheEntry {
  readonly key: Stamp | undefined;
  /** The stamp was old enough to tell a later change apart (stamps.ts); otherwise the text is read and compared again. */
  readonly settled: boolean;
  readonly text: string | undefined;
  readonly result: FileRead<unknown>;
  /** The file had no entry: still missing while the directory that would hold it is unchanged. */
  readonly absence?: Absence;
}

const cache = new Map<string, CacheEntry>();
const MISSING: FileRead<never> = { kind: "missing" };

function readValidated<T>(path: string, schema: typeof UserConfigSchema | typeof ProjectConfigSchema, book?: StampBook): FileRead<T> {
  const now = Date.now();
  const hit = cache.get(path);
  // Most setups have no configuration file: its directory, which the call checks anyway, says it is still missing.
  if (hit?.absence && book?.absent(hit.absence)) return MISSING;
  let st: Stats | undefined;
  try {
    st = statSync(path, { throwIfNoEntry: false });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return MISSING;
    return { kind: "fault", message: `cannot stat: ${(e as Error).message}` };
  }
  if (!st) {
    const absence = book ? absenceOf(path, now) : undefined;
    if (absence) cache.set(path, { key: undefined, settled: true, text: undefined, result: MISSING, absence });
    else if (hit?.absence) cache.delete(path);
    return MISSING;
  }
  const key = fullStamp(st);
  if (hit?.settled && sameStamp(hit.key, key)) return hit.result as FileRead<T>;
  let text: string | undefined;
  let readFailure = "";
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    readFailure = (e as Error).message;
  }
  // Rewritten within the same timestamp, or just changed: the text decides.
  if (hit && text !== undefined && hit.text === text) {
    cache.set(path, { ...hit, key, settled: settled(st, now) });
    return hit.result as FileRead<T>;
  }
  let result: FileRead<T>;
  try {
    if (text === undefined) throw new Error(readFailure);
    const parsed: unknown = JSON.parse(text);
    if (Value.Check(schema, parsed)) result = { kind: "ok", value: parsed as T };
    else {
      const first = [...Value.Errors(schema, parsed)][0];
      // typebox reports a key that is not allowed as "schema is false" at the key's own path.
      // A project's `false`-only keys (P15): the file may turn the thing off, never on.
      const what =
        first?.message === "schema is false"
          ? "unknown key"
          : first?.keyword === "const" && (first.params as { allowedValue?: unknown }).allowedValue === false
            ? "a project file can only set this to false (it may turn it off, not on)"
            : first?.message;
      result = { kind: "fault", message: first ? `${first.instancePath || "/"}: ${what}` : "does not match the schema" };
    }
  } catch (e) {
    result = { kind: "fault", message: (e as Error).message };
  }
  cache.set(path, { key, settled: settled(st, now), text, result });
  return result;
}

function expandHome(p: string, home: string): string {
  return p === "~" ? home : p.startsWith("~/") ? join(home, p.slice(2)) : p;
}

function compileAll(rules: readonly RuleSpec[] | undefined, origin: RuleOrigin, home: string, base: string): CompiledRule[] {
  return (rules ?? []).map((r) => compileRule(r, origin, home, base));
}

export interface ConfigLocation {
  readonly agentDir: string;
  readonly cwd: string;
  readonly home: string;
}

// The layered result of the last reads of each location: compiled again only when a file's read changed.
const layered = new Map<string, { readonly user: FileRead<unknown>; readonly project: FileRead<unknown>; readonly result: ConfigResult }>();
const LAYERED_SIZE = 16;

// Per location: the two file paths and the layered result's key, made once (no text is built per call).
const locations = new Map<string, Map<string, { readonly home: string; readonly user: string; readonly project: string; readonly key: string }>>();

/** `book`: the call's shared look-ups (prepareGate), which let a missing file be known missing without one of its own. */
export function loadPolicyConfig(loc: ConfigLocation, book?: StampBook): ConfigResult {
  let byCwd = locations.get(loc.agentDir);
  if (!byCwd) {
    if (locations.size >= LAYERED_SIZE) locations.clear();
    locations.set(loc.agentDir, (byCwd = new Map()));
  }
  let paths = byCwd.get(loc.cwd);
  if (paths?.home !== loc.home) {
    if (byCwd.size >= LAYERED_SIZE) byCwd.clear();
    const user = join(loc.agentDir, USER_CONFIG_FILE);
    const project = join(loc.cwd, PROJECT_CONFIG_FILE);
    byCwd.set(loc.cwd, (paths = { home: loc.home, user, project, key: `${user}\0${project}\0${loc.home}\0${loc.cwd}` }));
  }
  const userPath = paths.user;
  const projectPath = paths.project;
  const user = readValidated<UserConfig>(userPath, UserConfigSchema, book);
  if (user.kind === "fault") return { ok: false, path: userPath, message: user.message };
  const project = readValidated<ProjectConfig>(projectPath, ProjectConfigSchema, book);
  if (project.kind === "fault") return { ok: false, path: projectPath, message: project.message };
  const key = paths.key;
  const hit = layered.get(key);
  if (hit && hit.user === user && hit.project === project) return hit.result;
  const result = layer(loc, userPath, projectPath, user, project);
  if (!layered.has(key) && layered.size >= LAYERED_SIZE) layered.delete(layered.keys().next().value!);
  layered.set(key, { user, project, result });
  return result;
}

function layer(loc: ConfigLocation, userPath: string, projectPath: string, user: FileRead<UserConfig>, project: FileRead<ProjectConfig>): ConfigResult {
  const u = user.kind === "ok" ? user.value : undefined;
  const p = project.kind === "ok" ? project.value : undefined;
  let userRules: Record<"allow" | "review" | "deny", CompiledRule[]>;
  let projectRules: Record<"review" | "deny", CompiledRule[]>;
  try {
    userRules = {
      allow: compileAll(u?.rules?.allow, "user", loc.home, loc.cwd),
      review: compileAll(u?.rules?.review, "user", loc.home, loc.cwd),
      deny: compileAll(u?.rules?.deny, "user", loc.home, loc.cwd),
    };
  } catch (e) {
    return { ok: false, path: userPath, message: `invalid rule: ${(e as Error).message}` };
  }
  try {
    projectRules = { review: compileAll(p?.rules?.review, "project", loc.home, loc.cwd), deny: compileAll(p?.rules?.deny, "project", loc.home, loc.cwd) };
  } catch (e) {
    return { ok: false, path: projectPath, message: `invalid rule: ${(e as Error).message}` };
  }
  const network = layerNetwork(u, p, userPath, projectPath);
  if (!network.ok) return network;
  const globs = (list: readonly string[] | undefined) => (list ?? []).map((g) => resolve(loc.cwd, expandHome(g, loc.home)));
  const tmpRoot = u?.tmpRoot === undefined ? undefined : expandHome(u.tmpRoot, loc.home);
  // A band needs room: at or below `rejected` is violated, at or above `satisfied` holds. Which
  // conditions exist is the review layer's (a threshold for an unknown one denies its reviews).
  for (const [id, t] of Object.entries(u?.review?.classifier?.thresholds ?? {}))
    if (t.rejected >= t.satisfied)
      return {
        ok: false,
        path: userPath,
        message: `/review/classifier/thresholds/${id}: rejected (${t.rejected}) must be below satisfied (${t.satisfied})`,
      };
  // A relative root would depend on whatever directory the process happens to run in.
  if (tmpRoot !== undefined && !isAbsolute(tmpRoot))
    return { ok: false, path: userPath, message: `/tmpRoot: must be absolute or start with "~/" (got ${JSON.stringify(u?.tmpRoot)})` };
  return {
    ok: true,
    config: {
      tmpRoot: tmpRoot === undefined ? undefined : resolve(tmpRoot),
      reviewer: { ...u?.review },
      undo: { ...u?.undo },
      protectedPaths: [...globs(u?.protectedPaths), ...globs(p?.protectedPaths)],
      allow: userRules.allow,
      review: [...userRules.review, ...projectRules.review],
      deny: [...userRules.deny, ...projectRules.deny],
      files: [user.kind === "ok" ? userPath : undefined, project.kind === "ok" ? projectPath : undefined].filter((f): f is string => f !== undefined),
      breakGlass: u?.breakGlass !== false && p?.breakGlass !== false,
      get network() {
        return network.value().spec;
      },
      get networkOrigins() {
        return network.value().origins;
      },
      audit: layerAudit(u, p),
    },
  };
}

function layerAudit(u: UserConfig | undefined, p: ProjectConfig | undefined): AuditSettings {
  const retentionDays = u?.audit?.retentionDays ?? DEFAULT_AUDIT_SETTINGS.retentionDays;
  return {
    enabled: u?.audit?.enabled !== false && p?.audit?.enabled !== false,
    retentionDays,
    workspaceRetentionDays: Math.min(retentionDays, p?.audit?.retentionDays ?? retentionDays),
  };
}

type Layered<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly path: string; readonly message: string };

/**
 * Both files' network settings over the shipped defaults; an invalid entry of a file is a fault at
 * its file and path, found now. The defaults are read (and the shipped data checked against its
 * schema, a few milliseconds) when the effective settings are first asked for: by a shell command
 * that runs in the sandbox, or doctor; not at every start. Shipped data that fails its check (a bug
 * of ours, which its tests catch) gives no network at all.
 */
function layerNetwork(u: UserConfig | undefined, p: ProjectConfig | undefined, userPath: string, projectPath: string): Layered<() => EffectiveNetwork> {
  const un = u?.sandbox?.network;
  const pn = p?.sandbox?.network;
  const lists: Array<[string, string, readonly string[] | undefined]> = [
    [userPath, "allow", un?.allow],
    [userPath, "deny", un?.deny],
    [projectPath, "remove", pn?.remove],
    [projectPath, "deny", pn?.deny],
  ];
  for (const [path, key, list] of lists) {
    const problem = list && networkListProblem(list);
    if (problem) return { ok: false, path, message: `/sandbox/network/${key}/${problem}` };
  }
  let effective: EffectiveNetwork | undefined;
  return { ok: true, value: () => (effective ??= effectiveOrNone(un, pn)) };
}

function effectiveOrNone(un: UserNetworkSettings | undefined, pn: ProjectNetworkSettings | undefined): EffectiveNetwork {
  try {
    const defaults = networkData().defaults;
    const problem = networkListProblem(defaults.allow) ?? networkListProblem(defaults.deny);
    if (problem) throw new Error(`a default entry is invalid: ${problem}`);
    return effectiveNetwork(un, pn, defaults);
  } catch {
    return NO_NETWORK;
  }
}
