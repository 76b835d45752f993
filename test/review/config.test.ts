// The user's reviewer limits (auto-mode.json `review`): validated, user-file only, and applied
// to the review that runs at the gate where they were read.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { loadPolicyConfig } from "../../src/policy/config/load.ts";
import type { TokenBudget } from "../../src/review/budget.ts";
import { createReviewService } from "../../src/review/service.ts";
import { action, fauxRegistry, JUDGE, tempAgentDir } from "../helpers/review-fixtures.ts";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

function configIn(user: unknown, project?: unknown) {
  const agentDir = tempAgentDir();
  const cwd = join(agentDir, "..", "ws");
  mkdirSync(join(cwd, ".pi"), { recursive: true });
  writeFileSync(join(agentDir, "auto-mode.json"), JSON.stringify(user));
  if (project !== undefined) writeFileSync(join(cwd, ".pi", "auto-mode.json"), JSON.stringify(project));
  return loadPolicyConfig({ agentDir, cwd, home: join(agentDir, "..") });
}

describe("reviewer limits in the user configuration", () => {
  test("a valid budget and deadline load", () => {
    const r = configIn({ version: 1, review: { maxInputTokens: 4096, deadlineMs: 5000 } });
    assert.ok(r.ok);
    assert.deepEqual(r.config.reviewer, { maxInputTokens: 4096, deadlineMs: 5000 });
  });

  test("out-of-range values are a fault", () => {
    for (const review of [{ maxInputTokens: 1024 }, { maxInputTokens: 40_000 }, { deadlineMs: 10 }, { maxInputTokens: 4096.5 }, { budget: 4096 }]) {
      const r = configIn({ version: 1, review });
      assert.equal(r.ok, false, JSON.stringify(review));
    }
  });

  test("a project file cannot set reviewer limits", () => {
    const r = configIn({ version: 1 }, { version: 1, review: { maxInputTokens: 32768 } });
    assert.equal(r.ok, false);
  });

  test("a per-review budget override applies: a small budget refuses before calling", async () => {
    const { registry, faux } = await fauxRegistry();
    faux.setResponses([]);
    const service = createReviewService();
    const a = action("bash", { command: `echo ${"z".repeat(3000)} > build/out` });
    const defaultRun = service.review({ action: a, transcript: [], reviewer: JUDGE }, piReviewerModels(registry), undefined);
    const small = await service.review({ action: a, transcript: [], reviewer: JUDGE }, piReviewerModels(registry), undefined, { budget: 2048 as TokenBudget });
    assert.equal(small.kind === "failure" && small.failure, "over-budget");
    // With the default 8,192 the same action fits and reaches the (empty) faux queue.
    const res = await defaultRun;
    assert.notEqual(res.kind === "failure" && res.failure, "over-budget");
  });
});
