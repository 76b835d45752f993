// `pi-auto-mode check --review` and `eval --review --reviewer provider/classifier-model`: the bin
// spawned with its own agent dir, Pi's typesafe/jev-latest moved onto a loopback System One
// server. The engine is named, each condition's probability and band is reported, and a corpus is
// scored with the classifier.

import assert from "node:assert/strict";
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { answerStep, inBand } from "../../helpers/classifier-models.ts";
import { classifierModelsJson } from "../../helpers/classifier-models.ts";
import { type ClassifierServer, startClassifierServer } from "../../helpers/classifier-servers.ts";
import { lastJson, runCli } from "../../helpers/cli.ts";
import { tempAgentDir } from "../../helpers/review-fixtures.ts";

const CORPUS = fileURLToPath(new URL("../../fixtures/redteam.jsonl", import.meta.url));
const PUSH = ["--backend", "review-only", "--", "git push --force origin feature/x"];

let server: ClassifierServer;
let agentDir: string;
let home: string;
before(async () => {
  server = await startClassifierServer("typesafe-system-one");
  agentDir = tempAgentDir();
  home = realpathSync(join(agentDir, ".."));
  mkdirSync(join(home, "ws"), { recursive: true });
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(classifierModelsJson({ typesafe: server.baseUrl })));
});
after(async () => {
  await server.close();
});

const run = (args: readonly string[]) => runCli(args, { cwd: join(home, "ws"), env: { HOME: home, PI_CODING_AGENT_DIR: agentDir } });

describe("the command line with a classifier reviewer", () => {
  test("check --review: the engine, every condition's probability and band, the judgment", async () => {
    const step = answerStep({ no_secret_egress: inBand("no_secret_egress", "rejected") });
    server.script([step, step]);
    const j = lastJson((await run(["check", "--review", "--reviewer", "typesafe/jev-latest", "--json", ...PUSH])).stdout) as Record<string, unknown>;
    assert.equal(j.decision, "deny");
    assert.equal(j.engine, "classifier");
    assert.equal(j.reviewer, "typesafe/jev-latest (classifier)");
    const c = j.classifier as { judgment: string; decidedBy: string; conditions: { id: string; band: string; probability: number }[] };
    assert.equal(c.judgment, "deny");
    assert.equal(c.decidedBy, "no_secret_egress");
    assert.equal(c.conditions.find((x) => x.id === "no_secret_egress")?.band, "rejected");
    const human = await run(["check", "--review", "--reviewer", "typesafe/jev-latest", ...PUSH]);
    assert.match(human.stdout, /^engine: +classifier/m);
    assert.match(human.stdout, /^ {2}no_secret_egress: +hazard, 0\.\d+ -> rejected/m);
    assert.match(human.stdout, /^judgment: +deny, decided by no_secret_egress/m);
  });

  test("eval --review --reviewer typesafe/jev-latest scores the corpus with the classifier", async () => {
    server.script([], answerStep());
    const before = server.received.length;
    const r = await run(["eval", CORPUS, "--review", "--reviewer", "typesafe/jev-latest", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const j = lastJson(r.stdout) as {
      by_route: { review: number };
      review: { engine: string; reviewed: number; cases: { classifier?: { judgment: string }; failure: string | null }[] };
    };
    assert.equal(j.review.engine, "classifier");
    assert.equal(j.review.reviewed, j.by_route.review);
    assert.ok(j.review.reviewed > 0);
    const judged = j.review.cases.filter((c) => c.classifier);
    // One classify call per judged case; a case too large for the budget is refused unsent.
    assert.equal(server.received.length - before, judged.length);
    assert.ok(judged.length > j.review.reviewed / 2);
    assert.ok(judged.every((c) => c.classifier?.judgment === "allow"));
    assert.ok(
      j.review.cases.every((c) => c.classifier || c.failure === "over-budget"),
      "the rest were over the budget",
    );
  });
});
