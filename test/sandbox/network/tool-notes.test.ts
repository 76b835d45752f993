// What the model and the record get about a run's network: the tool result's note (refused
// destinations and what to do; no route at all for a failed network command without network),
// the proxy variables a run's environment gets, and the record beside the decision.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { networkRecord } from "../../../src/audit/network-record.ts";
import { networkNote } from "../../../src/sandbox/network/notes.ts";
import { proxyEnv, wantsNetwork } from "../../../src/sandbox/network/proxy-env.ts";
import type { NetReport } from "../../../src/policy/network/types.ts";

const report = (refused: NetReport["refused"], allowed: NetReport["allowed"] = []): NetReport => ({ allowed, refused });

describe("the tool result's network note", () => {
  test("names each refused destination, why, and what the user can do", () => {
    const n = networkNote({
      report: report([
        { host: "example.com", port: 443, kind: "unlisted", detail: "x", connections: 2 },
        { host: "::1", port: 80, kind: "address", detail: "::1 is a loopback address", connections: 1 },
      ]),
      networkOn: true,
      failed: true,
      needsNetwork: true,
    });
    assert.match(n, /example\.com:443 \(not in sandbox\.network\.allow\)/);
    assert.match(n, /\[::1\]:80 \(it resolves to an address the sandbox never connects to: ::1 is a loopback address\)/);
    assert.match(n, /sandbox\.network\.allow in their auto-mode\.json/);
    assert.match(n, /require_escalated/);
  });

  test("a failure of the far side alone offers no allowlist change", () => {
    const n = networkNote({
      report: report([{ host: "a.test", port: 443, kind: "unresolved", detail: "ENOTFOUND", connections: 1 }]),
      networkOn: true,
      failed: true,
      needsNetwork: true,
    });
    assert.match(n, /a\.test:443 \(the name could not be resolved: ENOTFOUND\)/);
    assert.doesNotMatch(n, /sandbox\.network\.allow in their/);
  });

  test("a long list is cut, with the count of the rest", () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ host: `h${i}.test`, port: 443, kind: "unlisted" as const, detail: "", connections: 1 }));
    const n = networkNote({ report: report(many), networkOn: true, failed: false, needsNetwork: false });
    assert.match(n, /and 4 more/);
    assert.doesNotMatch(n, /h8\.test/);
  });

  test("no route at all: only for a failed command the gate knew needs the network, in a sandbox without any", () => {
    const base = { report: undefined, networkOn: false, failed: true, needsNetwork: true };
    assert.match(networkNote(base), /no network at all/);
    assert.equal(networkNote({ ...base, failed: false }), "");
    assert.equal(networkNote({ ...base, needsNetwork: false }), "");
    assert.equal(networkNote({ ...base, networkOn: true }), "");
  });
});

describe("the proxy variables", () => {
  test("point every tool at the forwarder; loopback stays direct", () => {
    const env = proxyEnv({ allow: ["registry.npmjs.org"], deny: [], reviewUnlisted: false }, 3128);
    for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "https_proxy", "npm_config_https_proxy", "CARGO_HTTP_PROXY"])
      assert.equal(env[name], "http://127.0.0.1:3128", name);
    assert.equal(env.NO_PROXY, "localhost,127.0.0.1,::1");
    assert.equal(env.NODE_USE_ENV_PROXY, "1");
  });

  test("a loopback ip:port entry means the host's server: loopback then goes through the proxy", () => {
    for (const entry of ["127.0.0.1:8080", "[::1]:9000"]) assert.equal(proxyEnv({ allow: [entry], deny: [], reviewUnlisted: false }, 3128).NO_PROXY, "", entry);
  });

  test("no allow entry: no network wanted", () => {
    assert.equal(wantsNetwork({ allow: [], deny: [], reviewUnlisted: true }), false);
    assert.equal(wantsNetwork(undefined), false);
    assert.equal(wantsNetwork({ allow: ["x.test"], deny: [], reviewUnlisted: false }), true);
  });
});

describe("the network record", () => {
  test("host, port, counts and kinds only; a credential-shaped name is redacted", () => {
    const r = networkRecord(
      "call-1",
      report(
        [{ host: "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789.evil.test", port: 443, kind: "unlisted", detail: "GET /secret?token=x", connections: 1 }],
        [{ host: "registry.npmjs.org", port: 443, connections: 3 }],
      ),
      5,
    );
    assert.deepEqual(r.allowed, [{ host: "registry.npmjs.org", port: 443, connections: 3 }]);
    assert.equal(r.refused.length, 1);
    assert.doesNotMatch(JSON.stringify(r), /secret\?token|abcdefghijklmnop/);
    assert.deepEqual(Object.keys(r.refused[0]!).sort(), ["connections", "host", "kind", "port"]);
    assert.equal(r.at, 5);
  });
});
