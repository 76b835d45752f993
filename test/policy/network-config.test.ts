// sandbox.network in the user's and the project's configuration: the defaults when the user sets no
// allow list, `"allow": []` as no network, an invalid entry as a fault naming the file and the
// entry's path (P5), and a project that can only remove entries, add denies and turn review off
// (P15): every way it could widen the list is refused or has no effect.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { networkRows } from "../../src/cli/doctor.ts";
import { EMPTY_CONFIG } from "../../src/policy/config/load.ts";
import { networkData } from "../../src/policy/network/data.ts";
import { compileNetworkPolicy, effectiveNetwork, parseNetworkEntry } from "../../src/policy/network/entries.ts";
import type { NetworkSpec } from "../../src/policy/network/types.ts";
import { type ConfigEnv, configEnv, expectFault, expectOk, loadIn } from "../helpers/config-env.ts";

type Env = ConfigEnv;
const env = (user?: unknown, project?: unknown): Env => configEnv("pi-auto-mode-netconfig-", { user, project });
const load = loadIn;
const ok = expectOk;
const fault = expectFault;

const net = (user?: unknown, project?: unknown): NetworkSpec => ok(load(env(user, project))).network;
const DEFAULTS = networkData().defaults;

describe("sandbox.network: the user's settings", () => {
  test("no file, or a file without sandbox.network: the default registries, no denies, no review", () => {
    assert.deepEqual(net(), DEFAULTS);
    assert.deepEqual(net({ breakGlass: true }), DEFAULTS);
    assert.deepEqual(net({ sandbox: {} }), DEFAULTS);
    assert.deepEqual(net({ sandbox: { network: {} } }), DEFAULTS);
    assert.ok(DEFAULTS.allow.includes("registry.npmjs.org"));
    assert.deepEqual(EMPTY_CONFIG.network, DEFAULTS);
    assert.ok(EMPTY_CONFIG.networkOrigins.allow.every((o) => o === "default"));
  });

  test("an allow list replaces the defaults; [] is no network", () => {
    assert.deepEqual(net({ sandbox: { network: { allow: ["github.com", "*.githubusercontent.com"] } } }).allow, ["github.com", "*.githubusercontent.com"]);
    const off = net({ sandbox: { network: { allow: [] } } });
    assert.deepEqual(off.allow, []);
    assert.deepEqual(compileNetworkPolicy(off).judge({ host: "registry.npmjs.org", port: 443 }), { kind: "unlisted" });
  });

  test("deny alone keeps the defaults and adds the denies; reviewUnlisted is the user's", () => {
    const n = net({ sandbox: { network: { deny: ["registry.yarnpkg.com"], reviewUnlisted: true } } });
    assert.deepEqual(n.allow, DEFAULTS.allow);
    assert.deepEqual(n.deny, ["registry.yarnpkg.com"]);
    assert.equal(n.reviewUnlisted, true);
    assert.deepEqual(compileNetworkPolicy(n).judge({ host: "registry.yarnpkg.com", port: 443 }), { kind: "deny", entry: "registry.yarnpkg.com" });
  });

  const faults: Array<[string, unknown, RegExp]> = [
    ["an invalid allow entry", { sandbox: { network: { allow: ["pypi.org", "a..b"] } } }, /^\/sandbox\/network\/allow\/1: "a\.\.b": an empty label/],
    ["a numeric name", { sandbox: { network: { allow: ["2130706433:80"] } } }, /^\/sandbox\/network\/allow\/0: "2130706433:80": the name ends in a number/],
    ["an invalid deny entry", { sandbox: { network: { deny: ["*.com"] } } }, /^\/sandbox\/network\/deny\/0: "\*\.com": a wildcard needs/],
    ["an unbracketed IPv6 address", { sandbox: { network: { allow: ["::1:8080"] } } }, /^\/sandbox\/network\/allow\/0: .*in brackets/],
    ["an unknown key", { sandbox: { network: { allowed: [] } } }, /^\/sandbox\/network\/allowed: unknown key/],
    ["an unknown sandbox key", { sandbox: { proxy: {} } }, /^\/sandbox\/proxy: unknown key/],
    ["a project-only key in the user's file", { sandbox: { network: { remove: ["pypi.org"] } } }, /^\/sandbox\/network\/remove: unknown key/],
    ["an entry that is not a string", { sandbox: { network: { allow: [443] } } }, /^\/sandbox\/network\/allow\/0: /],
    ["an empty entry", { sandbox: { network: { allow: [""] } } }, /^\/sandbox\/network\/allow\/0: /],
    ["a list over the bound", { sandbox: { network: { allow: Array.from({ length: 1001 }, (_, i) => `h${i}.example`) } } }, /^\/sandbox\/network\/allow: /],
    ["reviewUnlisted not a boolean", { sandbox: { network: { reviewUnlisted: "yes" } } }, /^\/sandbox\/network\/reviewUnlisted: /],
  ];
  for (const [what, user, message] of faults)
    test(`${what} is a fault naming the user's file and the entry`, () => {
      const e = env(user);
      fault(load(e), e.userFile, message);
    });
});

describe("sandbox.network: a project can only tighten (P15)", () => {
  test("remove takes entries out of the defaults or the user's list, in any spelling of them", () => {
    const n = net(undefined, { sandbox: { network: { remove: ["Registry.NPMJS.org.", "pypi.org", "not-listed.example"] } } });
    assert.ok(!n.allow.includes("registry.npmjs.org"));
    assert.ok(!n.allow.includes("pypi.org"));
    assert.equal(n.allow.length, DEFAULTS.allow.length - 2);
    const u = net({ sandbox: { network: { allow: ["github.com", "[::1]:8080"] } } }, { sandbox: { network: { remove: ["[0:0:0:0:0:0:0:1]:8080"] } } });
    assert.deepEqual(u.allow, ["github.com"]);
  });

  test("a removal names one entry: a wildcard stays when a host under it is removed (narrow it with a deny)", () => {
    const n = net({ sandbox: { network: { allow: ["*.example.com"] } } }, { sandbox: { network: { remove: ["a.example.com"], deny: ["b.example.com"] } } });
    assert.deepEqual(n.allow, ["*.example.com"]);
    assert.deepEqual(compileNetworkPolicy(n).judge({ host: "b.example.com", port: 443 }), { kind: "deny", entry: "b.example.com" });
  });

  test("the project's denies come after the user's, and win over the user's allow", () => {
    const n = net({ sandbox: { network: { allow: ["*.example.com"], deny: ["x.example.com"] } } }, { sandbox: { network: { deny: ["*.example.com"] } } });
    assert.deepEqual(n.deny, ["x.example.com", "*.example.com"]);
    assert.equal(compileNetworkPolicy(n).judge({ host: "y.example.com", port: 443 }).kind, "deny");
  });

  test("the project may turn reviewUnlisted off, never on", () => {
    assert.equal(net({ sandbox: { network: { reviewUnlisted: true } } }, { sandbox: { network: { reviewUnlisted: false } } }).reviewUnlisted, false);
    assert.equal(net({ sandbox: { network: { reviewUnlisted: true } } }, { sandbox: { network: {} } }).reviewUnlisted, true);
    const e = env({ sandbox: { network: { reviewUnlisted: false } } }, { sandbox: { network: { reviewUnlisted: true } } });
    fault(load(e), e.projectFile, /^\/sandbox\/network\/reviewUnlisted: /);
  });

  const widening: Array<[string, unknown, RegExp]> = [
    ["an allow entry", { sandbox: { network: { allow: ["evil.example"] } } }, /^\/sandbox\/network\/allow: unknown key/],
    ["an empty allow list (it would read as 'the defaults')", { sandbox: { network: { allow: [] } } }, /^\/sandbox\/network\/allow: unknown key/],
    ["reviewUnlisted: true", { sandbox: { network: { reviewUnlisted: true } } }, /^\/sandbox\/network\/reviewUnlisted: /],
    ["an invalid removal", { sandbox: { network: { remove: ["0x7f.1"] } } }, /^\/sandbox\/network\/remove\/0: "0x7f\.1": /],
    ["an invalid deny", { sandbox: { network: { deny: ["a..b"] } } }, /^\/sandbox\/network\/deny\/0: "a\.\.b": /],
    ["an unknown key", { sandbox: { network: { add: ["x.example"] } } }, /^\/sandbox\/network\/add: unknown key/],
  ];
  for (const [what, project, message] of widening)
    test(`a project's ${what} is a fault naming the project file`, () => {
      const e = env({ sandbox: { network: { allow: ["github.com"] } } }, project);
      fault(load(e), e.projectFile, message);
    });

  test("whatever a project says, the effective allow list is a subset of the user's and the denies a superset", () => {
    const userAllow = ["github.com", "*.npmjs.org", "127.0.0.1:8080", "[::1]:9000"];
    const projects = [
      { remove: ["github.com"] },
      { remove: ["GitHub.com.", "127.0.0.1:8080"], deny: ["*.npmjs.org"] },
      { remove: ["127.0.0.1:8081", "*.github.com"] },
      { deny: ["127.0.0.1:8080"], reviewUnlisted: false as const },
      {},
    ];
    for (const project of projects) {
      const n = effectiveNetwork({ allow: userAllow, deny: ["x.example"] }, project, DEFAULTS);
      assert.ok(
        n.spec.allow.every((a) => userAllow.includes(a)),
        JSON.stringify(project),
      );
      assert.ok(n.spec.deny.includes("x.example"));
      assert.equal(n.spec.reviewUnlisted, false);
    }
  });
});

describe("doctor's network lines", () => {
  test("the defaults, with where they came from", () => {
    const rows = networkRows(EMPTY_CONFIG.network, EMPTY_CONFIG.networkOrigins);
    assert.match(rows[0]!, /^allow \(built-in defaults\): registry\.npmjs\.org, /);
    assert.ok(rows.includes("deny: none"));
    assert.ok(rows.some((r) => /^unlisted destinations: refused/.test(r)));
  });

  test("no network, the user's list, a project's removals and denies, and review", () => {
    const off = ok(load(env({ sandbox: { network: { allow: [] } } })));
    assert.match(networkRows(off.network, off.networkOrigins)[0]!, /^allow: none \(no network in the sandbox\)/);
    const c = ok(
      load(
        env(
          { sandbox: { network: { allow: ["github.com", "pypi.org"], deny: ["gist.github.com"], reviewUnlisted: true } } },
          { sandbox: { network: { remove: ["pypi.org"], deny: ["*.github.com"] } } },
        ),
      ),
    );
    const rows = networkRows(c.network, c.networkOrigins);
    assert.deepEqual(rows, [
      "allow (user): github.com",
      "removed by the project: pypi.org",
      "deny: gist.github.com (user), *.github.com (project)",
      "unlisted destinations: asked of the reviewer, one connection at a time (reviewUnlisted, user)",
    ]);
  });
});

describe("the README's network section", () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Network in the sandbox"), readme.indexOf("## The reviewer"));

  test("its example configuration loads, and judges as the text says", () => {
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block, "a JSON example in the section");
    const { version: _v, ...user } = JSON.parse(block) as { version: number };
    const c = ok(load(env(user)));
    const p = compileNetworkPolicy(c.network);
    assert.equal(p.judge({ host: "raw.githubusercontent.com", port: 443 }).kind, "allow");
    assert.equal(p.judge({ host: "githubusercontent.com", port: 443 }).kind, "unlisted");
    assert.equal(p.judge({ host: "gist.github.com", port: 22 }).kind, "deny");
    assert.equal(p.addressRefusal("127.0.0.1", 4873), undefined);
    assert.match(p.addressRefusal("127.0.0.1", 4874)!, /loopback/);
  });

  test("it names every default entry", () => {
    for (const e of DEFAULTS.allow) assert.ok(section.includes(`\`${e}\``), e);
  });

  test("every entry in its table parses", () => {
    const entries = [...section.matchAll(/^\| (`[^|]*`) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([^`]+)`/g)].map((x) => x[1]!));
    assert.ok(entries.length >= 8);
    for (const e of entries) assert.equal(typeof parseNetworkEntry(e), "object", e);
  });
});
