// P14: the boundary broker from a second extension loaded in the same real AgentSession: it finds
// the broker, asks about its own boundary, gets a grant with an allow, redeems it once, and a
// changed request is refused; an action the deterministic layers deny is denied to it too, and
// the decisions land in the session as auto mode's own do.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { DECISION_ENTRY_TYPE } from "../../src/audit/decision-record.ts";
import { type BoundaryBroker, getBoundaryBroker } from "../../src/broker.ts";
import { resetSharedController } from "../../src/sandbox/controller.ts";
import { startPi, type PiHarness } from "../helpers/pi-session.ts";

const harnesses: PiHarness[] = [];
after(async () => {
  for (const h of harnesses) await h.dispose();
  resetSharedController();
});

describe("P14: the boundary broker through a real AgentSession", () => {
  test("a second extension reviews, gets a grant, consumes it once, and a changed request is refused", async () => {
    let found: BoundaryBroker | undefined;
    let sessionId = "";
    const proxy = (api: ExtensionAPI) => {
      api.on("session_start", (_e, ctx) => {
        found = getBoundaryBroker();
        sessionId = ctx.sessionManager.getSessionId();
      });
    };
    const h = await startPi({ extensionFactories: [proxy], tools: ["read", "bash"] });
    harnesses.push(h);
    assert.ok(found, "the broker is published before sessions start");
    const broker = found!;
    const req = { surface: "file" as const, operation: "read", cwd: h.cwd, path: "README.md" };
    const d = await broker.review(req, { sessionId, scopeKey: "proxy", issueGrant: true });
    assert.equal(d.kind, "allow");
    assert.equal(d.kind === "allow" && d.provenance, "deterministic");
    const token = d.kind === "allow" ? d.grant! : "";
    assert.equal(broker.consumeGrant({ ...req, path: "OTHER.md" }, sessionId, token), false, "a changed request");
    const d2 = await broker.review(req, { sessionId, issueGrant: true });
    const token2 = d2.kind === "allow" ? d2.grant! : "";
    assert.equal(broker.consumeGrant(req, sessionId, token2), true);
    assert.equal(broker.consumeGrant(req, sessionId, token2), false, "once");

    const denied = await broker.review({ surface: "shell", operation: "exec", cwd: h.cwd, command: "rm -rf ~" }, { sessionId });
    assert.equal(denied.kind, "deny");
    assert.equal(denied.kind === "deny" && denied.reason, "hard-deny");
    assert.equal((await broker.review(req, { sessionId: "someone-else" })).kind, "deny", "only the running session");
    const recorded = h.session.sessionManager
      .getEntries()
      .filter((e) => e.type === "custom" && e.customType === DECISION_ENTRY_TYPE && (e.data as { broker?: unknown }).broker !== undefined);
    assert.equal(recorded.length, 3, "each decision the gate made is in the session");
  });
});
