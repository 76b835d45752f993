// Audit: calls judged together, run together. Pi judges every call of a parallel batch before it
// runs any of them, and a codemode script runs its calls concurrently; a file tool's judgement
// (where a path really leads) can therefore be stale by the time it runs, if another call that
// may change files runs in between. Here a sandboxed `ln -s` plants a symlink to a file outside
// the workspace while reads of FIFOs hold Node's file-system threads, so a `write` judged as
// "inside the workspace" would land outside (P3, P6: writes outside the writable roots need review).

import assert from "node:assert/strict";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { createCodemodeExtension } from "@earendil-works/pi-coding-agent";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import { callShape, createCallsInFlight } from "../../src/grants/concurrent-calls.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";

const calls = (...c: ReturnType<typeof fauxToolCall>[]) => fauxAssistantMessage(c, { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);
const FIFOS = ["f1", "f2", "f3", "f4"];

function decisions(h: PiHarness): DecisionRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

let unavailable: string | undefined;
const harnesses: PiHarness[] = [];
const writers: ChildProcess[] = [];
before(async () => {
  resetSharedController();
  const s = await sharedController().ready();
  if (s.backend !== "sandboxed") unavailable = s.reason;
});
after(async () => {
  for (const w of writers) w.kill("SIGKILL");
  for (const h of harnesses) await h.dispose();
  resetSharedController();
});

/** A workspace with FIFOs whose writers (another process) arrive after a second, and a file outside. */
async function world(opts: Parameters<typeof startPi>[0] = {}): Promise<{ h: PiHarness; target: string }> {
  const h = await startPi(opts);
  harnesses.push(h);
  const outside = join(h.root, "outside");
  mkdirSync(outside);
  const target = join(outside, "target");
  writeFileSync(target, "orig");
  for (const f of FIFOS) execFileSync("mkfifo", [join(h.cwd, f)]);
  const w = spawn("timeout", ["5", "sh", "-c", `sleep 1; for f in ${FIFOS.join(" ")}; do echo hi > "$f" & done; wait`], { cwd: h.cwd, stdio: "ignore" });
  writers.push(w);
  return { h, target };
}

const reads = () => FIFOS.map((f) => fauxToolCall("read", { path: f }));

describe("audit: a call's judgement is not made stale by a call running beside it", () => {
  test("a batch with bash runs call by call: the write is judged after the symlink exists", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const { h, target } = await world();
    h.faux.setResponses([
      calls(fauxToolCall("bash", { command: `ln -s ${target} x` }), ...reads(), fauxToolCall("write", { path: "x", content: "pwned" })),
      done(),
    ]);
    await h.session.prompt("go");
    assert.equal(readFileSync(target, "utf8"), "orig", "nothing was written outside the workspace");
    const write = decisions(h).find((d) => d.tool === "write");
    assert.equal(write?.outcome, "denied", JSON.stringify(write));
    assert.equal(write?.reason, "outside-writable-roots");
    assert.equal(
      toolResults(h.session)
        .filter((r) => r.toolName === "read")
        .every((r) => r.text !== ""),
      true,
    );
  });

  test("a codemode script beside a write: the write is not admitted while the script may change files", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const { h, target } = await world({ extensionFactories: [createCodemodeExtension()], tools: ["read", "bash", "write", "codemode"] });
    const code = `await tools.bash({ command: "ln -s ${target} x" }); return "ok";`;
    h.faux.setResponses([calls(fauxToolCall("codemode", { code }), ...reads(), fauxToolCall("write", { path: "x", content: "pwned" })), done()]);
    await h.session.prompt("go");
    assert.equal(readFileSync(target, "utf8"), "orig", "nothing was written outside the workspace");
    const write = decisions(h).find((d) => d.tool === "write");
    assert.equal(write?.outcome, "denied", JSON.stringify(write));
    const text = toolResults(h.session).find((r) => r.toolName === "write")?.text ?? "";
    assert.match(text, /automatic policy \(not by the user\)/);
    assert.match(text, /codemode/);
  });

  test("inside one codemode script, calls started together: the write is not admitted while bash runs", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const { h, target } = await world({ extensionFactories: [createCodemodeExtension()], tools: ["read", "bash", "write", "codemode"] });
    const code = `const r = await Promise.allSettled([
      tools.bash({ command: "ln -s ${target} x" }),
      ${FIFOS.map((f) => `tools.read({ path: "${f}" })`).join(", ")},
      tools.write({ path: "x", content: "pwned" })]);
      return JSON.stringify(r.map((x) => x.status));`;
    h.faux.setResponses([calls(fauxToolCall("codemode", { code })), done()]);
    await h.session.prompt("go");
    assert.equal(readFileSync(target, "utf8"), "orig", "nothing was written outside the workspace");
    const write = decisions(h).find((d) => d.tool === "write");
    assert.equal(write?.outcome, "denied", JSON.stringify(write));
  });

  test("one after another still works: bash, then a write, then codemode awaiting each call", async (t) => {
    if (unavailable) return t.skip(`sandbox unavailable: ${unavailable}`);
    const h = await startPi({ extensionFactories: [createCodemodeExtension()], tools: ["read", "bash", "write", "codemode"] });
    harnesses.push(h);
    const code = `await tools.bash({ command: "echo c > c.txt" }); await tools.write({ path: "d.txt", content: "d" }); await tools.read({ path: "c.txt" }); return "ok";`;
    h.faux.setResponses([
      calls(
        fauxToolCall("bash", { command: "echo a > a.txt" }),
        fauxToolCall("write", { path: "b.txt", content: "b" }),
        fauxToolCall("read", { path: "b.txt" }),
      ),
      calls(fauxToolCall("codemode", { code })),
      done(),
    ]);
    await h.session.prompt("go");
    const results = toolResults(h.session);
    assert.deepEqual(
      results.map((r) => [r.toolName, r.isError]),
      [
        ["bash", false],
        ["write", false],
        ["read", false],
        ["codemode", false],
      ],
      JSON.stringify(results),
    );
    assert.equal(readFileSync(join(h.cwd, "a.txt"), "utf8"), "a\n");
    assert.equal(readFileSync(join(h.cwd, "d.txt"), "utf8"), "d");
    assert.equal(
      decisions(h).every((d) => d.outcome !== "denied"),
      true,
      JSON.stringify(decisions(h)),
    );
  });
});

describe("audit: which admitted calls may not be in flight together", () => {
  const shape = (id: string, tool: string, outcome: "allowed" | "sandboxed" = "allowed", parentId?: string) => callShape({ id, parentId, tool }, outcome);

  test("a file tool and a call that may change files conflict, whichever is judged first", () => {
    for (const [first, second] of [
      [shape("1", "bash", "sandboxed"), shape("2", "write")],
      [shape("1", "write"), shape("2", "bash", "sandboxed")],
      [shape("1", "codemode"), shape("2", "read")],
      [shape("1", "mcp__fs__move"), shape("2", "edit")],
      [shape("1", "grep"), shape("2", "deploy_service")],
      [shape("1", "bash", "allowed"), shape("2", "bash", "sandboxed")],
    ] as const) {
      const f = createCallsInFlight();
      f.admit(first);
      assert.equal(f.conflict(second)?.id, "1", `${first.tool} then ${second.tool}`);
    }
  });

  test("reads and writes together, sandboxed shell commands together, and tool_search never conflict", () => {
    for (const [first, second] of [
      [shape("1", "read"), shape("2", "write")],
      [shape("1", "write"), shape("2", "edit")],
      [shape("1", "bash", "sandboxed"), shape("2", "bash", "sandboxed")],
      [shape("1", "tool_search"), shape("2", "write")],
    ] as const) {
      const f = createCallsInFlight();
      f.admit(first);
      assert.equal(f.conflict(second), undefined, `${first.tool} then ${second.tool}`);
    }
  });

  test("a script's own calls do not conflict with the script; a finished call conflicts with nothing", () => {
    const f = createCallsInFlight();
    f.admit(shape("k", "codemode"));
    f.admit(shape("k/1", "codemode", "allowed", "k"));
    assert.equal(f.conflict(shape("k/1/1", "write", "allowed", "k/1")), undefined, "its callers are running it");
    f.finish("k/1");
    f.admit(shape("k/2", "bash", "sandboxed", "k"));
    assert.equal(f.conflict(shape("k/3", "write", "allowed", "k"))?.id, "k/2", "a sibling shell command is not a caller");
    f.finish("k/2");
    assert.equal(f.conflict(shape("k/3", "write", "allowed", "k")), undefined);
    f.admit(shape("x", "write"));
    assert.equal(f.conflict(shape("y", "codemode"))?.id, "x");
    f.clear();
    assert.equal(f.size(), 0);
  });
});
