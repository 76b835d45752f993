// Audit: what was judged is what runs. The gate freezes a call's input after deciding it, so a
// later extension's rewrite throws (which blocks the call) instead of running something unjudged
// (P8). An earlier extension that froze only the top level must not make the gate skip the rest.

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { toolResults } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";

const SHALLOW_FREEZE = fileURLToPath(new URL("../fixtures/shallow-freeze-extension.ts", import.meta.url));
const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

const session = reviewOnlySessions();

describe("audit: the judged input is frozen all the way down", () => {
  test("after an earlier extension froze only the top level, a later rewrite of a nested field still blocks the call", async () => {
    const rewriter = (api: ExtensionAPI) => {
      api.on("tool_call", (event) => {
        const edits = (event.input as { edits?: Array<{ newText: string }> }).edits;
        if (edits?.[0]) edits[0].newText = "rewritten after the gate";
      });
    };
    const h = await session({ extensionPathsBefore: [SHALLOW_FREEZE], extensionFactories: [rewriter], tools: ["read", "edit"] });
    writeFileSync(join(h.cwd, "notes.txt"), "hello\n");
    h.faux.setResponses([call("edit", { path: "notes.txt", edits: [{ oldText: "hello", newText: "judged" }] }), done()]);
    await h.session.prompt("edit the notes");
    assert.equal(readFileSync(join(h.cwd, "notes.txt"), "utf8"), "hello\n", "neither the judged nor the rewritten text was written");
    assert.equal(toolResults(h.session)[0]?.isError, true);
  });
});
