// User and project rules: which tools, commands and paths to allow, review or deny.

import { resolve } from "node:path";
import { minimatch } from "minimatch";
import type { AllowRuleSpec } from "./config/schema.ts";

export type RuleOrigin = "user" | "project";

export interface CompiledRule {
  readonly origin: RuleOrigin;
  /** How the rule reads in messages: `deny rule {"command":"git push *"} (user config)`. */
  readonly label: string;
  readonly reason: string | undefined;
  readonly tool: RegExp | undefined;
  readonly command: RegExp | undefined;
  readonly path: ((p: string) => boolean) | undefined;
  /** An allow rule's `paths`: the protected or outside places it opens (each with what lies below). */
  readonly opens: ((p: string) => boolean) | undefined;
  /** An allow rule's `unsandboxed`: it approves running what it covers on the host, when the call asks. */
  readonly unsandboxed: boolean;
}

/** What a rule is matched against: the tool, every simple command (bash), every path touched. */
export interface RuleSubject {
  readonly tool: string;
  readonly commands: readonly string[];
  readonly paths: readonly string[];
  /**
   * Every path the call can touch is among `paths`: no word only known at run time, no glob, no
   * change of directory that would make a relative path land elsewhere. Only then can `paths` of a
   * rule vouch for where the call writes or reads.
   */
  readonly exact?: boolean;
}

function wildcard(pattern: string, star: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) =>
      part
        .split("?")
        .map((s) => s.replace(/[.+^${}()|[\]\\]/g, "\\$&"))
        .join("."),
    )
    .join(star);
  return new RegExp(`^${body}$`, "s");
}

/** Review and deny rules have neither `paths` nor `unsandboxed` (the schema says so); allow rules may. */
export function compileRule(spec: AllowRuleSpec, origin: RuleOrigin, home: string, base: string): CompiledRule {
  if (!spec.tool && !spec.command && !spec.path) throw new Error(`a rule needs "tool", "command" or "path": ${JSON.stringify(spec)}`);
  const place = (p: string) => resolve(base, p === "~" ? home : p.startsWith("~/") ? home + p.slice(1) : p);
  const expanded = spec.path ? place(spec.path) : undefined;
  const opened = spec.paths?.map(place);
  return {
    origin,
    label: `${JSON.stringify(spec)} (${origin} config)`,
    reason: spec.reason,
    tool: spec.tool ? wildcard(spec.tool, ".*") : spec.command ? /^bash$/ : undefined,
    command: spec.command ? wildcard(spec.command.trim().replace(/\s+/g, " "), ".*") : undefined,
    path: expanded ? (p: string) => minimatch(p, expanded, { dot: true }) : undefined,
    opens: opened ? (p: string) => opened.some((g) => minimatch(p, g, { dot: true }) || minimatch(p, `${g}/**`, { dot: true })) : undefined,
    unsandboxed: spec.unsandboxed === true,
  };
}

/**
 * How a path rule meets the subject's paths. Deny and review rules match when `some` path does;
 * an allow rule must cover `every` path (the lexical and the real one of a file tool, each path a
 * script names), or a symlink or one extra argument would ride along on a matching path.
 */
export type PathQuantifier = "some" | "every";

export function ruleMatches(rule: CompiledRule, subject: RuleSubject, paths: PathQuantifier = "some"): boolean {
  if (rule.tool && !rule.tool.test(subject.tool)) return false;
  if (rule.command && !subject.commands.some((c) => rule.command!.test(c))) return false;
  if (rule.path) {
    const matches = paths === "every" ? subject.paths.length > 0 && subject.paths.every(rule.path) : subject.paths.some(rule.path);
    if (!matches) return false;
  }
  return true;
}

export function firstMatch(rules: readonly CompiledRule[], subject: RuleSubject, paths: PathQuantifier = "some"): CompiledRule | undefined {
  return rules.find((r) => ruleMatches(r, subject, paths));
}
