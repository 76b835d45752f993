// What kind of address an IP literal is, for the proxy's check after it resolved a name: only a
// public unicast address may be connected to without an entry naming it exactly. The classes
// follow IANA's special-purpose registries (RFC 6890 and its updates); an IPv6 address that
// carries an IPv4 address the kernel or a translator would reach instead (IPv4-mapped,
// -compatible and -translated, 6to4, NAT64) is judged by that address when that is stricter,
// so `::ffff:127.0.0.1` is loopback. Anything in IPv6 outside 2000::/3 is reserved: nothing
// there is reachable public unicast today.
//
// Only strict literals are addresses: four decimal parts for IPv4 (no octal, hex, or fewer
// parts: node's isIP), RFC 4291 text for IPv6, and no zone index (`fe80::1%eth0`). Spellings
// that inet_aton would accept (`2130706433`, `0x7f.1`, `127.1`) are not addresses here; the entry
// and destination parsers refuse them outright, so they never reach a resolver as names.

import { isIPv4, isIPv6 } from "node:net";
import { networkData } from "./data.ts";

export type AddressClass = "public" | "loopback" | "private" | "link-local" | "multicast" | "unspecified" | "reserved" | "metadata";

export const ADDRESS_CLASSES: readonly AddressClass[] = ["public", "loopback", "private", "link-local", "multicast", "unspecified", "reserved", "metadata"];

/** 4 or 6 for a strict IP literal (no brackets, no zone), 0 otherwise. */
export function ipVersion(text: string): 0 | 4 | 6 {
  if (text.includes("%")) return 0;
  // Every IPv6 literal has a colon and no IPv4 one does; asking isIPv6 only then spares each
  // start the ~3 ms node takes to build its IPv6 pattern on first use (host names are checked
  // at every configuration load).
  if (text.includes(":")) return isIPv6(text) ? 6 : 0;
  return isIPv4(text) ? 4 : 0;
}

/** A strict dotted-quad (already checked by isIP) as an unsigned 32-bit number. */
function v4Number(text: string): number {
  const p = text.split(".");
  return ((Number(p[0]) << 24) | (Number(p[1]) << 16) | (Number(p[2]) << 8) | Number(p[3])) >>> 0;
}

function v4Text(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** A valid IPv6 literal (already checked by isIP) as eight 16-bit groups. */
function v6Groups(text: string): number[] {
  const groupsOf = (part: string): number[] => {
    if (part === "") return [];
    const out: number[] = [];
    for (const g of part.split(":")) {
      if (g.includes(".")) {
        const n = v4Number(g);
        out.push(n >>> 16, n & 0xffff);
      } else out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const gap = text.indexOf("::");
  if (gap < 0) return groupsOf(text);
  const left = groupsOf(text.slice(0, gap));
  const right = groupsOf(text.slice(gap + 2));
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** RFC 5952 text: lower case, no leading zeros, the longest run of two or more zero groups as `::`. */
function v6Text(g: readonly number[]): string {
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) return `::ffff:${v4Text(((g[6]! << 16) | g[7]!) >>> 0)}`;
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (from: number, to: number) => g.slice(from, to).map((x) => x.toString(16));
  if (best < 0) return hex(0, 8).join(":");
  return `${hex(0, best).join(":")}::${hex(best + bestLen, 8).join(":")}`;
}

/** The canonical text of an IP literal (dotted quad; RFC 5952 for IPv6), or undefined when `text` is none. */
export function canonicalAddress(text: string): string | undefined {
  const v = ipVersion(text);
  if (v === 4) return v4Text(v4Number(text));
  if (v === 6) return v6Text(v6Groups(text));
  return undefined;
}

/**
 * The address an entry and a connection are compared by: the canonical text, with an
 * IPv4-mapped address as its IPv4 address (a socket to `::ffff:a.b.c.d` reaches a.b.c.d, so a
 * deny of one must hold for the other).
 */
export function addressKey(text: string): string | undefined {
  const v = ipVersion(text);
  if (v === 4) return v4Text(v4Number(text));
  if (v !== 6) return undefined;
  const g = v6Groups(text);
  if (isMapped(g)) return v4Text(embeddedAt(g, 6));
  return v6Text(g);
}

const isMapped = (g: readonly number[]) => g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff;

/** The IPv4 address in groups i and i+1. */
const embeddedAt = (g: readonly number[], i: number) => ((g[i]! << 16) | g[i + 1]!) >>> 0;

type V4Range = readonly [network: number, bits: number, cls: AddressClass];

const v4 = (cidr: string, cls: AddressClass): V4Range => {
  const [net, bits] = cidr.split("/") as [string, string];
  return [v4Number(net), Number(bits), cls];
};

// First match wins: the narrower range first where two overlap.
const V4_RANGES: readonly V4Range[] = [
  v4("0.0.0.0/32", "unspecified"),
  v4("0.0.0.0/8", "reserved"), // "this network"
  v4("10.0.0.0/8", "private"),
  v4("100.64.0.0/10", "private"), // carrier-grade NAT, shared address space
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link-local"),
  v4("172.16.0.0/12", "private"),
  v4("192.0.0.0/24", "reserved"), // IETF protocol assignments
  v4("192.0.2.0/24", "reserved"), // TEST-NET-1
  v4("192.88.99.0/24", "reserved"), // the deprecated 6to4 relay anycast
  v4("192.168.0.0/16", "private"),
  v4("198.18.0.0/15", "reserved"), // benchmarking
  v4("198.51.100.0/24", "reserved"), // TEST-NET-2
  v4("203.0.113.0/24", "reserved"), // TEST-NET-3
  v4("224.0.0.0/4", "multicast"),
  v4("255.255.255.255/32", "reserved"), // limited broadcast
  v4("240.0.0.0/4", "reserved"),
];

/** The CIDR tables, for tests that check them against an independent implementation. */
export const IPV4_RANGES: readonly { readonly cidr: string; readonly cls: AddressClass }[] = V4_RANGES.map(([n, b, cls]) => ({
  cidr: `${v4Text(n)}/${b}`,
  cls,
}));

function inV4(n: number, net: number, bits: number): boolean {
  if (bits === 0) return true;
  const mask = (0xffffffff << (32 - bits)) >>> 0;
  return (n & mask) >>> 0 === net;
}

let metadata: ReadonlySet<string> | undefined;

/** The metadata list's addresses by addressKey (so the IPv4-mapped spelling of one is the same). */
function metadataKeys(): ReadonlySet<string> {
  if (metadata) return metadata;
  const keys = new Set<string>();
  for (const { address } of networkData().raw.metadataAddresses.addresses) {
    const key = addressKey(address);
    if (key === undefined) throw new Error(`the network data's metadata address ${JSON.stringify(address)} is not an IP address`);
    keys.add(key);
  }
  metadata = keys;
  return keys;
}

function classifyV4(n: number): AddressClass {
  if (metadataKeys().has(v4Text(n))) return "metadata";
  for (const [net, bits, cls] of V4_RANGES) if (inV4(n, net, bits)) return cls;
  return "public";
}

type V6Range = readonly [groups: readonly number[], bits: number, cls: AddressClass];

const v6 = (cidr: string, cls: AddressClass): V6Range => {
  const [net, bits] = cidr.split("/") as [string, string];
  return [v6Groups(net), Number(bits), cls];
};

function inV6(g: readonly number[], net: readonly number[], bits: number): boolean {
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((g[i]! & mask) !== (net[i]! & mask)) return false;
  }
  return true;
}

// Ranges with an IPv4 address inside, where it sits (group index), and the class of the range
// itself: the address's class wins when it is not public.
const V6_EMBEDDING: readonly (readonly [V6Range, number])[] = [
  [v6("::/96", "reserved"), 6], // IPv4-compatible (deprecated); :: and ::1 are caught before
  [v6("::ffff:0:0:0/96", "reserved"), 6], // IPv4-translated (SIIT)
  [v6("64:ff9b::/96", "public"), 6], // NAT64, well-known prefix
  [v6("64:ff9b:1::/48", "private"), 6], // NAT64, local use
  [v6("2002::/16", "public"), 1], // 6to4
];

const V6_RANGES: readonly V6Range[] = [
  v6("100::/64", "reserved"), // discard-only
  v6("2001::/32", "reserved"), // Teredo: the client address is obfuscated and the route runs through a relay
  v6("2001:db8::/32", "reserved"), // documentation
  v6("2001::/23", "reserved"), // IETF protocol assignments (benchmarking, ORCHID, ...)
  v6("3fff::/20", "reserved"), // documentation
  v6("fc00::/7", "private"), // unique local
  v6("fe80::/10", "link-local"),
  v6("fec0::/10", "private"), // site-local (deprecated)
  v6("ff00::/8", "multicast"),
  v6("2000::/3", "public"),
];

function classifyV6(g: readonly number[]): AddressClass {
  if (isMapped(g)) return classifyV4(embeddedAt(g, 6));
  if (metadataKeys().has(v6Text(g))) return "metadata";
  if (g.every((x) => x === 0)) return "unspecified";
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return "loopback";
  for (const [[net, bits, cls], at] of V6_EMBEDDING)
    if (inV6(g, net, bits)) {
      const inner = classifyV4(embeddedAt(g, at));
      return inner === "public" ? cls : inner;
    }
  for (const [net, bits, cls] of V6_RANGES) if (inV6(g, net, bits)) return cls;
  return "reserved";
}

/** The class of an IP literal, or undefined when `text` is not one (a name, a zone index, brackets). */
export function classifyAddress(text: string): AddressClass | undefined {
  const v = ipVersion(text);
  if (v === 4) return classifyV4(v4Number(text));
  if (v === 6) return classifyV6(v6Groups(text));
  return undefined;
}

const DESCRIPTION: Readonly<Record<AddressClass, string>> = {
  public: "a public address",
  loopback: "a loopback address",
  private: "a private address",
  "link-local": "a link-local address",
  multicast: "a multicast address",
  unspecified: "an unspecified address",
  reserved: "a reserved address",
  metadata: "a cloud metadata address",
};

/** "a loopback address", for messages. */
export function describeAddressClass(cls: AddressClass): string {
  return DESCRIPTION[cls];
}
