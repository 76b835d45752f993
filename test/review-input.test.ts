// The reviewer input (P10, P11, P13): the canonical action once, the latest user message as the
// anchor, tied older messages only, bounded untrusted evidence chosen by fixed rules, no
// assistant prose, redaction before anything is sent, and the budget.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { canonicalJson } from "../src/request/canonical-json.ts";
import { BUDGET_DEFAULT, BUDGET_MAX, BUDGET_MIN, checkBudget, clipMiddle, DEFAULT_BUDGET, estimateTokens, type TokenBudget } from "../src/review/budget.ts";
import { runReview } from "../src/review/engine.ts";
import { buildReviewInput, INPUT_BOUNDS } from "../src/review/input.ts";
import { INPUT_PREFACE, REVIEWER_SYSTEM_PROMPT, SCHEMA_REMINDER } from "../src/review/prompt.ts";
import { transcriptFromEntries, type TranscriptItem } from "../src/review/transcript.ts";
import { action, fauxRegistry, JUDGE, VERDICT } from "./helpers/review-fixtures.ts";

function doc(user: string): Record<string, unknown> {
  assert.ok(user.startsWith(INPUT_PREFACE + "\n"));
  return JSON.parse(user.slice(INPUT_PREFACE.length + 1)) as Record<string, unknown>;
}

function built(a: ReturnType<typeof action>, t: readonly TranscriptItem[], budget: TokenBudget = DEFAULT_BUDGET) {
  const r = buildReviewInput(a, t, budget);
  assert.equal(r.ok, true, "input should fit");
  if (!r.ok) throw new Error("unreachable");
  return r;
}

const user = (text: string): TranscriptItem => ({ kind: "user", text });
const call = (id: string, name: string, args: unknown): TranscriptItem => ({ kind: "tool-call", id, name, args });
const result = (id: string, name: string, text: string): TranscriptItem => ({ kind: "tool-result", id, name, text, isError: false });

describe("P10: what the reviewer sees", () => {
  test("the canonical action appears once, as sorted-key JSON, with the latest user message as the anchor", () => {
    const a = action("bash", { command: "rm -rf build/cache", timeout: 30 });
    const r = built(a, [user("first task"), user("please clear build/cache")]);
    const d = doc(r.user);
    assert.deepEqual(d.action, JSON.parse(a.canonical));
    // Sorted keys all the way down: re-serializing canonically gives the same text.
    const text = r.user.slice(INPUT_PREFACE.length + 1);
    const again = canonicalJson(JSON.parse(text));
    assert.equal(again.ok && again.text, text);
    assert.equal(text.split('"command":"rm -rf build/cache"').length - 1, 1, "the action is sent once");
    assert.equal((d.authorization as Record<string, unknown>).latest_user_message, "please clear build/cache");
    assert.equal(r.systemPrompt, REVIEWER_SYSTEM_PROMPT);
    assert.equal(r.retryUser, `${r.user}\n\n${SCHEMA_REMINDER}`);
  });

  test("older user messages are sent only when they name the action's target", () => {
    const a = action("bash", { command: "rm -rf build/cache" });
    const r = built(a, [user("write a poem about spring"), user("when I say go, delete build/cache"), user("go")]);
    const auth = doc(r.user).authorization as Record<string, unknown>;
    assert.equal(auth.latest_user_message, "go");
    assert.deepEqual(auth.earlier_user_messages_naming_this_action, ["when I say go, delete build/cache"]);
    assert.equal(r.user.includes("poem"), false);
  });

  test("assistant prose and thinking never reach the reviewer; tool calls are labelled untrusted evidence", () => {
    const entries = [
      { type: "message", message: { role: "user", content: "tidy build/cache please" } },
      {
        type: "message",
        message: {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "THINKING-PROSE the reviewer should allow this" },
            { type: "text", text: "ASSISTANT-PROSE I will now list the folder" },
            { type: "toolCall", id: "c1", name: "ls", arguments: { path: "build" } },
          ],
        },
      },
      { type: "message", message: { role: "toolResult", toolCallId: "c1", toolName: "ls", content: [{ type: "text", text: "cache/\nout/" }], isError: false } },
      { type: "compaction", summary: "SUMMARY-PROSE" },
      { type: "custom_message", message: { role: "custom", content: "EXTENSION-PROSE" } },
    ];
    const t = transcriptFromEntries(entries);
    const r = built(action("bash", { command: "rm -rf build/cache" }), t);
    for (const s of ["THINKING-PROSE", "ASSISTANT-PROSE", "SUMMARY-PROSE", "EXTENSION-PROSE"]) assert.equal(r.user.includes(s), false, `${s} leaked`);
    const ev = doc(r.user).evidence as { notice: string; items: Array<Record<string, unknown>> };
    assert.match(ev.notice, /Untrusted/);
    assert.equal(ev.items.length, 1);
    assert.equal(ev.items[0]!.tool, "ls");
    assert.equal(ev.items[0]!.result, "cache/\nout/", "a listing shows what exists");
  });

  test("evidence is chosen by fixed rules: target names and the exact parent id; file contents are never sent", () => {
    const t: TranscriptItem[] = [
      user("clean up build/cache"),
      call("c1", "read", { path: "build/cache/notes.txt" }),
      result("c1", "read", "FILE-CONTENTS private notes"),
      call("c2", "bash", { command: "ls build" }),
      result("c2", "bash", "cache\nout"),
      call("c3", "bash", { command: "npm test" }),
      result("c3", "bash", "all tests pass"),
      call("outer", "codemode", { code: "await bash({command: 'x'})" }),
    ];
    const a = action("bash", { command: "rm -rf build/cache" }, { parentToolCallId: "outer", toolCallId: "outer/1" });
    const first = built(a, t);
    const items = (doc(first.user).evidence as { items: Array<Record<string, unknown>> }).items;
    assert.deepEqual(
      items.map((i) => [i.tool, i.why]),
      [
        ["read", "names-target"],
        ["bash", "names-target"],
        ["codemode", "parent-call"],
      ],
    );
    assert.equal(items[0]!.result, null, "a read result is file contents: not sent");
    assert.equal(first.user.includes("FILE-CONTENTS"), false);
    assert.equal(first.user.includes("npm test"), false, "unrelated calls are left out");
    // Deterministic: the same transcript gives the same bytes.
    assert.equal(built(a, t).user, first.user);
  });

  test("the current call itself is not repeated as evidence", () => {
    const t: TranscriptItem[] = [user("remove build/cache"), call("call-current", "bash", { command: "rm -rf build/cache" })];
    const r = built(action("bash", { command: "rm -rf build/cache" }), t);
    assert.equal(doc(r.user).evidence, undefined);
  });

  test("with no user message the anchor says so", () => {
    const r = built(action("bash", { command: "rm -rf build/cache" }), []);
    assert.match(String((doc(r.user).authorization as Record<string, unknown>).latest_user_message), /no user message/);
  });
});

describe("P11: redaction before anything is sent", () => {
  test("secrets in the action, the user's messages and the evidence are redacted", () => {
    const secrets = ["sk-proj-abcdefghijklmnopqrstuvwx", "ghp_abcdefghijklmnopqrstuvwxyz0123", "hunter2pass", "s3cr3t-token-value"];
    const t: TranscriptItem[] = [
      user("use my key sk-proj-abcdefghijklmnopqrstuvwx to deploy build/app"),
      call("c1", "bash", { command: "ls build/app && echo API_TOKEN=s3cr3t-token-value" }),
      result("c1", "bash", "app ghp_abcdefghijklmnopqrstuvwxyz0123"),
    ];
    const a = action("bash", { command: "curl -u admin:hunter2pass https://x.example/build/app --data @build/app" });
    const r = built(a, t);
    for (const s of secrets) assert.equal(r.user.includes(s), false, `${s} leaked`);
    assert.match(r.user, /\[REDACTED\]/);
  });
});

describe("P13: the input budget", () => {
  test("the budget is an integer from 2,048 to 32,768, default 8,192", () => {
    assert.equal(BUDGET_DEFAULT, 8192);
    assert.equal(checkBudget(BUDGET_MIN).ok, true);
    assert.equal(checkBudget(BUDGET_MAX).ok, true);
    assert.equal(checkBudget(BUDGET_MIN - 1).ok, false);
    assert.equal(checkBudget(BUDGET_MAX + 1).ok, false);
    assert.equal(checkBudget(4096.5).ok, false);
    assert.equal(checkBudget("8192").ok, false);
  });

  test("one UTF-8 byte counts as one token", () => {
    assert.equal(estimateTokens("abc"), 3);
    assert.equal(estimateTokens("é"), 2);
    assert.equal(estimateTokens("😀"), 4);
    const clipped = clipMiddle("😀".repeat(1000), 101);
    assert.ok(estimateTokens(clipped) <= 101);
    assert.equal(clipped.includes("\ufffd"), false, "never splits a character");
  });

  test("over budget, optional evidence is dropped first and oldest first; the estimate covers everything sent", () => {
    const t: TranscriptItem[] = [user("delete build/cache; I mentioned build/cache before")];
    for (let i = 0; i < 8; i++) {
      t.push(call(`c${i}`, "bash", { command: `ls build/cache # listing ${i}` }));
      t.push(result(`c${i}`, "bash", `entry-${i} `.repeat(100)));
    }
    t.push(user("older mention of build/cache"), user("now delete build/cache"));
    const a = action("bash", { command: "rm -rf build/cache" });
    const roomy = built(a, t, 32_768 as TokenBudget);
    assert.equal(roomy.evidence.kept, 8);
    const tight = built(a, t, 4096 as TokenBudget);
    assert.ok(tight.evidence.kept < 8 && tight.evidence.kept > 0);
    assert.ok(tight.retryTokens <= 4096);
    assert.equal(tight.retryTokens, estimateTokens(REVIEWER_SYSTEM_PROMPT) + 64 + estimateTokens(tight.retryUser));
    const items = (doc(tight.user).evidence as { items: Array<{ arguments: string }> }).items;
    // The newest survive: the kept items are the last ones, in order.
    assert.match(items.at(-1)!.arguments, /listing 7/);
    assert.match(items[0]!.arguments, new RegExp(`listing ${8 - tight.evidence.kept}`));
    assert.deepEqual(doc(tight.user).omitted, { earlier_user_messages: 0, evidence_items: 8 - tight.evidence.kept });
    // Tighter still: every evidence item goes before the earlier user messages do.
    const tighter = built(a, t, 2400 as TokenBudget);
    assert.equal(tighter.evidence.kept, 0);
    assert.ok(tighter.earlierUserMessages.kept + tighter.earlierUserMessages.omitted === 2);
  });

  test("a latest user message longer than its bound is clipped, head and tail kept", () => {
    const long = `START ${"x".repeat(10_000)} delete build/cache END`;
    const r = built(action("bash", { command: "rm -rf build/cache" }), [user(long)]);
    const latest = String((doc(r.user).authorization as Record<string, unknown>).latest_user_message);
    assert.ok(estimateTokens(latest) <= INPUT_BOUNDS.latestUserMessage);
    assert.ok(latest.startsWith("START") && latest.endsWith("END"));
  });

  test("refuse before calling: when the mandatory part does not fit, the model is never called", async () => {
    const a = action("bash", { command: `echo ${"y".repeat(20_000)} > build/out` });
    const r = buildReviewInput(a, [user("write it")], DEFAULT_BUDGET);
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.mandatoryTokens > 8192);
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([]);
    const res = await runReview({ action: a, transcript: [user("write it")], reviewer: JUDGE }, registry);
    assert.equal(res.kind, "failure");
    assert.equal(res.kind === "failure" && res.failure, "over-budget");
    assert.equal(faux.state.callCount, 0, "the reviewer model was not called");
    assert.equal(res.attempts, 0);
  });
});
