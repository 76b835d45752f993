// find: what it selects below its start points, and what it does with that (-delete, -exec,
// -fprint); the selection also feeds `find | xargs` and what -exec's nested commands see as `{}`.

import type { Finding } from "../finding.ts";
import { DYNAMIC, type Handler, type HandlerRegistry } from "../invocation.ts";
import type { Arg } from "../parse.ts";
import { judgeWrite } from "../writes.ts";
import { judgeDestroy } from "./operands.ts";

/** Operators that make a find expression more than a conjunction of tests. */
const FIND_NON_AND = new Set(["-o", "-or", "!", "-not", ",", "(", ")"]);

/** The start points of a find command, and where its expression begins. */
function findStarts(args: readonly Arg[]): { starts: Arg[]; exprAt: number } {
  const starts: Arg[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (v !== null && (v.startsWith("-") || v === "(" || v === "!" || v === ")")) break;
    starts.push(args[i]!);
  }
  if (starts.length === 0) starts.push({ text: ".", value: ".", glob: false });
  return { starts, exprAt: i };
}

/**
 * The paths find selects, one per start point. In a pure conjunction every selected path passes
 * every test, so a `-name` pattern is a fact about its name; with `-o` or `!` it is not.
 */
export function foundPaths(args: readonly Arg[]): Arg[] {
  const { starts, exprAt } = findStarts(args);
  const expr = args.slice(exprAt);
  const conjunction = expr.every((a) => a.value !== null && !FIND_NON_AND.has(a.value));
  const nameAt = expr.findIndex((a) => a.value === "-name" || a.value === "-iname");
  const name = conjunction && nameAt >= 0 ? (expr[nameAt + 1]?.value ?? undefined) : undefined;
  return starts.map((base) => ({ text: "{}", value: null, glob: false, found: { base, name } }));
}

/** find: names only, unless it deletes, runs commands or writes listings. */
const find: Handler = (inv, an) => {
  const args = inv.args;
  const { exprAt } = findStarts(args);
  const found = foundPaths(args);
  const out: Finding[] = [];
  for (let i = exprAt; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-delete") {
      for (const f of found) out.push(judgeDestroy(an.env, an, f, "find -delete", true, false));
    } else if (v === "-exec" || v === "-execdir" || v === "-ok" || v === "-okdir") {
      const cmd: Arg[] = [];
      for (i++; i < args.length; i++) {
        const w = args[i]!.value;
        if (w === ";" || w === "+") break;
        cmd.push(args[i]!);
      }
      // `{}` alone is one selected path; inside a longer word it is only known at run time.
      for (const f of found)
        out.push(
          ...an.argv(
            cmd.map((a) => (a.value === "{}" ? f : a.value?.includes("{}") ? DYNAMIC : a)),
            inv.source,
            false,
          ),
        );
    } else if (v === "-fprint" || v === "-fprint0" || v === "-fprintf" || v === "-fls") {
      const f = args[i + 1];
      if (f) out.push(judgeWrite(an.env, an.state, f, `find ${v} writes`));
    }
  }
  return out;
};

/** This family's code handlers, by the name commands.json gives them. */
export const FIND_HANDLERS: HandlerRegistry = { find: () => find };
