// The static value of a shell word, as far as it can be known before the script runs: quotes,
// escapes, `$HOME`, a leading `~`, literal brace expansion, `$IFS` splitting, and variables the
// script itself set unconditionally before the word. Anything else makes the word dynamic.

import type { ArrayValue, HereDocBody, ParameterOperation, ParsedScript, Word, WordPart } from "unbash";

/** One word. `value` is null when the word is only known at run time (expansions, substitutions). */
export interface Arg {
  readonly text: string;
  readonly value: string | null;
  /** Contains an unquoted glob or extglob: expands to an unknown set of paths. */
  readonly glob: boolean;
  /** A path `find` produces at run time (`-exec ... {}`, `find | xargs`): what is known about it. */
  readonly found?: FoundPath;
  /**
   * For a word only known at run time that names one entry directly inside a known directory
   * (`/home/$USER`, `"$HOME/$X"`): that directory. If the unknown part is empty, it is the directory.
   */
  readonly within?: string;
}

/** Somewhere below `base`, at any depth; named like `name` when the find expression forces it. */
export interface FoundPath {
  readonly base: Arg;
  readonly name: string | undefined;
}

/**
 * Variables as the script has set them so far. A value is known only after an unconditional
 * top-level assignment; one assignment the gate cannot follow (in a branch, loop, function,
 * subshell, `read`, ...) makes the variable unknown for the rest of the script, because that
 * code may run at any later point.
 */
export class Scope {
  private readonly vars = new Map<string, string | null>();
  /** After eval, source, trap or arithmetic assignments, no variable is known any more. */
  private opaque = false;
  readonly home: string;
  /** Variables the environment is known to hold when the script starts (`$PI_CODING_AGENT_DIR`). */
  private readonly environment: ReadonlyMap<string, string>;

  /** $0, $1, ... of a script run as `sh -c SCRIPT ARG0 ARG1 ...`; hidden inside function bodies. */
  private readonly positional: readonly Arg[];
  positionalVisible = true;

  constructor(home: string, environment: ReadonlyMap<string, string> = new Map(), positional: readonly Arg[] = []) {
    this.home = home;
    this.environment = environment;
    this.positional = positional;
  }

  /** Whether `sh -c` gave the script any parameters (most scripts have none). */
  get hasParameters(): boolean {
    return this.positional.length > 0;
  }

  /** The argument bound to `$n`, if the script was given one. */
  parameter(n: number): Arg | undefined {
    return this.positionalVisible ? this.positional[n] : undefined;
  }

  get(name: string): string | null {
    if (name === "HOME") return this.home;
    if (this.opaque) return null;
    // In a loop or function body, what the script assigns is unknown; what the environment holds
    // is known unless the script assigned it (like HOME, it is read as it was when the body began).
    if (this.bodies > 0 && this.vars.has(name)) return null;
    if (this.vars.has(name)) return this.vars.get(name)!;
    return this.environment.get(name) ?? null;
  }

  /** Changes whenever what a variable holds may have changed: a word read at the same version reads the same. */
  version = 0;

  /** An assignment that certainly ran, in order: later words see the value. */
  set(name: string, value: string | null): void {
    if (this.vars.has(name) && this.vars.get(name) === null) return; // unknown stays unknown
    this.vars.set(name, value);
    this.version++;
  }

  /** An assignment that may or may not run, possibly later. */
  forget(name: string): void {
    this.vars.set(name, null);
    this.version++;
  }

  forgetAll(): void {
    this.opaque = true;
    this.version++;
  }

  /** What the variables hold now, to go back to after a subshell or to compare with after a branch. */
  snapshot(): ScopeSnapshot {
    return { vars: new Map(this.vars), opaque: this.opaque };
  }

  /** Leaving a subshell: its assignments do not reach the shell that started it. */
  restore(s: ScopeSnapshot): void {
    this.vars.clear();
    for (const [k, v] of s.vars) this.vars.set(k, v);
    this.opaque = s.opaque;
    this.version++;
  }

  /** Leaving a branch that may not have run: what it assigned is unknown after it. */
  forgetChangedSince(s: ScopeSnapshot): void {
    for (const [k, v] of this.vars) if (!s.vars.has(k) || s.vars.get(k) !== v) this.vars.set(k, null);
    this.version++;
  }

  /** Loop and function bodies being read (see get). */
  private bodies = 0;

  /** Entering a loop or function body: see get. */
  enterBody(): void {
    this.bodies++;
    this.version++;
  }

  /** Leaving a loop or function body: what it assigned is unknown after it, and the rest is as before. */
  leaveBody(s: ScopeSnapshot): void {
    this.bodies--;
    this.forgetChangedSince(s);
  }
}

export interface ScopeSnapshot {
  readonly vars: ReadonlyMap<string, string | null>;
  readonly opaque: boolean;
}

const SPECIAL_PARAMETER = /^([0-9@*#?$!-]|[0-9]+)$/;

function variable(name: string, scope: Scope): string | null {
  if (/^[0-9]+$/.test(name)) return scope.parameter(Number(name))?.value ?? null;
  return SPECIAL_PARAMETER.test(name) ? null : scope.get(name);
}

/** A word that is one positional parameter and nothing else (`$1`, `"${2}"`): the number. */
function soleParameter(parts: readonly WordPart[]): number | undefined {
  const pieces = flatten(parts);
  if (pieces.length !== 1) return undefined;
  const p = pieces[0]!.part;
  const name =
    p.type === "SimpleExpansion" ? p.text.slice(1) : p.type === "ParameterExpansion" && !p.prefix && !p.index && !p.operation ? p.parameter : undefined;
  return name !== undefined && /^[0-9]$/.test(name) ? Number(name) : undefined;
}

/** The value of a known, non-empty variable under `${X-...}`, `${X:?}`, `${X:+y}` and friends. */
function defaultOperation(value: string | null, op: ParameterOperation | undefined, scope: Scope): string | null {
  if (!op) return value;
  if (op.type !== "Default" || value === null || value === "") return null;
  if (op.operator === "+" || op.operator === ":+") return wordArg(op.operand, scope).value;
  return value;
}

/** The static text of one part, or null. Unquoted variable values that would be split are unknown. */
function staticPart(p: WordPart, scope: Scope, quoted: boolean): string | null {
  switch (p.type) {
    case "Literal":
    case "SingleQuoted":
      return p.value;
    case "AnsiCQuoted":
      // unbash leaves \x{HH} and \U past U+10FFFF undecoded and turns bytes that are no UTF-8
      // (\xff, \377, lone surrogates) into U+FFFD; bash decodes them all: `$'\x{72}\x{6d}'` is rm.
      return /\\x\{|\\U/.test(p.text) || p.value.includes("\uFFFD") ? null : p.value;
    case "Glob":
      return p.text;
    case "DoubleQuoted":
    case "LocaleString": {
      let s = "";
      for (const q of p.parts) {
        const v = staticPart(q, scope, true);
        if (v === null) return null;
        s += v;
      }
      return s;
    }
    case "SimpleExpansion":
      return unsplit(variable(p.text.slice(1), scope), quoted);
    case "ParameterExpansion":
      if (p.prefix || p.index) return null;
      return unsplit(defaultOperation(variable(p.parameter, scope), p.operation, scope), quoted);
    case "CommandExpansion":
      return unsplit(printedConstant(p.script, scope), quoted);
    default:
      return null;
  }
}

/**
 * What `$(echo WORDS)` or `$(printf FORMAT WORDS)` prints, when the words are constants:
 * `rm -rf "$(echo /)"` removes / as surely as `rm -rf /`.
 */
function printedConstant(script: ParsedScript | undefined, scope: Scope): string | null {
  if (!script || script.errors?.length || script.commands.length !== 1) return null;
  const stmt = script.commands[0]!;
  const cmd = stmt.command;
  if (stmt.background || cmd.type !== "Command" || !cmd.name || cmd.prefix.length > 0 || cmd.redirects.length > 0) return null;
  const words: string[] = [];
  for (const w of [cmd.name, ...cmd.args]) {
    const v = w.type === "Word" ? wordArg(w, scope) : null;
    if (!v || v.value === null || v.glob) return null;
    words.push(v.value);
  }
  const [name, ...args] = words;
  if (name === "echo") {
    const text = args[0] === "-n" ? args.slice(1) : args;
    return text.some((a) => a.startsWith("-")) ? null : text.join(" ");
  }
  if (name === "printf" && args.length > 0 && !args[0]!.includes("\\")) {
    const [format, ...values] = args as [string, ...string[]];
    const slots = format.split("%s");
    if (slots.some((x) => x.includes("%")) || slots.length - 1 !== values.length) return null;
    return slots.reduce((acc, x, i) => acc + (i > 0 ? values[i - 1]! : "") + x, "");
  }
  return null;
}

function unsplit(value: string | null, quoted: boolean): string | null {
  return value !== null && !quoted && /\s/.test(value) ? null : value;
}

/** Whether an unquoted part expands to text containing glob characters. */
function globbing(p: WordPart, scope: Scope): boolean {
  if (p.type === "Glob" || p.type === "ExtendedGlob") return true;
  if (p.type !== "SimpleExpansion" && p.type !== "ParameterExpansion") return false;
  return /[*?[]/.test(staticPart(p, scope, false) ?? "");
}

/**
 * The text a here-document hands to its command, as bash makes it: an unquoted body with its
 * escapes (\$, \`, \\) and line continuations done and its expansions put in, a quoted one as
 * written; `<<-` drops the tabs that start each line as written (not those of a continued line,
 * nor those an expansion brings). `dynamic` when some expansion is only known at run time: the
 * text then holds that expansion as written, for the hazards that can be seen in it.
 */
export function hereDocText(body: HereDocBody, quoted: boolean, stripTabs: boolean, scope: Scope): { text: string; dynamic: boolean } {
  if (quoted) return { text: stripTabs ? body.text.replace(/^\t+/gm, "") : body.text, dynamic: false };
  // Without expansions unbash gives the body as written only: its escapes are done here. A `$`
  // before a line continuation starts an expansion once the lines are joined.
  if (!body.parts) return { text: unescapeBody(body.text, stripTabs), dynamic: /\$\\\n/.test(body.text) };
  let text = "";
  let dynamic = false;
  let lineStart = true;
  for (const p of body.parts) {
    const v = staticPart(p, scope, true);
    if (v === null) dynamic = true;
    if (p.type !== "Literal" || !stripTabs) {
      text += v ?? p.text;
      lineStart = false;
      continue;
    }
    for (const c of v!) {
      if (lineStart && c === "\t") continue;
      text += c;
      lineStart = c === "\n";
    }
  }
  return { text, dynamic };
}

/** An unquoted here-document body without expansions: `\\` keeps only $, `, \\ and newline (dropped with it). */
function unescapeBody(raw: string, stripTabs: boolean): string {
  let out = "";
  let lineStart = true;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (lineStart && stripTabs && c === "\t") continue;
    lineStart = false;
    if (c === "\\") {
      const d = raw[i + 1];
      if (d === "\n") {
        i++;
        continue;
      }
      if (d === "$" || d === "`" || d === "\\") {
        out += d;
        i++;
        continue;
      }
    }
    out += c;
    if (c === "\n") lineStart = true;
  }
  return out;
}

/** `~`, `~/x`, and `~user/x` (another user's home, by the usual layout: `/root` or a sibling of ours). */
function expandTilde(value: string, home: string): string {
  if (value === "~") return home;
  if (value.startsWith("~/")) return home + value.slice(1);
  const user = /^~([a-z_][a-z0-9_.-]*)(\/|$)/i.exec(value);
  if (!user) return value;
  const dir = user[1] === "root" ? "/root" : `${home.replace(/\/[^/]*\/?$/, "")}/${user[1]}`;
  return dir + value.slice(user[0].length - user[2]!.length);
}

/**
 * Tilde expansion of an unquoted word's leading text. A word shaped like an assignment
 * (`of=~/.bashrc`, `X=a:~/b`) also expands after its `=` and after each `:`, as bash does
 * for arguments too: `dd of=~/.bashrc` writes the home directory's file.
 */
function expandLeadingTildes(value: string, home: string): string {
  if (!value.includes("~")) return value;
  const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/.exec(value);
  if (!assignment) return expandTilde(value, home);
  const rest = value.slice(assignment[0].length);
  return (
    assignment[0] +
    rest
      .split(":")
      .map((part) => expandTilde(part, home))
      .join(":")
  );
}

export function wordArg(w: Word | ArrayValue | undefined, scope: Scope): Arg {
  if (!w) return { text: "", value: "", glob: false };
  if (w.type === "ArrayValue") return { text: "(...)", value: null, glob: false };
  if (!w.parts) return { text: w.text, value: expandLeadingTildes(w.value, scope.home), glob: false };
  return partsArg(w.parts, w.text, scope);
}

/** The parts of a word with double quotes opened up, so a partly known word keeps its known start. */
interface Piece {
  readonly part: WordPart;
  readonly quoted: boolean;
}

function flatten(parts: readonly WordPart[]): Piece[] {
  const out: Piece[] = [];
  for (const p of parts) {
    if (p.type === "DoubleQuoted" || p.type === "LocaleString") for (const q of p.parts) out.push({ part: q as WordPart, quoted: true });
    else out.push({ part: p, quoted: false });
  }
  return out;
}

function partsArg(parts: readonly WordPart[], text: string, scope: Scope): Arg {
  // A parameter bound to a path find selects keeps what is known about that path.
  const n = scope.hasParameters ? soleParameter(parts) : undefined;
  const bound = n === undefined ? undefined : scope.parameter(n);
  if (bound?.found) return { ...bound, text };
  let value: string | null = "";
  let known = "";
  let rest = "";
  let glob = false;
  const pieces = flatten(parts);
  for (let i = 0; i < pieces.length; i++) {
    const { part: p, quoted } = pieces[i]!;
    if (!quoted && globbing(p, scope)) glob = true;
    const v = staticPart(p, scope, quoted);
    if (v === null || value === null) {
      if (value !== null) known = value;
      value = null;
      rest += v ?? "";
      continue;
    }
    // An unquoted leading "~" expands; a quoted one does not.
    value += i === 0 && !quoted && p.type === "Literal" ? expandLeadingTildes(v, scope.home) : v;
  }
  if (value !== null) return { text, value, glob };
  const within = known.endsWith("/") && !/\/./.test(rest) ? known.replace(/(.)\/+$/, "$1") : undefined;
  return within === undefined ? { text, value, glob } : { text, value, glob, within };
}

/** An unquoted `$IFS` or `${IFS}`: with the default IFS it splits the word in two. */
function isIfsSplit(p: WordPart): boolean {
  if (p.type === "SimpleExpansion") return p.text === "$IFS";
  return p.type === "ParameterExpansion" && p.parameter === "IFS" && !p.prefix && !p.index && !p.operation;
}

/** A word that stays one word (no `$IFS` split, no brace expansion): commandWords is then [wordArg]. */
export function isSingleWord(w: Word): boolean {
  const parts = w.parts;
  return !parts?.some((p) => isIfsSplit(p) || p.type === "BraceExpansion");
}

/**
 * The words a command word becomes: unquoted `$IFS` splits it (`rm${IFS}-rf${IFS}/` is `rm -rf /`)
 * and a literal brace expansion multiplies it (`src/{a,b}.ts`, `cfg{,.bak}`, `{1..3}`).
 */
export function commandWords(w: Word, scope: Scope): Arg[] {
  if (isSingleWord(w)) return [wordArg(w, scope)];
  const parts = w.parts!;
  const segments: WordPart[][] = [[]];
  for (const p of parts) {
    if (isIfsSplit(p)) segments.push([]);
    else segments.at(-1)!.push(p);
  }
  const out: Arg[] = [];
  for (const seg of segments) {
    if (seg.length === 0) continue;
    const text = seg.map((p) => p.text).join("");
    const expanded = expandBraces(seg);
    if (!expanded) out.push({ text, value: null, glob: false });
    else
      for (const e of expanded) {
        // An alternative that leaves the word empty and unquoted removes it: `rm {,a}` is `rm a`.
        if (e.every((p) => p.type === "Literal" && p.value === "")) continue;
        out.push(partsArg(e, text, scope));
      }
  }
  return out;
}

const MAX_BRACE_WORDS = 64;

/** Every word a run of parts becomes under brace expansion; null when it cannot be read statically. */
function expandBraces(parts: readonly WordPart[]): WordPart[][] | null {
  let words: WordPart[][] = [[]];
  for (const p of parts) {
    if (p.type !== "BraceExpansion") {
      words = words.map((w) => [...w, p]);
      continue;
    }
    const alts = p.parts
      ? bracePartAlternatives(p.parts)
      : braceAlternatives(p.text)?.map((a): WordPart[] => [{ type: "Literal", pos: p.pos, end: p.end, value: a, text: a }]);
    if (!alts || alts.length * words.length > MAX_BRACE_WORDS) return null;
    words = words.flatMap((w) => alts.map((a) => [...w, ...a]));
  }
  return words;
}

/**
 * `{rm,-rf,$HOME}`: unbash hands over the parts between the braces when some are expansions.
 * Brace expansion happens before parameter expansion, so the alternatives are split at the
 * commas of unquoted literals and each keeps its expansions (`$HOME` is then evaluated as usual).
 * Escaped commas, nested braces and sequences stay unknown.
 */
function bracePartAlternatives(parts: readonly WordPart[]): WordPart[][] | null {
  const alts: WordPart[][] = [[]];
  for (const p of parts) {
    if (p.type === "BraceExpansion") return null;
    if (p.type !== "Literal") {
      alts.at(-1)!.push(p);
      continue;
    }
    if (p.text.includes("\\")) return null;
    p.value.split(",").forEach((piece, i) => {
      if (i > 0) alts.push([]);
      if (piece !== "") alts.at(-1)!.push({ type: "Literal", pos: p.pos, end: p.end, value: piece, text: piece });
    });
  }
  return alts.length > 1 ? alts : null;
}

/** `{a,b,}` and `{1..3}` / `{a..c}`; nested braces, steps and other forms stay unknown. */
function braceAlternatives(text: string): string[] | null {
  const body = text.slice(1, -1);
  if (!text.startsWith("{") || !text.endsWith("}") || /[{}\\]/.test(body)) return null;
  if (body.includes(",")) return body.split(",");
  const seq = /^(-?\d+|[a-zA-Z])\.\.(-?\d+|[a-zA-Z])$/.exec(body);
  if (!seq) return null;
  const [from, to] = [seq[1]!, seq[2]!];
  const numeric = /\d/.test(from) && /\d/.test(to);
  if (!numeric && (/\d/.test(from) || /\d/.test(to))) return null;
  // A leading zero pads every number to the same width (`{01..03}`); a letter range from upper to
  // lower case passes through [ \ ] ^ _ `, which bash treats its own way: neither is followed.
  if (numeric ? /^-?0\d/.test(from) || /^-?0\d/.test(to) : /[A-Z]/.test(from) !== /[A-Z]/.test(to)) return null;
  const a = numeric ? Number(from) : from.charCodeAt(0);
  const b = numeric ? Number(to) : to.charCodeAt(0);
  if (Math.abs(b - a) >= MAX_BRACE_WORDS) return null;
  const out: string[] = [];
  for (let i = a; a <= b ? i <= b : i >= b; i += a <= b ? 1 : -1) out.push(numeric ? String(i) : String.fromCharCode(i));
  return out;
}
