// Choosing the classifier engine (/perm-auto-model, --reviewer): a model Pi's registry lists only
// as a classifier is validated like a chat model (known to Pi, credentials) and stored with
// engine "classifier"; a thinking level makes no sense for it; the state file keeps the engine.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseReviewerArgs, reviewerSavedText, validateReviewer } from "../../../src/commands/reviewer.ts";
import { parseConfig, serializeConfig } from "../../../src/state/artifacts.ts";
import { reviewerLabel } from "../../../src/review/types.ts";
import { classifierModelsJson } from "../../helpers/classifier-models.ts";
import { makeRegistry, tempAgentDir } from "../../helpers/review-fixtures.ts";

const at = { typesafe: "http://127.0.0.1:9/ts", decisions: "http://127.0.0.1:9/oa" };

describe("/perm-auto-model with a classifier model", () => {
  test("typesafe/jev-latest (only a classifier) and openai/gpt-6-luna classifier (both) are classifier reviewers, validated against Pi's registry", async () => {
    const { registry } = await makeRegistry(tempAgentDir(), classifierModelsJson(at));
    for (const [p, m, word] of [
      ["typesafe", "jev-latest", undefined],
      ["openai", "gpt-6-luna", "classifier"],
    ] as const) {
      const v = await validateReviewer(registry, p, m, word);
      assert.deepEqual(v, { ok: true, reviewer: { provider: p, model: m, thinking: "off", engine: "classifier" } });
      assert.match(reviewerSavedText(v.ok ? v.reviewer : undefined, "/a/state.json"), new RegExp(`${p}/${m} \\(classifier engine\\)`));
      assert.equal(v.ok && reviewerLabel(v.reviewer), `${p}/${m} (classifier)`);
    }
    // A model Pi lists as both stays the chat reviewer unless the classifier is named.
    const luna = await validateReviewer(registry, "openai", "gpt-6-luna", undefined);
    assert.equal(luna.ok && luna.reviewer.engine, undefined);
  });

  test("a thinking level is refused for a classifier; 'classifier' names the engine", async () => {
    const { registry } = await makeRegistry(tempAgentDir(), classifierModelsJson(at));
    const v = await validateReviewer(registry, "typesafe", "jev-latest", "high");
    assert.equal(v.ok, false);
    assert.match(v.ok ? "" : v.message, /classifier model: it has no thinking level/);
    assert.equal((await validateReviewer(registry, "typesafe", "jev-latest", "classifier")).ok, true);
    const parsed = parseReviewerArgs("typesafe/jev-latest classifier");
    assert.deepEqual(parsed, { ok: true, provider: "typesafe", model: "jev-latest", thinking: "classifier" });
  });

  test("an unknown classifier, a chat model asked as a classifier, or no credentials: refused", async () => {
    const { registry } = await makeRegistry(tempAgentDir(), classifierModelsJson(at));
    const unknown = await validateReviewer(registry, "typesafe", "jev-nope", undefined);
    assert.equal(unknown.ok, false);
    const chat = await validateReviewer(registry, "openai", "gpt-4o-mini", "classifier");
    assert.equal(chat.ok, false);
    assert.match(chat.ok ? "" : chat.message, /no classifier model openai\/gpt-4o-mini/);
    const bare = await makeRegistry(tempAgentDir());
    const saved = { ...process.env };
    delete process.env.TYPESAFE_API_KEY;
    try {
      const noAuth = await validateReviewer(bare.registry, "typesafe", "jev-latest", undefined);
      assert.equal(noAuth.ok, false);
      assert.match(noAuth.ok ? "" : noAuth.message, /no credentials/);
    } finally {
      process.env.TYPESAFE_API_KEY = saved.TYPESAFE_API_KEY;
      if (saved.TYPESAFE_API_KEY === undefined) delete process.env.TYPESAFE_API_KEY;
    }
  });

  test("the state file keeps the engine; a chat reviewer's text is unchanged", () => {
    const classifier = {
      enabled: true,
      revision: 3,
      reviewer: { provider: "typesafe", model: "jev-latest", thinking: "off" as const, engine: "classifier" as const },
    };
    const text = serializeConfig(classifier);
    assert.deepEqual(parseConfig(text), { kind: "ok", snapshot: classifier });
    const chat = { enabled: true, revision: 3, reviewer: { provider: "judge", model: "judge-1", thinking: "off" as const } };
    assert.equal(serializeConfig(chat), '{"schema":1,"revision":3,"enabled":true,"reviewer":{"provider":"judge","model":"judge-1","thinking":"off"}}\n');
    // Any other engine value is damage, never read as a chat reviewer.
    assert.equal(parseConfig(text.replace('"classifier"', '"chat"')).kind, "malformed");
  });
});

describe("doctor names the engine", () => {
  /** An agent dir whose models.json points the classifiers at the loopback server, with a classifier reviewer stored. */
  async function doctorWith(model: string) {
    const { reviewerReport } = await import("../../../src/cli/doctor.ts");
    const { processGlobalState } = await import("../../../src/state/global.ts");
    const { writeFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const dir = tempAgentDir();
    writeFileSync(join(dir, "models.json"), JSON.stringify(classifierModelsJson(at)));
    const store = (m: string) => processGlobalState(dir).setReviewer({ provider: "typesafe", model: m, thinking: "off", engine: "classifier" });
    await store(model);
    return { report: (settings?: Parameters<typeof reviewerReport>[1]) => reviewerReport(dir, settings), store };
  }

  test("a stored classifier reviewer is checked as a classifier and reported as the classifier engine", async () => {
    const d = await doctorWith("jev-latest");
    const r = await d.report();
    assert.equal(r.valid, true, r.why);
    assert.equal(r.engine, "classifier");
    assert.match(r.why, /classifier engine/);
    await d.store("jev-gone");
    const gone = await d.report();
    assert.equal(gone.valid, false);
    assert.match(gone.why, /no such classifier model/);
  });

  test("a threshold for a condition that does not exist is reported before any review is denied for it", async () => {
    const d = await doctorWith("jev-latest");
    const typo = await d.report({ thresholds: { no_secret_egres: { satisfied: 0.9, rejected: 0.2 } } });
    assert.equal(typo.valid, false);
    assert.match(typo.why, /review\.classifier\.thresholds\.no_secret_egres: no such condition/);
    assert.equal((await d.report({ thresholds: {} })).valid, true);
  });
});
