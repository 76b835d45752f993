// `pi-auto-mode check --review` and `eval --review`, end to end: the bin is spawned with its own
// HOME and PI_CODING_AGENT_DIR; the agent dir holds Pi's models.json pointing at a loopback
// OpenAI-compatible server, and the reviewer chosen through the durable global state.

import assert from "node:assert/strict";
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { processGlobalState } from "../../src/state/global.ts";
import { loopbackModels, startLoopback, type Loopback } from "../helpers/openai-loopback.ts";
import { tempAgentDir, VERDICT } from "../helpers/review-fixtures.ts";
import { lastJson, runCli, type CliRun } from "../helpers/cli.ts";

// The repository's own corpus: a fresh clone has no shared one beside it.
const CORPUS = fileURLToPath(new URL("../fixtures/redteam.jsonl", import.meta.url));

let lb: Loopback;
let agentDir: string; // reviewer configured
let bareDir: string; // models.json, no reviewer
let home: string;
before(async () => {
  lb = await startLoopback();
  agentDir = tempAgentDir();
  bareDir = tempAgentDir();
  home = realpathSync(join(agentDir, ".."));
  mkdirSync(join(home, "ws"), { recursive: true });
  for (const d of [agentDir, bareDir]) writeFileSync(join(d, "models.json"), JSON.stringify(loopbackModels(lb.baseUrl)));
  const r = await processGlobalState(agentDir).setReviewer({ provider: "loop", model: "judge", thinking: "off" });
  assert.equal(r.kind, "committed");
});
after(async () => {
  await lb.close();
});

function run(args: readonly string[], dir: string = agentDir): Promise<CliRun> {
  return runCli(args, { cwd: join(home, "ws"), env: { HOME: home, PI_CODING_AGENT_DIR: dir } });
}

// The review path is the same under every backend; review-only routes a push to review everywhere.
const PUSH = ["--backend", "review-only", "--", "git push origin main"];

describe("check --review", () => {
  test("the configured reviewer (read from PI_CODING_AGENT_DIR) allows: decision allow, the verdict, usage", async () => {
    lb.script([{ kind: "verdict", text: VERDICT.allow, usage: { prompt: 700, completion: 25 } }]);
    const n0 = lb.received.length;
    const r = await run(["check", "--review", "--user", "push main to origin", "--json", ...PUSH]);
    assert.equal(r.code, 0, r.stderr);
    const j = lastJson(r.stdout);
    assert.equal(j.route, "review");
    assert.equal(j.decision, "allow");
    assert.equal(j.reviewer, "loop/judge");
    assert.deepEqual(j.verdict, JSON.parse(VERDICT.allow));
    assert.equal(j.failure, null);
    assert.equal((j.usage as { input: number }).input, 700);
    assert.ok((j.usage as { cost: { total: number } }).cost.total > 0);
    assert.equal(lb.received.length - n0, 1);
    assert.match(lb.received.at(-1)!.raw, /push main to origin/);
  });

  test("a deny verdict: decision deny with the verdict", async () => {
    lb.script([{ kind: "verdict", text: VERDICT.deny }]);
    const j = lastJson((await run(["check", "--review", "--json", ...PUSH])).stdout);
    assert.equal(j.decision, "deny");
    assert.equal((j.verdict as { outcome: string }).outcome, "deny");
  });

  test("an unavailable reviewer: decision deny, verdict null, the failure class", async () => {
    lb.script([{ kind: "status", status: 429, headers: { "retry-after": "120" } }]);
    const r = await run(["check", "--review", "--json", ...PUSH]);
    assert.equal(r.code, 0);
    const j = lastJson(r.stdout);
    assert.equal(j.decision, "deny");
    assert.equal(j.verdict, null);
    assert.equal(j.failure, "rate-limited");
  });

  test("no reviewer configured: not-configured, and nothing is sent", async () => {
    const n0 = lb.received.length;
    const j = lastJson((await run(["check", "--review", "--json", ...PUSH], bareDir)).stdout);
    assert.equal(j.decision, "deny");
    assert.equal(j.failure, "not-configured");
    assert.equal(lb.received.length, n0);
  });

  test("--reviewer overrides the stored choice; the human output shows the verdict", async () => {
    lb.script([{ kind: "verdict", text: VERDICT.allow }]);
    const r = await run(["check", "--review", "--reviewer", "loop/judge", ...PUSH], bareDir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^decision: allow$/m);
    assert.match(r.stdout, /^verdict:\s+allow \(risk low/m);
    assert.match(r.stdout, /^usage:\s+\d+ in, \d+ out/m);
  });

  test("a call the gate decides itself is not reviewed", async () => {
    const n0 = lb.received.length;
    const j = lastJson((await run(["check", "--review", "--json", "--backend", "review-only", "--", "ls"])).stdout);
    assert.equal(j.route, "allow");
    assert.equal(j.decision, "allow");
    assert.equal(j.verdict, null);
    assert.equal(lb.received.length, n0);
  });

  test("bad review flags are usage errors", async () => {
    for (const args of [
      ["check", "--review", "--reviewer", "loop/unknown", ...PUSH],
      ["check", "--review", "--reviewer", "loop", ...PUSH],
      ["check", "--review", "--review-budget", "100", ...PUSH],
      ["check", "--review", "--review-budget", "40000", ...PUSH],
      ["check", "--reviewer", "loop/judge", ...PUSH],
      ["check", "--user", "hi", ...PUSH],
    ]) {
      const r = await run(args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
    }
  });
});

describe("eval --review", () => {
  test("replays the review-routed cases through the reviewer and reports per-label outcomes and tokens", async () => {
    lb.script([], { kind: "verdict", text: VERDICT.deny, usage: { prompt: 400, completion: 20 } });
    const r = await run(["eval", CORPUS, "--review", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const j = lastJson(r.stdout) as {
      by_route: { review: number };
      review: {
        reviewer: string;
        reviewed: number;
        by_label: Record<string, { reviewed: number; denied: number; failed: number; input_tokens: number }>;
        usage: { input: number };
        cases: unknown[];
      };
    };
    assert.equal(j.review.reviewer, "loop/judge");
    assert.equal(j.review.reviewed, j.by_route.review);
    const labels = Object.values(j.review.by_label);
    assert.equal(
      labels.reduce((n, o) => n + o.reviewed, 0),
      j.review.reviewed,
    );
    assert.ok(
      labels.every((o) => o.denied + o.failed === o.reviewed),
      "every answer was a deny",
    );
    assert.ok(j.review.usage.input > 0);
    assert.equal(j.review.cases.length, j.review.reviewed);
  });
});
