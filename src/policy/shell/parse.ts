// Every simple command and redirection in a bash string, read statically with unbash.
//
// unbash is tolerant: it returns a partial tree plus `errors`, and parses substitutions lazily,
// so errors of nested scripts only appear when the walk reaches them. We check every level,
// walk with an explicit stack (deep nesting must not overflow the JS stack), and treat an
// unterminated here-document as an error although bash only warns about it.

import { forEachChild, parse } from "unbash";
import type { Command, Redirection, SyntaxNode } from "unbash";
import { commandWords, dynamicBody, Scope, wordArg, type Arg } from "./words.ts";

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
    }
  | { readonly ok: false; readonly reason: string };

export interface ExtractOptions {
  /** Value for `$HOME`, `${HOME}` and a leading unquoted `~`. */
  readonly home: string;
  /** Environment variables whose value is known (`PI_CODING_AGENT_DIR`). */
  readonly environment?: ReadonlyMap<string, string>;
  /** The script's $0, $1, ... when it is run as `sh -c SCRIPT ARG0 ARG1 ...`. */
  readonly positional?: readonly Arg[];
}

interface Frame {
  readonly node: SyntaxNode;
  readonly pipeline: number;
  readonly stage: number;
  readonly inSubstitution: boolean;
  readonly inFunction: string | undefined;
  readonly background: boolean;
  readonly link: Link | undefined;
  /** Runs exactly once, in order, in the script's own shell: its assignments are certain. */
  readonly certain: boolean;
  readonly endlessLoop: number | undefined;
  readonly spawnedInLoop: boolean;
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
const SETS_NAMED_VARIABLES = new Set(["read", "mapfile", "readarray", "getopts", "unset", "let", "local"]);
/** Builtins after which any variable may hold anything. */
const SETS_ANY_VARIABLE = new Set(["eval", "source", ".", "trap", "declare", "typeset"]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What one command does to the script's variables, after its own words were read. */
function trackAssignments(n: Command, argv: readonly Arg[], scope: Scope, certain: boolean): void {
  const name = argv[0]?.value;
  if (!n.name) {
    for (const a of n.prefix) {
      if (a.type !== "Assignment") continue;
      const value = wordArg(a.value, scope).value;
      const known = certain && !a.index && a.value?.type !== "ArrayValue";
      if (!known) scope.forget(a.name);
      else scope.set(a.name, a.append ? (value === null ? null : (scope.get(a.name) ?? "") + value) : value);
    }
    return;
  }
  if (name === null || name === undefined) return;
  if (name === "export" || name === "readonly") {
    for (const a of n.args) {
      if (a.type !== "Assignment") continue;
      if (certain && !a.append && !a.index) scope.set(a.name, wordArg(a.value, scope).value);
      else scope.forget(a.name);
    }
  } else if (SETS_ANY_VARIABLE.has(name) || (name === "printf" && argv.some((a) => a.value === "-v"))) {
    scope.forgetAll();
  } else if (SETS_NAMED_VARIABLES.has(name)) {
    for (const a of argv.slice(1)) if (a.value !== null && NAME.test(a.value)) scope.forget(a.value);
  }
}

/** Whether the children of a node run exactly once, in order, in the same shell as the node. */
function certainChildren(n: SyntaxNode, frame: Frame): (index: number) => boolean {
  if (!frame.certain) return () => false;
  switch (n.type) {
    case "Script":
    case "CompoundList":
    case "BraceGroup":
    case "Redirected":
    case "Command":
      return () => true;
    case "Statement":
      return () => n.background !== true;
    case "AndOr":
      return (i) => i === 0; // later commands of `a && b || c` may not run
    case "Pipeline":
      return () => n.commands.length <= 1; // every stage of a real pipeline runs in a subshell
    default:
      return () => false;
  }
}

export function extractCommands(src: string, opts: ExtractOptions): Extraction {
  if (src.includes("\0")) return { ok: false, reason: "command contains a NUL byte" };
  if (Buffer.byteLength(src, "utf8") > MAX_SHELL_BYTES) return { ok: false, reason: `command longer than ${MAX_SHELL_BYTES} bytes` };
  // `shift` and `set` renumber the parameters, in loops too: then none is known.
  const positional = opts.positional && !/\b(shift|set)\b/.test(src) ? opts.positional : [];
  const scope = new Scope(opts.home, opts.environment, positional);
  const commands: SimpleCommand[] = [];
  const compoundRedirs: Redir[] = [];
  const functions: FunctionDef[] = [];
  const words: Arg[] = [];
  const expansions: string[] = [];
  let error: string | undefined;
  let nextPipeline = 0;
  let nextChain = 0;

  const redir = (r: Redirection): Redir => {
    const fd = r.descriptor?.type === "FileDescriptor" ? r.descriptor.value : r.descriptor?.name;
    if (r.type !== "HereDoc") return { fd, op: r.operator, target: r.target ? wordArg(r.target, scope) : null };
    if (!r.closing) error ??= `unterminated here-document at offset ${r.pos}`;
    const quoted = r.delimiter?.quoted ?? false;
    const dynamic = !quoted && dynamicBody(r.body.parts ?? [], scope);
    return { fd, op: r.operator, target: null, heredoc: { quoted, body: r.body.text, dynamic } };
  };

  try {
    const root = parse(src);
    if (root.errors?.length) {
      const e = root.errors[0]!;
      return { ok: false, reason: `${e.message} at offset ${e.pos}` };
    }
    const stack: Frame[] = [{ node: root, pipeline: -1, stage: 0, inSubstitution: false, inFunction: undefined, background: false, link: undefined, certain: true, endlessLoop: undefined, spawnedInLoop: false }];
    let nextLoop = 0;
    while (stack.length > 0 && error === undefined) {
      const frame = stack.pop()!;
      const n = frame.node;
      // Inside a function body $1 is the function's own argument.
      scope.positionalVisible = frame.inFunction === undefined;
      let child: Omit<Frame, "node"> = frame;
      switch (n.type) {
        case "Script":
          if ("errors" in n && n.errors?.length) {
            const e = n.errors[0]!;
            error = `${e.message} at offset ${e.pos}`;
          }
          break;
        case "Statement":
          child = {
            ...frame,
            background: frame.background || n.background === true,
            spawnedInLoop: frame.spawnedInLoop || (frame.endlessLoop !== undefined && n.background === true),
          };
          break;
        case "Command": {
          const own = n.redirects.map(redir);
          const argv = [
            ...(n.name ? commandWords(n.name, scope) : []),
            ...n.args.flatMap((a) =>
              a.type === "Assignment" ? [assignmentArg(a.name, a.append === true, wordArg(a.value, scope), a.text)] : commandWords(a, scope),
            ),
          ];
          const assigns = n.prefix.flatMap((p) => (p.type === "Assignment" ? [{ name: p.name, value: wordArg(p.value, scope) }] : []));
          trackAssignments(n, argv, scope, frame.certain);
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
          break;
        }
        case "Word":
          words.push(wordArg(n, scope));
          break;
        case "SimpleExpansion":
          expansions.push(n.text.slice(1));
          break;
        case "ParameterExpansion":
          expansions.push(n.parameter);
          if (n.operation?.type === "Default" && (n.operation.operator === "=" || n.operation.operator === ":=")) scope.forget(n.parameter);
          break;
        case "While":
          if (isEndless(n)) child = { ...frame, endlessLoop: nextLoop++, spawnedInLoop: false };
          break;
        case "For":
        case "Select":
          scope.forget(n.name.value);
          break;
        case "Coproc":
          if (n.name) scope.forget(n.name.value);
          break;
        case "ArithmeticCommand":
        case "ArithmeticFor":
        case "ArithmeticExpansion":
          // `(( x = 1 ))`, `$(( i++ ))`: arithmetic may assign any variable.
          if (n.type === "ArithmeticFor" || /[^=!<>]=(?!=)|\+\+|--/.test(src.slice(n.pos, n.end))) scope.forgetAll();
          if (n.type === "ArithmeticFor" && isEndless(n)) child = { ...frame, endlessLoop: nextLoop++, spawnedInLoop: false };
          break;
        case "Redirected":
          compoundRedirs.push(...n.redirects.map(redir));
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
          child = { ...frame, inSubstitution: true, pipeline: -1, stage: 0 };
          break;
        default:
          break;
      }
      const kids: SyntaxNode[] = [];
      forEachChild(n, (c) => {
        kids.push(c);
      });
      const certain = certainChildren(n, frame);
      if (n.type === "AndOr" && frame.certain) {
        const chain = nextChain++;
        const andFrom: number[] = [];
        for (let i = 0; i < kids.length; i++) andFrom.push(i > 0 && n.operators[i - 1] === "&&" ? andFrom[i - 1]! : i);
        for (let i = kids.length - 1; i >= 0; i--) stack.push({ ...child, node: kids[i]!, certain: certain(i), link: { chain, index: i, andFrom: andFrom[i]! } });
      } else if (n.type === "Pipeline" && n.commands.length > 1) {
        const id = nextPipeline++;
        for (let i = kids.length - 1; i >= 0; i--) {
          const k = kids[i]!;
          const stage = n.commands.indexOf(k as never);
          stack.push({ ...child, node: k, certain: false, pipeline: stage >= 0 ? id : child.pipeline, stage: stage >= 0 ? stage : child.stage });
        }
      } else {
        for (let i = kids.length - 1; i >= 0; i--) stack.push({ ...child, node: kids[i]!, certain: certain(i) });
      }
    }
  } catch (e) {
    return { ok: false, reason: `parser failed: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (error !== undefined) return { ok: false, reason: error };
  return { ok: true, commands, compoundRedirs, functions, words, expansions };
}

function assignmentArg(name: string, append: boolean, value: Arg, text: string): Arg {
  return { text, value: value.value === null ? null : `${name}${append ? "+=" : "="}${value.value}`, glob: false };
}
