// The bound on analysis time (src/policy/shell/script-state.ts ANALYSIS_STEPS, parse.ts nesting bounds):
// a command that would take too long to judge is reviewed, saying it is too complex to judge
// quickly, and never holds Pi up. Each pathological command runs in a child process with a
// generous timeout, so a regression shows as a failed test rather than a hung suite. The bound
// itself is counted in steps, not time; the time asserted here is only a loose ceiling (the
// design target is 20 ms per call on an idle machine).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";

const ROOT = new URL("../../", import.meta.url).href;

/** Each: a name and a JavaScript expression building the command. */
const PATHOLOGICAL: ReadonlyArray<readonly [string, string]> = [
  ["20 cds in a 288-byte command (took 62 s)", `Array.from({ length: 20 }, (_, i) => "cd d" + i).join(" ; ") + " ; ls"`],
  ["64 KB && chain of cds", `SHAPES["cd && chain"](65536)`],
  ["64 KB ; list of cds", `SHAPES["cd ; list"](65536)`],
  ["64 KB pipeline", `SHAPES.pipeline(65536)`],
  ["64 KB of redirections", `SHAPES.redirections(65536)`],
  ["200 nested $( )", `"echo " + "$(echo ".repeat(200) + "x" + ")".repeat(200)`],
  ["10 nested $( ) around 60 KB", `"echo " + "$(echo ".repeat(10) + "a ".repeat(30000) + ")".repeat(10)`],
  ["64 KB of removal globs", `SHAPES["rm globs"](65536)`],
  ["64 KB here-document run by sh", `SHAPES["here-doc into sh"](65536)`],
  ["64 KB chain of file commands", `SHAPES["file commands"](65536)`],
  ["64 KB script given to bash -c", `SHAPES["bash -c script"](65536)`],
  ["64 KB ; list", `SHAPES["; list"](65536)`],
  ["parallel over 5,000 inputs", `"parallel 'cp {} build/ && rm {}' ::: " + Array.from({ length: 5000 }, (_, i) => "f" + i).join(" ")`],
  [
    "find over 3,000 start points running sh -c",
    `"find " + Array.from({ length: 3000 }, (_, i) => "d" + i).join(" ") + " -exec sh -c 'cp \\"$1\\" build/ && rm \\"$1\\"' _ {} \\\\;"`,
  ],
  [
    "sh -c nested 6 deep around 8 KB",
    `(() => { let s = SHAPES["file commands"](8192); for (let i = 0; i < 6; i++) s = "sh -c " + JSON.stringify(s); return s; })()`,
  ],
  ["2,000 symlinks made, then read", `Array.from({ length: 2000 }, (_, i) => "ln -s l" + i + " l" + (i + 1)).join("; ") + "; cat l0"`],
  ["1,000 downloads, then builds", `Array.from({ length: 1000 }, (_, i) => "curl -o f" + i + " https://example.com/" + i).join("; ") + "; make; make; make"`],
  ["one command of 64 KB of words", `"ls " + Array.from({ length: 9000 }, (_, i) => "w" + i).join(" ")`],
  ["one command of 32,000 globs", `"ls " + "* ".repeat(32000)`],
  ["one command of 10,000 brace expansions", `"ls " + "{a,b} ".repeat(10000)`],
  ["one command of 21,000 expansions", `"cat " + "$x ".repeat(21000)`],
  ["one command of 5,000 command substitutions", `"echo " + '"$(echo a)" '.repeat(5000)`],
  ["one command with 8,000 redirections", `"echo hi " + Array.from({ length: 8000 }, (_, i) => ">o" + i).join(" ")`],
];

const CHILD = `
  const { buildEvalWorkspace } = await import(${JSON.stringify(ROOT + "src/eval/workspace.ts")});
  const { decideLikeTheExtension, evalSetup } = await import(${JSON.stringify(ROOT + "src/eval/score.ts")});
  const { SHAPES } = await import(${JSON.stringify(ROOT + "src/eval/shapes.ts")});
  const cases = JSON.parse(process.argv[1]);
  const w = buildEvalWorkspace();
  const setup = evalSetup(w);
  const out = [];
  try {
    decideLikeTheExtension("bash", { command: "ls" }, setup, "sandboxed");
    for (const [name, build] of cases) {
      const command = eval(build);
      // The first call pays for compiling the code paths it reaches; the second is what every later call costs.
      decideLikeTheExtension("bash", { command }, setup, "sandboxed");
      const t0 = performance.now();
      const d = decideLikeTheExtension("bash", { command }, setup, "sandboxed").decision;
      out.push({ name, bytes: Buffer.byteLength(command), ms: performance.now() - t0, route: d.route, reason: d.reason, message: d.message });
    }
    const after = decideLikeTheExtension("bash", { command: "git status && ls -la" }, setup, "sandboxed").decision;
    console.log(JSON.stringify({ out, after: after.route }));
  } finally {
    w.dispose();
  }
`;

interface Outcome {
  readonly name: string;
  readonly bytes: number;
  readonly ms: number;
  readonly route: string;
  readonly reason: string;
  readonly message: string;
}

describe("a command too complex to judge quickly is reviewed within the bound", () => {
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", CHILD, JSON.stringify(PATHOLOGICAL)], { encoding: "utf8", timeout: 120_000 });
  const parsed = (): { out: Outcome[]; after: string } => {
    assert.equal(child.error, undefined, `the child did not finish: ${child.error?.message}`);
    assert.equal(child.signal, null, "the child must not be killed");
    assert.equal(child.status, 0, child.stderr);
    return JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { out: Outcome[]; after: string };
  };

  for (const [name] of PATHOLOGICAL) {
    test(name, () => {
      const o = parsed().out.find((x) => x.name === name)!;
      assert.ok(o, "judged");
      assert.ok(o.bytes <= 65536, `${o.bytes} bytes: within the size cap, so the bound (not the cap) decides`);
      assert.deepEqual([o.route, o.reason], ["review", "shell-unparseable"], o.message);
      assert.match(o.message, /too complex to judge quickly|more than the \d+ the gate reads quickly|too much text to read quickly/);
      // Loose: a hang or a super-linear path shows as seconds; the design target is 20 ms.
      assert.ok(o.ms < 500, `took ${o.ms.toFixed(1)} ms`);
    });
  }

  test("the gate judges ordinary commands afterwards", () => {
    assert.equal(parsed().after, "sandbox");
  });
});
