// Where each value of the effective configuration came from, for `pi-auto-mode config`. Kept
// apart from load.ts: the gate calls the loader at every tool call and needs none of this, so it
// is worked out here, once, from the files' own text and the loader's result.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_CONFIG_FILE, USER_CONFIG_FILE } from "./files.ts";
import type { ConfigLocation, PolicyConfig } from "./load.ts";
import type { ProjectConfig, RuleSpec, UserConfig } from "./schema.ts";
import { DEFAULT_UNDO_BOUNDS } from "./undo-bounds.ts";
import { DEFAULT_AUDIT_SETTINGS } from "./audit-settings.ts";

export type ConfigOrigin = "default" | "user" | "project";

export interface Sourced<T> {
  readonly value: T;
  readonly origin: ConfigOrigin;
}

/** A protected path glob as it applies (absolute) and as the file wrote it. */
export interface SourcedPath extends Sourced<string> {
  readonly written: string;
}

/** The effective configuration, each value with where it came from. */
export interface ExplainedConfig {
  readonly tmpRoot: Sourced<string>;
  readonly review: { readonly maxInputTokens: Sourced<number>; readonly deadlineMs: Sourced<number> };
  readonly undo: { readonly maxCommands: Sourced<number>; readonly maxBytes: Sourced<number> };
  readonly breakGlass: Sourced<boolean>;
  /** `retentionDays`: this workspace's (the project's when it is shorter than the user's). */
  readonly audit: { readonly enabled: Sourced<boolean>; readonly retentionDays: Sourced<number> };
  readonly protectedPaths: readonly SourcedPath[];
  readonly rules: {
    readonly allow: readonly Sourced<RuleSpec>[];
    readonly review: readonly Sourced<RuleSpec>[];
    readonly deny: readonly Sourced<RuleSpec>[];
  };
  readonly sandbox: {
    readonly network: {
      readonly allow: readonly Sourced<string>[];
      readonly deny: readonly Sourced<string>[];
      /** Allow entries the project took off the list. */
      readonly removed: readonly string[];
      readonly reviewUnlisted: Sourced<boolean>;
    };
  };
}

/**
 * The values that apply without any file. They live in later layers (the reviewer's limits in
 * review/, the temporary root in state/), which the policy may not import, so the caller passes them.
 */
export interface ConfigDefaults {
  readonly tmpRoot: string;
  readonly maxInputTokens: number;
  readonly deadlineMs: number;
}

export interface ConfigFiles {
  readonly user: UserConfig | undefined;
  readonly project: ProjectConfig | undefined;
}

/**
 * The two files as parsed JSON, undefined where one does not exist. Only meaningful after
 * loadPolicyConfig accepted them: this does not validate.
 */
export function readConfigFiles(loc: ConfigLocation): ConfigFiles {
  const read = (path: string): unknown => {
    try {
      return JSON.parse(readFileSync(path, "utf8"));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
      throw e;
    }
  };
  return {
    user: read(join(loc.agentDir, USER_CONFIG_FILE)) as UserConfig | undefined,
    project: read(join(loc.cwd, PROJECT_CONFIG_FILE)) as ProjectConfig | undefined,
  };
}

const from = <T>(value: T | undefined, origin: ConfigOrigin, fallback: T): Sourced<T> =>
  value === undefined ? { value: fallback, origin: "default" } : { value, origin };

export function explainConfig(config: PolicyConfig, files: ConfigFiles, defaults: ConfigDefaults): ExplainedConfig {
  const u = files.user;
  const p = files.project;
  const written = [
    ...(u?.protectedPaths ?? []).map((w) => ({ written: w, origin: "user" as const })),
    ...(p?.protectedPaths ?? []).map((w) => ({ written: w, origin: "project" as const })),
  ];
  const rules = (list: readonly RuleSpec[] | undefined, origin: ConfigOrigin) => (list ?? []).map((value) => ({ value, origin }));
  // A project can only turn break glass off, so its false wins; otherwise the user's word, if any.
  const breakGlass: Sourced<boolean> =
    p?.breakGlass === false
      ? { value: false, origin: "project" }
      : u?.breakGlass !== undefined
        ? { value: u.breakGlass, origin: "user" }
        : { value: true, origin: "default" };
  // A project can only turn the audit off and shorten its retention: its word counts only then.
  const auditEnabled: Sourced<boolean> =
    p?.audit?.enabled === false
      ? { value: false, origin: "project" }
      : u?.audit?.enabled !== undefined
        ? { value: u.audit.enabled, origin: "user" }
        : { value: DEFAULT_AUDIT_SETTINGS.enabled, origin: "default" };
  const retention = config.audit.workspaceRetentionDays;
  const auditRetention: Sourced<number> =
    p?.audit?.retentionDays !== undefined && p.audit.retentionDays === retention && retention < config.audit.retentionDays
      ? { value: retention, origin: "project" }
      : from(u?.audit?.retentionDays, "user", DEFAULT_AUDIT_SETTINGS.retentionDays);
  const net = config.network;
  const netFrom = config.networkOrigins;
  return {
    tmpRoot: from(config.tmpRoot, "user", defaults.tmpRoot),
    review: {
      maxInputTokens: from(u?.review?.maxInputTokens, "user", defaults.maxInputTokens),
      deadlineMs: from(u?.review?.deadlineMs, "user", defaults.deadlineMs),
    },
    undo: {
      maxCommands: from(u?.undo?.maxCommands, "user", DEFAULT_UNDO_BOUNDS.maxCommands),
      maxBytes: from(u?.undo?.maxBytes, "user", DEFAULT_UNDO_BOUNDS.maxBytes),
    },
    breakGlass,
    audit: { enabled: auditEnabled, retentionDays: auditRetention },
    // The loader keeps the user's globs before the project's, resolved, in the files' order.
    protectedPaths: config.protectedPaths.map((value, i) => ({ value, written: written[i]?.written ?? value, origin: written[i]?.origin ?? "user" })),
    rules: {
      allow: rules(u?.rules?.allow, "user"),
      review: [...rules(u?.rules?.review, "user"), ...rules(p?.rules?.review, "project")],
      deny: [...rules(u?.rules?.deny, "user"), ...rules(p?.rules?.deny, "project")],
    },
    sandbox: {
      network: {
        allow: net.allow.map((value, i) => ({ value, origin: netFrom.allow[i] ?? "user" })),
        deny: net.deny.map((value, i) => ({ value, origin: netFrom.deny[i] ?? "user" })),
        removed: netFrom.removed,
        reviewUnlisted: { value: net.reviewUnlisted, origin: netFrom.reviewUnlisted },
      },
    },
  };
}
