// The running state of one script's analysis, and the budget that bounds the work it may spend.

import { PathFacts } from "../../request/paths.ts";
import type { Places } from "../places.ts";
import type { ShellEnv } from "./env.ts";
import type { Finding } from "./finding.ts";
import type { Arg, SimpleCommand } from "./parse.ts";

/** Facts gathered while walking one script, in source order. */
export interface ScriptState {
  /** Where relative paths may resolve: every directory a `cd` may have moved to; null = unknown. */
  cwds: Array<string | null>;
  /** Files and directories this script downloads or unpacks downloads into (real paths); running one runs remote code. */
  readonly downloads: Set<string>;
  secretSource: string | undefined;
  network: string | undefined;
  /** Names of functions the script defines; calling one is not an unknown command. */
  readonly functions: Set<string>;
  /** Links the script creates (`ln -s TARGET LINK`): absolute link path -> absolute target. */
  readonly links: Map<string, string>;
  /** Every static word of the script and its nested scripts, for what a run-time path may be built from. */
  readonly words: Arg[];
  /** Files the script writes that a build runs as code (package.json, a Makefile, a shell script), as written. */
  readonly codeWrites: string[];
  /** The first command of the script that runs a build (its class was `build`). */
  buildRun: string | undefined;
  /** Memo of `namesSecret`: the number of words checked and the answer. */
  secretWord: { checked: number; found: string | undefined };
  /** Standard input of a pipeline stage, when an earlier stage prints only constants (`echo 'ls' | sh`). */
  readonly pipedText: Map<SimpleCommand, string>;
  /** Symlink resolutions already done for this decision: the file system is taken as still for its duration. */
  readonly resolved: Map<string, { real: string; exists: boolean } | null>;
  /** lstat, real forms and listings read for this decision, shared by all its paths and nested scripts. */
  readonly facts: PathFacts;
  /** What the analysis of this decision may still spend (shared with nested scripts). */
  readonly budget: Budget;
  /**
   * Where the paths the analysis judged lie, by what the command does with them (shared with nested
   * scripts): only when asked for (judgedShellPaths, the audit's surface class, off the decision path).
   */
  readonly judged: Map<string, JudgedRole> | undefined;
}

/**
 * What a command does with a path the analysis judged: reads it (or lists it), writes, creates or
 * removes it (a redirection's target too), runs it as a program, or makes it the working directory.
 */
export type JudgedRole = "read" | "write" | "run" | "cd";

/**
 * The bound on the work one decision spends on a shell command, in steps of about a microsecond
 * on a developer machine: a simple command and its words, a path looked up from one candidate cwd,
 * a file system call (a few steps), a write judged, a few bytes of a nested script to parse. A
 * command that needs more is not judged further: it goes to review, saying it is too complex to
 * judge quickly (about 4 ms of analysis, after at most 64 KB were parsed). The count decides, so
 * the same command is judged the same way on a busy machine. The wall-clock deadline (from the
 * start of the analysis, parsing included) only backs the count up, for a shape the count would
 * underrate; it is checked once a thousand steps were spent, so no ordinary command (a few dozen
 * steps) can be cut short by a scheduler pause.
 */
export const ANALYSIS_STEPS = 4000;
export const ANALYSIS_DEADLINE_MS = 20;
const DEADLINE_AFTER_STEPS = 1000;
/** Directories a `cd` may have left the script in, at most; and the longest path a cwd may be. */
export const MAX_CWDS = 32;
const MAX_CWD_LENGTH = 4096;

export interface Budget {
  /** Steps left; below zero the analysis stops. */
  left: number;
  readonly total: number;
  readonly deadlineMs: number;
  /** performance.now() past which the analysis stops. */
  readonly deadline: number;
  /** The strictest finding reached so far, kept when the analysis stops early. */
  worst: Finding | undefined;
}

export interface BudgetOptions {
  readonly steps?: number;
  readonly deadlineMs?: number;
}

export function newBudget(opts: BudgetOptions = {}): Budget {
  const total = opts.steps ?? ANALYSIS_STEPS;
  const deadlineMs = opts.deadlineMs ?? ANALYSIS_DEADLINE_MS;
  return { left: total, total, deadlineMs, deadline: performance.now() + deadlineMs, worst: undefined };
}

/** Thrown when the budget is spent: the command is judged as too complex to judge quickly. */
export class TooComplex extends Error {}

/** Spend `steps` of the decision's budget on `what`; throws TooComplex past the bound. */
export function spend(state: ScriptState, steps: number, what: string): void {
  const b = state.budget;
  b.left -= steps;
  if (b.left < 0) throw new TooComplex(`${what} takes more than the ${b.total} steps the gate spends on one command`);
  if (b.total - b.left >= DEADLINE_AFTER_STEPS && performance.now() > b.deadline)
    throw new TooComplex(`${what} takes more than the ${b.deadlineMs} ms the gate spends on one command`);
}

/** Where a `cd` may have left the script: too many possibilities, or an absurdly deep one, are not followed. */
export function setCwds(state: ScriptState, cwds: Array<string | null>): void {
  if (cwds.length > MAX_CWDS) throw new TooComplex(`the command changes directory in more than ${MAX_CWDS} possible ways`);
  for (const c of cwds) if (c !== null && c.length > MAX_CWD_LENGTH) throw new TooComplex(`the command changes into a directory deeper than the gate follows`);
  spend(state, cwds.length, "following cd");
  state.cwds = cwds;
}

/** The places' real forms a decision may start from: the workspace and the home directory. */
function knownDirectories(env: ShellEnv): ReadonlyMap<string, string> {
  let known = knownCache.get(env.places);
  if (!known) {
    const p = env.places;
    known = new Map([
      [p.workspaceLexical, p.workspace],
      [p.workspace, p.workspace],
      [p.tmpRoot, p.tmpRoot],
      [p.home, p.homeReal],
      [p.homeReal, p.homeReal],
    ]);
    knownCache.set(env.places, known);
  }
  return known;
}
const knownCache = new WeakMap<Places, ReadonlyMap<string, string>>();

export function newScriptState(env: ShellEnv, budget: Budget = newBudget(), functions: Iterable<string> = [], judged?: Map<string, JudgedRole>): ScriptState {
  return {
    cwds: [env.cwd],
    downloads: new Set(),
    secretSource: undefined,
    network: undefined,
    functions: new Set(functions),
    links: new Map(),
    pipedText: new Map(),
    resolved: new Map(),
    words: [],
    codeWrites: [],
    buildRun: undefined,
    secretWord: { checked: 0, found: undefined },
    facts: new PathFacts(knownDirectories(env), env.trusted, env.fresh),
    budget,
    judged,
  };
}

/** Steps one file system look-up costs (PathFacts.lookups: answered by a call or by what a directory was seen to hold); judging one place a write or removal may land. */
export const FS_STEPS = 3;
export const WRITE_STEPS = 2;
