// The reviewer request as it goes to the model, byte for byte, against a snapshot kept in
// test/fixtures/review-request-layout.txt: the system prompt, the user message (the canonical
// action, the authorization, the evidence, their order and labels) and the format retry. A change
// to what the reviewer reads is a change to the product's judgement: it shows in review as a diff
// of this file, regenerated with
//   PI_AUTO_MODE_UPDATE_SNAPSHOT=1 node --test test/review/request-layout.test.ts

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { DEFAULT_BUDGET } from "../../src/review/budget.ts";
import { buildReviewInput } from "../../src/review/input.ts";
import type { TranscriptItem } from "../../src/review/transcript.ts";
import { action } from "../helpers/review-fixtures.ts";

const SNAPSHOT = fileURLToPath(new URL("../fixtures/review-request-layout.txt", import.meta.url));

const user = (text: string): TranscriptItem => ({ kind: "user", text });
const call = (id: string, name: string, args: unknown): TranscriptItem => ({ kind: "tool-call", id, name, args });
const result = (id: string, name: string, text: string): TranscriptItem => ({ kind: "tool-result", id, name, text, isError: false });

const CASES: readonly { readonly name: string; readonly action: ReturnType<typeof action>; readonly transcript: readonly TranscriptItem[] }[] = [
  {
    name: "a shell command with history: an earlier message naming the target, tool calls and results, a secret to redact",
    action: action("bash", { command: "rm -rf build/cache && git push origin main", timeout: 60 }),
    transcript: [
      user("write a poem about spring"),
      user("when the tests pass, clear build/cache and push main"),
      call("c1", "bash", { command: "npm test" }),
      result("c1", "bash", "42 passing\nexport GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz01"),
      call("c2", "read", { path: "build/cache/index.json" }),
      result("c2", "read", '{"entries": 3}'),
      user("go"),
    ],
  },
  {
    name: "a file write with no user message at all",
    action: action(
      "write",
      { path: "/etc/hosts", content: "127.0.0.1 example.com\n" },
      { gateReason: "outside-writable-roots", gateNote: "writes outside the workspace" },
    ),
    transcript: [],
  },
];

function render(): string {
  return CASES.map((c) => {
    const r = buildReviewInput(c.action, c.transcript, DEFAULT_BUDGET);
    assert.ok(r.ok, c.name);
    return [`=== ${c.name}`, "--- system", r.systemPrompt, "--- user", r.user, "--- retry", r.retryUser, ""].join("\n");
  }).join("\n");
}

test("the reviewer request is laid out as the snapshot says", (t) => {
  const now = render();
  if (process.env.PI_AUTO_MODE_UPDATE_SNAPSHOT === "1") {
    writeFileSync(SNAPSHOT, now);
    t.diagnostic(`wrote ${SNAPSHOT}`);
    return;
  }
  assert.equal(now, readFileSync(SNAPSHOT, "utf8"), "the reviewer's input changed: if on purpose, regenerate the snapshot (see the header)");
  assert.doesNotMatch(now, /ghp_0123456789/, "the snapshot itself holds no secret");
});
