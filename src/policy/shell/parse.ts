// Every simple command and redirection in a bash string, read statically with unbash.
//
// unbash is tolerant: it returns a partial tree plus `errors`, and parses substitutions lazily,
// so errors of nested scripts only appear when the walk reaches them. We check every level,
// walk with an explicit stack (deep nesting must not overflow the JS stack), and treat an
// unterminated here-document as an error although bash only warns about it.
//
// Where unbash reads a construct differently from bash (test/policy/shell-differential.test.ts checks the
// corpora and a hostile list against bash itself), the reading is an error too, so the gate reviews
// the command rather than judge one bash would not run: see `Differentials` below.

import { forEachChild, parse } from "unbash";
import type { Command, ParsedScript, Redirection, SyntaxNode, Word } from "unbash";
import { type BodyReading, commandWords, hereDocText, isSingleWord, Scope, type ScopeSnapshot, wordArg, type Arg } from "./words.ts";

export type { Arg, FoundPath } from "./words.ts";

export const MAX_SHELL_BYTES = 64 * 1024;

export interface Redir {
  readonly fd: number | string | undefined;
  readonly op: string;
  readonly target: Arg | null;
  readonly heredoc?: { readonly quoted: boolean; readonly body: string; readonly dynamic: boolean };
}

export interface SimpleCommand {
  readonly argv: readonly Arg[];
  readonly assigns: readonly { readonly name: string; readonly value: Arg }[];
  readonly redirs: readonly Redir[];
  /** Pipeline membership: commands of one pipeline share `pipeline`; `stage` is the position in it. */
  readonly pipeline: number;
  readonly stage: number;
  /** Inside a `$(...)`, backticks or `<(...)`: its output becomes another command's word. */
  readonly inSubstitution: boolean;
  /** Inside the body of a function definition. */
  readonly inFunction: string | undefined;
  readonly background: boolean;
  /** Position in a top-level `a && b || c` list, if the command is part of one. */
  readonly link: Link | undefined;
  /** The endless loop (`while true`, `until false`, `for ((;;))`) whose body holds the command, if any. */
  readonly endlessLoop: number | undefined;
  /** Started in the background by a statement inside that loop (each iteration leaves one more running). */
  readonly spawnedInLoop: boolean;
}

/**
 * Element `index` of and-or list `chain`; elements `andFrom` .. `index` are joined by `&&` only,
 * so the element runs only if each of those before it succeeded.
 */
export interface Link {
  readonly chain: number;
  readonly index: number;
  readonly andFrom: number;
}

export interface FunctionDef {
  readonly name: string;
}

export type Extraction =
  | {
      readonly ok: true;
      readonly commands: readonly SimpleCommand[];
      /** Redirections of compound commands (`{ ...; } > f`, `while ...; done < f`). */
      readonly compoundRedirs: readonly Redir[];
      readonly functions: readonly FunctionDef[];
      /** Every word of the script (arguments, loop lists, assignment values, test operands), in source order. */
      readonly words: readonly Arg[];
      /** Names of the variables the script expands (`$X`, `${X:-y}`), quoted or not. */
      readonly expansions: readonly string[];
      /** Reading stopped at `limit`: only the commands before that point are here. */
      readonly truncated: boolean;
      /**
       * When an in-order reading of a body was broken by something read later and the script was
       * read again with less known in bodies (this extraction): the earlier readings, first first.
       * What they found bash may still do in the first pass or call, so they are judged too.
       */
      readonly earlier?: readonly Extract<Extraction, { ok: true }>[];
    }
  | {
      readonly ok: false;
      readonly reason: string;
      /**
       * The complete lines before the one that cannot be read, when they read on their own: bash
       * runs each line before it reads the next (`rm -rf /` then a line with a syntax error still
       * removes /), so what they do is judged too.
       */
      readonly ranBefore?: string;
    };

/** A failed reading, and where: the start of the top-level statement the error is in, if it is in the script's own text. */
type Failure = { readonly ok: false; readonly reason: string; readonly at: number | undefined };

export interface ExtractOptions {
  /** Value for `$HOME`, `${HOME}` and a leading unquoted `~`. */
  readonly home: string;
  /** Environment variables whose value is known (`PI_CODING_AGENT_DIR`). */
  readonly environment?: ReadonlyMap<string, string>;
  /** The script's $0, $1, ... when it is run as `sh -c SCRIPT ARG0 ARG1 ...`. */
  readonly positional?: readonly Arg[];
  /**
   * Stop reading once the commands read would cost the analysis more than this many steps (see
   * commandSteps): it could not judge the rest within its budget anyway. The extraction is then
   * `truncated`, holding the commands up to that point.
   */
  readonly limit?: number;
  /** performance.now() past which the reading stops the same way (checked every 256 nodes, from the 1024th). */
  readonly deadline?: number;
}

/**
 * The steps the analysis spends on a simple command, whatever the command does: one, one per two
 * words, one per redirection, and more for words that cost the parser more than a plain one: one
 * for a word read part by part (quotes, escapes, expansions), two for a glob, four for a word with
 * a command substitution (its script is parsed on its own).
 */
class StepCount {
  steps = 1;
  private words = 0;

  redirect(): number {
    return ++this.steps;
  }

  word(a: Arg): Arg {
    if (++this.words % 2 === 1) this.steps++;
    // Quotes, escapes and expansions: the word's parts were read one by one.
    if (a.value !== a.text) this.steps++;
    if (a.glob) this.steps += 2;
    if (a.text.includes("$(") || a.text.includes("`")) this.steps += 4;
    return a;
  }
}

export function commandSteps(cmd: { readonly argv: readonly Arg[]; readonly redirs: readonly unknown[] }): number {
  const count = new StepCount();
  for (let i = 0; i < cmd.redirs.length; i++) count.redirect();
  for (const a of cmd.argv) count.word(a);
  return count.steps;
}

/** Where a node sits: shared by every node with the same context (the walk allocates one only when something changes). */
interface Frame {
  readonly pipeline: number;
  readonly stage: number;
  readonly inSubstitution: boolean;
  readonly inFunction: string | undefined;
  readonly background: boolean;
  readonly link: Link | undefined;
  /**
   * Runs exactly once, in order, in the script's own shell (or, inside a loop or function body, in
   * the shell of that pass or call of the body): its assignments are certain.
   */
  readonly certain: boolean;
  /**
   * Inside a loop or function body or a command substitution: its and-or lists get no Link (the cd
   * tracking of analyze.ts follows the script's own lists, its groups and subshells).
   */
  readonly linkless: boolean;
  readonly endlessLoop: number | undefined;
  readonly spawnedInLoop: boolean;
  /** The text node positions index: the script's, or the decoded body of an escaped-backtick substitution. */
  readonly text: string;
  /** Inside `[[ ]]` (not in a substitution there): the only place bash takes an extended glob. */
  readonly inTest: boolean;
}

/** A loop condition that never ends the loop: `while true`, `while :`, `until false`, `for ((;;))`. */
function isEndless(n: SyntaxNode): boolean {
  if (n.type === "ArithmeticFor") return n.test === undefined;
  if (n.type !== "While" || n.clause.commands.length !== 1) return false;
  const c = n.clause.commands[0]!.command;
  if (c.type !== "Command" || !c.name || c.args.length > 0 || c.redirects.length > 0) return false;
  return n.kind === "until" ? c.name.value === "false" : c.name.value === "true" || c.name.value === ":";
}

/** Builtins that set the variables named by their arguments in ways the gate does not follow. */
const SETS_NAMED_VARIABLES = new Set(["read", "mapfile", "readarray", "getopts", "unset", "let", "local", "wait"]);
/** The variables they set when no name is given: `read` sets REPLY, `mapfile` MAPFILE, `getopts` OPTARG and OPTIND. */
const SETS_BY_DEFAULT: Readonly<Record<string, readonly string[]>> = {
  read: ["REPLY"],
  mapfile: ["MAPFILE"],
  readarray: ["MAPFILE"],
  getopts: ["OPTARG", "OPTIND"],
};
/**
 * Builtins after which any variable may hold anything, and that may leave code behind that runs
 * later, between any two commands: a trap, a function (eval, source), a nameref (declare -n).
 */
const SETS_ANY_VARIABLE = new Set(["eval", "source", ".", "trap", "declare", "typeset"]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `local -n` (a nameref), `-i`, `-l`, `-u` (later assignments are transformed), `-I` (inherits those): they last. */
const LASTING_LOCAL = /^-[a-zA-Z]*[nilIu]/;
const NAMED_ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=/;

/** A command or process substitution, somewhere in a command's text. */
const SUBSTITUTION = /\$\(|`|[<>]\(/;

/** The builtins that change variables (see trackAssignments). */
const ASSIGNING = new Set(["export", "readonly", "printf", ...SETS_ANY_VARIABLE, ...SETS_NAMED_VARIABLES]);

/**
 * Whether a command's assignments are certain: it runs in order, and no substitution of it runs
 * after them. Its substitutions are walked after trackAssignments, though bash runs them while it
 * expands the words, before the assignments they precede (`X=$(rm -rf $T) T=build` removes the old $T).
 */
function inOrder(n: Command, frame: Frame): boolean {
  return frame.certain && !SUBSTITUTION.test(frame.text.slice(n.pos, n.end));
}

/** What one command does to the script's variables, after its own words were read. */
function trackAssignments(n: Command, argv: readonly Arg[], scope: Scope, frame: Frame): void {
  if (!n.name) {
    const certain = n.prefix.length > 0 && inOrder(n, frame);
    for (const a of n.prefix) {
      if (a.type !== "Assignment") continue;
      const value = wordArg(a.value, scope).value;
      const known = certain && !a.index && a.value?.type !== "ArrayValue";
      if (!known) scope.forget(a.name);
      else if (a.append) scope.append(a.name, value);
      else scope.set(a.name, value);
    }
    return;
  }
  let name = argv[0]?.value;
  scope.call(name ?? null);
  // `command eval ...` and `builtin trap ...` are eval and trap (`command -v x` only prints).
  let first = 0;
  while (name === "builtin" || name === "command") {
    const option = argv[first + 1]?.value;
    if (name === "command" && option === "-p") first += 2;
    else if (name === "builtin" || !option?.startsWith("-")) first++;
    else return;
    name = argv[first]?.value;
  }
  if (name === null || name === undefined || !ASSIGNING.has(name)) return;
  const args = argv.slice(first + 1);
  if (name === "export" || name === "readonly") {
    // An argument that is an assignment only once expanded (`export "T=/"`, `export $X`, or
    // any behind `command`) is not followed.
    const unfollowed = (value: string | null) => {
      if (value === null) scope.forgetAll(false);
      else {
        const m = NAMED_ASSIGNMENT.exec(value);
        if (m) scope.forget(m[1]!);
      }
    };
    if (first > 0) for (const a of args) unfollowed(a.value);
    else {
      const certain = inOrder(n, frame);
      for (const a of n.args) {
        if (a.type !== "Assignment") unfollowed(wordArg(a, scope).value);
        else if (certain && !a.append && !a.index) scope.set(a.name, wordArg(a.value, scope).value);
        else scope.forget(a.name);
      }
    }
  } else if (SETS_ANY_VARIABLE.has(name) || (name === "local" && args.some((a) => a.value === null || LASTING_LOCAL.test(a.value)))) {
    scope.forgetAll(true);
  } else if (name === "printf") {
    if (args.some((a) => a.value === "-v")) scope.forgetAll(false);
  } else {
    for (const v of SETS_BY_DEFAULT[name] ?? []) scope.forget(v);
    for (const a of args) {
      if (a.value === null) continue;
      // `local T=~` assigns T too.
      const m = NAME.test(a.value) ? a.value : NAMED_ASSIGNMENT.exec(a.value)?.[1];
      if (m !== undefined) scope.forget(m);
    }
  }
}

// Differentials: constructs unbash reads differently from bash 5.2. Each check is cheap, or runs
// only when its trigger appears in the text.

/** Bash's largest descriptor: a longer number before `>` is an argument to bash (`ls 99999999999 > f`). */
const MAX_FD = 2147483647;

/** -1: something other than blanks and line continuations; 0: no blank; 1: a blank. */
function gapKind(text: string, from: number, to: number): -1 | 0 | 1 {
  let blank: 0 | 1 = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9) blank = 1;
    else if (c === 92 && text.charCodeAt(i + 1) === 10) i++;
    else return -1;
  }
  return blank;
}

/** The last answer of nextParen: commands come in source order, so one scan serves all those before the parenthesis. */
const parenSeen = { text: "", from: 0, at: -1 };

/** The first `(` at or after `from`, or -1; linear over a script's commands, not quadratic. */
function nextParen(text: string, from: number): number {
  const c = parenSeen;
  if (c.text === text && from >= c.from && (c.at < 0 || from <= c.at)) return c.at;
  c.text = text;
  c.from = from;
  c.at = text.indexOf("(", from);
  return c.at;
}

/**
 * A simple command whose pieces do not cover its text the way bash's tokens would. unbash reads
 * `name (` without `)` as an abandoned function definition and drops the `(` (`ech(o x` is `ech o
 * x` to it, a syntax error to bash), and it splits a process substitution from the text glued to
 * it (`a<(ls)` is one word to bash). Between two pieces of a command there can only be blanks
 * (none between a word and a redirection), and no `(` can follow one. Every such misreading
 * found involves a parenthesis, so a command with none in or right after it is not looked at.
 */
function misreadCommand(n: Command, text: string): string | undefined {
  const paren = nextParen(text, n.pos);
  if (paren < 0) return undefined;
  if (paren >= n.end) return gapKind(text, n.end, paren) < 0 ? undefined : `unexpected '(' after a command at offset ${paren}`;
  let end = -1;
  let word = false;
  // prefix, name, suffix, without building an array for each command.
  const named = n.prefix.length + (n.name ? 1 : 0);
  const count = named + n.suffix.length;
  for (let k = 0; k < count; k++) {
    const p = k < n.prefix.length ? n.prefix[k]! : k < named ? n.name! : n.suffix[k - named]!;
    const isWord = p.type === "Word" || p.type === "Assignment";
    if (end >= 0) {
      const gap = gapKind(text, end, p.pos);
      if (gap < 0) return `unexpected ${JSON.stringify(text.slice(end, p.pos).trim().slice(0, 20))} inside a command at offset ${end}`;
      if (gap === 0 && isWord && word) return `words glued together at offset ${p.pos}, which bash reads as one`;
    }
    end = p.end;
    word = isWord;
  }
  if (end < 0) return undefined;
  let i = end;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9) i++;
    else if (c === 92 && text.charCodeAt(i + 1) === 10) i += 2;
    else break;
  }
  return text.charCodeAt(i) === 40 ? `unexpected '(' after a command at offset ${i}` : undefined;
}

/**
 * A newline inside `[[ ]]` where bash wants an operator: after an operand (`[[ -f x\n&& y ]]` is
 * a syntax error). Allowed after `[[`, `(`, `!`, `&&`, `||` and another newline; a quoted operand
 * holding a newline is refused too, which errs toward review.
 */
function misreadTest(n: { pos: number; end: number }, text: string): boolean {
  for (let i = text.indexOf("\n", n.pos); i >= 0 && i < n.end; i = text.indexOf("\n", i + 1)) {
    let j = i - 1;
    while (j > n.pos && (text[j] === " " || text[j] === "\t")) j--;
    const c = text[j];
    const two = text.slice(j - 1, j + 1);
    if (c !== "\n" && c !== "(" && c !== "!" && two !== "[[" && two !== "&&" && two !== "||") return true;
  }
  return false;
}

/** `alias NAME=VALUE` (or one only known at run time): later lines read differently wherever aliases expand. */
function definesAlias(argv: readonly Arg[]): boolean {
  let i = 0;
  while (argv[i]?.value === "builtin" || argv[i]?.value === "command") i++;
  if (argv[i]?.value !== "alias") return false;
  return argv.slice(i + 1).some((a) => a.value === null || a.value.includes("="));
}

/**
 * Positions in one text that only some nodes may hold, and the spans of those nodes seen so far:
 * - a line continuation inside a token (`$GITHUB_TO\<newline>KEN`, `2\<newline>>f`): bash joins the
 *   lines before reading the token, unbash reads the pieces. Only literal text (single quotes,
 *   quoted here-documents) and a plain word may hold one;
 * - `;` or `&` opening a line: no empty command in bash, a separator to unbash inside compound
 *   commands (`while :\n; do`). Only text (quoted strings, here-document bodies) may hold one.
 */
class Suspects {
  readonly joins: number[] = [];
  /** Continuations after a `$`: joined, the lines may make an expansion (`$\<newline>HOME`). */
  readonly dollarJoins: number[] = [];
  readonly separators: number[] = [];
  /** [start, end) pairs, flattened. */
  readonly joinSafe: number[] = [];
  /** Single quotes and quoted here-documents: nothing in them is joined. */
  readonly quoted: number[] = [];
  readonly textSpans: number[] = [];

  /** The spans of a node that may hold a suspect position. */
  note(n: SyntaxNode): void {
    switch (n.type) {
      case "Word":
        // A plain word reads its continuations as bash does, but one that ends it may join it to what follows.
        if (!n.parts) this.joinSafe.push(n.pos, n.end - 2), this.textSpans.push(n.pos, n.end);
        break;
      case "Literal":
        // Inside a literal piece unbash joins a continuation as bash does; at its edge the piece
        // may end an expansion's name (`$GITHUB_TO\<newline>KEN`).
        this.joinSafe.push(n.pos + 1, n.end - 2), this.textSpans.push(n.pos, n.end);
        break;
      case "SingleQuoted":
        this.quoted.push(n.pos, n.end), this.textSpans.push(n.pos, n.end);
        break;
      case "AnsiCQuoted":
        this.textSpans.push(n.pos, n.end);
        break;
      case "HereDoc":
        // A body without expansions is read by hereDocText, with its continuations.
        if (!n.body.parts) {
          this.textSpans.push(n.body.pos, n.body.end);
          (n.delimiter?.quoted ? this.quoted : this.joinSafe).push(n.body.pos, n.body.end);
        }
        break;
      default:
        break;
    }
  }

  static of(text: string): Suspects | undefined {
    if (!text.includes("\n")) return undefined;
    const s = new Suspects();
    for (let i = text.indexOf("\\\n"); i >= 0; i = text.indexOf("\\\n", i + 2)) {
      let k = i;
      while (k > 0 && text.charCodeAt(k - 1) === 92) k--;
      const run = i - k + 1;
      if (run % 2 === 0) continue; // an escaped backslash, then a newline
      const before = k > 0 ? text[k - 1] : "\n";
      if (run === 1 && before === "$") s.dollarJoins.push(i);
      else if (run > 1 || (before !== " " && before !== "\t" && before !== "\n")) s.joins.push(i);
    }
    LINE_SEPARATOR.lastIndex = 0;
    for (let m = LINE_SEPARATOR.exec(text); m; m = LINE_SEPARATOR.exec(text)) s.separators.push(m.index + m[0].length - 1);
    return s.joins.length > 0 || s.dollarJoins.length > 0 || s.separators.length > 0 ? s : undefined;
  }

  problem(): { reason: string; at: number } | undefined {
    const within = (spans: readonly number[], at: number) => {
      for (let i = 0; i < spans.length; i += 2) if (spans[i]! <= at && at < spans[i + 1]!) return true;
      return false;
    };
    const join = this.joins.find((at) => !within(this.joinSafe, at) && !within(this.quoted, at)) ?? this.dollarJoins.find((at) => !within(this.quoted, at));
    if (join !== undefined) return { reason: `a line continuation inside a word or operator at offset ${join}, which bash joins before reading it`, at: join };
    const sep = this.separators.find((at) => !within(this.textSpans, at));
    if (sep !== undefined) return { reason: `unexpected token at the start of a line at offset ${sep}`, at: sep };
    return undefined;
  }
}

const LINE_SEPARATOR = /\n[ \t]*(?:;(?![;&])|&(?![&>]))/g;

/**
 * A subscript holding a command substitution, in text bash reads as a variable name or an
 * expression when it runs (`declare 'a[$(id)]=1'`, `test -v`, `read`, `printf -v`, `let`,
 * `x='a[$(id)]'; echo $((x))`): bash runs the substitution, though the gate reads a quoted string.
 */
const SUBSCRIPT_CODE = /\[[^\]]*(?:\$\(|`)/;

/** `$[` that unbash found no `]` for and kept as text: bash's old arithmetic expansion, unterminated (a syntax error). */
const OPEN_ARITHMETIC = /(?:^|[^\\])(?:\\\\)*\$\[/;

/**
 * Quoted text with a command substitution in arithmetic or a subscript (`(( 'a[$(id)]' ))`,
 * `${a['$(id)']}`, `a['$(id)']=1`): bash expands it there, quotes or not. Substitutions the parser
 * saw as such are read anyway; only literal text holding one counts.
 */
function quotedCodeBelow(root: SyntaxNode): boolean {
  const stack: SyntaxNode[] = [root];
  const push = (c: SyntaxNode) => {
    if (c.type !== "CommandExpansion" && c.type !== "ProcessSubstitution") stack.push(c);
  };
  while (stack.length > 0) {
    const n = stack.pop()!;
    if ((n.type === "SingleQuoted" || n.type === "Literal") && (n.value.includes("$(") || n.value.includes("`"))) return true;
    forEachChild(n, push);
  }
  return false;
}

const NO_REDIRS: readonly Redir[] = [];
const NEVER = () => false;
const ALWAYS = () => true;
const FIRST = (i: number) => i === 0;

/** Whether the children of a node run exactly once, in order, in the same shell as the node. */
// Markers on the walk's stack around a part that runs in order but apart: a subshell (and each
// stage of a pipeline, which runs in one) sees its own assignments, and the shell that started it
// does not; a branch of an if sees its own, and after it they are unknown (it may not have run).
const SCOPE_ENTER = { type: "ScopeEnter" } as unknown as SyntaxNode;
const SCOPE_RESTORE = { type: "ScopeRestore" } as unknown as SyntaxNode;
const SCOPE_FORGET = { type: "ScopeForget" } as unknown as SyntaxNode;
// A loop body runs again after its own assignments, and a function body whenever it is called,
// after any later assignment: read in order, a variable could seem to hold a value it will not
// (T=build; for i in 1 2; do rm -rf $T; T=~; done). Inside them what the script assigned before
// is unknown, and what one pass or call assigned in order is known (words.ts: Scope).
const SCOPE_LOOP = { type: "ScopeLoop" } as unknown as SyntaxNode;
const SCOPE_FUNCTION = { type: "ScopeFunction" } as unknown as SyntaxNode;
const SCOPE_LEAVE_BODY = { type: "ScopeLeaveBody" } as unknown as SyntaxNode;

/**
 * For a certain subshell, pipeline or if: its children of that kind are walked as certain between
 * an enter and an exit marker. Children sit reversed at nodes[start, start + count), as frames do.
 *
 * And blocks, which run at most once, where they stand, and in order once they run: an element of
 * an and-or list after the first, an elif, a case branch, a background job, a coprocess. Each is
 * walked as certain between an enter and a forget marker: what it assigned in order before a word
 * is known there (`true && { T=/; rm -rf $T; }` removes /), and unknown after it (it may not have
 * run). They are walked without links: the cd tracking of analyze.ts follows only the script's
 * own lists, as before.
 */
function scopeChildren(n: SyntaxNode, nodes: SyntaxNode[], frames: Frame[], start: number, count: number): void {
  let exit: SyntaxNode | undefined;
  let scoped: (c: SyntaxNode) => boolean;
  let inner: (f: Frame, c: SyntaxNode) => Frame = certainly;
  if (n.type === "Subshell") {
    exit = SCOPE_RESTORE;
    scoped = () => true;
  } else if (n.type === "Pipeline" && n.commands.length > 1) {
    exit = SCOPE_RESTORE;
    const stages = new Set<SyntaxNode>(n.commands);
    scoped = (c) => stages.has(c);
  } else if (n.type === "If" || n.type === "Elif") {
    exit = SCOPE_FORGET;
    const elifs = new Set<SyntaxNode>(n.type === "If" ? n.elif : []);
    const branches = new Set<SyntaxNode>([n.then, ...(n.type === "If" && n.else ? [n.else] : []), ...elifs]);
    const clause = n.clause;
    // The clause runs whenever the if does: its assignments are certain.
    for (let i = start; i < start + count; i++) if (nodes[i] === clause) frames[i] = { ...frames[i]!, certain: true };
    scoped = (c) => branches.has(c);
    // An elif's clause runs only when those before it failed: a block.
    inner = (f, c) => (elifs.has(c) ? linkless(f) : certainly(f));
  } else {
    const blocks = blockChildren(n);
    if (blocks === undefined) return;
    exit = SCOPE_FORGET;
    scoped = (c) => blocks.has(c);
    inner = linkless;
  }
  wrapChildren(nodes, frames, start, count, new Set(kidsOf(nodes, start, count).filter(scoped)), SCOPE_ENTER, exit, inner);
}

/** The children of a node that are blocks (see scopeChildren), if any. */
function blockChildren(n: SyntaxNode): ReadonlySet<SyntaxNode> | undefined {
  switch (n.type) {
    case "AndOr":
      return new Set<SyntaxNode>(n.commands.slice(1));
    case "Statement":
      return n.background === true ? new Set<SyntaxNode>([n.command]) : undefined;
    case "Case":
      return new Set<SyntaxNode>(n.items);
    case "Coproc":
      return new Set<SyntaxNode>([n.body]);
    default:
      return undefined;
  }
}

function kidsOf(nodes: readonly SyntaxNode[], start: number, count: number): SyntaxNode[] {
  return nodes.slice(start, start + count);
}

const certainly = (f: Frame): Frame => (f.certain ? f : { ...f, certain: true });
const linkless = (f: Frame): Frame => (f.certain && f.linkless ? f : { ...f, certain: true, linkless: true });

/** Put `enter` before and `exit` after each child in `wrapped` (as walked), walked in the context `inner` gives. */
function wrapChildren(
  nodes: SyntaxNode[],
  frames: Frame[],
  start: number,
  count: number,
  wrapped: ReadonlySet<SyntaxNode>,
  enter: SyntaxNode,
  exit: SyntaxNode,
  inner: (f: Frame, c: SyntaxNode) => Frame,
): void {
  const kids = nodes.splice(start, count);
  const kidFrames = frames.splice(start, count);
  // Back to walk order (child 0 first), markers around each wrapped child, then reversed again.
  kids.reverse();
  kidFrames.reverse();
  const outNodes: SyntaxNode[] = [];
  const outFrames: Frame[] = [];
  for (let i = 0; i < kids.length; i++) {
    const c = kids[i]!;
    const f = kidFrames[i]!;
    if (!wrapped.has(c)) {
      outNodes.push(c);
      outFrames.push(f);
      continue;
    }
    outNodes.push(enter, c, exit);
    outFrames.push(f, inner(f, c), f);
  }
  outNodes.reverse();
  outFrames.reverse();
  nodes.push(...outNodes);
  frames.push(...outFrames);
}

function certainChildren(n: SyntaxNode, frame: Frame): (index: number) => boolean {
  if (!frame.certain) return NEVER;
  switch (n.type) {
    case "Script":
    case "CompoundList":
    case "BraceGroup":
    case "Redirected":
    case "Command":
    // A case branch is walked as a block (see scopeChildren): its patterns and body run in order in it.
    case "CaseItem":
      return ALWAYS;
    case "Statement":
      return n.background !== true ? ALWAYS : NEVER;
    case "AndOr":
      return FIRST; // later commands of `a && b || c` may not run
    case "Pipeline":
      return n.commands.length <= 1 ? ALWAYS : NEVER; // every stage of a real pipeline runs in a subshell
    default:
      return NEVER;
  }
}

/**
 * unbash parses each command substitution when it is first walked into, from its own text, so a
 * character nested d substitutions deep is read d times: nesting costs depth times size. Past
 * these bounds a command is not read at all (it is too complex to judge quickly). Real commands
 * nest a few levels; unbash itself stops near 250.
 */
export const MAX_SUBSTITUTION_DEPTH = 24;
/** The most characters all levels together may make the parser read: four times the size cap. */
export const MAX_SUBSTITUTION_READS = 4 * MAX_SHELL_BYTES;

/**
 * How deep command and process substitutions nest, and how many characters their parsing reads
 * (each character once per substitution around it), by one linear pass that follows quotes and
 * escapes the way the shell's reader does. It only has to be close: it bounds the parser's work,
 * the parser itself decides what the command is.
 */
export function substitutionNesting(src: string): { depth: number; reads: number } {
  // Without a parenthesis or a backtick nothing nests (most commands).
  if (!src.includes("(") && !src.includes("`")) return { depth: 0, reads: 0 };
  // Frames: "(" a parenthesis or arithmetic, "$" a substitution, '"' double quotes, "`" backticks.
  const stack: string[] = [];
  let subs = 0;
  let depth = 0;
  let reads = 0;
  const push = (f: string) => {
    stack.push(f);
    if (f === "$" || f === "`") depth = Math.max(depth, ++subs);
  };
  const pop = () => {
    const f = stack.pop();
    if (f === "$" || f === "`") subs--;
  };
  for (let i = 0; i < src.length; i++) {
    reads += subs;
    const c = src[i]!;
    const top = stack.at(-1);
    if (c === "\\") {
      i++;
      reads += subs;
      continue;
    }
    if (top === '"') {
      if (c === '"') pop();
      else if (c === "$" && src[i + 1] === "(" && src[i + 2] !== "(") push("$"), i++;
      else if (c === "`") push("`");
      continue;
    }
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      const stop = end < 0 ? src.length - 1 : end;
      reads += subs * (stop - i);
      i = stop;
      continue;
    }
    if (c === '"') push('"');
    else if (c === "`") top === "`" ? pop() : push("`");
    else if ((c === "$" || c === "<" || c === ">") && src[i + 1] === "(") {
      push(c === "$" && src[i + 2] === "(" ? "(" : "$");
      i++;
    } else if (c === "(") push("(");
    else if (c === ")" && (top === "(" || top === "$")) pop();
  }
  return { depth, reads };
}

export function extractCommands(src: string, opts: ExtractOptions): Extraction {
  const ex = readScript(src, opts);
  if (ex.ok) return ex;
  const ranBefore = ex.at === undefined ? undefined : linesBefore(src, ex.at, opts);
  return ranBefore === undefined ? { ok: false, reason: ex.reason } : { ok: false, reason: ex.reason, ranBefore };
}

/**
 * The lines before `at` that bash has run when it meets the error: the longest run of whole lines
 * that reads on its own. A line that opens a compound command the error is in does not (`if` with
 * no `fi`): the search steps back before that statement, a few times at most.
 */
function linesBefore(src: string, at: number, opts: ExtractOptions): string | undefined {
  let end = src.lastIndexOf("\n", at - 1);
  for (let tries = 0; end >= 0 && tries < 4; tries++) {
    const prefix = src.slice(0, end + 1);
    const ex = readScript(prefix, opts);
    if (ex.ok) return ex.commands.length > 0 ? prefix : undefined;
    end = src.lastIndexOf("\n", Math.min(end, ex.at ?? end) - 1);
  }
  return undefined;
}

/** The start of the top-level statement that holds position `p`, or `p`. */
function statementStart(root: ParsedScript, p: number): number {
  for (const s of root.commands) {
    if (s.pos > p) break;
    if (p <= s.end) return s.pos;
  }
  return p;
}

const fail = (reason: string, at?: number): Failure => ({ ok: false, reason, at });

function readScript(src: string, opts: ExtractOptions): Extract<Extraction, { ok: true }> | Failure {
  // A reading of a body that something later broke (see Scope) is done again with less known there.
  // The readings before keep what they found: the first pass or call does what they read.
  let reading: BodyReading = "in-order";
  const earlier: Extract<Extraction, { ok: true }>[] = [];
  for (;;) {
    const out: { broken?: Scope["broken"] } = {};
    const ex = readOnce(src, opts, reading, out);
    if (!ex.ok) return ex;
    if (out.broken === undefined || reading === "opaque") return earlier.length === 0 ? ex : { ...ex, earlier };
    earlier.push(ex);
    reading = out.broken === "environment" || reading !== "in-order" ? "opaque" : "environment";
  }
}

/** One reading of the script; `out.broken` says whether a reading of a body was broken (see Scope). */
function readOnce(src: string, opts: ExtractOptions, reading: BodyReading, out: { broken?: Scope["broken"] }): Extract<Extraction, { ok: true }> | Failure {
  if (src.includes("\0")) return fail("command contains a NUL byte");
  if (Buffer.byteLength(src, "utf8") > MAX_SHELL_BYTES) return fail(`command longer than ${MAX_SHELL_BYTES} bytes`);
  const nesting = substitutionNesting(src);
  if (nesting.depth > MAX_SUBSTITUTION_DEPTH)
    return fail(`command substitutions nested ${nesting.depth} deep, more than the ${MAX_SUBSTITUTION_DEPTH} the gate reads quickly`);
  if (nesting.reads > MAX_SUBSTITUTION_READS) return fail(`command substitutions nested around too much text to read quickly`);
  // `shift` and `set` renumber the parameters, in loops too: then none is known.
  const positional = opts.positional && !/\b(shift|set)\b/.test(src) ? opts.positional : [];
  const scope = new Scope(opts.home, opts.environment, positional, reading);
  const commands: SimpleCommand[] = [];
  const compoundRedirs: Redir[] = [];
  const functions: FunctionDef[] = [];
  const words: Arg[] = [];
  const expansions: string[] = [];
  let error: string | undefined;
  /** Where the error is, in the script's own text (undefined inside a decoded backtick body). */
  let errorPos: number | undefined;
  let truncated = false;
  let steps = 0;
  let nextPipeline = 0;
  let nextChain = 0;

  const read = new Map<SyntaxNode, { readonly arg: Arg; readonly version: number; readonly visible: boolean }>();
  /** Notes a word's reading for the walk's visit of that word (one Arg, not a brace or $IFS split). */
  const remembered = (w: Word, args: Arg[]): Arg[] => {
    if (args.length === 1 && isSingleWord(w)) read.set(w, { arg: args[0]!, version: scope.version, visible: scope.positionalVisible });
    return args;
  };

  const redir = (r: Redirection, where: string): Redir => {
    const fd = r.descriptor?.type === "FileDescriptor" ? r.descriptor.value : r.descriptor?.name;
    if (typeof fd === "number" && !(fd <= MAX_FD)) error ??= `descriptor ${fd} at offset ${r.pos} is larger than bash takes: bash reads it as a word`;
    if (r.type !== "HereDoc") {
      // `cat <<< 72<x`: bash reads `72<` as the next redirection, where a target must be (a syntax error).
      const after = r.target ? where.charCodeAt(r.target.end) : 0;
      if ((after === 60 || after === 62) && /^\d+$/.test(r.target!.text))
        error ??= `a number glued to a redirection at offset ${r.target!.pos}, where bash wants a target`;
      return { fd, op: r.operator, target: r.target ? wordArg(r.target, scope) : null };
    }
    if (!r.closing) error ??= `unterminated here-document at offset ${r.pos}`;
    const quoted = r.delimiter?.quoted ?? false;
    const { text, dynamic } = hereDocText(r.body, quoted, r.operator === "<<-", scope);
    return { fd, op: r.operator, target: null, heredoc: { quoted, body: text, dynamic } };
  };
  /** Per text (the script's, each decoded backtick body's): the positions only some nodes may hold. */
  let suspects: Map<string, Suspects> | undefined;
  const suspectIn = (text: string) => {
    const s = Suspects.of(text);
    if (s) (suspects ??= new Map()).set(text, s);
  };

  let root: ParsedScript | undefined;
  try {
    root = parse(src);
    if (root.errors?.length) {
      const e = root.errors[0]!;
      return fail(`${e.message} at offset ${e.pos}`, statementStart(root, e.pos));
    }
    // Two parallel stacks: the nodes still to visit, and the context each is visited in.
    const nodes: SyntaxNode[] = [root];
    const marks: ScopeSnapshot[] = [];
    const frames: Frame[] = [
      {
        pipeline: -1,
        stage: 0,
        inSubstitution: false,
        inFunction: undefined,
        background: false,
        link: undefined,
        certain: true,
        linkless: false,
        endlessLoop: undefined,
        spawnedInLoop: false,
        text: src,
        inTest: false,
      },
    ];
    suspectIn(src);
    // Children are pushed straight onto `nodes` and put in reverse order there: no array per node.
    const collect = (c: SyntaxNode) => {
      nodes.push(c);
    };
    let nextLoop = 0;
    let visited = 0;
    while (nodes.length > 0 && error === undefined && !truncated) {
      // Only a long reading can be cut short by the clock: a short one cannot owe its length to a pause.
      if ((++visited & 255) === 0 && visited >= 1024 && opts.deadline !== undefined && performance.now() > opts.deadline) {
        truncated = true;
        break;
      }
      const n = nodes.pop()!;
      const frame = frames.pop()!;
      if (n === SCOPE_ENTER) {
        marks.push(scope.snapshot());
        continue;
      }
      if (n === SCOPE_LOOP || n === SCOPE_FUNCTION) {
        marks.push(scope.snapshot());
        scope.enterBody(n === SCOPE_FUNCTION);
        continue;
      }
      if (n === SCOPE_RESTORE || n === SCOPE_FORGET || n === SCOPE_LEAVE_BODY) {
        const mark = marks.pop()!;
        if (n === SCOPE_RESTORE) scope.restore(mark);
        else if (n === SCOPE_FORGET) scope.forgetChangedSince(mark);
        else scope.leaveBody(mark);
        continue;
      }
      // Inside a function body $1 is the function's own argument.
      scope.positionalVisible = frame.inFunction === undefined;
      let child: Frame = frame;
      if (suspects !== undefined) {
        const sus = suspects.get(frame.text);
        if (sus) sus.note(n);
      }
      switch (n.type) {
        case "Script":
          if ("errors" in n && n.errors?.length) {
            const e = n.errors[0]!;
            error = `${e.message} at offset ${e.pos}`;
          }
          // An escaped-backtick body is parsed from its decoded text: its positions index that.
          if (n.source !== undefined && n.source !== frame.text) {
            child = { ...frame, text: n.source };
            suspectIn(n.source);
          }
          break;
        case "Statement":
          if (n.background === true && (!frame.background || (frame.endlessLoop !== undefined && !frame.spawnedInLoop)))
            child = { ...frame, background: true, spawnedInLoop: frame.spawnedInLoop || frame.endlessLoop !== undefined };
          break;
        case "Command": {
          const misread = misreadCommand(n, frame.text);
          if (misread !== undefined) {
            error = misread;
            break;
          }
          // What reading this command may still cost; past it the reading stops (see `limit`).
          const left = opts.limit === undefined ? Infinity : opts.limit - steps;
          const cost = new StepCount();
          let own: Redir[] = NO_REDIRS as Redir[];
          if (n.redirects.length > 0) {
            own = [];
            for (const r of n.redirects) {
              own.push(redir(r, frame.text));
              if (cost.redirect() > left) break;
            }
          }
          // Plain loops: flatMap and spreads cost more than the rest of a simple command's reading.
          const argv: Arg[] = [];
          if (cost.steps <= left && n.name) for (const w of remembered(n.name, commandWords(n.name, scope))) argv.push(cost.word(w));
          for (const a of n.args) {
            if (cost.steps > left) break;
            if (a.type === "Assignment") argv.push(cost.word(assignmentArg(a.name, a.append === true, wordArg(a.value, scope), a.text)));
            else for (const w of remembered(a, commandWords(a, scope))) argv.push(cost.word(w));
          }
          if (cost.steps > left) {
            // Not judged in part: the analysis stops here, and says so.
            truncated = true;
            break;
          }
          const assigns: { name: string; value: Arg }[] = [];
          for (const p of n.prefix) if (p.type === "Assignment") assigns.push({ name: p.name, value: wordArg(p.value, scope) });
          if (definesAlias(argv)) {
            error = "defines an alias, which changes how bash reads later lines where aliases expand";
            break;
          }
          trackAssignments(n, argv, scope, frame);
          commands.push({
            argv,
            assigns,
            redirs: own,
            pipeline: frame.pipeline,
            stage: frame.stage,
            inSubstitution: frame.inSubstitution,
            inFunction: frame.inFunction,
            background: frame.background,
            link: frame.link,
            endlessLoop: frame.endlessLoop,
            spawnedInLoop: frame.spawnedInLoop,
          });
          steps += cost.steps;
          if (steps > (opts.limit ?? Infinity)) truncated = true;
          break;
        }
        case "Literal":
          if (n.text.includes("$[") && OPEN_ARITHMETIC.test(n.text)) error = `an unterminated $[ at offset ${n.pos}`;
          break;
        case "Word": {
          if (!n.parts && n.text.includes("$[") && OPEN_ARITHMETIC.test(n.text)) error = `an unterminated $[ at offset ${n.pos}`;
          // A command's own words were just read: the same reading, unless a variable changed since.
          const seen = read.get(n);
          const arg = seen && seen.version === scope.version && seen.visible === scope.positionalVisible ? seen.arg : wordArg(n, scope);
          words.push(arg);
          if (arg.value?.includes("[") && SUBSCRIPT_CODE.test(arg.value))
            error = `a subscript with a command substitution in ${JSON.stringify(arg.value.slice(0, 40))}: bash runs it where the text is used as a name or in arithmetic`;
          break;
        }
        case "SimpleExpansion":
          expansions.push(n.text.slice(1));
          break;
        case "ParameterExpansion":
          if (n.index && quotedCodeBelow(n.index))
            error = `a quoted command substitution in the subscript of ${JSON.stringify(n.text.slice(0, 40))}: bash runs it`;
          expansions.push(n.parameter);
          if (n.operation?.type === "Default" && (n.operation.operator === "=" || n.operation.operator === ":=")) scope.forget(n.parameter);
          break;
        case "While":
          if (isEndless(n)) child = { ...frame, endlessLoop: nextLoop++, spawnedInLoop: false };
          break;
        case "For":
        case "Select":
          scope.forget(n.name.value);
          // select also sets REPLY to the line it read.
          if (n.type === "Select") scope.forget("REPLY");
          break;
        case "Coproc":
          if (n.name) scope.forget(n.name.value);
          break;
        case "ArithmeticCommand":
        case "ArithmeticFor":
        case "ArithmeticExpansion":
          // `(( x = 1 ))`, `$(( i++ ))`, `for ((i = 0; ...))`: arithmetic may assign any variable (once:
          // a for's header runs again before each pass, not during one).
          if (/[^=!<>]=(?!=)|\+\+|--/.test(frame.text.slice(n.pos, n.type === "ArithmeticFor" ? n.body.pos : n.end))) scope.forgetAll(false);
          if (quotedCodeBelow(n)) error = `a quoted command substitution in arithmetic at offset ${n.pos}: bash runs it`;
          if (n.type === "ArithmeticFor" && isEndless(n)) child = { ...frame, endlessLoop: nextLoop++, spawnedInLoop: false };
          break;
        case "Assignment":
          if (n.index && quotedCodeBelow(n.index))
            error = `a quoted command substitution in the subscript of ${JSON.stringify(n.text.slice(0, 40))}: bash runs it`;
          break;
        case "Redirected":
          for (const r of n.redirects) compoundRedirs.push(redir(r, frame.text));
          break;
        case "Function": {
          const name = wordArg(n.name, scope).value ?? n.name.text;
          functions.push({ name });
          child = { ...frame, inFunction: name };
          break;
        }
        case "CommandExpansion":
        case "ProcessSubstitution":
        case "ArithmeticCommandExpansion":
          child = { ...frame, inSubstitution: true, pipeline: -1, stage: 0, inTest: false };
          break;
        case "TestCommand":
          if (misreadTest(n, frame.text)) error = `a newline after an operand inside [[ ]] at offset ${n.pos}, where bash wants an operator`;
          child = { ...frame, inTest: true };
          break;
        case "ExtendedGlob":
          // Non-interactive bash starts with extglob off; `shopt -s extglob` counts only from the next line.
          if (!frame.inTest) error = `an extended glob ${JSON.stringify(n.text.slice(0, 20))}: a syntax error to bash while extglob is off`;
          break;
        case "AnsiCQuoted":
          // bash keeps a backslash-newline inside $'...'; unbash drops it.
          if (n.text.includes("\\\n")) error = `a line continuation inside $'...' at offset ${n.pos}`;
          break;
        default:
          break;
      }
      if (error !== undefined) {
        errorPos = frame.text === src ? n.pos : undefined;
        break;
      }
      const start = nodes.length;
      forEachChild(n, collect);
      const count = nodes.length - start;
      for (let i = start, j = nodes.length - 1; i < j; i++, j--) {
        const t = nodes[i]!;
        nodes[i] = nodes[j]!;
        nodes[j] = t;
      }
      // nodes[start + count - 1 - i] is child i; frames are pushed in the same (reversed) order.
      const certain = certainChildren(n, frame);
      // Links are for the cd tracking of the top-level list (analyze.ts), not of bodies.
      if (n.type === "AndOr" && frame.certain && !frame.linkless) {
        const chain = nextChain++;
        const andFrom: number[] = [];
        for (let i = 0; i < count; i++) andFrom.push(i > 0 && n.operators[i - 1] === "&&" ? andFrom[i - 1]! : i);
        for (let i = count - 1; i >= 0; i--) frames.push({ ...child, certain: certain(i), link: { chain, index: i, andFrom: andFrom[i]! } });
      } else if (n.type === "Pipeline" && n.commands.length > 1) {
        const id = nextPipeline++;
        const stageOf = new Map<SyntaxNode, number>();
        for (const [i, c] of n.commands.entries()) stageOf.set(c, i);
        const outside: Frame = child.certain ? { ...child, certain: false } : child;
        for (let i = count - 1; i >= 0; i--) {
          const stage = stageOf.get(nodes[start + count - 1 - i]!);
          frames.push(stage === undefined ? outside : { ...child, certain: false, pipeline: id, stage });
        }
      } else {
        // Most children share their parent's context; the uncertain variant is made once per node.
        let uncertain: Frame | undefined;
        for (let i = count - 1; i >= 0; i--)
          frames.push(certain(i) === child.certain ? child : child.certain ? (uncertain ??= { ...child, certain: false }) : { ...child, certain: true });
      }
      if (count > 0) {
        // A body runs in order within one pass or call: walked as certain there (see Scope).
        if (n.type === "For" || n.type === "Select" || n.type === "ArithmeticFor" || n.type === "Function")
          wrapChildren(
            nodes,
            frames,
            start,
            count,
            new Set<SyntaxNode>([n.body]),
            n.type === "Function" ? SCOPE_FUNCTION : SCOPE_LOOP,
            SCOPE_LEAVE_BODY,
            linkless,
          );
        else if (n.type === "While") wrapChildren(nodes, frames, start, count, new Set<SyntaxNode>([n.clause, n.body]), SCOPE_LOOP, SCOPE_LEAVE_BODY, linkless);
        // A substitution runs in a subshell of its own, in order, wherever its word is expanded.
        else if (n.type === "CommandExpansion" || n.type === "ProcessSubstitution" || n.type === "ArithmeticCommandExpansion")
          wrapChildren(nodes, frames, start, count, new Set(kidsOf(nodes, start, count)), SCOPE_ENTER, SCOPE_RESTORE, linkless);
        else if (child.certain) scopeChildren(n, nodes, frames, start, count);
      }
    }
  } catch (e) {
    return fail(`parser failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (error !== undefined) return fail(error, errorPos === undefined ? undefined : statementStart(root, errorPos));
  if (suspects && !truncated) {
    for (const [text, s] of suspects) {
      const problem = s.problem();
      if (problem !== undefined) return fail(problem.reason, text === src ? statementStart(root, problem.at) : undefined);
    }
  }
  scope.settle(new Set(functions.map((f) => f.name)));
  out.broken = scope.broken;
  return { ok: true, commands, compoundRedirs, functions, words, expansions, truncated };
}

function assignmentArg(name: string, append: boolean, value: Arg, text: string): Arg {
  return { text, value: value.value === null ? null : `${name}${append ? "+=" : "="}${value.value}`, glob: false };
}
