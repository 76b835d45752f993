// P11, issue 23 item 3, through a real Pi session: a canary secret of every format
// (test/helpers/secret-canaries.ts) in what the user typed and in the arguments of a call the gate
// sends to review. The reviewer is a loopback OpenAI chat-completions server registered through
// models.json, so pi-ai's real client sends the request; the request bodies it received, and every
// record auto mode kept in the session, are scanned: no canary arrives, and the review happened.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { processGlobalState } from "../../src/state/global.ts";
import { REVIEW_ENTRY_TYPE } from "../../src/tools/review-call.ts";
import { loopbackModels, startLoopback } from "../helpers/openai-loopback.ts";
import { makeRoot, startPi } from "../helpers/pi-session.ts";
import { VERDICT } from "../helpers/review-fixtures.ts";
import { CANARIES } from "../helpers/secret-canaries.ts";
import { deployTool } from "../helpers/tools.ts";

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe("no secret of any format reaches the reviewer from a real Pi session", () => {
  test("canaries typed by the user and passed in a reviewed call's arguments arrive nowhere", async () => {
    const { root, cwd, agentDir } = makeRoot("pi-auto-mode-secrets-e2e-");
    const lb = await startLoopback();
    cleanups.push(() => lb.close());
    lb.script([], { kind: "verdict", text: VERDICT.deny });
    writeFileSync(join(agentDir, "models.json"), JSON.stringify(loopbackModels(lb.baseUrl)));
    const deploy = deployTool();
    const h = await startPi({ root, cwd, extensionFactories: [deploy.factory], tools: ["read", "bash", "deploy_service"] });
    cleanups.push(() => h.dispose());
    const set = await processGlobalState(agentDir).setReviewer({ provider: "loop", model: "judge", thinking: "off" });
    assert.equal(set.kind, "committed");

    const everything = CANARIES.map((c) => c.text).join("\n");
    h.faux.setResponses([
      fauxAssistantMessage([fauxToolCall("deploy_service", { service: `billing-api\n${everything}` })], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxText("done")]),
    ]);
    await h.session.prompt(`deploy billing-api with these credentials:\n${everything}`);
    await h.session.waitForIdle();

    assert.equal(lb.received.length, 1, "the call was reviewed by the loopback reviewer");
    const wire = lb.received.map((r) => r.raw + JSON.stringify(r.headers)).join("\n");
    assert.ok(wire.includes("billing-api"), "the request itself arrived");
    assert.ok(wire.includes("[REDACTED]"));
    const arrived = CANARIES.filter((c) => wire.includes(c.secret) || wire.includes(JSON.stringify(c.secret).slice(1, -1))).map((c) => c.name);
    assert.deepEqual(arrived, [], "secrets that reached the reviewer's server");

    // What auto mode kept in the session (review and decision records) holds none either.
    const kept = JSON.stringify(h.session.sessionManager.getEntries().filter((e) => e.type === "custom"));
    assert.ok(kept.includes(REVIEW_ENTRY_TYPE), "a review record was kept");
    const inRecords = CANARIES.filter((c) => kept.includes(c.secret) || kept.includes(JSON.stringify(c.secret).slice(1, -1))).map((c) => c.name);
    assert.deepEqual(inRecords, [], "secrets in auto mode's session records");
    assert.equal(deploy.runs(), 0, "denied by the scripted verdict");
  });
});
