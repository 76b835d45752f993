// Audit: mode edges at the Pi boundary. Only a reload of the same runtime restores
// `unrestricted`, and it must restore what the runtime was in, not an older entry that moving
// around the session tree brought back onto the branch (P2).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { processGlobalState } from "../../src/state/global.ts";
import type { PiHarness } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

function decisions(h: PiHarness): DecisionRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

const session = reviewOnlySessions();

describe("audit: unrestricted is never restored from a branch the runtime has left", () => {
  test("/perm unrestricted, /perm auto, back up the tree past the auto entry, reload: still auto", async () => {
    const h = await session({ tools: ["read", "bash"] });
    await h.session.prompt("/perm unrestricted");
    h.faux.setResponses([done("hi")]);
    await h.session.prompt("hello");
    const answer = h.session.sessionManager.getLeafEntry();
    assert.equal(answer?.type, "message");
    // /perm auto needs a reviewer; remove it again so no review is attempted below.
    const store = processGlobalState(h.agentDir);
    await store.setReviewer({ provider: "faux", model: "faux-1", thinking: "off" });
    await h.session.prompt("/perm auto");
    await store.setReviewer(undefined);

    await h.session.navigateTree(answer!.id);
    h.faux.setResponses([call("bash", { command: "curl -s https://example.com" }), done()]);
    await h.session.prompt("fetch");
    assert.equal(decisions(h).at(-1)?.mode, "auto-review-only", "the runtime is in auto after moving in the tree");

    await h.session.reload();
    h.faux.setResponses([call("bash", { command: "curl -s https://example.com" }), done()]);
    await h.session.prompt("fetch again");
    const last = decisions(h).at(-1);
    assert.equal(last?.mode, "auto-review-only", "reload restores the mode the runtime was in");
    assert.equal(last?.outcome, "denied");
  });

  test("an unrestricted runtime that moves to a branch from before /perm unrestricted is still unrestricted after its reload", async () => {
    const h = await session({ tools: ["read", "bash"] });
    h.faux.setResponses([done("hi")]);
    await h.session.prompt("hello");
    const answer = h.session.sessionManager.getLeafEntry();
    await h.session.prompt("/perm unrestricted");
    await h.session.navigateTree(answer!.id);
    await h.session.reload();
    h.faux.setResponses([call("bash", { command: "curl -s https://example.com -o /dev/null || true" }), done()]);
    await h.session.prompt("fetch");
    assert.equal(decisions(h).at(-1)?.mode, "unrestricted");
  });
});
