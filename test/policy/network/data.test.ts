// The network data (src/policy/data/network.json) carries its own examples: every destination is
// judged against the default list as it says, every address classifies as it says. The schema
// refuses a file that is off by one key, and the values the proxy reads are the ones promised.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import data from "../../../src/policy/data/network.json" with { type: "json" };
import { checkNetworkData, networkData } from "../../../src/policy/network/data.ts";
import { networkExampleFailures } from "../../../src/policy/network/entries.ts";

describe("network data", () => {
  test("the data's examples hold", () => {
    assert.deepEqual(networkExampleFailures(), []);
  });

  test("the default list is the major package registries, each entry once", () => {
    const d = networkData();
    assert.deepEqual([...d.defaults.allow].sort(), [
      "crates.io",
      "files.pythonhosted.org",
      "index.crates.io",
      "index.rubygems.org",
      "proxy.golang.org",
      "pypi.org",
      "registry.npmjs.org",
      "registry.yarnpkg.com",
      "repo.maven.apache.org",
      "repo1.maven.org",
      "rubygems.org",
      "static.crates.io",
      "sum.golang.org",
    ]);
    assert.deepEqual(d.defaults.deny, []);
    assert.equal(d.defaults.reviewUnlisted, false);
    assert.equal(d.defaultGroups.get("files.pythonhosted.org"), "PyPI");
    assert.ok(Object.isFrozen(d.defaults.allow));
  });

  test("the proxy's bounds and the forwarder's port", () => {
    const d = networkData();
    assert.deepEqual(d.proxy, {
      connectTimeoutMs: 10_000,
      idleTimeoutMs: 120_000,
      maxConnectionMs: 1_800_000,
      maxBytesPerConnection: 4 * 2 ** 30,
      maxConnectionsPerRun: 64,
      maxHeaderBytes: 16_384,
      headTimeoutMs: 10_000,
    });
    assert.equal(d.forwarderPort, 3128);
  });

  // A deep copy to break: mutable and loosely typed on purpose.
  type Raw = typeof data & { allow?: unknown; proxy: { connectTimeout?: unknown } };
  const broken: Array<[string, (raw: Raw) => void, RegExp]> = [
    ["an unknown key", (r) => (r.allow = []), /at \/allow: unknown key/],
    ["a misspelled bound", (r) => (r.proxy.connectTimeout = 5), /at \/proxy\/connectTimeout: unknown key/],
    ["a bound of the wrong type", (r) => ((r.proxy as { maxHeaderBytes: unknown }).maxHeaderBytes = "16k"), /at \/proxy\/maxHeaderBytes/],
    ["a port out of range", (r) => (r.forwarder.port = 70000), /at \/forwarder\/port/],
    ["an empty group", (r) => (r.defaults.allow.npm = []), /at \/defaults\/allow\/npm/],
    [
      "an unknown verdict in an example",
      (r) => ((r.examples.destinations[0] as { verdict: string }).verdict = "maybe"),
      /at \/examples\/destinations\/0\/verdict/,
    ],
    ["an unknown address class", (r) => ((r.examples.addresses[0] as { class: string }).class = "intranet"), /at \/examples\/addresses\/0\/class/],
  ];
  for (const [what, change, message] of broken)
    test(`${what} is refused naming where`, () => {
      const raw = structuredClone(data) as Raw;
      change(raw);
      assert.throws(() => checkNetworkData(raw), message);
    });
});
