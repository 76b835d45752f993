// The catalogue of Pi's built-in tools (src/request/tools.ts): its examples are checked when it
// loads, and what it says is what the canonical request and the judge do.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Type } from "typebox";
import { buildRequest } from "../../src/request/canonical.ts";
import { builtinTool, checkExamples, inputProblem, TOOLS, type ToolEntry } from "../../src/request/tools.ts";

test("a catalogue whose schema refuses its own example, or takes its counter-example, does not load", () => {
  const read = TOOLS.read;
  const strict: ToolEntry = { ...read, schema: Type.Object({ path: Type.String(), offset: Type.String() }) };
  assert.throws(() => checkExamples({ read: strict }), /read refuses its example/);
  const loose: ToolEntry = { ...read, schema: Type.Object({}) };
  assert.throws(() => checkExamples({ read: loose }), /read takes its counter-example/);
  assert.doesNotThrow(() => checkExamples(TOOLS));
});

test("every built-in tool has a path rule the canonical request follows", () => {
  for (const [name, t] of Object.entries(TOOLS)) {
    const input = t.examples.take[0] as Record<string, unknown>;
    const built = buildRequest(name, input, "/w", "/h");
    assert.ok(built.ok, name);
    const expected = t.path === "none" ? 0 : t.path === "optional" || typeof input.path === "string" ? 1 : 0;
    assert.equal(built.request.paths.length, expected, name);
  }
  assert.equal(builtinTool("mcp__x__read"), undefined);
  assert.equal(builtinTool("toString"), undefined, "no inherited name is a tool");
});

test("a malformed input says which field is wrong", () => {
  assert.match(inputProblem("read", { path: 1 }) ?? "", /^path must be string$/);
  assert.match(inputProblem("edit", { path: "a", edits: [{ oldText: "x", newText: 2 }] }) ?? "", /^edits\.0\.newText /);
  assert.equal(inputProblem("ls", []), "input is not an object");
});
