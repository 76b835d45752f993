// The command policy as data (src/policy/data/commands.json, read by src/policy/shell/programs.ts):
// every record's examples classify as the record says, like execpolicy's match/not_match examples;
// data the schema or the lint rules refuse is a fault, and a faulty policy denies every shell
// command; every handler a record names has code, and every handler's code has a record.

import { jsonOverride } from "../helpers/module-hook.ts";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { evalShellEnv } from "../helpers/eval-shell.ts";
import { pathToFileURL } from "node:url";
import shipped from "../../src/policy/data/commands.json" with { type: "json" };
import { analyzeShell, DISPATCHED_HERE } from "../../src/policy/shell/analyze.ts";
import { CODE_HANDLERS } from "../../src/policy/shell/handlers/index.ts";
import { HANDLER_NAMES, loadCommandPolicy } from "../../src/policy/shell/programs.ts";
import { HANDLED, POLICY_FAULT, PROGRAMS } from "../../src/policy/shell/table.ts";

const shell = evalShellEnv();

describe("the shipped command policy", () => {
  test("loads without a fault", () => {
    assert.equal(POLICY_FAULT, undefined);
    assert.equal(loadCommandPolicy(shipped).kind, "ok");
  });

  test("every record's examples classify as the record says", () => {
    let count = 0;
    const wrong: string[] = [];
    for (const [name, r] of PROGRAMS)
      for (const [command, cls] of Object.entries(r.examples ?? {})) {
        count++;
        const v = analyzeShell(command, shell.env()).strictest;
        if (v.cls !== cls) wrong.push(`${name}: ${command} is ${v.cls} (${v.detail}), the record says ${cls}`);
      }
    assert.deepEqual(wrong, []);
    assert.ok(count > 800, `only ${count} examples`);
  });

  test("every record has an example, but the keyword bash reads itself", () => {
    const without = [...PROGRAMS].filter(([, r]) => Object.keys(r.examples ?? {}).length === 0).map(([n]) => n);
    assert.deepEqual(without, ["[["]);
  });

  test("every handler a record names has code, and every handler's code has a record", () => {
    const implemented = new Set<string>([...Object.keys(CODE_HANDLERS), ...DISPATCHED_HERE]);
    const named = new Set(HANDLED.values());
    assert.deepEqual(
      [...named].filter((h) => !implemented.has(h)),
      [],
      "named without code",
    );
    assert.deepEqual(
      [...implemented].filter((h) => !named.has(h as never)),
      [],
      "code no record names",
    );
    assert.deepEqual(
      [...implemented].filter((h) => !(HANDLER_NAMES as readonly string[]).includes(h)),
      [],
      "code under a name the schema lacks",
    );
  });
});

/** The shipped data with one change made by `edit`. */
function mutated(edit: (d: { programs: Record<string, Record<string, unknown>>; [k: string]: unknown }) => void): unknown {
  const d = structuredClone(shipped) as unknown as { programs: Record<string, Record<string, unknown>>; [k: string]: unknown };
  edit(d);
  return d;
}

function fault(data: unknown): string {
  const r = loadCommandPolicy(data);
  assert.equal(r.kind, "fault", "the data loads");
  return r.kind === "fault" ? r.problem : "";
}

describe("lint: data the policy refuses", () => {
  test("a comment key, anywhere", () => {
    assert.match(fault(mutated((d) => (d.programs.ls!._doc = "lists"))), /\/programs\/ls\/_doc: a comment key/);
    assert.match(fault(mutated((d) => (d.$comment = "x"))), /\/\$comment: a comment key/);
    assert.match(fault(mutated((d) => (d.programs._note = { class: "read" }))), /\/programs\/_note: a comment key/);
  });
  test("an unknown key", () => {
    assert.match(fault(mutated((d) => (d.programs.ls!.clas = "read"))), /\/programs\/ls.*unknown key|clas/);
    assert.match(fault(mutated((d) => (d.extra = []))), /unknown key|extra/);
  });
  test("a program judged two ways, or none", () => {
    assert.match(fault(mutated((d) => (d.programs.ls!.handler = "sed"))), /\/programs\/ls: judged two ways \(class, handler\)/);
    assert.match(fault(mutated((d) => delete d.programs.ls!.class)), /\/programs\/ls: judged no way/);
  });
  test("a subcommand in two classes", () => {
    const problem = fault(
      mutated((d) => {
        const git = d.programs.git!.subcommands as Record<string, string[]>;
        git.review = [...git.review!, "status"];
      }),
    );
    assert.match(problem, /\/programs\/git: subcommand status is in two classes \(read, review\)/);
  });
  test("a reason that disagrees with the class", () => {
    assert.match(fault(mutated((d) => (d.programs.ls!.reason = "persistence"))), /reason persistence is for class review/);
  });
  test("a class or handler that does not exist", () => {
    assert.match(fault(mutated((d) => (d.programs.ls!.class = "harmless"))), /\/programs\/ls/);
    assert.match(fault(mutated((d) => (d.programs.sed!.handler = "perl-magic"))), /\/programs\/sed/);
  });
  test("a name that refers to nothing", () => {
    assert.match(fault(mutated((d) => (d.programs.gcc!.codeOptions = "no-such-set"))), /option set no-such-set/);
    assert.match(fault(mutated((d) => (d.programs.pip3!.subcommands = "ls"))), /refers to ls, which has no table/);
  });
  test("an example class that does not exist", () => {
    assert.match(fault(mutated((d) => (d.programs.ls!.examples = { "ls -la": "fine" }))), /\/programs\/ls\/examples/);
  });
});

describe("a faulty command policy denies every shell command", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "pam-policy-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("with a record judged two ways, `ls` and `echo hi` are denied for the fault", () => {
    // A module hook hands the gate a broken commands.json, as an edit of the installed file would.
    const broken = mutated((d) => (d.programs.ls!.handler = "sed"));
    const register = jsonOverride(dir, "/policy/data/commands.json", broken);
    const probe = join(dir, "probe.ts");
    const src = (p: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, "../../src", p)).href);
    writeFileSync(
      probe,
      `import { analyzeShell } from ${src("policy/shell/analyze.ts")};
import { prepareGate } from ${src("policy/gate.ts")};
import { selfPaths } from ${src("state/locations.ts")};
const dir = ${JSON.stringify(dir)};
const gate = prepareGate({ cwd: dir, home: dir, agentDir: dir + "/agent", defaultTmpRoot: dir, selfPaths: selfPaths(dir + "/agent") });
for (const c of ["ls", "echo hi"]) { const v = analyzeShell(c, gate.judge.shell).strictest; console.log(v.cls, v.reason, v.detail); }`,
    );
    const r = spawnSync(process.execPath, ["--import", register, probe], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.equal(lines.length, 2, r.stdout);
    for (const line of lines) assert.match(line, /^deny config-fault the command policy \(commands\.json\) is invalid.*judged two ways/);
  });
});
