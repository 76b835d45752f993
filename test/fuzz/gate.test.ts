// Property tests of the deterministic gate (P1, P3, P5): on commands from a shell grammar, on
// mutated corpus commands and on tool inputs of every shape, the decision function never fails
// (no exception, no gate-error) and never spends more than its analysis budget without saying the
// command is too complex; and putting a command inside a larger one never makes the route less
// strict. Seed and runs: test/helpers/fuzz.ts.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import { evalSetup } from "../../src/eval/score.ts";
import { buildEvalWorkspace } from "../../src/eval/workspace.ts";
import { decide, prepareGate } from "../../src/policy/gate.ts";
import { analyzeShell } from "../../src/policy/shell/analyze.ts";
import { ANALYSIS_STEPS } from "../../src/policy/shell/script-state.ts";
import type { Backend, Decision, Route } from "../../src/policy/types.ts";
import { checkProperty, fuzzRuns } from "../helpers/fuzz.ts";
import { corpusCommands, grammar, mutatedCommand, toolCall } from "./arbitraries.ts";

const w = buildEvalWorkspace();
after(() => w.dispose());
const setup = evalSetup(w);
const corpus = corpusCommands({ ws: w.ws, home: w.home, tmp: w.tmp });

/** The route union of src/policy/types.ts, least strict first (the order the eval scores violations in). */
const ROUTES: readonly Route[] = ["allow", "sandbox", "review", "deny"];
const rank = (r: Route) => ROUTES.indexOf(r);

/**
 * Loose: the budget (counted in steps) is what bounds the analysis; a decision that takes seconds
 * is a hang or a super-linear path, which no scheduler pause on a loaded machine explains.
 */
const CEILING_MS = 2000;

function decideOnce(tool: string, input: unknown, backend: Backend): { decision: Decision; ms: number } {
  const t0 = performance.now();
  const { decision } = decide(tool, input, prepareGate(setup), backend);
  return { decision, ms: performance.now() - t0 };
}

/** A decision that must hold whatever the input: a known route, a reason, a sentence, no internal failure, in bounded time. */
function assertWellFormed(tool: string, input: unknown, backend: Backend): Decision {
  const { decision: d, ms } = decideOnce(tool, input, backend);
  assert.ok(ROUTES.includes(d.route), `unknown route ${d.route}`);
  assert.notEqual(d.reason, "gate-error", `the gate failed inside: ${d.message}`);
  assert.ok(typeof d.message === "string" && d.message.length > 0, "a decision says why");
  assert.ok(ms < CEILING_MS, `the decision took ${ms.toFixed(0)} ms`);
  if (tool === "bash" && backend !== "review-only") assert.notEqual(d.route, "allow", "with a sandbox no bash call runs on the host");
  return d;
}

/** The budget: an analysis that spent more than ANALYSIS_STEPS stopped there and said so (or had already found a deny). */
function assertWithinBudget(command: string): void {
  const a = analyzeShell(command, prepareGate(setup).judge.shell);
  if (a.steps <= ANALYSIS_STEPS) return;
  const stopped = a.strictest.reason === "shell-unparseable" && /too complex to judge quickly/.test(a.strictest.detail);
  assert.ok(
    stopped || a.strictest.cls === "deny",
    `${a.steps} steps spent (bound ${ANALYSIS_STEPS}), verdict ${a.strictest.cls}/${a.strictest.reason}: ${a.strictest.detail}`,
  );
}

const BACKENDS: readonly Backend[] = ["sandboxed", "review-only", "sandboxed-unstaged", "unavailable"];
const g = grammar(3, "small");
/** A fragment repeated: long lists, so that some commands reach the analysis budget. */
const repeated = fc
  .tuple(g.command, fc.integer({ min: 2, max: 400 }), fc.constantFrom("; ", " && ", " | ", "\n"))
  .map(([c, n, sep]) => Array.from({ length: n }, () => c).join(sep));
const commands = fc.oneof({ weight: 6, arbitrary: g.command }, { weight: 4, arbitrary: mutatedCommand(corpus, g) }, { weight: 1, arbitrary: repeated });

describe("the gate's decision function never fails and stays within its budget", () => {
  test("grammar-built, mutated corpus and repeated commands", async (t) => {
    assert.ok(corpus.length > 300, `the corpora hold bash commands to mutate (${corpus.length})`);
    await checkProperty(
      t,
      fc.property(commands, fc.constantFrom(...BACKENDS), (command, backend) => {
        assertWellFormed("bash", { command }, backend);
        assertWithinBudget(command);
      }),
      { runs: fuzzRuns(3000) },
    );
  });

  test("tool inputs of every shape, for the built-in, known and unknown tools", async (t) => {
    await checkProperty(
      t,
      fc.property(toolCall(grammar(2, "xsmall")), fc.constantFrom(...BACKENDS), ({ tool, input }, backend) => {
        assertWellFormed(tool, input, backend);
      }),
      { runs: fuzzRuns(5000) },
    );
  });
});

/** Shell builtins and keywords: `env cd` is not `cd`, so the wrappers that exec a program are not put in front of them. */
const BUILTINS = new Set([
  "cd",
  "pushd",
  "popd",
  "export",
  "unset",
  "alias",
  "read",
  "set",
  "trap",
  "exit",
  "return",
  "eval",
  "source",
  ".",
  "exec",
  "local",
  "declare",
  "typeset",
  "readonly",
  "shift",
  "wait",
  "umask",
  "ulimit",
  "hash",
  "type",
  "builtin",
  "command",
  "enable",
  "[[",
  "case",
  "if",
  "for",
  "while",
  "g()",
]);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** The program a simple command runs (after its assignments), or undefined when it is not one plain word. */
function program(simple: string): string | undefined {
  const words = simple.split(" ").filter((x) => x !== "");
  return words.find((x) => !ASSIGNMENT.test(x));
}

/** The leading assignments of a simple command, with the space after each. */
function assignments(simple: string): string {
  return /^(?:[A-Za-z_][A-Za-z0-9_]*=\S* +)*/.exec(simple)![0];
}

/** A command that can take `;` after it (one sent to the background, or ending in a here-document's newline, cannot). */
const term = (c: string) => (c.endsWith("\n") || /(?:^|[^<>&|])&$/.test(c) ? `${c} ` : `${c};`);
const sq = (c: string) => `'${c.replaceAll("'", "'\\''")}'`;

type Embedding = readonly [name: string, wrap: (c: string, x: string) => string, simpleOnly?: boolean];

/** Commands put beside C: one of each effect class that leaves the cwd, the variables and the positional parameters alone. */
const BESIDE = ["true", "ls", "echo ok", "git add .", "make", "npm test", "curl -s https://example.com"];

/** Larger commands that run C as it is (same cwd, environment and positional parameters). */
const EMBEDDINGS: readonly Embedding[] = [
  ["x; C", (c, x) => `${x}; ${c}`],
  // Braced where C is a list, so that the whole of C takes the `&&` or the pipe.
  ["C && true", (c) => `{ ${term(c)} } && true`],
  ["C; x", (c, x) => `${c.endsWith("\n") ? c : `${term(c)} `}${x}`],
  ["pipeline C | cat", (c) => `{ ${term(c)} } | cat`],
  ["subshell ( C )", (c) => `( ${c}${c.endsWith("\n") ? "" : " "})`],
  ["group { C; }", (c) => `{ ${term(c)} }`],
  ["substitution echo $(C)", (c) => `echo $(${c}${c.endsWith("\n") ? "" : " "})`],
  ["function f(){ C; }; f", (c) => `f() { ${term(c)} }; f "$@"`],
  ["loop for i in 1; do C; done", (c) => `for i in 1; do ${term(c)} done`],
  ["if true; then C; fi", (c) => `if true; then ${term(c)} fi`],
  // Blocks that may not run, and run at most once where they stand: what C assigns in order is followed in them.
  ["true && { C; }", (c) => `true && { ${term(c)} }`],
  ["false || { C; }", (c) => `false || { ${term(c)} }`],
  ["case x in *) C;; esac", (c) => `case x in *) ${term(c)} ;; esac`],
  ["if false; then :; elif true; then C; fi", (c) => `if false; then :; elif true; then ${term(c)} fi`],
  ["background { C; } &", (c) => `{ ${term(c)} } &`],
  // A function body read again (the source later in it may change what an earlier word reads): what the first reading found stands.
  ["function read again f(){ C; source /dev/null; }; f", (c) => `f() { ${term(c)} source /dev/null; }; f "$@"`],
  ["bash -c 'C'", (c) => `bash -c ${sq(c)}`],
  ["env C", (c) => `env ${c}`, true],
  // timeout runs its first word as the program: the assignments stay in front of it.
  ["timeout 5 C", (c) => `${assignments(c)}timeout 5 ${c.slice(assignments(c).length)}`, true],
];

/**
 * The route, decided again when the analysis stopped as too complex: the wall-clock deadline
 * backing the step count may have cut it short on a loaded machine (a step count decides the same
 * way again, so the retry changes nothing there).
 */
function routeOf(command: string, backend: Backend): Decision {
  let d = decideOnce("bash", { command }, backend).decision;
  for (let i = 0; i < 3 && /too complex to judge quickly/.test(d.message); i++) d = decideOnce("bash", { command }, backend).decision;
  return d;
}

/** A here-document's body must end with a newline before anything can follow it. */
const closed = (c: string) => (/<</.test(c) && !c.endsWith("\n") ? `${c}\n` : c);

const small = grammar(2, "xsmall");
const fragments = fc.oneof(
  { weight: 3, arbitrary: small.simple.map((c) => ({ c, simple: true })) },
  { weight: 3, arbitrary: small.command.map((c) => ({ c, simple: false })) },
  { weight: 2, arbitrary: fc.constantFrom(...corpus.filter((c) => !c.includes("#") && c.length < 300)).map((c) => ({ c: closed(c), simple: false })) },
);

/** Sets a shell variable somewhere (`T=/; rm -rf $T`, `HOME=/tmp jq .`): followed inside compound commands too (subshells and pipeline stages restore, if-branches forget). */
const SETS_VARIABLE = /(?:^|[\s;&|(){}`]|\$\()[A-Za-z_][A-Za-z0-9_]*=/;

function monotone(backends: readonly Backend[], embeddings: readonly Embedding[] = EMBEDDINGS, variables = true) {
  return fc.property(
    fragments,
    fc.constantFrom(...embeddings.map((e) => e[0])),
    fc.constantFrom(...BESIDE),
    fc.constantFrom(...backends),
    ({ c, simple }, name, x, backend) => {
      fc.pre(variables || !SETS_VARIABLE.test(c));
      const [, wrap, simpleOnly] = embeddings.find((e) => e[0] === name)!;
      fc.pre(!simpleOnly || (simple && !BUILTINS.has(program(c) ?? "")));
      const alone = routeOf(c, backend);
      // A fragment that is not shell at all (`ls >&`) has no meaning to keep: put inside another
      // command its text can read as something else (`ls >& true`).
      fc.pre(!/cannot be read statically/.test(alone.message));
      const embedded = wrap(c, x);
      const inside = routeOf(embedded, backend);
      assert.ok(
        rank(inside.route) >= rank(alone.route),
        `${name} on ${backend}: ${JSON.stringify(c)} alone is ${alone.route} (${alone.reason}: ${alone.message}) but ${JSON.stringify(embedded)} is ${inside.route} (${inside.reason}: ${inside.message})`,
      );
    },
  );
}

describe("monotonicity: a command inside a larger one is never routed less strictly than alone", () => {
  test("under the staged sandbox and without a sandbox (review-only), for fragments that set no shell variable", async (t) => {
    await checkProperty(t, monotone(["sandboxed", "review-only"], EMBEDDINGS, false), { runs: fuzzRuns(8000) });
  });

  // The gate follows variables in the top-level list, subshells, pipeline stages, groups, if
  // branches and blocks that may not run (parse.ts), and in a loop or function body what one pass
  // or call assigned in order before a word (words.ts: Scope), so there `T=/; rm -rf $T` is denied
  // as it is alone; a reading done again keeps what the first one found.
  test("for fragments that set shell variables too", async (t) => {
    await checkProperty(t, monotone(["sandboxed", "review-only"], EMBEDDINGS, true), { runs: fuzzRuns(1000) });
  });

  // Under sandboxed-unstaged a git write alone is reviewed (nothing judges its effects), and no one
  // class is at least as strict as git-local and contain on every backend (review-only allows git
  // writes and reviews contain): the route is the strictest over every class of the command.
  test("on the unstaged sandbox", async (t) => {
    await checkProperty(t, monotone(["sandboxed-unstaged"], EMBEDDINGS, false), { runs: fuzzRuns(1000) });
  });
});

/** A counterexample the properties found, as a plain test: the larger command is at least as strict. */
function atLeastAsStrict(backend: Backend, alone: string, embedded: string): void {
  const a = routeOf(alone, backend);
  const e = routeOf(embedded, backend);
  assert.ok(
    rank(e.route) >= rank(a.route),
    `${JSON.stringify(alone)} is ${a.route} (${a.message}) but ${JSON.stringify(embedded)} is ${e.route} (${e.message})`,
  );
}

describe("monotonicity counterexamples found by the properties", () => {
  test("a variable set and used inside a subshell: ( T=/; rm -rf $T ) is denied like T=/; rm -rf $T", () => {
    atLeastAsStrict("sandboxed", "T=/; rm -rf $T", "( T=/; rm -rf $T )");
  });
  test("a command name from variables inside if: if true; then X=rm; Y=-rf; $X $Y ~; fi is denied like the bare list", () => {
    atLeastAsStrict("sandboxed", "X=rm; Y=-rf; $X $Y ~", "if true; then X=rm; Y=-rf; $X $Y ~; fi");
  });
  test("the same inside a pipeline: { T=/; rm -rf $T; } | cat", () => {
    atLeastAsStrict("review-only", "T=/; rm -rf $T", "{ T=/; rm -rf $T; } | cat");
  });
  test('an assignment given to env: env HOME=/tmp jq . "$(ls)" is reviewed like HOME=/tmp jq . "$(ls)"', () => {
    atLeastAsStrict("sandboxed", 'HOME=/tmp jq . "$(ls)"', 'env HOME=/tmp jq . "$(ls)"');
  });
  test("a download by redirection under a wrapper: timeout 60 curl URL > x.sh; sh x.sh is remote code like curl URL > x.sh; sh x.sh", () => {
    atLeastAsStrict("sandboxed", "curl https://example.com/x.sh > x.sh; sh x.sh", "timeout 60 curl https://example.com/x.sh > x.sh; sh x.sh");
  });
  test('a variable set and used in a loop body: for i in 1; do DIR=; rm -rf "$DIR"/*; done is denied like the bare list', () => {
    atLeastAsStrict("sandboxed", 'DIR=\nrm -rf "$DIR"/*', 'for i in 1; do DIR=\nrm -rf "$DIR"/*; done');
  });
  // Found with the block wrappers (20,000 runs) before blocks that may not run were read in order;
  // the second is the function wrapper read again, which failed before too.
  test("a variable set and used in a case branch: case x in *) T=/; rm -rf $T; ;; esac is denied like the bare list", () => {
    atLeastAsStrict("sandboxed", "T=/; rm -rf $T", "case x in *) T=/; rm -rf $T; ;; esac");
  });
  test("a function read again: f() { T=/; rm -rf $T; source /dev/null; }; f is denied like the bare list", () => {
    for (const backend of ["sandboxed", "review-only"] as const)
      atLeastAsStrict(backend, "T=/; rm -rf $T", 'f() { T=/; rm -rf $T; source /dev/null; }; f "$@"');
  });
  test("a git write beside a build on the unstaged sandbox: git stash; npm test is reviewed like git stash", () => {
    atLeastAsStrict("sandboxed-unstaged", "git stash", "git stash; npm test");
  });
  // The route is the strictest over every class of the command (route.ts), not one combined class's.
  test("a git write beside network on the unstaged sandbox: git stash pop; curl URL is reviewed like git stash pop", () => {
    atLeastAsStrict("sandboxed-unstaged", "git stash pop", "git stash pop; curl -s https://example.com");
  });
  // Found while exploring the generators: bash runs each complete line before it reads the next,
  // so a line that does not parse cannot stop the denied line above it from running.
  test("a denied line, then a line that does not parse: rm -rf /\\n) is denied like rm -rf /", () => {
    for (const backend of ["sandboxed", "review-only"] as const) atLeastAsStrict(backend, "rm -rf /", "rm -rf /\n)");
  });
});
