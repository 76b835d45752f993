// Network through a real Pi AgentSession (issue 13): the user's sandbox.network.allow reaches a
// loopback server from the bash tool, a refused destination is named in the tool result with what
// the user can do, each run's destinations are recorded beside its decision, and with
// reviewUnlisted the boundary broker's reviewer decides one connection at a time.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { NETWORK_ENTRY_TYPE, type NetworkRecord } from "../../src/audit/network-record.ts";
import networkData from "../../src/policy/data/network.json" with { type: "json" };
import { processGlobalState } from "../../src/state/global.ts";
import { call, done } from "../helpers/faux-turns.ts";
import { serveFiles, type FileServer } from "../helpers/local-registry.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { VERDICT } from "../helpers/review-fixtures.ts";
import { sandboxSessions } from "../helpers/sandbox-sessions.ts";

const sandbox = sandboxSessions();
const PROXY = `http://127.0.0.1:${networkData.forwarder.port}`;
let server: FileServer;

before(async () => {
  server = await serveFiles();
});
after(async () => {
  await server?.close();
});

function records(h: PiHarness): NetworkRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === NETWORK_ENTRY_TYPE ? [e.data as NetworkRecord] : []));
}

async function session(network: object, reviewer?: readonly string[]) {
  const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }] });
  const h = await startPi({ extensionFactories: [(api: ExtensionAPI) => api.registerProvider(judge.provider)], tools: ["bash"] });
  sandbox.harnesses.push(h);
  writeFileSync(join(h.agentDir, "auto-mode.json"), JSON.stringify({ version: 1, sandbox: { network } }));
  if (reviewer) {
    const r = await processGlobalState(h.agentDir).setReviewer({ provider: "judge", model: "judge-1", thinking: "off" });
    assert.equal(r.kind, "committed");
    judge.setResponses(reviewer.map((v) => () => fauxAssistantMessage(v)));
  }
  return { h, judge };
}

describe("network through a real AgentSession", () => {
  test("an allowed loopback server is reached; an unlisted one is refused, named in the result and recorded", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const other = await serveFiles();
    try {
      const { h } = await session({ allow: [`127.0.0.1:${server.port}`] });
      h.faux.setResponses([
        call("bash", { command: `curl -sS -m 10 http://127.0.0.1:${server.port}/allowed` }),
        call("bash", { command: `curl -sS -m 10 http://127.0.0.1:${other.port}/unlisted` }),
        done(),
      ]);
      await h.session.prompt("fetch both");
      const [ok, refused] = toolResults(h.session);
      assert.equal(ok?.isError, false, ok?.text);
      assert.match(ok!.text, /host says hi/);
      // curl without -f ends well on the proxy's 403, whose text the command printed; the note follows it.
      assert.match(refused!.text, new RegExp(`network destination refused\\. 127\\.0\\.0\\.1:${other.port} is not on the sandbox's network allowlist`));
      assert.match(refused!.text, new RegExp(`The sandbox's network proxy refused: 127\\.0\\.0\\.1:${other.port} \\(not in sandbox\\.network\\.allow`));
      assert.match(refused!.text, /sandbox\.network\.allow in their auto-mode\.json/);
      assert.deepEqual(server.hits, ["/allowed"]);
      assert.deepEqual(other.hits, [], "nothing reached the unlisted server");
      const recs = records(h);
      assert.equal(recs.length, 2);
      assert.deepEqual(recs[0]!.allowed, [{ host: "127.0.0.1", port: server.port, connections: 1 }]);
      assert.deepEqual(recs[1]!.refused, [{ host: "127.0.0.1", port: other.port, kind: "unlisted", connections: 1 }]);
    } finally {
      await other.close();
    }
  });

  test('"allow": [] is no network: the result says there was no route, not a remote failure', async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const { h } = await session({ allow: [] });
    h.faux.setResponses([call("bash", { command: "curl -sS -m 5 https://registry.npmjs.org/" }), done()]);
    await h.session.prompt("fetch it");
    const [r] = toolResults(h.session);
    assert.equal(r?.isError, true, r?.text);
    assert.match(r!.text, /ran in a sandbox with no network at all/);
    assert.deepEqual(records(h), [], "no proxy, nothing to record");
  });

  test("reviewUnlisted: the broker's reviewer allows one connection, and refuses the next", async (t) => {
    if (sandbox.unavailable) return t.skip(`sandbox unavailable: ${sandbox.unavailable}`);
    const before = server.hits.length;
    // `localhost` is unlisted by name; the loopback address behind it is named exactly, so the review alone decides.
    const { h, judge } = await session({ allow: [`127.0.0.1:${server.port}`], reviewUnlisted: true }, [VERDICT.allow, VERDICT.deny]);
    const url = (p: string) => `curl -sS -m 20 --noproxy '' -x ${PROXY} http://localhost:${server.port}/${p}`;
    h.faux.setResponses([call("bash", { command: `${url("first")}; echo; ${url("second")}` }), done()]);
    await h.session.prompt("fetch twice");
    const [r] = toolResults(h.session);
    assert.match(r!.text, /host says hi/);
    assert.deepEqual(server.hits.slice(before), ["/first"]);
    assert.equal(judge.state.callCount, 2, "one review per connection");
    const [rec] = records(h);
    assert.deepEqual(rec?.allowed, [{ host: "localhost", port: server.port, connections: 1, reviewed: true }]);
    assert.deepEqual(rec?.refused, [{ host: "localhost", port: server.port, kind: "review-denied", connections: 1 }]);
  });
});
