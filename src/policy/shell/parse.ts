// Every simple command and redirection in a bash string, read statically with unbash.
//
// unbash is tolerant: it returns a partial tree plus `errors`, and parses substitutions lazily,
// so errors of nested scripts only appear when the walk reaches them. We check every level,
// walk with an explicit stack (deep nesting must not overflow the JS stack), and treat an
// unterminated here-document as an error although bash only warns about it.

import { forEachChild, parse } from "unbash";
import type { ArrayValue, Redirection, SyntaxNode, Word, WordPart } from "unbash";

export const MAX_SHELL_BYTES = 64 * 1024;

/** One word. `value` is null when the word is only known at run time (expansions, substitutions). */
export interface Arg {
  readonly text: string;
  readonly value: string | null;
  /** Contains an unquoted glob or extglob: expands to an unknown set of paths. */
  readonly glob: boolean;
}

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
    }
  | { readonly ok: false; readonly reason: string };

export interface ExtractOptions {
  /** Value for `$HOME`, `${HOME}` and a leading unquoted `~`. */
  readonly home: string;
}

function staticPart(p: WordPart, home: string): string | null {
  switch (p.type) {
    case "Literal":
    case "SingleQuoted":
    case "AnsiCQuoted":
      return p.value;
    case "Glob":
      return p.text;
    case "DoubleQuoted":
    case "LocaleString": {
      let s = "";
      for (const q of p.parts) {
        const v = staticPart(q, home);
        if (v === null) return null;
        s += v;
      }
      return s;
    }
    case "SimpleExpansion":
      return p.text === "$HOME" ? home : null;
    case "ParameterExpansion":
      return p.parameter === "HOME" && !p.prefix && !p.operation && !p.index ? home : null;
    default:
      return null;
  }
}

function expandTilde(value: string, home: string): string {
  if (value === "~") return home;
  if (value.startsWith("~/")) return home + value.slice(1);
  return value;
}

export function wordArg(w: Word | ArrayValue | undefined, home: string): Arg {
  if (!w) return { text: "", value: "", glob: false };
  if (w.type === "ArrayValue") return { text: "(...)", value: null, glob: false };
  const parts = w.parts;
  if (!parts) return { text: w.text, value: expandTilde(w.value, home), glob: false };
  let value: string | null = "";
  let glob = false;
  parts.forEach((p, i) => {
    if (p.type === "Glob" || p.type === "ExtendedGlob") glob = true;
    const v = staticPart(p, home);
    if (v === null || value === null) {
      value = null;
      return;
    }
    // An unquoted leading "~" expands; a quoted one does not.
    value += i === 0 && p.type === "Literal" ? expandTilde(v, home) : v;
  });
  return { text: w.text, value, glob };
}

interface Frame {
  readonly node: SyntaxNode;
  readonly pipeline: number;
  readonly stage: number;
  readonly inSubstitution: boolean;
  readonly inFunction: string | undefined;
  readonly background: boolean;
}

export function extractCommands(src: string, opts: ExtractOptions): Extraction {
  if (src.includes("\0")) return { ok: false, reason: "command contains a NUL byte" };
  if (Buffer.byteLength(src, "utf8") > MAX_SHELL_BYTES) return { ok: false, reason: `command longer than ${MAX_SHELL_BYTES} bytes` };
  const { home } = opts;
  const commands: SimpleCommand[] = [];
  const compoundRedirs: Redir[] = [];
  const functions: FunctionDef[] = [];
  let error: string | undefined;
  let nextPipeline = 0;

  const redir = (r: Redirection): Redir => {
    const fd = r.descriptor?.type === "FileDescriptor" ? r.descriptor.value : r.descriptor?.name;
    if (r.type !== "HereDoc") return { fd, op: r.operator, target: r.target ? wordArg(r.target, home) : null };
    if (!r.closing) error ??= `unterminated here-document at offset ${r.pos}`;
    const quoted = r.delimiter?.quoted ?? false;
    const dynamic = !quoted && (r.body.parts ?? []).some((p) => staticPart(p, home) === null);
    return { fd, op: r.operator, target: null, heredoc: { quoted, body: r.body.text, dynamic } };
  };

  try {
    const root = parse(src);
    if (root.errors?.length) {
      const e = root.errors[0]!;
      return { ok: false, reason: `${e.message} at offset ${e.pos}` };
    }
    const stack: Frame[] = [{ node: root, pipeline: -1, stage: 0, inSubstitution: false, inFunction: undefined, background: false }];
    while (stack.length > 0 && error === undefined) {
      const frame = stack.pop()!;
      const n = frame.node;
      let child: Omit<Frame, "node"> = frame;
      switch (n.type) {
        case "Script":
          if ("errors" in n && n.errors?.length) {
            const e = n.errors[0]!;
            error = `${e.message} at offset ${e.pos}`;
          }
          break;
        case "Statement":
          child = { ...frame, background: frame.background || n.background === true };
          break;
        case "Command": {
          const own = n.redirects.map(redir);
          commands.push({
            argv: [
              ...(n.name ? [wordArg(n.name, home)] : []),
              ...n.args.map((a) =>
                a.type === "Assignment" ? assignmentArg(a.name, a.append === true, wordArg(a.value, home), a.text) : wordArg(a, home),
              ),
            ],
            assigns: n.prefix.flatMap((p) => (p.type === "Assignment" ? [{ name: p.name, value: wordArg(p.value, home) }] : [])),
            redirs: own,
            pipeline: frame.pipeline,
            stage: frame.stage,
            inSubstitution: frame.inSubstitution,
            inFunction: frame.inFunction,
            background: frame.background,
          });
          break;
        }
        case "Redirected":
          compoundRedirs.push(...n.redirects.map(redir));
          break;
        case "Function": {
          const name = wordArg(n.name, home).value ?? n.name.text;
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
      if (n.type === "Pipeline" && n.commands.length > 1) {
        const id = nextPipeline++;
        for (let i = kids.length - 1; i >= 0; i--) {
          const k = kids[i]!;
          const stage = n.commands.indexOf(k as never);
          stack.push({ ...child, node: k, pipeline: stage >= 0 ? id : child.pipeline, stage: stage >= 0 ? stage : child.stage });
        }
      } else {
        for (let i = kids.length - 1; i >= 0; i--) stack.push({ ...child, node: kids[i]! });
      }
    }
  } catch (e) {
    return { ok: false, reason: `parser failed: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (error !== undefined) return { ok: false, reason: error };
  return { ok: true, commands, compoundRedirs, functions };
}

function assignmentArg(name: string, append: boolean, value: Arg, text: string): Arg {
  return { text, value: value.value === null ? null : `${name}${append ? "+=" : "="}${value.value}`, glob: false };
}
