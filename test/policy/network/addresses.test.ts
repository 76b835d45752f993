// The address classes the proxy checks a resolved address by (src/policy/network/addresses.ts):
// hand-picked edges of every range, the IPv6 spellings that reach an IPv4 address, the spellings
// that are not addresses at all, and properties over random addresses with node's own BlockList as
// the independent judge of CIDR membership.

import assert from "node:assert/strict";
import { BlockList } from "node:net";
import { describe, test } from "node:test";
import fc from "fast-check";
import { checkProperty, fuzzRuns } from "../../helpers/fuzz.ts";
import {
  type AddressClass,
  addressKey,
  canonicalAddress,
  classifyAddress,
  describeAddressClass,
  IPV4_RANGES,
  ipVersion,
} from "../../../src/policy/network/addresses.ts";
import { networkData } from "../../../src/policy/network/data.ts";

const classOf = (a: string) => classifyAddress(a);

describe("IPv4 classes", () => {
  const cases: Array<[string, AddressClass]> = [
    ["0.0.0.0", "unspecified"],
    ["0.0.0.1", "reserved"],
    ["0.255.255.255", "reserved"],
    ["1.0.0.0", "public"],
    ["9.255.255.255", "public"],
    ["10.0.0.0", "private"],
    ["10.255.255.255", "private"],
    ["11.0.0.0", "public"],
    ["100.63.255.255", "public"],
    ["100.64.0.0", "private"],
    ["100.127.255.255", "private"],
    ["100.128.0.0", "public"],
    ["126.255.255.255", "public"],
    ["127.0.0.1", "loopback"],
    ["127.0.0.0", "loopback"],
    ["127.255.255.255", "loopback"],
    ["128.0.0.0", "public"],
    ["169.253.255.255", "public"],
    ["169.254.0.0", "link-local"],
    ["169.254.255.255", "link-local"],
    ["169.255.0.0", "public"],
    ["172.15.255.255", "public"],
    ["172.16.0.0", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.0", "public"],
    ["192.0.0.1", "reserved"],
    ["192.0.1.0", "public"],
    ["192.0.2.255", "reserved"],
    ["192.88.99.1", "reserved"],
    ["192.167.255.255", "public"],
    ["192.168.0.0", "private"],
    ["192.168.255.255", "private"],
    ["192.169.0.0", "public"],
    ["198.17.255.255", "public"],
    ["198.18.0.0", "reserved"],
    ["198.19.255.255", "reserved"],
    ["198.20.0.0", "public"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    ["223.255.255.255", "public"],
    ["224.0.0.0", "multicast"],
    ["239.255.255.255", "multicast"],
    ["240.0.0.0", "reserved"],
    ["255.255.255.254", "reserved"],
    ["255.255.255.255", "reserved"],
    ["8.8.8.8", "public"],
  ];
  for (const [a, cls] of cases) test(`${a} is ${cls}`, () => assert.equal(classOf(a), cls));
});

describe("cloud metadata addresses", () => {
  test("every address in the data classifies as metadata, in every spelling that reaches it", () => {
    for (const { address } of networkData().raw.metadataAddresses.addresses) {
      assert.equal(classOf(address), "metadata", address);
      if (ipVersion(address) === 4) {
        const [a, b, c, d] = address.split(".").map(Number) as [number, number, number, number];
        const hex = (x: number, y: number) => ((x << 8) | y).toString(16);
        for (const v6 of [`::ffff:${address}`, `::ffff:${hex(a, b)}:${hex(c, d)}`, `64:ff9b::${address}`, `2002:${hex(a, b)}:${hex(c, d)}::1`, `::${address}`])
          assert.equal(classOf(v6), "metadata", v6);
      }
    }
  });

  test("Azure's WireServer is a public address that still classifies as metadata", () => {
    assert.equal(classOf("168.63.129.16"), "metadata");
    assert.equal(classOf("168.63.129.17"), "public");
  });

  test("the neighbours of a metadata address keep their own class", () => {
    assert.equal(classOf("169.254.169.253"), "link-local");
    assert.equal(classOf("100.100.100.201"), "private");
    assert.equal(classOf("fd00:ec2::253"), "private");
  });
});

describe("IPv6 classes", () => {
  const cases: Array<[string, AddressClass]> = [
    ["::", "unspecified"],
    ["0:0:0:0:0:0:0:0", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["::2", "reserved"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::FFFF:7F00:1", "loopback"],
    ["0:0:0:0:0:ffff:10.0.0.1", "private"],
    ["::ffff:8.8.8.8", "public"],
    ["::ffff:0.0.0.0", "unspecified"],
    ["::127.0.0.1", "loopback"], // IPv4-compatible
    ["::8.8.8.8", "reserved"], // deprecated, never public
    ["::ffff:0:127.0.0.1", "loopback"], // IPv4-translated
    ["64:ff9b::127.0.0.1", "loopback"],
    ["64:ff9b::10.1.1.1", "private"],
    ["64:ff9b::8.8.8.8", "public"],
    ["64:ff9b:1::8.8.8.8", "private"],
    ["2002:c0a8:0101::1", "private"], // 6to4 of 192.168.1.1
    ["2002:0808:0808::1", "public"],
    ["2002:a9fe:a9fe::", "metadata"],
    ["2001::1", "reserved"], // Teredo
    ["2001:db8::1", "reserved"],
    ["2001:2::1", "reserved"], // benchmarking
    ["2001:10::1", "reserved"],
    ["3fff::1", "reserved"],
    ["100::1", "reserved"],
    ["fc00::1", "private"],
    ["fdff:ffff::1", "private"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["ff05::1:3", "multicast"],
    ["2001:4860:4860::8888", "public"],
    ["2a00:1450:4001::1", "public"],
    ["3ffe::1", "public"],
    ["4000::1", "reserved"],
    ["5f00::1", "reserved"],
    ["1::", "reserved"],
  ];
  for (const [a, cls] of cases) test(`${a} is ${cls}`, () => assert.equal(classOf(a), cls));
});

describe("what is not an address", () => {
  const notAddresses = [
    "",
    "localhost",
    "2130706433", // 127.0.0.1 as one decimal number
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1", // octal
    "127.1",
    "127.0.1",
    "127.000.000.001",
    "01.2.3.4",
    "1.2.3.4.5",
    "256.1.1.1",
    " 127.0.0.1",
    "127.0.0.1 ",
    "[::1]",
    "fe80::1%eth0",
    "fe80::1%1",
    "::ffff:127.1",
    "1:2:3:4:5:6:7:8:9",
    "::g",
    "example.com",
  ];
  for (const a of notAddresses)
    test(`${JSON.stringify(a)} is not an IP literal`, () => {
      assert.equal(classifyAddress(a), undefined);
      assert.equal(addressKey(a), undefined);
      assert.equal(canonicalAddress(a), undefined);
    });
});

describe("canonical text and the comparison key", () => {
  const cases: Array<[string, string, string]> = [
    ["2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"],
    ["::ffff:7f00:1", "::ffff:127.0.0.1", "127.0.0.1"],
    ["::FFFF:127.0.0.1", "::ffff:127.0.0.1", "127.0.0.1"],
    ["::127.0.0.1", "::7f00:1", "::7f00:1"],
    ["fe80:0:0:0:0:0:0:1", "fe80::1", "fe80::1"],
    ["1.2.3.4", "1.2.3.4", "1.2.3.4"],
  ];
  for (const [a, canonical, key] of cases)
    test(`${a}: ${canonical}, compared as ${key}`, () => {
      assert.equal(canonicalAddress(a), canonical);
      assert.equal(addressKey(a), key);
    });

  test("every class has a description naming it", () => {
    assert.equal(describeAddressClass("loopback"), "a loopback address");
    assert.equal(describeAddressClass("metadata"), "a cloud metadata address");
    assert.equal(describeAddressClass("unspecified"), "an unspecified address");
  });
});

// Random addresses: 32 random bits, or bits inside one listed range.
const v4Text = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const v4Number = (t: string) => t.split(".").reduce((n, p) => ((n << 8) | Number(p)) >>> 0, 0);
const anyV4 = fc.integer({ min: 0, max: 0xffffffff }).map(v4Text);
const nonPublic = IPV4_RANGES.filter((r) => r.cls !== "public");
const inRange = fc.tuple(fc.constantFrom(...nonPublic), fc.integer({ min: 0, max: 0xffffffff })).map(([r, bits]) => {
  const [net, len] = r.cidr.split("/") as [string, string];
  const host = Number(len) === 32 ? 0 : bits >>> Number(len);
  return { range: r, address: v4Text((v4Number(net) | host) >>> 0) };
});
const hex4 = (n: number) => [(n >>> 16).toString(16), (n & 0xffff).toString(16)];

describe("properties over random addresses", () => {
  test("every address in a non-public IPv4 range is non-public, and BlockList agrees it is in the range", async (t) => {
    await checkProperty(
      t,
      fc.property(inRange, ({ range, address }) => {
        const bl = new BlockList();
        const [net, len] = range.cidr.split("/") as [string, string];
        bl.addSubnet(net, Number(len), "ipv4");
        assert.ok(bl.check(address, "ipv4"), `${address} in ${range.cidr}`);
        const cls = classOf(address);
        assert.notEqual(cls, "public", `${address} (${range.cidr})`);
        // Ranges are checked in order, so an address in two of them takes the first; metadata is a list of single addresses.
        const first = IPV4_RANGES.find((r) => {
          const [n, l] = r.cidr.split("/") as [string, string];
          const b = new BlockList();
          b.addSubnet(n, Number(l), "ipv4");
          return b.check(address, "ipv4");
        });
        assert.ok(cls === first?.cls || cls === "metadata", `${address}: ${cls}, first range ${first?.cidr}`);
      }),
      { runs: fuzzRuns(2000) },
    );
  });

  test("an IPv4 address outside every listed range and the metadata list is public", async (t) => {
    const all = new BlockList();
    for (const r of IPV4_RANGES) {
      const [n, l] = r.cidr.split("/") as [string, string];
      all.addSubnet(n, Number(l), "ipv4");
    }
    const meta = new Set(networkData().raw.metadataAddresses.addresses.map((m) => m.address));
    await checkProperty(
      t,
      fc.property(anyV4, (a) => {
        assert.equal(classOf(a) === "public", !all.check(a, "ipv4") && !meta.has(a), a);
      }),
      { runs: fuzzRuns(2000) },
    );
  });

  test("an IPv4-mapped address, in either spelling, classifies and compares like its IPv4 address", async (t) => {
    await checkProperty(
      t,
      fc.property(
        fc.oneof(
          anyV4,
          inRange.map((r) => r.address),
        ),
        (a) => {
          const [hi, lo] = hex4(v4Number(a));
          for (const m of [`::ffff:${a}`, `::ffff:${hi}:${lo}`, `0:0:0:0:0:FFFF:${a}`]) {
            assert.equal(classOf(m), classOf(a), m);
            assert.equal(addressKey(m), a, m);
          }
        },
      ),
      { runs: fuzzRuns(1000) },
    );
  });

  test("6to4, NAT64, IPv4-compatible and -translated forms of a non-public IPv4 address are never public", async (t) => {
    await checkProperty(
      t,
      fc.property(
        inRange.map((r) => r.address),
        fc.integer({ min: 0, max: 0xffff }),
        (a, tail) => {
          const [hi, lo] = hex4(v4Number(a));
          const t16 = tail.toString(16);
          for (const v6 of [`2002:${hi}:${lo}::${t16}`, `64:ff9b::${a}`, `64:ff9b:1::${a}`, `::${a}`, `::ffff:0:${a}`]) {
            const cls = classOf(v6);
            assert.notEqual(cls, "public", v6);
            // The embedded address's own class shows through (not just "reserved"), except where it is all zero.
            if (v4Number(a) !== 0 && v4Number(a) !== 1) assert.equal(cls, classOf(a), `${v6} embeds ${a}`);
          }
        },
      ),
      { runs: fuzzRuns(1000) },
    );
  });

  test("canonical text is a fixed point, keeps the class, and node agrees it is IPv6", async (t) => {
    const groups = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), { minLength: 8, maxLength: 8 });
    await checkProperty(
      t,
      fc.property(groups, (g) => {
        const full = g.map((x) => x.toString(16).padStart(4, "0")).join(":");
        const c = canonicalAddress(full)!;
        assert.equal(ipVersion(c), 6, `${full} -> ${c}`);
        assert.equal(canonicalAddress(c), c);
        assert.equal(classOf(c), classOf(full), full);
        assert.ok(!/(^|:)0[0-9a-f]/.test(c), `no leading zeros in ${c}`);
      }),
      { runs: fuzzRuns(2000) },
    );
  });
});

describe("ipVersion answers as node's isIP does (it asks only the family a text could be)", () => {
  test("random IPv4, IPv6 and near-miss texts", async (t) => {
    const { isIP } = await import("node:net");
    const v6 = fc.ipV6();
    const near = fc.stringMatching(/^[0-9a-fA-F:.]{0,20}$/);
    await checkProperty(
      t,
      fc.property(fc.oneof(anyV4, v6, near, fc.domain(), fc.string()), (s) => {
        const expected = s.includes("%") ? 0 : isIP(s);
        assert.equal(ipVersion(s), expected, s);
      }),
      { runs: fuzzRuns(3000) },
    );
  });
});
