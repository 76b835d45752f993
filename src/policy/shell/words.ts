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
 * assignment that ran in order before the word; one assignment the gate cannot follow (in a
 * branch, subshell, `read`, ...) makes the variable unknown for the rest of the script, because
 * that code may run at any later point.
 *
 * A loop body runs again after its own assignments, and a function body whenever it is called:
 * there a value the script assigned before the body is unknown, and what this pass (or call) of
 * the body assigned in order before a word is known (see Body). What is read later can still
 * change what an earlier word of a body reads in the next pass or call: a trap set later, a
 * function defined later that the body calls, a recursive call, an assignment to what the
 * environment held. Such a reading is `broken`, and the script is read again with less known in
 * bodies (BodyReading).
 */
export class Scope {
  private readonly vars = new Map<string, string | null>();
  /** The write that gave each variable its value (see blankedAt). */
  private readonly setAt = new Map<string, number>();
  /** After eval, source, trap, declare (or a function doing arithmetic), no variable is known any more. */
  private opaque = false;
  /**
   * The last write before which every variable became unknown, by arithmetic or `printf -v`: they
   * assign once, so what the script assigns after them is known again.
   */
  private blankedAt = 0;
  readonly home: string;
  /** Variables the environment is known to hold when the script starts (`$PI_CODING_AGENT_DIR`). */
  private readonly environment: ReadonlyMap<string, string>;
  private readonly reading: BodyReading;

  /** $0, $1, ... of a script run as `sh -c SCRIPT ARG0 ARG1 ...`; hidden inside function bodies. */
  private readonly positional: readonly Arg[];
  positionalVisible = true;

  constructor(home: string, environment: ReadonlyMap<string, string> = new Map(), positional: readonly Arg[] = [], reading: BodyReading = "in-order") {
    this.home = home;
    this.environment = environment;
    this.positional = positional;
    this.reading = reading;
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
    const body = this.bodies.at(-1);
    if (body === undefined) {
      if (!this.vars.has(name)) return this.blankedAt > 0 ? null : (this.environment.get(name) ?? null);
      return (this.setAt.get(name) ?? 0) > this.blankedAt ? this.vars.get(name)! : null;
    }
    if (this.reading === "opaque") return null;
    // What this pass of the body assigned before the word, unless the script lost track of it since.
    const own = this.reading === "in-order" ? body.vars.get(name) : undefined;
    if (own !== undefined) {
      if (own.value === null || own.seq <= this.blankedAt || this.vars.get(name) === null) return null;
      body.relied = true;
      if (this.calls.length > own.calls) {
        // Commands ran in between: if one calls a function of the script, that may assign the
        // variable too. Inside a function, a call may run the function itself again (or one
        // around it), and that must assign it nowhere but here.
        const read: CallingRead = { from: own.calls, to: this.calls.length };
        if (this.functionBodies > 0 && (this.lastWrite.get(name) !== own.seq || own.before > this.bodies.find((b) => b.fn)!.writesBefore)) this.hits.push(read);
        else addTo(body.calling, name, read);
      }
      return own.value;
    }
    // Assigned by the script before the body (or by an earlier pass): unknown. What the environment
    // holds is known unless the script assigned it, like HOME (it is read as when the body began).
    if (this.vars.has(name) || this.blankedAt > 0) return null;
    const value = this.environment.get(name);
    if (value === undefined) return null;
    body.relied = true;
    body.unassigned.add(name);
    return value;
  }

  /** Changes whenever what a variable holds may have changed: a word read at the same version reads the same. */
  version = 0;

  /**
   * Set when a reading inside a body took a value that something read later may change before that
   * body runs again: "in-order" when it was a value the body assigned, "environment" when it was
   * one the environment held. Final once settle() has run.
   */
  broken: "in-order" | "environment" | undefined;

  /** The names of the commands run so far (null: only known at run time): any may be a function of the script. */
  private readonly calls: (string | null)[] = [];
  /** Readings across commands some of which must not be functions of the script (see settle). */
  private readonly hits: CallingRead[] = [];

  /** A command runs, before what it assigns itself if it is a builtin that assigns. */
  call(name: string | null): void {
    this.calls.push(name);
  }

  /** Once the script is read, with the names of all the functions it defines: whether a reading was broken. */
  settle(functions: ReadonlySet<string>): void {
    if (this.broken !== undefined || this.hits.length === 0) return;
    const before: number[] = [0];
    for (const c of this.calls) before.push(before.at(-1)! + (c === null || functions.has(c) ? 1 : 0));
    if (this.hits.some((h) => before[h.to]! > before[h.from]!)) this.broken = "in-order";
  }

  /** An assignment that certainly ran, in order: later words see the value. */
  set(name: string, value: string | null): void {
    const write = this.write(name);
    if (this.vars.has(name) && this.vars.get(name) === null) return; // unknown stays unknown
    this.put(this.vars, name, value);
    this.put(this.setAt, name, write.seq);
    const body = this.bodies.at(-1);
    if (body) this.put(body.vars, name, { value, seq: write.seq, before: write.before, calls: this.calls.length });
    this.version++;
  }

  /** `NAME+=value`, certainly run: the value appended to what the variable holds, if that is known (or it is certainly unset). */
  append(name: string, value: string | null): void {
    const held = this.get(name);
    const unset = held === null && !this.opaque && this.bodies.length === 0 && this.blankedAt === 0 && !this.vars.has(name) && !this.environment.has(name);
    this.set(name, value === null || (held === null && !unset) ? null : (held ?? "") + value);
  }

  /** An assignment that may or may not run, possibly later. */
  forget(name: string): void {
    this.write(name);
    this.put(this.vars, name, null);
    const body = this.bodies.at(-1);
    if (body) this.put(body.vars, name, UNKNOWN);
    this.version++;
  }

  /**
   * After this no variable is known. `lasting`: the command may also leave code behind that runs
   * later, between any two commands (a trap, a function, a nameref: eval, source, trap, declare),
   * not only assign once (arithmetic, `printf -v`).
   */
  forgetAll(lasting: boolean): void {
    const all = [...this.bodies, this.called];
    if (all.some((b) => b.unassigned.size > 0)) this.broken = "environment";
    else if (lasting && all.some((b) => b.relied)) this.broken ??= "in-order";
    else if (this.functionBodies > 0) for (const b of all) this.hitAll(b.calling);
    if (lasting) this.opaque = true;
    else this.blankedAt = ++this.writes;
    this.version++;
  }

  /**
   * The changes made to the variables (and the bodies' own) while a snapshot is open, to undo
   * them or to see what changed: a snapshot costs nothing however many variables there are.
   */
  private readonly journal: Change[] = [];
  private openSnapshots = 0;

  private put<V>(map: Map<string, V>, key: string, value: V): void {
    if (this.openSnapshots > 0) this.journal.push({ map: map as Map<string, unknown>, key, had: map.has(key), old: map.get(key) });
    map.set(key, value);
  }

  private close(): void {
    if (--this.openSnapshots === 0) this.journal.length = 0;
    this.version++;
  }

  /** What the variables hold now, to go back to after a subshell or to compare with after a branch. Each is closed once, by restore or forgetChangedSince. */
  snapshot(): ScopeSnapshot {
    this.openSnapshots++;
    return { at: this.journal.length, opaque: this.opaque, blankedAt: this.blankedAt, body: this.bodies.at(-1) };
  }

  /** Leaving a subshell: its assignments do not reach the shell that started it. */
  restore(s: ScopeSnapshot): void {
    for (let i = this.journal.length - 1; i >= s.at; i--) {
      const c = this.journal[i]!;
      if (c.had) c.map.set(c.key, c.old);
      else c.map.delete(c.key);
    }
    this.journal.length = s.at;
    this.opaque = s.opaque;
    this.blankedAt = s.blankedAt;
    this.close();
  }

  /** Leaving a branch that may not have run: what it assigned is unknown after it. */
  forgetChangedSince(s: ScopeSnapshot): void {
    const body = this.bodies.at(-1);
    const own = body !== undefined && body === s.body ? body.vars : undefined;
    // What each variable held at the snapshot (the first change since), and whether it held
    // anything else since: a branch or body may stop part way (break, continue, return), so a
    // value it restores by its end may never be restored (for i in 1; do T=~; break; T=build; done).
    const vars = new Map<string, Change>();
    const bodyVars = new Map<string, Change>();
    const changed = new Set<string>();
    const ownChanged = new Set<string>();
    for (let i = s.at; i < this.journal.length; i++) {
      const c = this.journal[i]!;
      const first = c.map === this.vars ? vars : c.map === own ? bodyVars : undefined;
      if (first === undefined) continue;
      const f = first.get(c.key);
      if (f === undefined) first.set(c.key, c);
      else if (c.had !== f.had || c.old !== f.old) (first === vars ? changed : ownChanged).add(c.key);
    }
    for (const [k, c] of vars)
      if (!c.had || changed.has(k) || c.old !== this.vars.get(k)) {
        this.put(this.vars, k, null);
        if (body) this.put(body.vars, k, UNKNOWN);
      }
    if (own) for (const [k, c] of bodyVars) if (!c.had || ownChanged.has(k) || c.old !== own.get(k)) this.put(own, k, UNKNOWN);
    this.close();
  }

  /** The loop and function bodies being read, innermost last. */
  private readonly bodies: Body[] = [];
  private functionBodies = 0;
  /** What the readings of function bodies already read relied on: a function body runs again at every call. */
  private readonly called: Body = newBody(false, 0);
  /** Writes of variables so far, and the last write of each. */
  private writes = 0;
  private readonly lastWrite = new Map<string, number>();

  /** Entering a loop or function body: see get. */
  enterBody(fn: boolean): void {
    this.bodies.push(newBody(fn, this.writes));
    if (fn) this.functionBodies++;
    this.version++;
  }

  /** Leaving a loop or function body: what it assigned is unknown after it, and the rest is as before. */
  leaveBody(s: ScopeSnapshot): void {
    const body = this.bodies.pop()!;
    if (body.fn) this.functionBodies--;
    // What a loop body's readings relied on matters while the bodies around it may run again; a
    // function body's, wherever the function may be called.
    const into = body.fn ? this.called : this.bodies.at(-1);
    if (into) {
      into.relied ||= body.relied;
      for (const [n, reads] of body.calling) for (const r of reads) addTo(into.calling, n, r);
      for (const n of body.unassigned) into.unassigned.add(n);
    }
    // Arithmetic in a function body assigns at every call, after whatever the script assigned.
    if (body.fn && this.blankedAt > s.blankedAt) this.opaque = true;
    this.forgetChangedSince(s);
  }

  /**
   * A variable is assigned (or may be): what a reading in a body relied on changes if the body may
   * run again after this and before that reading (a function body: at any later call).
   */
  private write(name: string): { seq: number; before: number } {
    const before = this.lastWrite.get(name) ?? 0;
    const seq = ++this.writes;
    this.lastWrite.set(name, seq);
    const called = this.called;
    if (this.bodies.length === 0 && called.unassigned.size === 0 && called.calling.size === 0) return { seq, before };
    // The environment's value was read in a body: the next pass or call reads this one.
    if (called.unassigned.has(name) || this.bodies.some((b) => b.unassigned.has(name))) this.broken = "environment";
    // In a function body (run by whatever calls it) any assignment may be made by a call between
    // an assignment and a reading in a body that runs again, or in the function itself.
    else if (this.functionBodies > 0) {
      this.hit(called.calling, name);
      for (const b of this.bodies) this.hit(b.calling, name);
    }
    return { seq, before };
  }

  private hit(calling: Map<string, CallingRead[]>, name: string): void {
    const reads = calling.get(name);
    if (reads === undefined) return;
    for (const r of reads) this.hits.push(r);
    calling.delete(name);
  }

  private hitAll(calling: Map<string, CallingRead[]>): void {
    for (const name of [...calling.keys()]) this.hit(calling, name);
  }
}

/**
 * What the readings of loop and function bodies take as known: "in-order" what one pass assigned
 * before a word and what the environment holds; "environment" only what the environment holds
 * (the reading once an in-order one was broken); "opaque" nothing but HOME (once a reading of the
 * environment was broken too).
 */
export type BodyReading = "in-order" | "environment" | "opaque";

/** One pass of a loop body or one call of a function body, as far as it has been read. */
interface Body {
  readonly fn: boolean;
  /** Writes of variables before the body began. */
  readonly writesBefore: number;
  /** What this pass assigned so far, in order (UNKNOWN where that may not have run). */
  readonly vars: Map<string, Assigned>;
  /** A reading in the body (or in one inside it) took a value the body assigned or the environment held. */
  relied: boolean;
  /** Variables read from the body's own assignment with commands run in between, and those readings. */
  readonly calling: Map<string, CallingRead[]>;
  /** Variables read as the environment holds them. */
  readonly unassigned: Set<string>;
}

interface Change {
  readonly map: Map<string, unknown>;
  readonly key: string;
  readonly had: boolean;
  readonly old: unknown;
}

interface Assigned {
  readonly value: string | null;
  /** This write, the variable's write before it, and the commands run before it. */
  readonly seq: number;
  readonly before: number;
  readonly calls: number;
}

/** A reading of a body's own assignment with the commands `from` .. `to` - 1 run in between. */
interface CallingRead {
  readonly from: number;
  readonly to: number;
}

const UNKNOWN: Assigned = { value: null, seq: -1, before: -1, calls: -1 };

function newBody(fn: boolean, writesBefore: number): Body {
  return { fn, writesBefore, vars: new Map(), relied: false, calling: new Map(), unassigned: new Set() };
}

function addTo(m: Map<string, CallingRead[]>, name: string, r: CallingRead): void {
  const reads = m.get(name);
  if (reads) reads.push(r);
  else m.set(name, [r]);
}

export interface ScopeSnapshot {
  /** The length of the journal when it was taken. */
  readonly at: number;
  readonly opaque: boolean;
  readonly blankedAt: number;
  /** The innermost body, if the snapshot was taken in one. */
  readonly body: Body | undefined;
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
