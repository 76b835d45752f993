// A whole bash command, judged part by part: every simple command (after peeling wrappers),
// every redirection, and what flows between them (pipes into shells, secrets into the network,
// downloads that are then run). The command takes the strictest class of its parts.

import { basename, dirname, resolve } from "node:path";
import { isHarmlessDevice } from "../places.ts";
import { knownEnvironment, type ShellEnv } from "./env.ts";
import { isDownloaded, locate, noteJudged, noteNamed } from "./locate.ts";
import { judgeRead, judgeReadOperands, secretByText, TEXT_LIKE, URL_LIKE } from "./reads.ts";
import { type BudgetOptions, type JudgedRole, MAX_CWDS, newBudget, newScriptState, type ScriptState, setCwds, spend, TooComplex } from "./script-state.ts";
import { judgeWrite, outputFindings, redirectWrites } from "./writes.ts";
import { COMBINE_RANK, finding, strictest, type Finding } from "./finding.ts";
import { CODE_HANDLERS, commandOptionFindings, foundPaths, git, judgeFoundRemoval, npx, operandHandler, xargs } from "./handlers/index.ts";
import { optionValues, staticArg, type Analyzer, type Handler, type Invocation } from "./invocation.ts";
import { isSecretName } from "../../request/secret-names.ts";
import type { HandlerName } from "./programs.ts";
import { commandSteps, extractCommands, type Arg, type Extraction, type Link, type Redir, type SimpleCommand } from "./parse.ts";
import {
  CODE_LOADING_ENV,
  CODE_OPTIONS,
  NAMES_ONLY_CONTENT_OPTIONS,
  type CommandOption,
  COMMAND_ALIASES,
  credentialEndpoint,
  DENY_PREFIXES,
  HANDLED,
  INTERPRETERS,
  reasonOf,
  NAMES_ONLY_READERS,
  NETWORK_TOOLS,
  OPERANDS,
  POLICY_FAULT,
  SECRET_PRINTERS,
  SECRET_SOURCES,
  SHELLS,
  SIMPLE,
  WRAPPERS,
} from "./table.ts";

const MAX_SCRIPT_DEPTH = 8;
const MAX_WRAPPERS = 16;
const SYSTEM_BIN = new Set(["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin", "/run/current-system/sw/bin"]);
const RECURSIVE_READERS = new Set(["rg", "ag", "ack", "pt", "ugrep"]);
const TRUNCATING_OPS = new Set([">", ">|", "&>"]);

export interface ShellAnalysis {
  /** The strictest of the findings: what the command as a whole is judged as. */
  readonly strictest: Finding;
  readonly findings: readonly Finding[];
  /** The top-level script's commands and words, for the rule subject (undefined when it did not parse). */
  readonly extraction: Extraction | undefined;
  /** Budget steps the analysis spent (see ANALYSIS_STEPS). */
  readonly steps: number;
  /** File system calls the analysis made. */
  readonly fsCalls: number;
  /**
   * File system look-ups it asked for (PathFacts.lookups), whether calls or what directories were
   * seen to hold in earlier calls answered them: what grows with the command, however warm the caches.
   */
  readonly lookups: number;
}

export function analyzeShell(src: string, env: ShellEnv, budget: BudgetOptions = {}, judged?: Map<string, JudgedRole>): ShellAnalysis {
  const state = newScriptState(env, newBudget(budget), [], judged);
  const top: { extraction?: Extraction } = {};
  let findings: Finding[];
  try {
    findings = withHookRunsContained(analyzeScript(src, env, state, 0, undefined, top));
  } catch (e) {
    if (!(e instanceof TooComplex)) throw e;
    // Whatever was already found to be catastrophic stays denied; the rest is not judged further.
    const worst = state.budget.worst;
    findings = [worst?.cls === "deny" ? worst : finding("shell-unparseable", `the command is too complex to judge quickly: ${e.message}`)];
  }
  // A build runs whatever its definition says: one this command writes (anywhere in it, a loop may
  // run the build again after the write) is code the gate cannot see.
  if (state.buildRun !== undefined && state.codeWrites.length > 0)
    findings.push(finding("inline-code", `${state.buildRun} runs ${state.codeWrites[0]}, which this command writes: code the gate cannot see`));
  // A command policy that did not load knows no program: nothing it reads can be trusted.
  if (POLICY_FAULT !== undefined) findings.unshift(policyFaultFinding(POLICY_FAULT));
  return {
    strictest: strictest(findings) ?? finding("read-only", "does nothing"),
    findings,
    extraction: top.extraction,
    steps: state.budget.total - state.budget.left,
    fsCalls: state.facts.calls,
    lookups: state.facts.lookups,
  };
}

/**
 * The paths the analysis judged as paths (what it read, wrote, removed, ran, entered with cd or
 * redirected to), absolute, each under what the command does with it: the command judged again
 * with them noted, for the audit's surface class at its flush. The gate's own analysis notes none.
 * A command cut short by the budget has the paths judged until then.
 */
export function judgedShellPaths(src: string, env: ShellEnv, budget: BudgetOptions = {}): ReadonlyMap<string, JudgedRole> {
  const judged = new Map<string, JudgedRole>();
  analyzeShell(src, env, budget, judged);
  return judged;
}

/** Steps a nested script costs before it is parsed: a step per 8 bytes. */
const parseSteps = (src: string) => 1 + (src.length >> 3);

/**
 * A reviewed hook-running git command runs outside the sandbox (the sandbox keeps .git read-only).
 * That is only sound when nothing else in the command needs the sandbox: mixed with builds or
 * network, the git part is contained with the rest (and may fail there), never run bare.
 */
function withHookRunsContained(findings: Finding[]): Finding[] {
  const needsSandbox = findings.some((f) => f.cls === "build" || f.cls === "contain");
  if (!needsSandbox) return findings;
  return findings.map((f) => (f.reason === "git-hooks" ? finding("sandboxed", `${f.detail}; with the rest of the command it runs inside the sandbox`) : f));
}

function analyzeScript(
  src: string,
  env: ShellEnv,
  state: ScriptState,
  depth: number,
  positional?: readonly Arg[],
  top?: { extraction?: Extraction },
): Finding[] {
  if (depth > MAX_SCRIPT_DEPTH) return [finding("dynamic-command", "nested shell scripts deeper than the gate reads")];
  // The top-level script is bounded by the size cap; each nested one is paid for, as it may repeat.
  if (depth > 0) spend(state, parseSteps(src), "reading nested scripts");
  const ex = extractCommands(src, {
    home: env.home,
    environment: knownEnvironment(env),
    positional,
    limit: Math.max(0, state.budget.left),
    deadline: state.budget.deadline,
  });
  if (top) top.extraction = ex;
  if (!ex.ok) {
    const unreadable = finding("shell-unparseable", `the command cannot be read statically: ${ex.reason}`);
    // bash has run the complete lines before the one it cannot read: a denial among them stands.
    return ex.ranBefore === undefined ? [unreadable] : [unreadable, ...analyzeScript(ex.ranBefore, env, state, depth, positional)];
  }
  // A reading of a body that something read later broke was done again with less known (parse.ts):
  // what the earlier readings found, bash may do in the first pass or call, so it stands too. Each
  // is judged on its own copy of the state (its cd, links and downloads are its own), sharing the budget.
  const earlier = (ex.earlier ?? []).flatMap((e) => judgeExtraction(e, env, forkState(state), depth));
  return [...earlier, ...judgeExtraction(ex, env, state, depth)];
}

/** A copy of the state for judging another reading of the same script: caches and the budget are shared. */
function forkState(state: ScriptState): ScriptState {
  return {
    ...state,
    cwds: [...state.cwds],
    downloads: new Set(state.downloads),
    functions: new Set(state.functions),
    links: new Map(state.links),
    words: [...state.words],
    codeWrites: [...state.codeWrites],
    secretWord: { ...state.secretWord },
  };
}

/** The findings of one reading of a script. */
function judgeExtraction(ex: Extract<Extraction, { ok: true }>, env: ShellEnv, state: ScriptState, depth: number): Finding[] {
  const out: Finding[] = [];
  for (const f of ex.functions) state.functions.add(f.name);
  for (const w of ex.words) state.words.push(w);
  // The instance metadata service hands any local process the machine's cloud credentials.
  for (const w of ex.words) {
    const host = w.value === null ? undefined : credentialEndpoint(w.value);
    if (host === undefined) continue;
    out.push(finding("identity-secret", `names ${host}, the cloud metadata endpoint that hands out this machine's credentials`));
    break;
  }
  // A variable named like a credential is a secret, wherever the script expands it.
  const secretVar = ex.expansions.find((n) => isSecretName(n));
  if (secretVar !== undefined) state.secretSource ??= `$${secretVar}`;

  // A function that calls itself through a pipe or in the background multiplies without bound.
  const bombs = new Set<string>();
  for (const c of ex.commands)
    if (c.inFunction !== undefined && c.argv[0]?.value === c.inFunction && (c.background || c.pipeline >= 0)) bombs.add(c.inFunction);
  for (const fn of ex.functions) if (bombs.has(fn.name)) out.push(finding("hard-deny", `fork bomb: function ${fn.name} spawns copies of itself`));

  // An endless loop that starts background jobs and never waits for them multiplies without bound too.
  const waited = new Set<number | undefined>();
  for (const w of ex.commands) if (w.argv[0]?.value === "wait") waited.add(w.endlessLoop);
  const spawning = ex.commands.find((c) => c.spawnedInLoop && !waited.has(c.endlessLoop));
  if (spawning) out.push(finding("hard-deny", "fork bomb: an endless loop starts background jobs without waiting for them"));
  keepWorst(state, out);

  const an: Analyzer = {
    env,
    state,
    depth,
    script: (inner, what, positional) => {
      const nested = analyzeScript(inner, env, state, depth + 1, positional);
      return nested.length > 0 ? nested : [finding("read-only", `${what} does nothing`)];
    },
    argv: (args, source, piped) => argvFindings(args, source, piped, an, undefined),
  };

  // The stage before each pipeline stage, found once (a stage may hold several commands: the first counts).
  const producers = new Map<string, SimpleCommand>();
  for (const c of ex.commands) {
    if (c.pipeline < 0) continue;
    const key = `${c.pipeline}:${c.stage}`;
    if (!producers.has(key)) producers.set(key, c);
  }
  const producerOf = (c: SimpleCommand) => (c.stage === 0 || c.pipeline < 0 ? undefined : producers.get(`${c.pipeline}:${c.stage - 1}`));

  let pending: PendingCd | undefined;
  for (const cmd of ex.commands) {
    spend(state, commandSteps(cmd) + (cmd.pipeline >= 0 ? 1 : 0), "judging its commands");
    const from = out.length;
    pending = settleCd(pending, cmd, state);
    out.push(...assignmentFindings(cmd));
    out.push(...redirectFindings(cmd.redirs, an, cmd));
    const producer = producerOf(cmd);
    const text = pipedText(cmd, producer);
    if (text !== undefined) state.pipedText.set(cmd, text);
    const fed = xargsFeed(cmd, producer);
    out.push(...argvFindings(cmd.argv, cmd, cmd.stage > 0, an, fed));
    const moved = trackDirectory(cmd, state, env.home);
    if (moved === "unknown") pending = settleCd(pending, undefined, state);
    else if (moved && cmd.link) pending = startCd(pending, cmd.link, moved, state);
    keepWorst(state, out, from);
  }
  // The reading stopped where the commands would cost more than the budget holds.
  if (ex.truncated)
    throw new TooComplex(
      `reading and judging its commands takes more than the gate spends on one command (${state.budget.total} steps, ${state.budget.deadlineMs} ms)`,
    );
  settleCd(pending, undefined, state);
  out.push(...redirectFindings(ex.compoundRedirs, an, undefined));
  keepWorst(state, out);

  if (state.secretSource !== undefined && state.network !== undefined)
    out.push(finding("secret-egress", `sends data from ${state.secretSource} over the network (${state.network})`));
  return out;
}

/** Remembers the strictest of the findings from `from` on, in case the analysis stops before its end. */
function keepWorst(state: ScriptState, out: readonly Finding[], from = 0): void {
  const b = state.budget;
  for (let i = from; i < out.length; i++) if (!b.worst || COMBINE_RANK[out[i]!.cls] > COMBINE_RANK[b.worst.cls]) b.worst = out[i];
}

function assignmentFindings(cmd: SimpleCommand): Finding[] {
  const names = [
    ...cmd.assigns.map((a) => a.name),
    ...(["export", "declare", "typeset", "local", "readonly"].includes(cmd.argv[0]?.value ?? "")
      ? cmd.argv.slice(1).flatMap((a) => (a.value === null ? ["<dynamic>"] : a.value.includes("=") ? [a.value.split("=")[0]!] : []))
      : []),
  ];
  return names
    .filter((n) => n === "<dynamic>" || CODE_LOADING_ENV.has(n))
    .map((n) => finding("inline-code", `sets ${n}, which changes what code later commands run`));
}

function redirectFindings(redirs: readonly Redir[], an: Analyzer, cmd: SimpleCommand | undefined): Finding[] {
  const out: Finding[] = [];
  for (const r of redirs) {
    if (r.heredoc || !r.target) continue;
    const t = r.target;
    if (t.value !== null && /^\/dev\/(tcp|udp)\//.test(t.value)) {
      out.push(...socketRedirect(t.value, an, cmd));
      continue;
    }
    if (redirectWrites(r)) {
      if (t.value !== null && isHarmlessDevice(t.value)) continue;
      // `find ... -exec sh -c ': > "$1"' _ {} ;` empties every file find selects.
      if (t.found && TRUNCATING_OPS.has(r.op)) {
        out.push(judgeFoundRemoval(an, t, "a truncating redirection"));
        continue;
      }
      out.push(judgeWrite(an.env, an.state, t, "redirection writes"));
    } else if (r.op === "<" || r.op === "<>") {
      const f = judgeRead(an.env, an.state, t, false);
      if (f) out.push(f);
    }
  }
  return out;
}

/** Bash opens `/dev/tcp/HOST/PORT` as a network connection; a shell wired to one is a remote shell. */
function socketRedirect(target: string, an: Analyzer, cmd: SimpleCommand | undefined): Finding[] {
  an.state.network ??= target;
  const name = commandName(cmd?.argv[0]?.value ?? "");
  if (SHELLS.has(name) || INTERPRETERS.has(name)) return [finding("remote-code", `${name} reads or writes ${target}: a shell driven over the network`)];
  return [finding("network", `redirection opens the network connection ${target}`)];
}

/** `echo a b | xargs cmd` feeds known words, `find | xargs cmd` what find selects; other producers unknown ones. */
function xargsFeed(cmd: SimpleCommand, producer: SimpleCommand | undefined): Arg[] | undefined {
  const given = givenInput(cmd);
  if (given !== undefined) return given === null ? undefined : splitWords(given);
  if (cmd.stage === 0 || cmd.pipeline < 0) return undefined;
  const name = producer?.argv[0]?.value;
  if (producer && name === "find" && !producer.argv.some((a) => a.value === null)) return foundPaths(producer.argv.slice(1));
  if (!producer || (name !== "echo" && name !== "printf") || producer.argv.some((a) => a.value === null)) return undefined;
  const words = producer.argv.slice(1).filter((a) => !/^-[neE]+$/.test(a.value ?? ""));
  // `printf '%s\0' A B` prints its arguments, one per separator.
  if (name === "printf" && /^(%s(\\[n0t]|\s)*)+$/.test(words[0]?.value ?? "")) return words.slice(1);
  if (name === "printf" && words.some((w) => w.value?.includes("%"))) return undefined;
  return words.flatMap((w) => splitWords((w.value ?? "").replace(/\\n/g, " ")));
}

/**
 * What an earlier pipeline stage prints when it prints only constants: `echo WORDS`, `printf TEXT`
 * (no conversions), or `cat` of a static here-document. A shell reading it runs a script as
 * readable as a here-document; anything else on its input is code the gate cannot see.
 */
function pipedText(cmd: SimpleCommand, producer: SimpleCommand | undefined): string | undefined {
  if (cmd.stage === 0 || cmd.pipeline < 0) return undefined;
  if (!producer || producer.argv.some((a) => a.value === null || a.glob)) return undefined;
  const [name, ...words] = producer.argv.map((a) => a.value!);
  if (name === "cat" && words.length === 0) {
    const given = givenInput(producer);
    return typeof given === "string" ? given : undefined;
  }
  if (producer.redirs.length > 0) return undefined;
  if (name === "echo") {
    let escapes = false;
    while (words[0] !== undefined && /^-[neE]+$/.test(words[0])) escapes ||= words.shift()!.includes("e");
    return escapes ? unescapePrinted(words.join(" ")) : words.join(" ");
  }
  if (name === "printf" && words.length === 1 && !words[0]!.includes("%")) return unescapePrinted(words[0]!);
  return undefined;
}

/** The common backslash escapes of printf and echo -e; any other escape leaves the text unknown. */
function unescapePrinted(s: string): string | undefined {
  const map: Record<string, string> = { n: "\n", t: "\t", "\\": "\\" };
  let unknown = false;
  const out = s.replace(/\\(.)/g, (_, c: string) => map[c] ?? ((unknown = true), ""));
  return unknown ? undefined : out;
}

function splitWords(text: string): Arg[] {
  return text.split(/\s+/).filter(Boolean).map(staticArg);
}

/** Standard input a command is given inline: a here-string or here-document; null when it is not static. */
function givenInput(cmd: SimpleCommand): string | null | undefined {
  for (const r of cmd.redirs) {
    if (r.op === "<<<") return r.target?.value ?? null;
    if (r.heredoc) return r.heredoc.dynamic ? null : r.heredoc.body;
  }
  return undefined;
}

/** A `cd` in an and-or list: commands joined to it by `&&` run only where it succeeded. */
interface PendingCd {
  readonly link: Link;
  readonly before: ReadonlyArray<string | null>;
  readonly after: ReadonlyArray<string | null>;
}

/** The union of lists of possible cwds, in order of first appearance; bounded by setCwds' cap. */
function union(...lists: ReadonlyArray<ReadonlyArray<string | null>>): Array<string | null> {
  const out = new Set<string | null>();
  for (const l of lists) for (const c of l) out.add(c);
  return [...out];
}

/** A cd joined by `&&` to an earlier one: if the first failed, neither ran. */
function startCd(
  pending: PendingCd | undefined,
  link: Link,
  moved: { before: Array<string | null>; after: Array<string | null> },
  state: ScriptState,
): PendingCd {
  const before = pending ? union(pending.before, moved.before) : moved.before;
  // Where the list may stop is where the script may go on: as bounded as the cwds themselves.
  if (before.length > MAX_CWDS) throw new TooComplex(`the command changes directory in more than ${MAX_CWDS} possible ways`);
  spend(state, before.length, "following cd");
  return { link, before, after: moved.after };
}

function settleCd(pending: PendingCd | undefined, cmd: SimpleCommand | undefined, state: ScriptState): PendingCd | undefined {
  if (!pending) return undefined;
  const l = cmd?.link;
  const p = pending.link;
  if (l && l.chain === p.chain && l.index === p.index) return pending; // still inside the element holding the cd
  if (l && l.chain === p.chain && l.index > p.index && l.andFrom <= p.index) {
    setCwds(state, [...pending.after]);
    return pending;
  }
  // Past the list (or past an `||`): the cd may have failed, so both sides are possible.
  setCwds(state, union(pending.before, pending.after, state.cwds));
  return undefined;
}

/** Follows cd, pushd and popd; returns where a static cd may have gone from and to. */
function trackDirectory(
  cmd: SimpleCommand,
  state: ScriptState,
  home: string,
): { before: Array<string | null>; after: Array<string | null> } | "unknown" | undefined {
  const name = cmd.argv[0]?.value;
  if (name !== "cd" && name !== "pushd" && name !== "popd") return undefined;
  const args = cmd.argv.slice(1).filter((a) => a.value === null || a.value === "-" || !/^(-[LPe@]+|--)$/.test(a.value));
  // A bare `cd` goes home; `cd -` and `popd` go back to a directory the gate does not track.
  const to = name === "cd" && args.length === 0 ? home : args[0]?.value;
  if (name === "popd" || to === undefined || to === null || to === "-") {
    setCwds(state, union(state.cwds, [null]));
    return "unknown";
  }
  const before = state.cwds;
  if (state.judged) noteNamed(state, to, "cd");
  const after = union(before.map((c) => (c === null ? null : resolve(c, to))));
  // Subshells and `||` make the change conditional, so the old directories stay possible.
  setCwds(state, union(before, after));
  return { before, after };
}

/** `env -S 'cmd args'`: the option's value and the words after it form one command line. */
function splitScript(options: readonly string[] | undefined, args: readonly Arg[], i: number): string | null | undefined {
  const v = args[i]!.value!;
  const opt = options?.find((o) => v === o || v.startsWith(o.startsWith("--") ? `${o}=` : o));
  if (opt === undefined) return undefined;
  const inline = v === opt ? undefined : v.slice(opt.length).replace(/^=/, "");
  const words = [...(inline === undefined ? [] : [staticArg(inline)]), ...args.slice(i + 1)];
  return words.some((w) => w.value === null) ? null : words.map((w) => w.value).join(" ");
}

function commandName(value: string): string {
  if (!value.includes("/")) return value;
  return SYSTEM_BIN.has(dirname(value)) ? basename(value) : value;
}

function argvFindings(argv: readonly Arg[], source: SimpleCommand, pipedInput: boolean, an: Analyzer, fed: Arg[] | undefined): Finding[] {
  const out: Finding[] = [];
  let args = argv;
  for (let hops = 0; ; hops++) {
    if (hops > MAX_WRAPPERS) return [...out, finding("dynamic-command", "too many nested command wrappers")];
    if (args.length === 0) return out.length > 0 ? out : [finding("read-only", "no command")];
    const head = args[0]!;
    if (head.value === null) return [...out, finding("dynamic-command", `the command name ${head.text} is only known at run time`)];
    const name = commandName(head.value);
    if (an.state.functions.has(name)) return [...out, finding("read-only", `calls the function ${name} defined in this command`)];
    if (name === "busybox" && args.length > 1) {
      args = args.slice(1);
      continue;
    }
    const alias = COMMAND_ALIASES.get(name);
    if (alias) {
      args = [...alias.map(staticArg), ...args.slice(1)];
      continue;
    }
    const wrapper = WRAPPERS.get(name);
    if (!wrapper) break;
    if (wrapper.reason) out.push(finding(wrapper.reason, `${name} runs a command with other privileges`));
    let i = 1;
    let positionals = wrapper.positionals ?? 0;
    for (; i < args.length; i++) {
      const v = args[i]!.value;
      if (v === null) {
        // `env -i PATH="$PATH" HOME=$HOME cmd`: an assignment whose value is only known at run time.
        // Harmless unless the variable changes what code runs, or passes a variable on unchanged.
        const assign = wrapper.assignments ? /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(args[i]!.text) : null;
        if (assign && (!CODE_LOADING_ENV.has(assign[1]!) || new RegExp(`^"?\\$\\{?${assign[1]}\\}?"?$`).test(assign[2]!))) continue;
        return [...out, finding("dynamic-command", `${name} with an argument only known at run time`)];
      }
      if (v === "--") {
        i++;
        break;
      }
      if (wrapper.lookupOptions?.includes(v)) return [...out, finding("read-only", `${name} ${v} looks a command up`)];
      const split = splitScript(wrapper.scriptOptions, args, i);
      if (split !== undefined) {
        if (split === null) return [...out, finding("dynamic-command", `${name} ${v} runs a command line only known at run time`)];
        return [...out, ...an.script(split, `${name} ${v}`)];
      }
      if (v.startsWith("-") && v !== "-") {
        if (wrapper.valueOptions.includes(v)) i++;
        if (name === "sudo" && (v === "-s" || v === "-i" || v === "--shell" || v === "--login"))
          return [...out, finding("privilege", "sudo opens a root shell")];
        continue;
      }
      if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(v)) {
        const varName = v.slice(0, v.indexOf("="));
        if (CODE_LOADING_ENV.has(varName)) out.push(finding("inline-code", `${name} sets ${varName}, which changes what code runs`));
        continue;
      }
      if (positionals > 0) {
        positionals--;
        continue;
      }
      break;
    }
    // A wrapper's own output options write files (`strace -o FILE`, `time -o FILE`).
    out.push(...outputFindings({ name, args: args.slice(1, i), source, pipedInput }, an));
    const rest = args.slice(i);
    if (rest.length === 0) {
      if (name === "env" || name === "printenv") an.state.secretSource ??= "the environment";
      return [...out, finding(wrapper.reason ?? "read-only", `${name} with no command`)];
    }
    if (wrapper.scriptArgs) {
      if (rest.some((a) => a.value === null)) return [...out, finding("dynamic-command", `${name} runs a command only known at run time`)];
      return [...out, ...an.script(rest.map((a) => a.value).join(" "), name)];
    }
    args = rest;
  }
  const head = args[0]!;
  const name = commandName(head.value!);
  const inv: Invocation = { name, args: args.slice(1), source, pipedInput };
  return [...out, ...dispatch(inv, an, fed)];
}

function dispatch(inv: Invocation, an: Analyzer, fed: Arg[] | undefined): Finding[] {
  const found = [...commandOptionFindings(inv, an), ...codeOptionFindings(inv), ...dispatchByName(inv, an, fed)];
  if (!judgedArguments.has(inv) && !found.some((f) => f.reason === "identity-secret")) {
    const secret = argumentSecretRead(inv, an, false);
    if (secret) found.push(secret);
  }
  const builds = found.some((f) => f.cls === "build");
  if (builds) an.state.buildRun ??= inv.name;
  // A build or test run executes the code of the directory it runs in (Makefile, build scripts).
  if (builds && isDownloaded(an.state, ".")) found.push(finding("remote-code", `${inv.name} builds or runs code this command downloaded`));
  return found;
}

/**
 * Whatever the program, an argument naming an identity secret is a read of it (`gzip -c KEY`,
 * `git diff --no-index /dev/null KEY`, `xargs -a KEY`, `sysctl -p KEY`): only programs that
 * look at names alone are spared, unless given an option that reads a file's contents. A word may
 * name a file besides being one: an option's value (`--key=PATH`, `-fPATH`), an assignment
 * operand's (`KEY=PATH`), a response file (`@PATH`); a `~/` the shell left alone (after `=`) is
 * read as the home directory too, as the program may expand it itself. With `operandsJudged`
 * (a simple reader's operands were judged as reads already) only those values are looked at.
 */
function argumentSecretRead(inv: Invocation, an: Analyzer, operandsJudged: boolean): Finding | undefined {
  if (NAMES_ONLY_READERS.has(inv.name)) {
    const content = NAMES_ONLY_CONTENT_OPTIONS.get(inv.name);
    if (!content || !inv.args.some((a) => a.value !== null && content.some((o) => a.value === o || a.value!.startsWith(`${o}=`)))) return undefined;
  }
  let dynamicSeen = operandsJudged;
  let bare: boolean | undefined;
  const check = (a: Arg, c: string): Finding | undefined => {
    // A URL, or code and text (quotes, brackets, separators: no listed secret's name has them, and a
    // link with such a name to a secret was a read of it when it was made), needs no look-up; the
    // text is still compared with the secrets, as a name below one may have them (`id_rsa (copy)`).
    if (c === "" || URL_LIKE.test(c)) return undefined;
    if (TEXT_LIKE.test(c)) {
      const home = c.charCodeAt(0) === 126 /* ~ */ && (c.length === 1 || c.charCodeAt(1) === 47);
      return secretByText(an.env, an.state, home ? an.env.home + c.slice(1) : c, false)
        ? finding("identity-secret", `${inv.name} reads ${c}, an identity secret`)
        : undefined;
    }
    if (c.charCodeAt(0) === 126 /* ~ */ && (c.length === 1 || c.charCodeAt(1) === 47)) {
      const r = check(a, an.env.home + c.slice(1));
      if (r) return r;
    }
    // A bare name (no slash) in the workspace or the temporary root names a file there, not a
    // secret, unless this script linked it somewhere or moved to another directory: it costs no
    // look-up. (A link to a secret is itself a read of it, see ln, so a name in the roots that
    // leads to one was made by the user.)
    if (!a.glob && !c.includes("/") && c !== "..") {
      bare ??=
        an.state.links.size === 0 &&
        an.state.cwds.every((d) => d === an.env.places.workspace || d === an.env.places.workspaceLexical || d === an.env.places.tmpRoot);
      if (bare) return undefined;
    }
    const r = judgeRead(an.env, an.state, c === a.value ? a : { ...a, value: c }, false, false);
    return r && finding(r.reason, `${inv.name} ${r.detail}`);
  };
  for (const a of inv.args) {
    const v = a.value;
    if (v === null) {
      // A run-time path is a secret when the script names one (judgeRead asks namesSecret once).
      if (dynamicSeen) continue;
      dynamicSeen = true;
      const r = judgeRead(an.env, an.state, a, false, false);
      if (r) return r;
      continue;
    }
    const first = v.charCodeAt(0);
    let r: Finding | undefined;
    if (first === 45 /* - */) {
      const eq = v.indexOf("=");
      if (eq > 0) r = check(a, v.slice(eq + 1));
      else if (v.length > 2 && (v.charCodeAt(2) === 47 || v.charCodeAt(2) === 126) && /^-[A-Za-z]/.test(v)) r = check(a, v.slice(2));
    } else if (first === 64 /* @ */) r = check(a, v.slice(1)) ?? (operandsJudged ? undefined : check(a, v));
    else {
      const eq = v.indexOf("=");
      if (eq > 0 && /^[A-Za-z_][\w.]*$/.test(v.slice(0, eq))) r = check(a, v.slice(eq + 1));
      if (!r && !operandsJudged) r = check(a, v);
    }
    if (r) return r;
  }
  return undefined;
}

/**
 * Options whose presence makes a tool run code the gate does not read (`gcc -wrapper`, `-fplugin`,
 * `make --eval`, `pdflatex --shell-escape`, `gdb -ex`): codeOptions in commands.json.
 */
function codeOptionFindings(inv: Invocation): Finding[] {
  const specs = CODE_OPTIONS.get(inv.name);
  if (!specs) return [];
  for (const a of inv.args) {
    const v = a.value;
    if (v === null) continue;
    if (v === "--") break;
    const hit = specs.find((o) => codeOptionMatches(o, v));
    if (hit) return [finding("inline-code", `${inv.name} ${hit.option}${hit.prefix ? ` ${hit.prefix}` : ""} runs code the gate does not read`)];
  }
  // `-ex CMD`-style entries with a prefix look at the option's value.
  for (const o of specs) {
    if (!o.prefix || o.option.endsWith("=")) continue;
    const long = o.option.length > 2 ? [o.option] : [];
    for (const v of optionValues(inv.args, long.length === 0 ? [o.option] : [], long))
      if (v.value === null || v.value.trimStart().startsWith(o.prefix))
        return [finding("inline-code", `${inv.name} ${o.option} ${o.prefix} runs code the gate does not read`)];
  }
  return [];
}

function codeOptionMatches(o: CommandOption, v: string): boolean {
  if (o.prefix) return false;
  // `SHELL=`: an assignment operand; `@`, `+!`: a prefix; `-B`: a short option, alone or with a
  // path attached (`-B/opt/x`; `-recorder` is another option than `-r`); `-wrapper`, `--eval`: a
  // whole word, or the word with `=VALUE`.
  if (o.option.endsWith("=")) return v.startsWith(o.option);
  if (o.option.length <= 2 && !o.option.startsWith("-")) return v.startsWith(o.option);
  if (o.option.length <= 2) return v === o.option || (v.startsWith(o.option) && !/^[A-Za-z]$/.test(v.charAt(2)));
  return v === o.option || v.startsWith(`${o.option}=`);
}

/** What every shell command gets while the command policy is faulty. */
export function policyFaultFinding(problem: string): Finding {
  return finding("config-fault", `the command policy (commands.json) is invalid, so no shell command can be judged: ${problem}`);
}

/**
 * Each program judged by code, with the handler its record names (file operators: the one their
 * operands call for). git, xargs and eval are read by dispatchByName itself.
 */
const HANDLERS: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ...[...HANDLED].flatMap(([program, name]): Array<[string, Handler]> => {
    const own = CODE_HANDLERS[name]?.(program);
    return own ? [[program, own]] : [];
  }),
  ...[...OPERANDS].map(([program, spec]): [string, Handler] => [program, operandHandler(program, spec)]),
]);

/** Handler names whose code is in dispatchByName rather than a family's registry. */
export const DISPATCHED_HERE: ReadonlySet<HandlerName> = new Set(["git", "xargs", "eval"]);

function dispatchByName(inv: Invocation, an: Analyzer, fed: Arg[] | undefined): Finding[] {
  const { name } = inv;
  if (name.includes("/")) return pathProgram(inv, an);
  if (name === "git") return git(inv, an);
  if (name === "xargs") return xargs(fed)(inv, an);
  if (name === "eval") {
    // eval of static words is just a script; of anything else, code the gate cannot see.
    if (inv.args.some((a) => a.value === null)) return [finding("dynamic-command", "eval runs a string only known at run time as code")];
    return an.script(inv.args.map((a) => a.value).join(" "), "eval");
  }
  const handler = HANDLERS.get(name);
  if (handler) {
    const found = handler(inv, an);
    return found.length > 0 ? found : [finding("read-only", `${name} only reads`)];
  }
  if (DENY_PREFIXES.some((p) => name.startsWith(p))) return [finding("hard-deny", `${name} formats a file system`)];
  const cls = SIMPLE.get(name);
  if (cls === undefined) return [finding("unknown-command", `${name} is not a command the gate knows`)];
  if ((SECRET_SOURCES.has(name) && inv.args.length === 0) || SECRET_PRINTERS.has(name)) an.state.secretSource ??= "the environment";
  if (SECRET_SOURCES.has(name) && name === "export" && inv.args.some((a) => a.value === "-p")) an.state.secretSource ??= "the environment";
  const reason = reasonOf(name, cls);
  if (cls === "contain") an.state.network ??= isNetworkTool(name) ? name : an.state.network;
  const base = finding(reason, describe(name, cls));
  if (an.state.judged && NAMES_ONLY_READERS.has(name)) noteListed(inv, an.state);
  if (NAMES_ONLY_READERS.has(name) || cls === "deny" || cls === "review") return [base];
  const outputs = outputFindings(inv, an);
  const recursive =
    RECURSIVE_READERS.has(name) || (/grep$/.test(name) && inv.args.some((a) => /^-[a-zA-Z]*[rR]|^--recursive|^--dereference-recursive/.test(a.value ?? "")));
  const reads = judgeReadOperands(inv, an, recursive);
  judgedArguments.add(inv);
  const named = reads.length > 0 ? undefined : argumentSecretRead(inv, an, true);
  return [base, ...outputs, ...reads, ...(named ? [named] : [])];
}

/**
 * A names-only reader's operands (`ls -la /etc`, `stat ~/x`) are not read, and some are only text
 * (`echo hello`): only those that look like paths (a `/`, a leading `.`) are noted, as what it lists.
 */
function noteListed(inv: Invocation, state: ScriptState): void {
  for (const a of inv.args) {
    const v = a.value;
    if (v === null || v.startsWith("-") || !(v.includes("/") || v.startsWith("."))) continue;
    noteNamed(state, v, "read");
  }
}

/** Invocations whose operands were judged as reads already (a simple reader's). */
const judgedArguments = new WeakSet<Invocation>();

function isNetworkTool(name: string): boolean {
  return NETWORK_TOOLS.has(name);
}

function describe(name: string, cls: string): string {
  switch (cls) {
    case "read":
      return `${name} only reads`;
    case "build":
      return `${name} builds or tests the project`;
    case "contain":
      return `${name} reaches outside the workspace (network, other programs or machines)`;
    case "review":
      return `${name} changes the system, other processes or credentials`;
    case "deny":
      return `${name} destroys disks or file systems`;
    default:
      return name;
  }
}

/** A program named by path: a project script, a downloaded file, or a local dev tool. */
function pathProgram(inv: Invocation, an: Analyzer): Finding[] {
  if (an.state.judged) noteJudged(an.state, locate(an.state, inv.name), "run");
  if (isDownloaded(an.state, inv.name)) return [finding("remote-code", `runs ${inv.name}, downloaded by this command`)];
  const bin = /(^|\/)node_modules\/\.bin\/([^/]+)$/.exec(inv.name);
  if (bin) return npx({ ...inv, args: [staticArg(bin[2]!), ...inv.args] }, an);
  const known = SIMPLE.get(inv.name);
  if (known === "build") return [finding("build-test", `${inv.name} builds the project`)];
  return [finding("inline-code", `runs the program ${inv.name}`)];
}
