// The reviewer input (P10, P11, P13): the canonical action once, the latest user message as the
// anchor, tied older messages only, bounded untrusted evidence chosen by fixed rules, no
// assistant prose, redaction before anything is sent, and the budget.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { canonicalJson } from "../../src/request/canonical-json.ts";
import { BUDGET_DEFAULT, BUDGET_MAX, BUDGET_MIN, checkBudget, clipMiddle, DEFAULT_BUDGET, estimateTokens, type TokenBudget } from "../../src/review/budget.ts";
import { runReview } from "../../src/review/engine.ts";
import { buildReviewInput, INPUT_BOUNDS } from "../../src/review/input.ts";
import { INPUT_PREFACE, REVIEWER_SYSTEM_PROMPT, SCHEMA_REMINDER } from "../../src/review/prompt.ts";
import { transcriptFromEntries, type TranscriptItem } from "../../src/review/transcript.ts";
import { action, fauxRegistry, JUDGE, storedAsTyped } from "../helpers/review-fixtures.ts";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

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
    const t = transcriptFromEntries(entries, storedAsTyped);
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
    const res = await runReview({ action: a, transcript: [user("write it")], reviewer: JUDGE }, piReviewerModels(registry));
    assert.equal(res.kind, "failure");
    assert.equal(res.kind === "failure" && res.failure, "over-budget");
    assert.equal(faux.state.callCount, 0, "the reviewer model was not called");
    assert.equal(res.attempts, 0);
  });
});

describe("P10: evidence keeps only what bears on the exact action", () => {
  type Item = { why: string; tool: string; arguments: string; result: string | null };
  const itemsOf = (r: { user: string }): Item[] => (doc(r.user).evidence as { items: Item[] } | undefined)?.items ?? [];
  const rm = action("bash", { command: "rm -rf build/cache" });

  /** Calls that bring up the action's words and names without being about build/cache itself. */
  function mentions(prefix: string): TranscriptItem[] {
    return [
      call(`${prefix}1`, "grep", { pattern: "cache", path: "src" }),
      result(`${prefix}1`, "grep", "src/cache.ts:1: export const cache = new Map();"),
      call(`${prefix}2`, "bash", { command: 'grep -rn "build/cache" docs' }),
      result(`${prefix}2`, "bash", "docs/notes.md:3: build/cache is where the bundler keeps its files"),
      call(`${prefix}3`, "read", { path: "src/cache.ts" }),
      result(`${prefix}3`, "read", "export const cache = new Map();"),
      call(`${prefix}4`, "ls", { path: "docs" }),
      result(`${prefix}4`, "ls", "cache/\nnotes.md"),
      call(`${prefix}5`, "bash", { command: "ls -la src/build/cache && cat build/cache2/x" }),
      result(`${prefix}5`, "bash", "total 0"),
      call(`${prefix}6`, "bash", { command: "echo build/cache is next" }),
      result(`${prefix}6`, "bash", "build/cache is next"),
      call(`${prefix}7`, "edit", { path: "docs/notes.md", edits: [{ oldText: "TODO", newText: "TODO: clear build/cache" }] }),
      result(`${prefix}7`, "edit", "Successfully replaced 1 block"),
      call(`${prefix}8`, "write", { path: "build/cache.md", content: "build/cache notes" }),
      result(`${prefix}8`, "write", "ok"),
    ];
  }

  test("the exact path beats its words and names: searches, notes, same-named entries elsewhere and near-miss paths are left out", () => {
    const t: TranscriptItem[] = [
      user("clear the bundler cache"),
      ...mentions("m"),
      call("e1", "bash", { command: "ls -la build" }),
      result("e1", "bash", "total 8\ndrwxr-xr-x 2 dev dev 4096 Mar 3 10:10 cache\n-rw-r--r-- 1 dev dev  120 Mar 3 10:11 out.js"),
      call("e2", "bash", { command: "du -sh /work/project/build/cache" }),
      result("e2", "bash", "12M\t/work/project/build/cache"),
      call("e3", "read", { path: "build/cache/manifest.json" }),
      result("e3", "read", "FILE-CONTENTS"),
    ];
    const items = itemsOf(built(rm, t));
    assert.deepEqual(
      items.map((i) => i.arguments),
      ['{"command":"ls -la build"}', '{"command":"du -sh /work/project/build/cache"}', '{"path":"build/cache/manifest.json"}'],
      "the listing of its folder, the call on its absolute path, the read inside it: in session order",
    );
    assert.equal(items[2]!.result, null, "still no file contents");
  });

  test("a long session that only mentions the target in passing adds nothing, however long", () => {
    const t: TranscriptItem[] = [];
    for (let i = 0; t.length < 10_000; i++) {
      t.push(...mentions(`r${i}-`));
      if (i % 5 === 0) t.push(user(i % 10 === 0 ? "and keep the cache in mind" : "run the tests again"));
    }
    t.push(user("now clear it"));
    const none = built(rm, [user("now clear it")]);
    const long = built(rm, t);
    assert.equal(long.evidence.kept + long.evidence.omitted, 0);
    assert.deepEqual(doc(long.user).evidence, undefined);
    // One earlier message names the target's last part (kept once, though repeated); nothing else is added.
    assert.ok(long.tokens - none.tokens <= 120, `${long.tokens} against ${none.tokens} with no history`);
    assert.equal(built(rm, t).user, long.user, "deterministic");
  });

  test("a repeated call keeps only its latest run, and of the listings of the target's folder only the latest", () => {
    const t: TranscriptItem[] = [user("clear build/cache")];
    for (let i = 0; i < 20; i++) {
      t.push(call(`s${i}`, "bash", { command: "stat build/cache" }), result(`s${i}`, "bash", `run ${i}`));
      t.push(call(`l${i}`, i % 2 ? "ls" : "bash", i % 2 ? { path: "build" } : { command: "ls build" }), result(`l${i}`, "ls", `cache/\nout-${i}.js`));
    }
    const r = built(rm, t);
    assert.deepEqual(
      itemsOf(r).map((i) => [i.arguments, i.result]),
      [
        ['{"command":"stat build/cache"}', "run 19"],
        ['{"path":"build"}', "cache/\nout-19.js"],
      ],
    );
    assert.equal(r.evidence.omitted, 0, "repeats are not counted as left out");
  });

  test("a long listing of the target's folder keeps only the lines naming it; a listing of the target itself is kept (clipped)", () => {
    const entries = Array.from({ length: 40 }, (_, i) => `file-${i}.js`);
    const t: TranscriptItem[] = [
      user("clear build/cache"),
      call("p", "ls", { path: "build" }),
      result("p", "ls", [...entries.slice(0, 20), "cache/", ...entries.slice(20)].join("\n")),
      call("c", "ls", { path: "build/cache" }),
      result("c", "ls", entries.join("\n")),
    ];
    const [parent, itself] = itemsOf(built(rm, t));
    assert.equal(parent!.result, "cache/\n…[40 other lines]");
    assert.ok(itself!.result!.startsWith("file-0.js\nfile-1.js"));
    assert.ok(estimateTokens(itself!.result!) <= INPUT_BOUNDS.evidenceResult);
  });

  test("evidence gets at most a quarter of the budget and a fixed number of items, best first, shown in session order", () => {
    const t: TranscriptItem[] = [user("clear build/cache")];
    for (let i = 0; i < 50; i++) t.push(call(`u${i}`, "read", { path: `build/cache/part-${i}.bin` }), result(`u${i}`, "read", "x"));
    t.push(call("eq", "bash", { command: "stat build/cache" }), result("eq", "bash", "ok"));
    for (let i = 50; i < 60; i++) t.push(call(`u${i}`, "read", { path: `build/cache/part-${i}.bin` }), result(`u${i}`, "read", "x"));
    for (const budget of [DEFAULT_BUDGET, 16_384 as TokenBudget, 32_768 as TokenBudget]) {
      const r = built(rm, t, budget);
      const items = itemsOf(r);
      const ev = canonicalJson((doc(r.user).evidence as { items: unknown }).items);
      assert.ok(ev.ok && estimateTokens(ev.text) <= budget / 4, `${budget}: evidence within a quarter of the budget`);
      assert.ok(items.length <= INPUT_BOUNDS.evidenceItems);
      assert.equal(r.evidence.kept + r.evidence.omitted, 61, "every call on the target was a candidate");
      // The call on the target itself ranks above calls inside it; among those, the latest win.
      assert.ok(
        items.some((i) => i.arguments === '{"command":"stat build/cache"}'),
        `${budget}: the exact call is kept`,
      );
      const parts = items.flatMap((i) => (/part-(\d+)/.exec(i.arguments) ? [Number(/part-(\d+)/.exec(i.arguments)![1])] : []));
      assert.deepEqual(
        parts,
        Array.from({ length: parts.length }, (_, k) => 60 - parts.length + k),
        `${budget}: the latest calls inside it, in session order`,
      );
    }
  });

  test("when the budget is short, the least specific evidence goes first", () => {
    const t: TranscriptItem[] = [
      user("clear build/cache"),
      call("eq", "bash", { command: `stat build/cache # ${"a".repeat(300)}` }),
      result("eq", "bash", "ok"),
      call("in", "read", { path: `build/cache/${"b".repeat(300)}` }),
      result("in", "read", "x"),
    ];
    const roomy = built(rm, t);
    assert.equal(roomy.evidence.kept, 2);
    // Just too small for both: the newer but less specific call inside the target is dropped.
    const tight = built(rm, t, (roomy.retryTokens - 50) as TokenBudget);
    assert.deepEqual(
      itemsOf(tight).map((i) => i.tool),
      ["bash"],
    );
  });

  test("a call that only shares words is evidence only when nothing stronger exists, and then only one", () => {
    const deploy = action("bash", { command: "kubectl rollout restart deployment/api-gateway --context staging-eu" });
    const t: TranscriptItem[] = [
      user("restart the gateway"),
      call("w1", "bash", { command: "kubectl rollout status deploy/other --context staging-eu" }),
      result("w1", "bash", "ok"),
      call("w2", "bash", { command: "kubectl rollout history deploy/other --context staging-eu" }),
      result("w2", "bash", "ok"),
      call("w3", "bash", { command: "helm rollout" }),
      result("w3", "bash", "ok"),
    ];
    assert.deepEqual(
      itemsOf(built(deploy, t)).map((i) => i.arguments),
      ['{"command":"kubectl rollout history deploy/other --context staging-eu"}'],
      "the latest call sharing two words (rollout, staging-eu)",
    );
    const exact = [...t, call("x", "bash", { command: "kubectl get deployment/api-gateway -o yaml" }), result("x", "bash", "kind: Deployment")];
    assert.deepEqual(
      itemsOf(built(deploy, exact)).map((i) => i.arguments),
      ['{"command":"kubectl get deployment/api-gateway -o yaml"}'],
    );
  });

  test("another call of the same tool with a value in common is evidence; file tools are matched by path only", () => {
    const a = action("deploy_service", { service: "api", environment: "production", version: "1.4.2" });
    const t: TranscriptItem[] = [
      user("ship it"),
      call("d1", "deploy_service", { service: "api", environment: "staging", version: "1.4.2" }),
      result("d1", "deploy_service", "deployed"),
      call("d2", "deploy_service", { service: "billing", environment: "staging" }),
      result("d2", "deploy_service", "deployed"),
      call("n", "write", { path: "notes.md", content: "deploy api 1.4.2 to production" }),
      result("n", "write", "ok"),
    ];
    assert.deepEqual(
      itemsOf(built(a, t)).map((i) => i.arguments),
      ['{"environment":"staging","service":"api","version":"1.4.2"}'],
    );
  });

  test("earlier user messages: those naming the exact target take the places first, a word mention only when none names it", () => {
    const t: TranscriptItem[] = [
      user("when we are done, delete build/cache"),
      user("the cache is slow"),
      user("we also keep a build/cache2 folder"),
      user("is the cache still slow?"),
      user("the cache again"),
      user("go"),
    ];
    const auth = doc(built(rm, t).user).authorization as Record<string, unknown>;
    assert.deepEqual(auth.earlier_user_messages_naming_this_action, ["when we are done, delete build/cache", "is the cache still slow?", "the cache again"]);
    const npm = action("bash", { command: "npm install lodash-es" });
    const loose = doc(built(npm, [user("lodash-es is big"), user("we use lodash-es"), user("go")]).user).authorization as Record<string, unknown>;
    assert.deepEqual(loose.earlier_user_messages_naming_this_action, ["we use lodash-es"], "at most one, the latest");
  });
});
