// The allow list's grammar and the policy compiled from it (src/policy/network/entries.ts), the
// hostile cases first: names that look like an entry's but are not, numbers that resolvers read as
// loopback, a name allowed by the list that resolves somewhere it must not go, and deny beating
// allow in every spelling of an address.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { checkProperty, fuzzRuns } from "../../helpers/fuzz.ts";
import { compileNetworkPolicy, type NetworkEntry, networkListProblem, parseDestination, parseNetworkEntry } from "../../../src/policy/network/entries.ts";
import type { Destination, NetworkPolicy } from "../../../src/policy/network/types.ts";

const policy = (allow: string[], deny: string[] = []): NetworkPolicy => compileNetworkPolicy({ allow, deny, reviewUnlisted: false });
const dest = (text: string): Destination => {
  const d = parseDestination(text);
  assert.equal(typeof d, "object", `${text} should parse: ${String(d)}`);
  return d as Destination;
};
const verdict = (p: NetworkPolicy, text: string) => p.judge(dest(text));
const entry = (text: string): NetworkEntry => {
  const e = parseNetworkEntry(text);
  assert.equal(typeof e, "object", `${text} should parse: ${String(e)}`);
  return e as NetworkEntry;
};

describe("hostile: names that only look like an allowed one", () => {
  const p = policy(["*.npmjs.org", "pypi.org"]);
  const unlisted = [
    "npmjs.org:443", // a wildcard is strict subdomains only
    "npmjs.org.evil.com:443",
    "registry.npmjs.org.evil.com:443",
    "evilnpmjs.org:443",
    "registry-npmjs.org:443",
    "npmjs.org.:443", // the apex with a trailing dot is still the apex
    "pypi.org.evil.com:443",
    "www.pypi.org:443", // an exact host allows no subdomain
    "evilpypi.org:443",
    "pypi.org:22", // nor another port
    "pypi.org:8443",
    "registry.npmjs.org:22",
  ];
  for (const d of unlisted) test(`${d} is unlisted`, () => assert.deepEqual(verdict(p, d), { kind: "unlisted" }));

  const allowed: Array<[string, string]> = [
    ["registry.npmjs.org:443", "*.npmjs.org"],
    ["a.b.c.npmjs.org:80", "*.npmjs.org"],
    ["REGISTRY.NPMJS.ORG.:443", "*.npmjs.org"],
    ["pypi.org:443", "pypi.org"],
    ["PyPI.org.:80", "pypi.org"],
  ];
  for (const [d, e] of allowed) test(`${d} is allowed by ${e}`, () => assert.deepEqual(verdict(p, d), { kind: "allow", entry: e }));

  test("a destination that did not come through parseDestination is judged as safely: never allowed when it is no name", () => {
    for (const host of [
      "a b.npmjs.org",
      "x\0.npmjs.org",
      "*.npmjs.org",
      ".npmjs.org",
      "npmjs.org/x",
      "x.npmjs.org:443",
      "2130706433",
      "0x7f.1",
      "bücher.npmjs.org",
    ])
      assert.deepEqual(p.judge({ host, port: 443 }), { kind: "unlisted" }, host);
    for (const port of [0, -1, 65536, 443.5, Number.NaN]) assert.deepEqual(p.judge({ host: "pypi.org", port }), { kind: "unlisted" }, String(port));
    // Upper case, a trailing dot and brackets are normalized rather than refused.
    assert.deepEqual(p.judge({ host: "PYPI.ORG.", port: 443 }), { kind: "allow", entry: "pypi.org" });
  });
});

describe("hostile: numbers that resolvers read as addresses", () => {
  const numeric = [
    "2130706433",
    "0x7f.1",
    "0x7f000001",
    "0177.0.0.1",
    "127.1",
    "127.0.1",
    "127.000.000.001",
    "1.2.3.4.5",
    "0x7f.0.0.1",
    "foo.0x10",
    "foo.123",
    "0x",
  ];
  for (const n of numeric) {
    test(`${n} is refused as an entry`, () => {
      const e = parseNetworkEntry(n);
      assert.equal(typeof e, "string");
      assert.match(e as string, new RegExp(`^${JSON.stringify(n).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `));
      assert.match(e as string, /ends in a number/);
    });
    test(`${n}:80 is a malformed destination`, () => {
      const d = parseDestination(`${n}:80`);
      assert.equal(typeof d, "string");
      assert.match(d as string, /^malformed destination .*ends in a number/);
    });
  }

  test("a number in a label other than the last is an ordinary name", () => {
    assert.equal(entry("1.2.3.example.com").kind, "host");
    assert.deepEqual(dest("127.0.0.1.nip.io:443"), { host: "127.0.0.1.nip.io", port: 443 });
  });
});

describe("hostile: a name allowed by the list still meets the address check", () => {
  const p = policy(["localhost", "*.internal.example", "10.0.0.5", "[::1]", "metadata.google.internal"]);

  test("localhost allowed by name is refused at its loopback address", () => {
    assert.deepEqual(verdict(p, "localhost:443"), { kind: "allow", entry: "localhost" });
    assert.equal(
      p.addressRefusal("127.0.0.1", 443),
      "127.0.0.1 is a loopback address; only an allow entry naming exactly 127.0.0.1:443 lets a sandboxed command reach it",
    );
    assert.match(p.addressRefusal("::1", 443)!, /^::1 is a loopback address; .*\[::1\]:443/);
    assert.match(p.addressRefusal("::ffff:127.0.0.1", 443)!, /loopback/);
  });

  test("a wildcard resolving to private, link-local or metadata addresses is refused, naming the class", () => {
    assert.equal(verdict(p, "db.internal.example:443").kind, "allow");
    assert.match(p.addressRefusal("10.1.2.3", 443)!, /^10\.1\.2\.3 is a private address/);
    assert.match(p.addressRefusal("169.254.1.1", 443)!, /is a link-local address/);
    assert.match(p.addressRefusal("169.254.169.254", 80)!, /^169\.254\.169\.254 is a cloud metadata address/);
    assert.match(p.addressRefusal("fd00:ec2::254", 80)!, /cloud metadata/);
    assert.match(p.addressRefusal("0.0.0.0", 443)!, /an unspecified address/);
    assert.match(p.addressRefusal("224.0.0.1", 443)!, /a multicast address/);
    assert.match(p.addressRefusal("240.0.0.1", 443)!, /a reserved address/);
  });

  test("a bare address entry allows it by name but never unlocks a non-public address", () => {
    assert.deepEqual(verdict(p, "10.0.0.5:443"), { kind: "allow", entry: "10.0.0.5" });
    assert.match(p.addressRefusal("10.0.0.5", 443)!, /private/);
    assert.deepEqual(verdict(p, "[::1]:80"), { kind: "allow", entry: "[::1]" });
    assert.match(p.addressRefusal("::1", 80)!, /loopback/);
  });

  test("[::ffff:127.0.0.1]:80 is loopback, and so is every IPv6 spelling that reaches 127.0.0.1", () => {
    const d = dest("[::ffff:127.0.0.1]:80");
    assert.deepEqual(d, { host: "::ffff:127.0.0.1", port: 80 });
    for (const a of [d.host, "::ffff:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::1", "::127.0.0.1"]) assert.match(p.addressRefusal(a, 80)!, /loopback/, a);
  });

  test("a public address passes; what is no address is refused", () => {
    assert.equal(p.addressRefusal("8.8.8.8", 443), undefined);
    assert.equal(p.addressRefusal("2606:4700::1111", 443), undefined);
    assert.match(p.addressRefusal("localhost", 443)!, /"localhost" is not an IP address/);
    assert.match(p.addressRefusal("2130706433", 443)!, /not an IP address/);
    assert.match(p.addressRefusal("fe80::1%eth0", 443)!, /not an IP address/);
    assert.match(p.addressRefusal("8.8.8.8", 0)!, /port 0/);
  });
});

describe("an exact ip:port entry, and only it, unlocks a non-public address", () => {
  const p = policy(["127.0.0.1:8080", "[::1]:9000", "[fd00:ec2::254]:80"]);

  test("exactly that address and port", () => {
    assert.deepEqual(verdict(p, "127.0.0.1:8080"), { kind: "allow", entry: "127.0.0.1:8080" });
    assert.equal(p.addressRefusal("127.0.0.1", 8080), undefined);
    assert.equal(p.addressRefusal("::ffff:127.0.0.1", 8080), undefined, "the mapped spelling is the same socket");
    assert.equal(p.addressRefusal("::1", 9000), undefined);
    assert.equal(p.addressRefusal("0:0:0:0:0:0:0:1", 9000), undefined);
    assert.equal(p.addressRefusal("fd00:ec2::254", 80), undefined, "a metadata address too, when named exactly");
  });

  test("another port, a neighbour, or the other family is refused", () => {
    assert.match(p.addressRefusal("127.0.0.1", 8081)!, /loopback/);
    assert.match(p.addressRefusal("127.0.0.2", 8080)!, /loopback/);
    assert.match(p.addressRefusal("::1", 8080)!, /loopback/);
    assert.match(p.addressRefusal("127.0.0.1", 9000)!, /loopback/);
    assert.deepEqual(verdict(p, "127.0.0.1:8081"), { kind: "unlisted" });
    assert.deepEqual(verdict(p, "localhost:8080"), { kind: "unlisted" }, "an address entry is not a name entry");
  });
});

describe("deny wins over allow", () => {
  test("by name, exact or wildcard, at any port when the deny has none", () => {
    const p = policy(["*.example.com", "*.example.com:8443", "api.example.com:22"], ["evil.example.com", "*.bad.example.com", "api.example.com:8443"]);
    assert.deepEqual(verdict(p, "evil.example.com:443"), { kind: "deny", entry: "evil.example.com" });
    assert.deepEqual(verdict(p, "evil.example.com:8443"), { kind: "deny", entry: "evil.example.com" });
    assert.deepEqual(verdict(p, "x.bad.example.com:443"), { kind: "deny", entry: "*.bad.example.com" });
    assert.deepEqual(verdict(p, "bad.example.com:443"), { kind: "allow", entry: "*.example.com" }, "the deny wildcard spares its apex");
    assert.deepEqual(verdict(p, "api.example.com:8443"), { kind: "deny", entry: "api.example.com:8443" });
    assert.deepEqual(verdict(p, "api.example.com:443"), { kind: "allow", entry: "*.example.com" });
    assert.deepEqual(verdict(p, "api.example.com:22"), { kind: "allow", entry: "api.example.com:22" });
    assert.deepEqual(verdict(p, "www.example.com:8443"), { kind: "allow", entry: "*.example.com:8443" });
  });

  test("by address, in every spelling, at name and at address check", () => {
    const p = policy(["127.0.0.1:8080", "8.8.8.8", "8.8.4.4:53"], ["[::ffff:127.0.0.1]", "8.8.8.8", "[2001:4860:4860::8888]:443"]);
    assert.deepEqual(verdict(p, "127.0.0.1:8080"), { kind: "deny", entry: "[::ffff:127.0.0.1]" });
    assert.match(p.addressRefusal("127.0.0.1", 8080)!, /^127\.0\.0\.1 is denied by the entry "\[::ffff:127\.0\.0\.1\]"/);
    assert.match(p.addressRefusal("8.8.8.8", 8080)!, /denied/);
    assert.match(p.addressRefusal("::ffff:8.8.8.8", 443)!, /denied/);
    assert.equal(p.addressRefusal("8.8.4.4", 53), undefined);
    assert.match(p.addressRefusal("2001:4860:4860:0:0:0:0:8888", 443)!, /denied/);
    assert.equal(p.addressRefusal("2001:4860:4860::8888", 80), undefined, "a deny with a port denies only that port");
  });

  test("a resolved address denied by an address entry is refused even when the name is allowed", () => {
    const p = policy(["*.example.com"], ["93.184.215.14"]);
    assert.equal(verdict(p, "www.example.com:443").kind, "allow");
    assert.match(p.addressRefusal("93.184.215.14", 443)!, /denied by the entry "93\.184\.215\.14"/);
  });
});

describe("ports", () => {
  test("an allow entry without a port means 80 and 443; with one, that port only", () => {
    const p = policy(["a.example", "b.example:8080"]);
    assert.equal(verdict(p, "a.example:80").kind, "allow");
    assert.equal(verdict(p, "a.example:443").kind, "allow");
    for (const port of [1, 22, 81, 442, 444, 8080, 65535]) assert.equal(verdict(p, `a.example:${port}`).kind, "unlisted", String(port));
    assert.equal(verdict(p, "b.example:8080").kind, "allow");
    assert.equal(verdict(p, "b.example:443").kind, "unlisted");
  });

  test("the same host with several entries: each its own port", () => {
    const p = policy(["a.example:8080", "a.example:9090"]);
    assert.deepEqual(verdict(p, "a.example:9090"), { kind: "allow", entry: "a.example:9090" });
    assert.equal(verdict(p, "a.example:443").kind, "unlisted");
  });

  test("an empty allow list allows nothing", () => {
    const p = policy([]);
    for (const d of ["registry.npmjs.org:443", "8.8.8.8:443", "[::1]:80"]) assert.deepEqual(verdict(p, d), { kind: "unlisted" });
  });
});

describe("entry grammar", () => {
  const good: Array<[string, Partial<NetworkEntry>]> = [
    ["registry.npmjs.org", { kind: "host", host: "registry.npmjs.org", port: undefined, text: "registry.npmjs.org" }],
    ["Registry.NPMJS.org.", { kind: "host", host: "registry.npmjs.org", text: "registry.npmjs.org" }],
    ["localhost", { kind: "host", host: "localhost" }],
    ["a-b.c-d.example", { kind: "host" }],
    ["xn--bcher-kva.example", { kind: "host" }],
    ["example.com:8080", { kind: "host", port: 8080, text: "example.com:8080" }],
    ["example.com:1", { port: 1 }],
    ["example.com:65535", { port: 65535 }],
    ["*.npmjs.org", { kind: "domain", domain: "npmjs.org", port: undefined, text: "*.npmjs.org" }],
    ["*.Example.COM.:8443", { kind: "domain", domain: "example.com", port: 8443, text: "*.example.com:8443" }],
    ["10.0.0.5", { kind: "address", address: "10.0.0.5", port: undefined }],
    ["10.0.0.5:5432", { kind: "address", address: "10.0.0.5", port: 5432, text: "10.0.0.5:5432" }],
    ["[::1]", { kind: "address", address: "::1", port: undefined, text: "[::1]" }],
    ["[0:0:0:0:0:0:0:1]:8080", { kind: "address", address: "::1", port: 8080, text: "[::1]:8080" }],
    ["[::FFFF:127.0.0.1]:80", { kind: "address", address: "127.0.0.1", text: "[::ffff:127.0.0.1]:80" }],
    [`${"a".repeat(63)}.example`, { kind: "host" }],
    [`${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`, { kind: "host" }],
  ];
  for (const [text, want] of good)
    test(`${text.length > 40 ? `${text.slice(0, 40)}...` : text} parses`, () => {
      const e = entry(text);
      for (const [k, v] of Object.entries(want)) assert.deepEqual((e as unknown as Record<string, unknown>)[k], v, k);
    });

  const bad: Array<[string, RegExp]> = [
    ["", /empty/],
    [" example.com", /leading or trailing space/],
    ["example.com ", /leading or trailing space/],
    ["exa mple.com", /space or control/],
    ["example.com\n", /space/],
    ["a..b.com", /empty label/],
    [".example.com", /empty label/],
    ["example.com..", /empty label/],
    ["-a.example.com", /starts or ends with '-'/],
    ["a-.example.com", /starts or ends with '-'/],
    ["a_b.example.com", /outside a-z/],
    ["exa$mple.com", /outside a-z/],
    ["http://example.com", /more than one ':'|port/],
    ["example.com/path", /outside a-z/],
    ["user@example.com", /outside a-z/],
    [`${"a".repeat(64)}.example`, /64 characters long \(at most 63\)/],
    [`${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`, /254 characters long \(at most 253\)/],
    ["bücher.example", /not ASCII.*xn--bcher-kva\.example/],
    ["例え.jp", /not ASCII.*xn--/],
    ["*", /no host|'\*'/],
    ["*.", /'\*' may only be the whole first label/],
    ["*.com", /at least two labels/],
    ["**.example.com", /'\*' may only be the whole first label/],
    ["*example.com", /'\*' may only be the whole first label/],
    ["a.*.example.com", /'\*' may only be the whole first label/],
    ["*.*.example.com", /'\*' may only be the whole first label/],
    ["example.*", /'\*' may only be the whole first label/],
    ["example.com:", /no port after ':'/],
    ["example.com:0", /not a number from 1 to 65535/],
    ["example.com:65536", /above 65535/],
    ["example.com:080", /leading zeros/],
    ["example.com:+80", /no sign/],
    ["example.com:http", /not a number/],
    ["example.com:80:81", /more than one ':'/],
    ["::1", /in brackets/],
    ["::1:8080", /in brackets/],
    ["fe80::1", /in brackets/],
    ["[fe80::1%eth0]:80", /zone index/],
    ["[127.0.0.1]:80", /only an IPv6 address goes in brackets/],
    ["[example.com]:80", /only an IPv6 address goes in brackets/],
    ["[::1]80", /followed by nothing or by :port/],
    ["[::1]:", /no port after ':'/],
    ["x".repeat(301), /longer than 300/],
  ];
  for (const [text, why] of bad)
    test(`${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}...` : text)} is refused, naming itself`, () => {
      const e = parseNetworkEntry(text);
      assert.equal(typeof e, "string", `parsed as ${JSON.stringify(e)}`);
      assert.ok((e as string).startsWith(`${JSON.stringify(text)}: `), e as string);
      assert.match(e as string, why);
    });

  test("a list's first bad entry is reported with its index; compile throws naming it", () => {
    assert.equal(networkListProblem(["pypi.org", "*.npmjs.org"]), undefined);
    assert.match(networkListProblem(["pypi.org", "a..b", "c..d"])!, /^1: "a\.\.b": an empty label/);
    assert.throws(() => policy(["pypi.org", "0x7f.1"]), /invalid network allow entry 1: "0x7f\.1": the name ends in a number/);
    assert.throws(() => policy([], ["*.com"]), /invalid network deny entry 0: "\*\.com"/);
  });
});

describe("destinations as a proxy receives them", () => {
  const good: Array<[string, Destination, number?]> = [
    ["registry.npmjs.org:443", { host: "registry.npmjs.org", port: 443 }],
    ["Registry.NPMJS.org.:443", { host: "registry.npmjs.org", port: 443 }],
    ["127.0.0.1:8080", { host: "127.0.0.1", port: 8080 }],
    ["[::1]:443", { host: "::1", port: 443 }],
    ["[0:0:0:0:0:0:0:1]:443", { host: "::1", port: 443 }],
    ["[::FFFF:7f00:1]:80", { host: "::ffff:127.0.0.1", port: 80 }],
    ["localhost:1", { host: "localhost", port: 1 }],
    ["example.com", { host: "example.com", port: 80 }, 80],
    ["[::1]", { host: "::1", port: 80 }, 80],
    ["example.com:8080", { host: "example.com", port: 8080 }, 80],
  ];
  for (const [text, want, dflt] of good) test(`${text} -> ${want.host} port ${want.port}`, () => assert.deepEqual(parseDestination(text, dflt), want));

  const bad: Array<[string, RegExp]> = [
    ["example.com", /no port/],
    ["", /no host|no port/],
    [":443", /no host/],
    ["example.com:", /no port after/],
    ["example.com:0", /1 to 65535/],
    ["example.com:99999", /above 65535/],
    ["example.com:443 ", /not a number/],
    [" example.com:443", /space/],
    ["::1:443", /in brackets/],
    ["[::1%lo]:443", /zone index/],
    ["[127.0.0.1]:443", /only an IPv6/],
    ["[::1]x:443", /followed by nothing/],
    ["user@example.com:443", /user name/],
    ["user:pw@example.com:443", /user name/],
    ["*.example.com:443", /'\*'/],
    ["exa_mple.com:443", /outside a-z/],
    ["bücher.de:443", /not ASCII/],
    ["example.com\r\n:443", /space or control/],
    ["x".repeat(301), /too long/],
  ];
  for (const [text, why] of bad)
    test(`${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}...` : text)} is malformed`, () => {
      const d = parseDestination(text);
      assert.equal(typeof d, "string", `parsed as ${JSON.stringify(d)}`);
      assert.match(d as string, /^malformed destination "/);
      assert.match(d as string, why);
    });
});

describe("properties", () => {
  const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
  const name = fc.array(label, { minLength: 1, maxLength: 4 }).filter((ls) => !/^(\d+|0x[0-9a-f]*)$/.test(ls[ls.length - 1]!));

  test("a wildcard matches a name exactly when the name ends in '.' + its domain", async (t) => {
    await checkProperty(
      t,
      fc.property(name, name, fc.constantFrom("", "evil", "x-", "."), (domainLabels, hostLabels, glue) => {
        const domain = [...domainLabels, "test"].join(".");
        const host = glue === "." ? `${hostLabels.join(".")}.${domain}` : `${hostLabels.join(".")}${glue}${domain}`;
        const d = parseDestination(`${host}:443`);
        if (typeof d === "string") return;
        const got = policy([`*.${domain}`]).judge(d).kind;
        assert.equal(got, d.host.endsWith(`.${domain}`) ? "allow" : "unlisted", `${d.host} against *.${domain}`);
        assert.equal(policy([domain]).judge(d).kind, d.host === domain ? "allow" : "unlisted");
      }),
      { runs: fuzzRuns(1000) },
    );
  });

  test("an entry's canonical text parses to the same entry, and a valid name round-trips through parseDestination", async (t) => {
    const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });
    const upper = (s: string, mask: number) => [...s].map((c, i) => ((mask >> (i % 31)) & 1 ? c.toUpperCase() : c)).join("");
    await checkProperty(
      t,
      fc.property(name, fc.boolean(), fc.boolean(), port, fc.integer(), (labels, wild, dot, p, mask) => {
        const host = [...labels, "test"].join(".");
        const text = `${wild ? "*." : ""}${upper(host, mask)}${dot ? "." : ""}${p === undefined ? "" : `:${p}`}`;
        const e = entry(text);
        assert.deepEqual(entry(e.text), e);
        if (!wild) assert.deepEqual(parseDestination(`${upper(host, mask)}:${p ?? 443}`), { host, port: p ?? 443 });
      }),
      { runs: fuzzRuns(1000) },
    );
  });

  test("judging is deterministic and deny always wins whatever the lists", async (t) => {
    const entryText = fc.oneof(
      name.map((l) => `${l.join(".")}.test`),
      name.map((l) => `*.${l.join(".")}.test`),
      fc.tuple(name, fc.integer({ min: 1, max: 9 })).map(([l, n]) => `${l.join(".")}.test:${n}`),
    );
    await checkProperty(
      t,
      fc.property(
        fc.array(entryText, { maxLength: 6 }),
        fc.array(entryText, { maxLength: 3 }),
        name,
        fc.integer({ min: 1, max: 9 }),
        (allow, deny, l, port) => {
          const d = { host: `${l.join(".")}.test`, port: port === 9 ? 443 : port };
          const both = policy([...allow, ...deny], deny).judge(d);
          const denyOnly = policy(deny, []).judge(d);
          // An entry that allows d in an allow list denies d in a deny list (a deny without a port covers more).
          if (denyOnly.kind === "allow") assert.equal(both.kind, "deny", JSON.stringify({ d, allow, deny }));
        },
      ),
      { runs: fuzzRuns(1000) },
    );
  });
});

describe("speed", () => {
  test("a thousand-entry list judges a destination in microseconds", () => {
    const allow = Array.from({ length: 1000 }, (_, i) => (i % 2 ? `host${i}.example.com` : `*.zone${i}.example.org`));
    const p = policy(allow, ["blocked.example.com"]);
    const host = `a.b.c.d.e.f.g.zone998.example.org`;
    const t0 = performance.now();
    for (let i = 0; i < 20_000; i++) p.judge({ host, port: 443 });
    const perCall = (performance.now() - t0) / 20_000;
    assert.equal(p.judge({ host, port: 443 }).kind, "allow");
    assert.ok(perCall < 0.05, `${perCall.toFixed(4)} ms a call`);
  });
});
