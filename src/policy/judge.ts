// What a request does, before any backend or rule is considered: its effect class, the reason,
// and what user rules are matched against. Touches the file system only to resolve paths.

import { isAbsolute, resolve } from "node:path";
import { minimatch } from "minimatch";
import type { CanonicalRequest } from "../request/canonical.ts";
import { builtinTool, CONTAINER_TOOLS, inputProblem, TOOLS, UNCONTAINED_SHELLS } from "../request/tools.ts";
import { classifyWrite, containsIdentitySecret, isIdentitySecret, type Places } from "./places.ts";
import type { RuleSubject } from "./rules.ts";
import { analyzeShell, judgedShellPaths } from "./shell/analyze.ts";
import { knownEnvironment, type ShellEnv } from "./shell/env.ts";
import { extractCommands, type Extraction } from "./shell/parse.ts";
import type { JudgedRole } from "./shell/script-state.ts";
import type { CommandClass, ReasonCode } from "./types.ts";

/** Which routing table applies: bash can be sandboxed, file tools cannot. */
/** Which routing table applies: bash can be sandboxed, file tools cannot, PowerShell runs only on the host. */
export type ToolKind = "bash" | "file" | "uncontained-shell" | "other";

export interface Judgement {
  readonly kind: ToolKind;
  readonly cls: CommandClass;
  readonly reason: ReasonCode;
  readonly detail: string;
  readonly subject: RuleSubject;
  /**
   * A shell command's parts of other classes (one per class): the routing tables do not order every
   * pair of classes alike (review-only allows a git write and reviews a network call; the unstaged
   * sandbox the other way round), so the route is the strictest over all of them.
   */
  readonly parts?: readonly { readonly cls: CommandClass; readonly reason: ReasonCode; readonly detail: string }[];
  /**
   * A shell command's first finding of each reason, when rules are configured: an allow rule
   * spares some reasons and not others (route.ts), whichever class they share.
   */
  readonly found?: readonly { readonly cls: CommandClass; readonly reason: ReasonCode; readonly detail: string }[];
}

function malformed(kind: ToolKind, tool: string, what: string): Judgement {
  return { kind, cls: "review", reason: "malformed-input", detail: `malformed ${tool} call: ${what}`, subject: { tool, commands: [], paths: [] } };
}

export interface JudgeContext {
  readonly places: Places;
  readonly shell: ShellEnv;
  /** Whether any user or project rule exists: only then is a bash call's rule subject worth building. */
  readonly rulesConfigured?: boolean;
  /** Extra protected globs from the configuration (absolute). */
  readonly protectedGlobs: readonly string[];
}

function userProtected(ctx: JudgeContext, p: string): boolean {
  return ctx.protectedGlobs.some((g) => minimatch(p, g, { dot: true }) || minimatch(p, `${g}/**`, { dot: true }));
}

export function judge(req: CanonicalRequest, ctx: JudgeContext): Judgement {
  const tool = req.tool;
  const builtin = builtinTool(tool);
  if (builtin) {
    const entry = TOOLS[builtin];
    const kind: ToolKind = entry.action === "shell" ? "bash" : "file";
    // Input shape checks mirror Pi's tool schemas; anything else is judged as malformed.
    const problem = inputProblem(builtin, req.input);
    if (problem) return malformed(kind, tool, problem);
    switch (entry.action) {
      case "shell":
        return judgeBash((req.input as { command: string }).command, ctx);
      case "read":
      case "write": {
        const p = req.paths[0];
        if (!p) return malformed("file", tool, "the path cannot be resolved");
        const subject: RuleSubject = { tool, commands: [], paths: [p.lexical, p.real], exact: true };
        if (entry.action === "write") return judgeFileWrite(tool, p.raw, p.lexical, p.real, ctx, subject);
        const secret = isIdentitySecret(ctx.places, p.lexical, p.real) || (tool === "grep" && containsIdentitySecret(ctx.places, p.lexical, p.real));
        return secret
          ? { kind: "file", cls: "review", reason: "identity-secret", detail: `${tool} reads ${p.raw}, an identity secret outside the project`, subject }
          : { kind: "file", cls: "read", reason: "read-only", detail: `${tool} only reads ${p.raw}`, subject };
      }
    }
  }
  if (UNCONTAINED_SHELLS.has(tool))
    return {
      kind: "uncontained-shell",
      cls: "review",
      reason: "uncontained-shell",
      detail: `${tool} runs commands the gate cannot read, on the host, outside the OS sandbox`,
      subject: { tool, commands: [], paths: [] },
    };
  if (CONTAINER_TOOLS.has(tool))
    return {
      kind: "other",
      cls: "read",
      reason: "gated-container",
      detail: `${tool} only runs other tool calls, and each passes the gate on its own`,
      subject: { tool, commands: [], paths: [] },
    };
  const mcp = tool.startsWith("mcp__");
  return {
    kind: "other",
    cls: "review",
    reason: "unknown-tool",
    detail: `${mcp ? "MCP tool" : "tool"} ${tool} has effects the gate cannot know`,
    subject: { tool, commands: [], paths: [] },
  };
}

function judgeFileWrite(tool: string, raw: string, lexical: string, real: string, ctx: JudgeContext, subject: RuleSubject): Judgement {
  const t = classifyWrite(ctx.places, lexical, real);
  const j = (cls: CommandClass, reason: ReasonCode, detail: string): Judgement => ({ kind: "file", cls, reason, detail, subject });
  switch (t.kind) {
    case "self":
      return j("deny", "self-protection", `${tool} would change auto mode's own configuration or state (${raw})`);
    case "raw-device":
      return j("deny", "hard-deny", `${tool} would overwrite the raw device ${raw}`);
    case "harmless-device":
      return j("workspace-write", "workspace-write", `${tool} writes to ${raw}`);
    case "protected":
      return j("review", "protected-path", `${tool} changes ${raw}, under the protected ${t.entry}`);
    case "persistence":
      return j("review", "persistence", `${tool} changes ${raw}, which configures or runs code later`);
    case "hardlinked":
      return j("review", "outside-writable-roots", `${tool} changes ${raw}, a file with other hard links that may lie outside the workspace`);
    case "outside":
      return j("review", "outside-writable-roots", `${tool} changes ${raw}, outside the workspace and the temporary root`);
    case "inside":
      if (userProtected(ctx, lexical) || userProtected(ctx, real))
        return j("review", "protected-path", `${tool} changes ${raw}, a path the configuration protects`);
      return j("workspace-write", "workspace-write", `${tool} changes ${raw} inside the ${t.root === "tmp" ? "temporary root" : "workspace"}`);
  }
}

function judgeBash(command: string, ctx: JudgeContext): Judgement {
  const { strictest, findings, extraction } = analyzeShell(command, ctx.shell, ctx.shell.budget);
  // Without rules nothing reads the subject. The analysis hands over its reading of the command.
  const subject = ctx.rulesConfigured === false ? { tool: "bash", commands: [], paths: [] } : bashSubject(command, ctx, extraction);
  const parts = otherClasses(strictest.cls, findings);
  const found = ctx.rulesConfigured === false ? undefined : firstOfEachReason(findings);
  return {
    kind: "bash",
    cls: strictest.cls,
    reason: strictest.reason,
    detail: strictest.detail,
    subject,
    ...(parts.length > 0 ? { parts } : {}),
    ...(found ? { found } : {}),
  };
}

function firstOfEachReason(findings: readonly { cls: CommandClass; reason: ReasonCode; detail: string }[]): NonNullable<Judgement["found"]> {
  const seen = new Set<ReasonCode>();
  const out: { cls: CommandClass; reason: ReasonCode; detail: string }[] = [];
  for (const f of findings) {
    if (seen.has(f.reason)) continue;
    seen.add(f.reason);
    out.push({ cls: f.cls, reason: f.reason, detail: f.detail });
  }
  return out;
}

/** Commands after which a relative path names another place than the words say. */
const DIRECTORY_CHANGES = new Set(["cd", "pushd", "popd"]);

/** The first finding of each class other than the strictest finding's, in order. */
function otherClasses(cls: CommandClass, findings: readonly { cls: CommandClass; reason: ReasonCode; detail: string }[]): NonNullable<Judgement["parts"]> {
  const seen = new Set<CommandClass>([cls]);
  const out: { cls: CommandClass; reason: ReasonCode; detail: string }[] = [];
  for (const f of findings) {
    if (seen.has(f.cls)) continue;
    seen.add(f.cls);
    out.push({ cls: f.cls, reason: f.reason, detail: f.detail });
  }
  return out;
}

/**
 * The paths a shell command was judged to touch, by what it does with each (read, write, run, cd),
 * absolute: the analysis run again with them noted, for the audit's surface class at its flush
 * (off the decision path; the gate's own analysis notes none). Not the rule subject's candidates,
 * which take every word for a path (`git status`: `status`).
 */
export function judgedCommandPaths(command: string, ctx: JudgeContext): ReadonlyMap<string, JudgedRole> {
  return judgedShellPaths(command, ctx.shell, ctx.shell.budget);
}

/** The simple commands of a bash call, as rules see them: words joined by single spaces. */
function bashSubject(command: string, ctx: JudgeContext, extraction: Extraction | undefined): RuleSubject {
  // A reading the analysis cut short (too complex to judge) is done in full: deny rules see every command.
  const ex =
    extraction && !(extraction.ok && extraction.truncated)
      ? extraction
      : extractCommands(command, { home: ctx.shell.home, environment: knownEnvironment(ctx.shell) });
  if (!ex.ok) return { tool: "bash", commands: [command.trim()], paths: [], exact: false };
  const commands = ex.commands.map((c) => c.argv.map((a) => a.value ?? a.text).join(" ")).filter((c) => c.length > 0);
  // Any static word may name a path (`cat secret/x`, `--out=/etc/x`), so every one is a candidate,
  // normalized so "./" and ".." cannot dodge a glob. Deny and review rules match on any candidate
  // and allow rules need all of them (rules.ts), so guessing wide only ever tightens.
  // Command names looked up in $PATH are not paths: one such word per simple command is left out
  // (`./secret/run.sh` names a file and stays).
  const names = new Map<string, number>();
  for (const c of ex.commands) {
    const name = c.argv[0]?.value;
    if (name && !name.includes("/")) names.set(name, (names.get(name) ?? 0) + 1);
  }
  const targets = [...ex.commands.flatMap((c) => c.redirs), ...ex.compoundRedirs].flatMap((r) => (r.target ? [r.target] : []));
  const paths = new Set<string>();
  // Functions run their bodies wherever they are called from, with arguments only known then.
  // Any word, not only a command's name: `builtin cd`, `command pushd`.
  let exact = ex.functions.length === 0 && !ex.commands.some((c) => c.argv.some((a) => DIRECTORY_CHANGES.has(a.value ?? "")));
  for (const a of [...ex.words, ...targets]) {
    if (a.value === null || a.glob) exact = false;
    if (a.value === null || a.value === "") continue;
    const left = names.get(a.value) ?? 0;
    if (left > 0) {
      names.set(a.value, left - 1);
      continue;
    }
    const eq = a.value.startsWith("-") ? a.value.indexOf("=") : -1;
    const v = a.value.startsWith("-") ? (eq > 0 ? a.value.slice(eq + 1) : "") : a.value;
    if (v !== "") paths.add(isAbsolute(v) ? resolve(v) : resolve(ctx.shell.cwd, v));
  }
  return { tool: "bash", commands, paths: [...paths], exact };
}
