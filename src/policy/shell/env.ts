// What the shell analysis knows about the machine, and the running state of one script.

import { readdirSync, readFileSync, type Stats } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { PathFacts, type FreshDir } from "../../request/paths.ts";
import {
  classifyWrite,
  containsIdentitySecret,
  holdsAny,
  isHarmlessDevice,
  isIdentitySecret,
  isWithin,
  memo,
  protectedComponent,
  type Places,
  type StatSource,
} from "../places.ts";
import pathData from "../data/paths.json" with { type: "json" };
import commandData from "../data/commands.json" with { type: "json" };
import { finding, strictest, type Finding } from "./finding.ts";
import { settled, stampOf, unchanged, type Dependency, type StampBook } from "../../request/stamps.ts";
import type { Arg, Redir, SimpleCommand } from "./parse.ts";

export interface ShellEnv {
  readonly places: Places;
  /** The session's working directory, where every bash call starts. */
  readonly cwd: string;
  readonly home: string;
  /** The repository's hooks are in a place the agent may write (core.hooksPath to an unprotected dir). */
  readonly gitHooksWritable: boolean;
  /** The repository has hooks that will run (an executable, non-sample file in its hooks dir). */
  readonly gitHooksActive: boolean;
  /** The checked-out branch of the workspace repository, when `.git/HEAD` names one. */
  readonly currentBranch: string | undefined;
  /**
   * Directories this call's preparation found unchanged (the workspace, the home directory, the
   * temporary root), with their real forms: the analysis takes them as they are.
   */
  readonly trusted?: ReadonlyMap<string, string>;
  /** This call's lstat of real directories (the trusted ones), which vouch for what they hold (PathFacts). */
  readonly fresh?: ReadonlyMap<string, FreshDir>;
}

/**
 * Variables the agent's shell inherits whose value the gate knows. Pi finds its agent dir (and
 * with it auto mode's own files) through PI_CODING_AGENT_DIR; when it is unset the variable is
 * empty, and reading it as the agent dir is the stricter of the two.
 */
export function knownEnvironment(env: ShellEnv): ReadonlyMap<string, string> {
  let known = environmentCache.get(env.places);
  if (!known) environmentCache.set(env.places, (known = new Map([["PI_CODING_AGENT_DIR", env.places.agentDir]])));
  return known;
}
const environmentCache = new WeakMap<Places, ReadonlyMap<string, string>>();

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
}

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

export function newScriptState(env: ShellEnv, budget: Budget = newBudget(), functions: Iterable<string> = []): ScriptState {
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
  };
}

export interface Located {
  readonly lexical: string;
  readonly real: string;
  readonly exists: boolean;
}

const DOT_DOT = /(^|\/)\.\.(\/|$)/;

/** Every place a static path argument may name; null when the cwd is unknown and the path is relative. */
export function locate(state: ScriptState, value: string): Located[] | null {
  // `/proc/self/cwd` and `/proc/self/root` are links the kernel resolves for the process that
  // opens them: the command's own cwd and root, not the gate's. Another process's (`/proc/<pid>/cwd`,
  // `/proc/self/task/<tid>/cwd`) is unknown here.
  if (value.startsWith("/") && /^\/+proc\/+[^/]/.test(value)) {
    // Not path.normalize: a `..` after /proc/self/cwd climbs out of the cwd, not back to /proc/self.
    const v = value.replace(/\/+/g, "/").replace(/\/\.(?=\/|$)/g, "");
    const own = /^\/proc\/(?:self|thread-self)\/(cwd|root)(\/.*)?$/.exec(v);
    if (own) return locate(state, own[1] === "root" ? (own[2] ?? "/") : `.${own[2] ?? ""}`);
    if (/^\/proc\/[^/]+\/(?:task\/[^/]+\/)?(?:cwd|root)(\/|$)/.test(v) || /^\/proc(\/[^/]+)*\/\.\.(\/|$)/.test(v)) return null;
  }
  const out: Located[] = [];
  const facts = state.facts;
  for (const cwd of isAbsolute(value) ? ["/"] : state.cwds) {
    if (cwd === null) return null;
    const asked = facts.lookups;
    const lexical = resolve(cwd, value);
    const target = throughLinks(state, lexical);
    // A `..` may climb out of a symlink's target: only the kernel's own walk says where it lands.
    const physical = target === lexical && DOT_DOT.test(value);
    const key = physical ? `${cwd}\0${value}` : target;
    let r = state.resolved.get(key);
    if (r === undefined) {
      try {
        r = physical ? facts.physical(cwd, value) : facts.real(target);
      } catch {
        r = null;
      }
      state.resolved.set(key, r);
    }
    spend(state, 1 + FS_STEPS * (facts.lookups - asked), "looking paths up");
    if (r === null) return null;
    out.push({ lexical, real: r.real, exists: r.exists });
  }
  return out;
}

/** Steps one file system look-up costs (PathFacts.lookups: answered by a call or by what a directory was seen to hold); judging one place a write or removal may land. */
export const FS_STEPS = 3;
export const WRITE_STEPS = 2;

const WRITE_OPS = new Set([">", ">>", ">|", "&>", "&>>", "<>"]);

/** Whether a redirection writes a file (`>&` only with a file name: `>&2`, `>&-` move descriptors). */
export function redirectWrites(r: Redir): boolean {
  if (r.heredoc || !r.target) return false;
  return WRITE_OPS.has(r.op) || (r.op === ">&" && r.target.value !== null && !/^\d+-?$|^-$/.test(r.target.value));
}

/** Marks what a static path may name as downloaded: running anything at or below it runs remote code. */
export function markDownloaded(state: ScriptState, value: string | null): void {
  if (value === null) return;
  for (const p of locate(state, value) ?? []) state.downloads.add(p.real);
}

/** Whether a static path is, or lies below, something this script downloaded. */
export function isDownloaded(state: ScriptState, value: string | null): boolean {
  if (value === null || state.downloads.size === 0) return false;
  spend(state, state.downloads.size >> 3, "checking downloads");
  return (locate(state, value) ?? []).some((p) => [...state.downloads].some((d) => isWithin(d, p.real)));
}

/** A path below a link this script created resolves through the link, although the link does not exist yet. */
function throughLinks(state: ScriptState, p: string): string {
  if (state.links.size === 0) return p;
  spend(state, state.links.size >> 2, "following the links the command creates");
  for (let hops = 0; hops < 8; hops++) {
    let next: string | undefined;
    for (const [link, target] of state.links) {
      if (p === link) next = target;
      else if (p.startsWith(link + "/")) next = target + p.slice(link.length);
      if (next !== undefined) break;
    }
    if (next === undefined) return p;
    p = next;
  }
  return p;
}

const SECRET_FILE_PATTERNS = pathData.secretFilePatterns.map((p) => new RegExp(p, "i"));
/** Text that names auto mode's own files or the settings that load it (commands.json shared.inlineCodeSelfDisabling). */
const SELF_NAMES = commandData.shared.inlineCodeSelfDisabling.names.map((p) => new RegExp(p));

/** A file whose contents are credentials even inside the workspace (.env, keys). */
export function isSecretishFile(p: string): boolean {
  return secretishName(basename(p));
}
const secretishName = memo((name: string) => SECRET_FILE_PATTERNS.some((r) => r.test(name)));

/** The pattern as an anchored regular expression (no flags, so one object serves every caller). */
export const globToRegExp = memo(globRegExp, 1024);

function globRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const close = glob.indexOf("]", i + 1);
      if (close < 0) re += "\\[";
      else {
        re += `[${glob
          .slice(i + 1, close)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\")}]`;
        i = close;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** Existing entries a glob argument would expand to (one directory level), or null if unknowable. */
export function expandGlob(state: ScriptState, pattern: string): Located[] | null {
  const dir = dirname(pattern);
  if (/[*?[]/.test(dir)) return null;
  const bases = locate(state, dir);
  if (!bases) return null;
  const re = globToRegExp(basename(pattern));
  const out: Located[] = [];
  for (const base of bases) {
    const asked = state.facts.lookups;
    const names = state.facts.list(base.real) ?? [];
    spend(state, FS_STEPS * (state.facts.lookups - asked) + (names.length >> 2), "expanding globs");
    for (const name of names) {
      // Like bash without dotglob: a leading "." must be matched explicitly.
      if (name.startsWith(".") && !basename(pattern).startsWith(".")) continue;
      if (!re.test(name)) continue;
      // A listed name holds no "/": joining is concatenation.
      const lexical = base.lexical === "/" ? `/${name}` : `${base.lexical}/${name}`;
      const real = base.real === "/" ? `/${name}` : `${base.real}/${name}`;
      out.push({ lexical, real, exists: true });
    }
    out.push({ lexical: base.lexical, real: base.real, exists: base.exists });
  }
  return out;
}

/** The finding for writing (creating, changing or removing) a path argument. */
export function judgeWrite(env: ShellEnv, state: ScriptState, arg: Arg, what: string): Finding {
  if (arg.value === null) {
    // `> "$(dirname ~/.pi/agent/x)/settings.json"`: where it lands is unknown, what it names is not.
    if (SELF_NAMES.some((r) => r.test(arg.text)))
      return finding("self-protection", `${what} ${arg.text}, a path only known at run time that names auto mode's own files or the settings that load it`);
    return finding("outside-writable-roots", `${what} a path only known at run time (${arg.text})`);
  }
  const places = arg.glob ? expandGlob(state, arg.value) : locate(state, arg.value);
  if (!places) {
    // `cd "$(dirname "$F")" && echo {} > settings.json`: from an unknown directory, the name decides.
    const name = basename(arg.value);
    if (!arg.glob && env.places.selfProtected.some((s) => basename(s) === name))
      return finding(
        "self-protection",
        `${what} ${arg.value} relative to a directory only known at run time, the name of auto mode's own files or of the settings that load it`,
      );
    return finding("outside-writable-roots", `${what} ${arg.value} relative to an unknown directory`);
  }
  spend(state, WRITE_STEPS * places.length, "judging writes");
  if (places.some((p) => isBuildDefinition(basename(p.lexical)) || isBuildDefinition(basename(p.real)))) state.codeWrites.push(arg.value);
  return strictest(places.map((p) => writeFinding(env, p, arg.value!, what, state.facts))) ?? finding("read-only", `${what} nothing`);
}

const BUILD_DEFINITIONS = pathData.buildDefinitionFiles.map((p) => globToRegExp(p.toLowerCase()));
/** A file name a build or test run executes as code (paths.json buildDefinitionFiles). */
export const isBuildDefinition = memo((name: string) => {
  const lower = name.toLowerCase();
  return BUILD_DEFINITIONS.some((r) => r.test(lower));
});

export function writeFinding(env: ShellEnv, p: Located, shown: string, what: string, facts?: StatSource): Finding {
  const target = classifyWrite(env.places, p.lexical, p.real, facts);
  switch (target.kind) {
    case "self":
      return finding("self-protection", `${what} ${shown}, which holds auto mode's own configuration or state`);
    case "raw-device":
      return finding("hard-deny", `${what} the raw device ${shown}`);
    case "harmless-device":
      return finding("read-only", `${what} ${shown}`);
    case "protected":
      return finding("protected-path", `${what} ${shown}, under the protected ${target.entry}`);
    case "persistence":
      return finding("persistence", `${what} ${shown}, a location that runs code or holds configuration later`);
    case "inside":
      return finding("workspace-write", `${what} ${shown} inside the ${target.root === "tmp" ? "temporary root" : "workspace"}`);
    case "hardlinked":
      return finding("outside-writable-roots", `${what} ${shown}, a file with other hard links that may lie outside the workspace`);
    case "outside":
      return finding("outside-writable-roots", `${what} ${shown}, outside the writable roots`);
  }
}

/**
 * Auto mode's own files, or the settings that load it, at or below a path: replacing, moving or
 * removing the path takes them with it. The workspace as a whole holds the project's settings, but
 * unpacking into it or copying a tree over it is judged as workspace work (each file it makes is
 * judged where it lands, by the sandbox's effects or as a write), so a path holding the whole
 * workspace does not count what lies inside it.
 */
export function heldSelf(env: ShellEnv, p: Located): string | undefined {
  return heldSelves(env, p)[0];
}

export function heldSelves(env: ShellEnv, p: Located): string[] {
  const { workspace, workspaceLexical } = env.places;
  // Most paths hold none: the list's index says so without a comparison per entry.
  if (!holdsAny(env.places.selfProtected, p.real) && (p.lexical === p.real || !holdsAny(env.places.selfProtected, p.lexical))) return [];
  const holdsWorkspace = isWithin(p.real, workspace) || isWithin(p.lexical, workspaceLexical);
  return env.places.selfProtected.filter((s) => (isWithin(p.real, s) || isWithin(p.lexical, s)) && !(holdsWorkspace && isWithin(workspace, s)));
}

/** The finding for reading a path argument: identity secrets need review. */
export function judgeRead(env: ShellEnv, state: ScriptState, arg: Arg, recursive: boolean, markSecretish = true): Finding | undefined {
  // `/proc/$$/environ`, `/proc/self/task/*/environ`: some process's environment, whichever it is.
  if (arg.value === null ? /\/proc\/\S*\/environ\b/.test(arg.text) : arg.glob && /^\/proc\/.*\/environ$/.test(arg.value))
    return finding("identity-secret", `reads ${arg.text}, a process environment that holds credentials`);
  if (arg.value === null) {
    // A run-time path is built from the script's own words: if one names a secret, so may the path.
    const named = namesSecret(env, state);
    return named === undefined ? undefined : finding("identity-secret", `reads a path only known at run time (${arg.text}) in a command that names ${named}`);
  }
  if (arg.value === "" || arg.value === "-") return undefined;
  // `< /dev/null`, `cat /dev/stdin`: as for writes, a device named as such is no file to look up
  // (and /dev/stdin or /dev/fd/N would resolve through the gate's own descriptors, not the command's).
  if (!arg.glob && isHarmlessDevice(arg.value)) return undefined;
  if (arg.glob && globMayNameSecret(env, state, arg.value, recursive))
    return finding("identity-secret", `reads ${arg.value}, a pattern that matches identity secrets`);
  const located = locate(state, arg.value);
  if (!located) return undefined;
  for (const p of located) {
    if (isIdentitySecret(env.places, p.lexical, p.real)) return finding("identity-secret", `reads ${arg.value}, an identity secret`);
    if (recursive && containsIdentitySecret(env.places, p.lexical, p.real))
      return finding("identity-secret", `reads everything under ${arg.value}, which holds identity secrets`);
    if (markSecretish && isSecretishFile(p.real)) state.secretSource ??= arg.value;
  }
  return undefined;
}

/** The first word of the script that names an identity secret or a directory holding one, if any. */
export function namesSecret(env: ShellEnv, state: ScriptState): string | undefined {
  const memo = state.secretWord;
  // The cwds hold during one pass, so a value met again (the same path in several commands) has its answer.
  const checked = new Set<string>();
  for (; memo.checked < state.words.length && memo.found === undefined; memo.checked++) {
    const w = state.words[memo.checked]!;
    if (w.value === null) continue;
    // `env HOME=/x cmd`, `make KEY=~/.ssh/k`: an assignment given as an argument names its value as
    // a prefix assignment does (the parser lists a prefix assignment's value as a word of its own).
    const assigned = w.value.includes("=") ? ASSIGNMENT.exec(w.value) : null;
    for (const v of assigned ? [w.value, assigned[1]!] : [w.value]) {
      // Only words that look like paths: a bare word is a path only after a `cd`, which is read statically.
      if (v === "" || !(v.includes("/") || v.startsWith("."))) continue;
      const key = w.glob ? `\0${v}` : v;
      if (checked.has(key)) continue;
      checked.add(key);
      if (w.glob ? globMayNameSecret(env, state, v, true) : holdsSecret(env, state, v)) {
        memo.found = v;
        break;
      }
    }
  }
  return memo.found;
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=(.*)$/s;

/** A URL: a path only as a relative name no one gives a file. */
export const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Code and text (quotes, brackets, separators): no listed secret's name has these, and a link so
 * named to a secret was a read of the secret when it was made, so such a word is not looked up.
 * Its text may still lie under a secret (`$HOME/.ssh/id_rsa (copy)`): see secretByText.
 */
export const TEXT_LIKE = /[()[\]{};|<>'"`\n]/;

/**
 * Whether a static path is, lies under or holds an identity secret by its text alone, resolved
 * from each possible cwd without a look-up (undefined when a cwd is unknown).
 */
export function secretByText(env: ShellEnv, state: ScriptState, value: string, holds: boolean): boolean | undefined {
  const { places } = env;
  for (const cwd of isAbsolute(value) ? ["/"] : state.cwds) {
    if (cwd === null) return undefined;
    const lexical = resolve(cwd, value);
    if (isIdentitySecret(places, lexical, lexical) || (holds && containsIdentitySecret(places, lexical, lexical))) return true;
  }
  return false;
}

function holdsSecret(env: ShellEnv, state: ScriptState, value: string): boolean {
  if (URL_LIKE.test(value)) return false;
  if (TEXT_LIKE.test(value)) return secretByText(env, state, value, true) === true;
  return (locate(state, value) ?? []).some((p) => isIdentitySecret(env.places, p.lexical, p.real) || containsIdentitySecret(env.places, p.lexical, p.real));
}

/**
 * Whether a glob may match an identity secret, compared component by component with every listed
 * secret (the glob's directory part may be a pattern too: `~/.s?h/id_*`). A shorter pattern
 * names a directory above a secret, which only a recursive reader reaches.
 */
export function globMayNameSecret(env: ShellEnv, state: ScriptState, pattern: string, recursive: boolean): boolean {
  const secrets = secretParts(env.places.identitySecrets);
  for (const cwd of isAbsolute(pattern) ? ["/"] : state.cwds) {
    if (cwd === null) return false;
    spend(state, 2, "matching globs with identity secrets");
    const parts = resolve(cwd, pattern).split("/").filter(Boolean).map(globToRegExp);
    for (const s of secrets) {
      const n = Math.min(parts.length, s.length);
      let match = true;
      for (let i = 0; i < n && match; i++) match = parts[i]!.test(s[i]!);
      if (match && (parts.length >= s.length || recursive)) return true;
    }
  }
  return false;
}

const secretPartsCache = new WeakMap<readonly string[], readonly (readonly string[])[]>();
function secretParts(list: readonly string[]): readonly (readonly string[])[] {
  let parts = secretPartsCache.get(list);
  if (!parts) secretPartsCache.set(list, (parts = list.map((secret) => secret.split("/").filter(Boolean))));
  return parts;
}

/** True when every candidate location of a static path lies inside the workspace. */
export function insideWorkspace(env: ShellEnv, located: readonly Located[]): boolean {
  return located.every((p) => isWithin(env.places.workspace, p.real));
}

export function isProtectedInWorkspace(env: ShellEnv, p: Located): boolean {
  return isWithin(env.places.workspace, p.real) && protectedComponent(p.real.slice(env.places.workspace.length + 1)) !== undefined;
}

/**
 * The files a repository fact was read from, each stamped before it was read, so a cache of the
 * fact can tell when any of them changed (see stamps.ts).
 */
class Reads {
  readonly deps: Dependency[] = [];
  readonly now = Date.now();
  settled = true;

  private note(path: string): Stats | undefined {
    // A missing file (no ~/.gitconfig) is checked later through the directory that would hold it.
    const { dep, st } = stampOf(path, true, false, undefined, this.now);
    this.deps.push(dep);
    if (!settled(st, this.now)) this.settled = false;
    return st;
  }

  stat(path: string): Stats | undefined {
    return this.note(path);
  }

  text(path: string): string | undefined {
    if (!this.note(path)) return undefined;
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  }

  names(dir: string): string[] | undefined {
    if (!this.note(dir)) return undefined;
    try {
      return readdirSync(dir);
    } catch {
      return undefined;
    }
  }
}

/** Any executable, non-sample file in a hooks directory: git will run it. */
function hasActiveHooks(dir: string, reads: Reads): boolean {
  const names = reads.names(dir);
  if (!names) return false;
  // Every candidate is stamped (not only up to the first hit): a chmod changes a file, not its directory.
  let active = false;
  for (const name of names) {
    if (name.endsWith(".sample")) continue;
    const st = reads.stat(join(dir, name));
    if (st?.isFile() && (st.mode & 0o111) !== 0) active = true;
  }
  return active;
}

export interface RepositoryFacts {
  readonly gitHooksWritable: boolean;
  readonly gitHooksActive: boolean;
  readonly currentBranch: string | undefined;
}

/** Read `core.hooksPath`, the hooks and the current branch from the workspace repository (cheap file reads). */
export function inspectRepository(places: Places, reads: Reads = new Reads()): RepositoryFacts {
  const { workspace, home } = places;
  const gitDir = join(workspace, ".git");
  const head = reads.text(join(gitDir, "HEAD"));
  const currentBranch = head === undefined ? undefined : /^ref: refs\/heads\/(.+)$/m.exec(head)?.[1]?.trim();
  const configs = [join(gitDir, "config"), join(home, ".gitconfig"), join(home, ".config", "git", "config")];
  let hooksPath: string | undefined;
  for (const file of configs) {
    // An unreadable config: git would not use it either.
    const text = reads.text(file);
    const m = text === undefined ? null : /^\s*hookspath\s*=\s*(.+?)\s*$/im.exec(text);
    if (m?.[1]) {
      hooksPath = m[1].replace(/^"|"$/g, "");
      break;
    }
  }
  // A worktree or submodule keeps its hooks in the shared git dir (the last one places found).
  const defaultHooks = join(places.gitDirs.at(-1) ?? gitDir, "hooks");
  if (!hooksPath) return { gitHooksWritable: false, gitHooksActive: hasActiveHooks(defaultHooks, reads), currentBranch };
  const abs = hooksPath.startsWith("~/") ? join(home, hooksPath.slice(2)) : resolve(workspace, hooksPath);
  // Hooks the agent may write without review would run outside the sandbox on the next commit.
  const writable = [workspace, places.tmpRoot].some((root) => isWithin(root, abs) && protectedComponent(abs.slice(root.length + 1)) === undefined);
  return { gitHooksWritable: writable, gitHooksActive: hasActiveHooks(abs, reads), currentBranch };
}

const repositoryCache = new WeakMap<Places, { readonly facts: RepositoryFacts; readonly deps: readonly Dependency[]; readonly settled: boolean }>();

/**
 * inspectRepository, read again only when one of the files it read (HEAD, the git configs, the
 * hooks directory and each candidate hook) changed, or when they had changed too recently for
 * their stamps to tell a second change apart.
 */
export function repositoryFacts(places: Places, book?: StampBook): RepositoryFacts {
  const hit = repositoryCache.get(places);
  if (hit?.settled && unchanged(hit.deps, book)) return hit.facts;
  const reads = new Reads();
  const facts = inspectRepository(places, reads);
  repositoryCache.set(places, { facts, deps: reads.deps, settled: reads.settled });
  return facts;
}
