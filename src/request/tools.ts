// Pi's built-in tools, in one catalogue: what each does, its path argument and how Pi resolves
// it, and the input it accepts (typebox schemas that mirror Pi 1.6's own, checked compiled). The
// canonical request, the judge and the concurrency check all read their tool lists from here.

import { Type, type TSchema } from "typebox";
import { Compile } from "typebox/compile";

export type BuiltinTool = "read" | "write" | "edit" | "grep" | "find" | "ls" | "bash";

/** What a call of the tool does: only reads files, writes one, or runs a shell command. */
export type ToolAction = "read" | "write" | "shell";

export interface ToolEntry {
  readonly action: ToolAction;
  /**
   * The path argument: `required`; `optional` (absent or "" is the working directory, as Pi's
   * listing tools read it); or `none`.
   */
  readonly path: "required" | "optional" | "none";
  /** How Pi resolves the path: `read` (resolveReadPath, with its spelling fallbacks) or `cwd` (resolveToCwd). */
  readonly resolve: "read" | "cwd";
  /** The input Pi's tool accepts, after `normalize`; extra keys are Pi's to ignore. */
  readonly schema: TSchema;
  /** Forms Pi accepts besides the schema's, rewritten into it (edit's several spellings of its edits). */
  readonly normalize?: (input: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;
  /** Inputs Pi's tool takes and inputs it refuses: checked when this module loads. */
  readonly examples: { readonly take: readonly unknown[]; readonly refuse: readonly unknown[] };
}

const optionalString = Type.Optional(Type.String());
const optionalNumber = Type.Optional(Type.Number());
const anEdit = Type.Object({ oldText: Type.String(), newText: Type.String() });

/**
 * The edits Pi 1.6's edit tool will apply (tools/edit.js `prepareEditArguments`): besides a list,
 * it takes the list as a JSON string, one edit object, and top-level oldText/newText.
 */
function editsLikePi(input: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  let edits = input.edits;
  if (typeof edits === "string") {
    try {
      edits = JSON.parse(edits);
    } catch {
      return input;
    }
  }
  if (typeof edits === "object" && edits !== null && !Array.isArray(edits)) edits = [edits];
  if (typeof input.oldText === "string" && typeof input.newText === "string")
    edits = [...(Array.isArray(edits) ? edits : []), { oldText: input.oldText, newText: input.newText }];
  return { ...input, edits };
}

export const TOOLS: Readonly<Record<BuiltinTool, ToolEntry>> = {
  read: {
    action: "read",
    path: "required",
    resolve: "read",
    schema: Type.Object({ path: Type.String(), offset: optionalNumber, limit: optionalNumber }),
    examples: { take: [{ path: "a.ts" }, { path: "a.ts", offset: 10, limit: 5 }], refuse: [{}, { path: 1 }, { path: "a", offset: "10" }, ["a.ts"]] },
  },
  write: {
    action: "write",
    path: "required",
    resolve: "cwd",
    schema: Type.Object({ path: Type.String(), content: Type.String() }),
    examples: { take: [{ path: "a.ts", content: "" }], refuse: [{ path: "a.ts" }, { path: "a.ts", content: 1 }] },
  },
  edit: {
    action: "write",
    path: "required",
    resolve: "cwd",
    schema: Type.Object({ path: Type.String(), edits: Type.Array(anEdit, { minItems: 1 }) }),
    normalize: editsLikePi,
    examples: {
      take: [
        { path: "a", edits: [{ oldText: "x", newText: "y" }] },
        { path: "a", edits: '[{"oldText":"x","newText":"y"}]' },
        { path: "a", edits: { oldText: "x", newText: "y" } },
        { path: "a", oldText: "x", newText: "y" },
      ],
      refuse: [{ path: "a", edits: [] }, { path: "a", edits: "not json" }, { path: "a" }, { path: "a", edits: [{ oldText: "x" }] }],
    },
  },
  grep: {
    action: "read",
    path: "optional",
    resolve: "cwd",
    schema: Type.Object({ pattern: Type.String(), path: optionalString, glob: optionalString }),
    examples: { take: [{ pattern: "x" }, { pattern: "x", path: "src", glob: "*.ts" }], refuse: [{}, { pattern: "x", path: 1 }] },
  },
  find: {
    action: "read",
    path: "optional",
    resolve: "cwd",
    schema: Type.Object({ pattern: Type.String(), path: optionalString }),
    examples: { take: [{ pattern: "*.ts" }, { pattern: "*.ts", path: "src" }], refuse: [{ path: "src" }, { pattern: 1 }] },
  },
  ls: {
    action: "read",
    path: "optional",
    resolve: "cwd",
    schema: Type.Object({ path: optionalString }),
    examples: { take: [{}, { path: "src" }], refuse: [{ path: 1 }, null] },
  },
  bash: {
    action: "shell",
    path: "none",
    resolve: "cwd",
    schema: Type.Object({ command: Type.String(), timeout: optionalNumber }),
    examples: { take: [{ command: "ls" }, { command: "ls", timeout: 30 }], refuse: [{ command: ["ls"] }, { command: "ls", timeout: "30" }, {}] },
  },
};

/** Throws unless every example is taken and every counter-example refused. */
export function checkExamples(tools: Readonly<Record<string, ToolEntry>>, checkerOf: (name: string) => Checker | undefined = () => undefined): void {
  for (const [name, t] of Object.entries(tools)) {
    const check = checkerOf(name) ?? Compile(t.schema);
    const problem = (input: unknown) => shapeProblem(t, check, input);
    for (const input of t.examples.take)
      if (problem(input) !== undefined) throw new Error(`tool catalogue: ${name} refuses its example ${JSON.stringify(input)}: ${problem(input)}`);
    for (const input of t.examples.refuse)
      if (problem(input) === undefined) throw new Error(`tool catalogue: ${name} takes its counter-example ${JSON.stringify(input)}`);
  }
}

type Checker = ReturnType<typeof Compile>;

// Compiled and checked at the first call the gate judges, not when Pi loads the extension:
// compiling eight schemas is a few milliseconds every start would pay. The catalogue's examples
// hold, or every input is refused: a schema that refuses what Pi takes would judge ordinary calls
// malformed, one that takes what Pi refuses would judge calls Pi never runs. A throw here reaches
// the gate, which denies (P5).
let compiled: ReadonlyMap<string, Checker> | undefined;
function checkers(): ReadonlyMap<string, Checker> {
  if (compiled) return compiled;
  const made = new Map(Object.entries(TOOLS).map(([name, t]) => [name, Compile(t.schema)]));
  checkExamples(TOOLS, (name) => made.get(name));
  compiled = made;
  return made;
}

export function builtinTool(name: string): BuiltinTool | undefined {
  return Object.hasOwn(TOOLS, name) ? (name as BuiltinTool) : undefined;
}

/** Tools that only run other tool calls, each of which passes the gate on its own. */
export const CONTAINER_TOOLS: ReadonlySet<string> = new Set(["codemode", "tool_search"]);

/** Pi's other shell: its commands cannot be parsed here, and nothing runs them in the sandbox. */
export const UNCONTAINED_SHELLS: ReadonlySet<string> = new Set(["powershell"]);

/** Why Pi's tool would not take this input, or undefined when it would. */
export function inputProblem(tool: BuiltinTool, input: unknown): string | undefined {
  return shapeProblem(TOOLS[tool], checkers().get(tool)!, input);
}

function shapeProblem(t: ToolEntry, check: Checker, input: unknown): string | undefined {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return "input is not an object";
  const value = t.normalize ? t.normalize(input as Record<string, unknown>) : input;
  if (check.Check(value)) return undefined;
  const first = [...check.Errors(value)][0];
  const where = first?.instancePath.replace(/^\//, "").replace(/\//g, ".") || "input";
  return `${where} ${first?.message ?? "is not what the tool takes"}`;
}
