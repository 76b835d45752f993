// The judge's work grows linearly with the command, for every shape of src/eval/shapes.ts: counted
// in analysis steps and file system look-ups, not in time, with the budget lifted so each shape runs
// to its end. Quadrupling a command may at most about quadruple the work (a constant part makes
// small sizes cost a little more per byte). And the bounds that keep a shape from growing without
// limit (possible cwds, substitution nesting) stop it early, whatever its size.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SHAPES } from "../../src/eval/shapes.ts";
import { buildEvalWorkspace, type EvalWorkspace } from "../../src/eval/workspace.ts";
import { evalGate } from "../../src/eval/score.ts";
import { analyzeShell } from "../../src/policy/shell/analyze.ts";
import type { ShellEnv } from "../../src/policy/shell/env.ts";
import { ANALYSIS_STEPS, MAX_CWDS } from "../../src/policy/shell/script-state.ts";
import { MAX_SUBSTITUTION_DEPTH, substitutionNesting } from "../../src/policy/shell/parse.ts";

let w: EvalWorkspace;
let env: ShellEnv;
before(() => {
  w = buildEvalWorkspace();
  env = evalGate(w).judge.shell;
});
after(() => w.dispose());

const UNBOUNDED = { steps: Number.MAX_SAFE_INTEGER, deadlineMs: 1e9 };
/** Growth allowed when the size quadruples. */
const LINEAR = 4.6;

/** Shapes whose own bound (the cwd cap, the nesting bound) ends them early: tested below instead. */
const CAPPED = new Set(["cd && chain", "cd ; list", "nested $( )"]);

describe("work grows linearly with the size of the command", () => {
  for (const [name, shape] of Object.entries(SHAPES)) {
    if (CAPPED.has(name)) continue;
    test(name, () => {
      const sizes = [4096, 16384, 65536];
      const runs = sizes.map((b) => analyzeShell(shape(b), env, UNBOUNDED));
      for (const r of runs) assert.doesNotMatch(r.strictest.detail, /too complex/, "runs to its end with the budget lifted");
      for (let i = 1; i < runs.length; i++) {
        const [a, b] = [runs[i - 1]!, runs[i]!];
        assert.ok(b.steps <= LINEAR * Math.max(a.steps, 1), `${sizes[i]} bytes: ${b.steps} steps after ${a.steps}`);
        assert.ok(b.lookups <= LINEAR * Math.max(a.lookups, 1), `${sizes[i]} bytes: ${b.lookups} file system look-ups after ${a.lookups}`);
        // A look-up costs at most a call of its own and one stamp of the directory it is in; the
        // calls of a run also depend on what earlier runs left known, so they are bounded, not compared.
        assert.ok(b.fsCalls <= 2 * b.lookups, `${sizes[i]} bytes: ${b.fsCalls} file system calls for ${b.lookups} look-ups`);
      }
    });
  }
});

describe("shapes that would grow without limit stop at their bound", () => {
  test("cds that may each fail: at most MAX_CWDS possible directories, then too complex (20 cds took 62 s)", () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `cd d${i}`).join(" ; ") + " ; ls";
    const r = analyzeShell(twenty, env, UNBOUNDED);
    assert.equal(r.strictest.reason, "shell-unparseable");
    assert.match(r.strictest.detail, new RegExp(`more than ${MAX_CWDS} possible ways`));
    assert.ok(r.steps < 200, `${r.steps} steps`);
    const big = analyzeShell(SHAPES["cd ; list"]!(65536), env, UNBOUNDED);
    assert.ok(big.steps < 200, `64 KB: ${big.steps} steps`);
  });

  test("a long && chain of cds: where it may stop is bounded the same way", () => {
    const r = analyzeShell(SHAPES["cd && chain"]!(65536), env, UNBOUNDED);
    assert.match(r.strictest.detail, /too complex/);
    assert.ok(r.steps < 2000, `${r.steps} steps`);
  });

  test("cds in and back out stay one or two possible directories however long the chain", () => {
    const r = analyzeShell(SHAPES["cd in and out"]!(65536), env, UNBOUNDED);
    assert.doesNotMatch(r.strictest.detail, /too complex/);
  });

  test("substitutions nested past the bound are not parsed; below it the parser's reads grow linearly", () => {
    const deep = "echo " + "$(echo ".repeat(MAX_SUBSTITUTION_DEPTH + 1) + "x" + ")".repeat(MAX_SUBSTITUTION_DEPTH + 1);
    assert.equal(analyzeShell(deep, env, UNBOUNDED).steps, 0);
    const nest = (payload: number) => "echo " + "$(echo ".repeat(8) + "a ".repeat(payload) + ")".repeat(8);
    const [a, b] = [substitutionNesting(nest(1000)), substitutionNesting(nest(4000))];
    assert.equal(a.depth, 8);
    assert.ok(b.reads <= LINEAR * a.reads, `${b.reads} reads after ${a.reads}`);
    // Quotes and escapes are read as the shell reads them: a ")" inside quotes closes nothing.
    assert.equal(substitutionNesting(`echo "$(echo ')' "$(echo \\) ")")"`).depth, 2);
    assert.equal(substitutionNesting("echo $((1 + (2 * 3))) `ls` $(ls) <(ls)").depth, 1);
  });

  test("with the budget in force, every shape at 64 KB stops within it", () => {
    for (const [name, shape] of Object.entries(SHAPES)) {
      const r = analyzeShell(shape(65536), env, { deadlineMs: 1e9 });
      // Past the budget by at most the one spend that crossed it: a nested script's parse (a step per
      // 8 bytes) or one command's words (at most a step and a half per 4 bytes, for globs).
      assert.ok(r.steps <= ANALYSIS_STEPS + 65536 / 4, `${name}: ${r.steps} steps`);
    }
  });
});
