// One command as it will run after wrappers are peeled off, plus small argument helpers.

import type { Finding } from "./finding.ts";
import type { Arg, SimpleCommand } from "./parse.ts";
import type { HandlerName } from "./programs.ts";
import type { ShellEnv } from "./env.ts";
import type { ScriptState } from "./script-state.ts";

export interface Invocation {
  /** The command name as the table knows it (basename of a system path). */
  readonly name: string;
  readonly args: readonly Arg[];
  readonly source: SimpleCommand;
  /** Reads a pipe from an earlier stage of its pipeline. */
  readonly pipedInput: boolean;
}

/** How handlers reach back into the analysis for nested scripts and commands. */
export interface Analyzer {
  readonly env: ShellEnv;
  readonly state: ScriptState;
  readonly depth: number;
  /** Analyse a nested shell script (sh -c, trap, watch, find -exec sh -c ...); `positional` are its $0, $1, ... */
  script(src: string, what: string, positional?: readonly Arg[]): Finding[];
  /** Analyse a nested argv (find -exec, xargs, git bisect run ...). */
  argv(args: readonly Arg[], source: SimpleCommand, pipedInput: boolean): Finding[];
}

export type Handler = (inv: Invocation, an: Analyzer) => Finding[];

/** A family's code handlers, by the name commands.json gives them; each made for one program. */
export type HandlerRegistry = Partial<Record<HandlerName, (program: string) => Handler>>;

export const DYNAMIC: Arg = { text: "{}", value: null, glob: false };

export function staticArg(value: string): Arg {
  return { text: value, value, glob: false };
}

/** Whether any of the short letters (bundled like -rf) or long options is present before `--`. */
export function hasFlag(args: readonly Arg[], short: string, long: readonly string[] = []): boolean {
  for (const a of args) {
    const v = a.value;
    if (v === null) continue;
    if (v === "--") return false;
    if (v.startsWith("--")) {
      if (long.some((l) => v === l || v.startsWith(l + "="))) return true;
    } else if (v.startsWith("-") && v.length > 1) {
      for (const ch of v.slice(1)) if (short.includes(ch)) return true;
    }
  }
  return false;
}

/** Non-option arguments (everything after `--`, and words not starting with `-`). */
export function operands(args: readonly Arg[], valueOptions: readonly string[] = []): Arg[] {
  const out: Arg[] = [];
  let optionsDone = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const v = a.value;
    if (optionsDone || v === null || v === "-" || !v.startsWith("-")) {
      out.push(a);
      continue;
    }
    if (v === "--") {
      optionsDone = true;
      continue;
    }
    if (valueOptions.includes(v)) i++;
  }
  return out;
}

/** The value of an option given as `-o X`, `-oX`, `--out X` or `--out=X`. */
export function optionValues(args: readonly Arg[], short: readonly string[], long: readonly string[]): Arg[] {
  const out: Arg[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === null) continue;
    if (v === "--") break;
    for (const l of long) {
      if (v === l && args[i + 1]) out.push(args[i + 1]!);
      else if (v.startsWith(l + "=")) out.push({ ...args[i]!, value: v.slice(l.length + 1) });
    }
    if (!/^-[^-]/.test(v)) continue;
    // Bundled short options: the value follows the option letter, or is the next word.
    const body = v.slice(1);
    for (const s of short) {
      const idx = body.indexOf(s.slice(1));
      if (idx < 0 || !/^[A-Za-z]*$/.test(body.slice(0, idx))) continue;
      const rest = body.slice(idx + 1);
      if (rest !== "") out.push({ ...args[i]!, value: rest });
      else if (args[i + 1]) out.push(args[i + 1]!);
      break;
    }
  }
  return out;
}
