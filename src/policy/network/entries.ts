// The allow list's entries: their grammar, the compiled policy the proxy asks, and the layering
// of the user's and the project's settings (P15: a project can only remove allow entries and add
// denies).
//
// Grammar (one entry, case-insensitive, a trailing dot ignored):
//   host              that exact host, ports 80 and 443
//   *.domain          any strict subdomain of domain (not domain itself), ports 80 and 443
//   host:port         that host, that port only (likewise *.domain:port)
//   a.b.c.d[:port]    an IPv4 address; [v6][:port] an IPv6 one, always in brackets
// Hosts are ASCII (an internationalized name in its xn-- form), labels of 1 to 63 characters of
// a-z, 0-9 and '-' that do not start or end with '-', 253 characters in all; `*` only as the whole
// first label and over at least two labels. A name whose last label is a number (`2130706433`,
// `0x7f.1`, `127.1`, `0177.0.0.1`) is refused: resolvers and URL parsers read those as IPv4
// addresses, so they would be a way to name loopback that no entry says.
//
// Ports: an allow entry without one allows 80 and 443; a deny entry without one denies every port.
// Deny wins over allow. An address entry without a port is judged like a host by name, but only
// an allow entry with the exact address and port lets the proxy connect to an address that is not
// public (addressRefusal): a name, a wildcard or a bare address never unlocks loopback, private,
// link-local, metadata or other special addresses, whatever they resolve to.

import { domainToASCII } from "node:url";
import { addressKey, canonicalAddress, classifyAddress, describeAddressClass, ipVersion } from "./addresses.ts";
import { networkData } from "./data.ts";
import type { Destination, DestinationVerdict, NetworkPolicy, NetworkSpec } from "./types.ts";

export type NetworkEntry =
  | { readonly kind: "host"; readonly text: string; readonly host: string; readonly port: number | undefined }
  | { readonly kind: "domain"; readonly text: string; readonly domain: string; readonly port: number | undefined }
  /** `address` is the addressKey: an IPv4-mapped IPv6 address is its IPv4 address. */
  | { readonly kind: "address"; readonly text: string; readonly address: string; readonly port: number | undefined };

/** Ports an allow entry without a port allows. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

const MAX_ENTRY = 300;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
// What WHATWG URL parsing (and inet_aton) would take as a number: the last label decides.
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;

/** Why `host` (lower case, no trailing dot) is not a host name, or undefined when it is one. */
function hostProblem(host: string): string | undefined {
  if (host === "") return "no host";
  if (/[^\x21-\x7e]/.test(host)) {
    if (/[\s\x00-\x1f\x7f]/.test(host)) return "a space or control character";
    const ascii = domainToASCII(host);
    return `not ASCII: write an internationalized name in its punycode form${ascii ? ` (${ascii})` : " (xn--...)"}`;
  }
  if (host.length > 253) return `the name is ${host.length} characters long (at most 253)`;
  const labels = host.split(".");
  for (const l of labels) {
    if (l === "") return "an empty label (two dots, or a leading dot)";
    if (l.length > 63) return `the label ${l.slice(0, 20)}... is ${l.length} characters long (at most 63)`;
    if (l.includes("*")) return "'*' may only be the whole first label, as in *.example.com";
    if (!LABEL.test(l)) return `the label "${l}" has a character outside a-z, 0-9 and '-', or starts or ends with '-'`;
  }
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!))
    return "the name ends in a number: an IPv4 address must be four decimal parts (a.b.c.d), not a decimal, octal, hex or short form";
  return undefined;
}

function portOf(text: string): number | string {
  if (text === "") return "no port after ':'";
  if (!/^[1-9][0-9]{0,4}$/.test(text)) return `the port "${text}" is not a number from 1 to 65535 (no sign, no leading zeros)`;
  const n = Number(text);
  return n <= 65535 ? n : `the port ${text} is above 65535`;
}

const quoted = (text: string) => JSON.stringify(text);

/** `host`, `host:port`, `[v6]` or `[v6]:port` split in two, or why not; `colons` words a bare name with two colons. */
function splitAuthority(text: string, colons: () => string): { readonly hostPart: string; readonly portPart: string | undefined } | string {
  if (text.startsWith("[")) {
    const m = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
    if (!m) return "an IPv6 address in brackets must be followed by nothing or by :port";
    if (ipVersion(m[1]!) !== 6) return m[1]!.includes("%") ? "a zone index (%...) is not allowed" : "only an IPv6 address goes in brackets";
    return { hostPart: m[1]!, portPart: m[2] };
  }
  const colon = text.indexOf(":");
  if (colon >= 0 && text.indexOf(":", colon + 1) >= 0) return colons();
  return { hostPart: colon < 0 ? text : text.slice(0, colon), portPart: colon < 0 ? undefined : text.slice(colon + 1) };
}

/**
 * One entry, or a message naming it and what is wrong (`"foo..com": an empty label ...`).
 * Entries are compared in their canonical text (`text`): lower case, no trailing dot, addresses in
 * canonical form, an IPv6 address in brackets.
 */
export function parseNetworkEntry(text: string): NetworkEntry | string {
  if (typeof text !== "string") return `${String(text)}: not a string`;
  const bad = (why: string) => `${quoted(text)}: ${why}`;
  if (text.length > MAX_ENTRY) return bad(`longer than ${MAX_ENTRY} characters`);
  if (text.trim() !== text || text === "") return bad(text === "" ? "empty" : "leading or trailing space");
  const split = splitAuthority(text, () =>
    ipVersion(text) === 6 || text.includes("::") ? "write an IPv6 address in brackets: [addr] or [addr]:port" : "more than one ':'",
  );
  if (typeof split === "string") return bad(split);
  const { hostPart, portPart } = split;
  let port: number | undefined;
  if (portPart !== undefined) {
    const p = portOf(portPart);
    if (typeof p === "string") return bad(p);
    port = p;
  }
  const suffix = port === undefined ? "" : `:${port}`;
  const key = addressKey(hostPart);
  if (key !== undefined) {
    const canonical = canonicalAddress(hostPart)!;
    return { kind: "address", text: `${canonical.includes(":") ? `[${canonical}]` : canonical}${suffix}`, address: key, port };
  }
  let host = hostPart.toLowerCase();
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (host.startsWith("*.")) {
    const domain = host.slice(2);
    const problem = hostProblem(domain);
    if (problem) return bad(problem);
    if (!domain.includes(".")) return bad(`a wildcard needs at least two labels after '*.' (*.${domain} would match a whole top-level domain)`);
    return { kind: "domain", text: `*.${domain}${suffix}`, domain, port };
  }
  const problem = hostProblem(host);
  if (problem) return bad(problem);
  return { kind: "host", text: `${host}${suffix}`, host, port };
}

/** The first invalid entry of a list as `index: message`, or undefined when all parse. */
export function networkListProblem(texts: readonly string[]): string | undefined {
  for (let i = 0; i < texts.length; i++) {
    const e = parseNetworkEntry(texts[i]!);
    if (typeof e === "string") return `${i}: ${e}`;
  }
  return undefined;
}

/**
 * A destination as a proxy receives it: a CONNECT line's authority (`host:port`, `[v6]:port`),
 * or, with `defaultPort`, a Host header that may omit the port. The result is normalized (lower
 * case, no trailing dot, an address in canonical form, no brackets); a string says why the text is
 * malformed (every refusal kind "malformed" names one).
 */
export function parseDestination(text: string, defaultPort?: number): Destination | string {
  const bad = (why: string) => `malformed destination ${quoted(text.length > 300 ? `${text.slice(0, 300)}...` : text)}: ${why}`;
  if (text.length > 300) return bad("too long");
  if (text.includes("@")) return bad("a user name is not part of a destination");
  const split = splitAuthority(text, () => "an IPv6 address must be in brackets, as in [::1]:443");
  if (typeof split === "string") return bad(split);
  const { hostPart, portPart } = split;
  let port: number;
  if (portPart === undefined) {
    if (defaultPort === undefined) return bad("no port");
    port = defaultPort;
  } else {
    const p = portOf(portPart);
    if (typeof p === "string") return bad(p);
    port = p;
  }
  const address = canonicalAddress(hostPart);
  if (address !== undefined) return { host: address, port };
  let host = hostPart.toLowerCase();
  if (host.endsWith(".")) host = host.slice(0, -1);
  const problem = hostProblem(host);
  return problem ? bad(problem) : { host, port };
}

const UNLISTED: DestinationVerdict = Object.freeze({ kind: "unlisted" });

/** Entries by the name or address they are keyed on. */
type Index = Map<string, NetworkEntry[]>;

function add(index: Index, key: string, e: NetworkEntry): void {
  const list = index.get(key);
  if (list) list.push(e);
  else index.set(key, [e]);
}

interface Side {
  readonly hosts: Index;
  readonly domains: Index;
  readonly addresses: Index;
  /** Whether an entry without a port means every port (deny) or 80 and 443 (allow). */
  readonly anyPort: boolean;
}

function side(texts: readonly string[], anyPort: boolean, what: string): Side {
  const s: Side = { hosts: new Map(), domains: new Map(), addresses: new Map(), anyPort };
  texts.forEach((t, i) => {
    const e = parseNetworkEntry(t);
    if (typeof e === "string") throw new Error(`invalid network ${what} entry ${i}: ${e}`);
    if (e.kind === "host") add(s.hosts, e.host, e);
    else if (e.kind === "domain") add(s.domains, e.domain, e);
    else add(s.addresses, e.address, e);
  });
  return s;
}

function portMatch(list: readonly NetworkEntry[] | undefined, port: number, anyPort: boolean): NetworkEntry | undefined {
  if (!list) return undefined;
  for (const e of list) if (e.port === port || (e.port === undefined && (anyPort || port === 80 || port === 443))) return e;
  return undefined;
}

/** The entry of `s` that names the destination by name (an exact host before a wildcard, the nearest wildcard first). */
function nameMatch(s: Side, host: string, port: number): NetworkEntry | undefined {
  const exact = portMatch(s.hosts.get(host), port, s.anyPort);
  if (exact) return exact;
  for (let dot = host.indexOf("."); dot >= 0; dot = host.indexOf(".", dot + 1)) {
    const e = portMatch(s.domains.get(host.slice(dot + 1)), port, s.anyPort);
    if (e) return e;
  }
  return undefined;
}

const validPort = (port: number) => Number.isInteger(port) && port >= 1 && port <= 65535;

/** The name judge() compares: lower case, no brackets, no trailing dot (a Destination should be so already). */
function normalHost(host: string): string {
  let h = host;
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return /[A-Z]/.test(h) ? h.toLowerCase() : h;
}

const bracketed = (key: string) => (key.includes(":") ? `[${key}]` : key);

/**
 * The compiled spec. Throws on an invalid entry, naming it (the configuration loader checks the
 * same lists first and reports a fault with the file's path instead).
 */
export function compileNetworkPolicy(spec: NetworkSpec): NetworkPolicy {
  const frozen: NetworkSpec = Object.freeze({
    allow: Object.freeze([...spec.allow]),
    deny: Object.freeze([...spec.deny]),
    reviewUnlisted: spec.reviewUnlisted,
  });
  const allow = side(frozen.allow, false, "allow");
  const deny = side(frozen.deny, true, "deny");
  return {
    spec: frozen,
    judge(dest: Destination): DestinationVerdict {
      if (!validPort(dest.port) || typeof dest.host !== "string") return UNLISTED;
      const host = normalHost(dest.host);
      const key = addressKey(host);
      let denied: NetworkEntry | undefined;
      let allowed: NetworkEntry | undefined;
      if (key !== undefined) {
        denied = portMatch(deny.addresses.get(key), dest.port, true);
        allowed = denied ? undefined : portMatch(allow.addresses.get(key), dest.port, false);
      } else {
        // A text that is no host name can match no entry safely (a wildcard's suffix walk would
        // take "a b.example.com"): it is never allowed.
        if (hostProblem(host) !== undefined) return UNLISTED;
        denied = nameMatch(deny, host, dest.port);
        allowed = denied ? undefined : nameMatch(allow, host, dest.port);
      }
      if (denied) return { kind: "deny", entry: denied.text };
      if (allowed) return { kind: "allow", entry: allowed.text };
      return UNLISTED;
    },
    addressRefusal(address: string, port: number): string | undefined {
      const key = addressKey(address);
      const cls = classifyAddress(address);
      if (key === undefined || cls === undefined) return `${quoted(address)} is not an IP address`;
      if (!validPort(port)) return `port ${port} is not from 1 to 65535`;
      const denied = portMatch(deny.addresses.get(key), port, true);
      if (denied) return `${address} is denied by the entry ${quoted(denied.text)}`;
      if (cls === "public") return undefined;
      if ((allow.addresses.get(key) ?? []).some((e) => e.port === port)) return undefined;
      return `${address} is ${describeAddressClass(cls)}; only an allow entry naming exactly ${bracketed(key)}:${port} lets a sandboxed command reach it`;
    },
  };
}

/** The user's sandbox.network settings (all optional). */
export interface UserNetworkSettings {
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
  readonly reviewUnlisted?: boolean;
}

/** A project's sandbox.network settings: it can only take allow entries away, add denies and turn review off. */
export interface ProjectNetworkSettings {
  readonly remove?: readonly string[];
  readonly deny?: readonly string[];
  readonly reviewUnlisted?: false;
}

/** Where each part of the effective spec came from (index for index with spec.allow and spec.deny). */
export interface NetworkOrigins {
  readonly allow: readonly ("default" | "user")[];
  readonly deny: readonly ("default" | "user" | "project")[];
  /** Allow entries the project removed (canonical text). */
  readonly removed: readonly string[];
  readonly reviewUnlisted: "default" | "user" | "project";
}

export interface EffectiveNetwork {
  readonly spec: NetworkSpec;
  readonly origins: NetworkOrigins;
}

const canonical = (text: string): string => {
  const e = parseNetworkEntry(text);
  if (typeof e === "string") throw new Error(`invalid network entry ${e}`);
  return e.text;
};

/**
 * The user's settings over the defaults (an allow list replaces them; `[]` is no network), less
 * what the project removes, plus its denies. Entries are compared in canonical text, so a removal
 * of `Registry.npmjs.org.` takes `registry.npmjs.org`; a removal names one entry (narrow a
 * wildcard with a deny instead); one that names no entry is ignored (a project is shared by users
 * with different lists). Throws on an invalid entry; loadPolicyConfig checks each file first.
 */
export function effectiveNetwork(
  user: UserNetworkSettings | undefined,
  project: ProjectNetworkSettings | undefined,
  defaults: NetworkSpec = networkData().defaults,
): EffectiveNetwork {
  const base = user?.allow ?? defaults.allow;
  const removing = new Set((project?.remove ?? []).map(canonical));
  const allow: string[] = [];
  const removed: string[] = [];
  for (const text of base) {
    const c = canonical(text);
    if (removing.has(c)) removed.push(c);
    else allow.push(text);
  }
  const userDeny = user?.deny ?? [];
  const projectDeny = project?.deny ?? [];
  for (const t of [...userDeny, ...projectDeny, ...defaults.deny]) canonical(t);
  const reviewUnlisted = (user?.reviewUnlisted ?? defaults.reviewUnlisted) && project?.reviewUnlisted !== false;
  return {
    spec: { allow, deny: [...defaults.deny, ...userDeny, ...projectDeny], reviewUnlisted },
    origins: {
      allow: allow.map(() => (user?.allow ? "user" : "default")),
      deny: [...defaults.deny.map(() => "default" as const), ...userDeny.map(() => "user" as const), ...projectDeny.map(() => "project" as const)],
      removed,
      reviewUnlisted: project?.reviewUnlisted === false ? "project" : user?.reviewUnlisted !== undefined ? "user" : "default",
    },
  };
}

/** The data's own examples that do not hold against the default list (a test keeps this empty). */
export function networkExampleFailures(): string[] {
  const data = networkData();
  const policy = compileNetworkPolicy(data.defaults);
  const failures: string[] = [];
  for (const ex of data.raw.examples.destinations) {
    const d = parseDestination(ex.destination);
    const got = typeof d === "string" ? "malformed" : policy.judge(d).kind;
    if (got !== ex.verdict) failures.push(`${ex.destination} is ${got}, not ${ex.verdict}${typeof d === "string" ? ` (${d})` : ""}`);
  }
  for (const ex of data.raw.examples.addresses) {
    const got = classifyAddress(ex.address);
    if (got !== ex.class) failures.push(`${ex.address} is ${got ?? "not an address"}, not ${ex.class}`);
  }
  for (const [i, t] of data.defaults.allow.entries()) {
    const e = parseNetworkEntry(t);
    if (typeof e === "string") failures.push(`default allow entry ${i}: ${e}`);
  }
  return failures;
}
