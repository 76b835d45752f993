// The host-side allowlist proxy (issue 13). The sandbox has no network of its own: its forwarder
// hands every TCP connection a command opens to its loopback proxy port to this proxy, over a
// unix socket. Here the request head is read (HTTP/1.x CONNECT, or an absolute-form http:// request),
// the destination judged by name, the name resolved on the host (never inside the sandbox), every
// resolved address checked, and only then one exact address connected to and the bytes relayed,
// each connection bounded in time and bytes. Pi-free: the sandbox controller owns one per run.

import { lookup as dnsLookup } from "node:dns/promises";
import { chmod } from "node:fs/promises";
import { connect as tcpConnect, createServer, type Server } from "node:net";
import type { Duplex } from "node:stream";
import { denialHead } from "../../policy/denial.ts";
import { ipVersion } from "../../policy/network/addresses.ts";
import { networkData, type ProxyBounds } from "../../policy/network/data.ts";
import { parseDestination } from "../../policy/network/entries.ts";
import type { Destination, NetReport, NetworkPolicy, RefusalKind } from "../../policy/network/types.ts";

/** The bounds, network.json's `proxy` (data.ts ProxyBounds): connect, idle, lifetime, bytes, connections per run, head size and time. */
export type ProxyLimits = ProxyBounds;

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

export interface ConnectTarget extends ResolvedAddress {
  readonly port: number;
}

export interface ProxyOptions {
  readonly policy: NetworkPolicy;
  /** Over network.json's `proxy` bounds. */
  readonly limits?: Partial<ProxyLimits>;
  /** Every address of a name, in the resolver's order. Default: the host's resolver (getaddrinfo). */
  readonly lookup?: (host: string) => Promise<readonly ResolvedAddress[]>;
  /** Asked only for an unlisted destination when policy.spec.reviewUnlisted; true allows this one connection. */
  readonly review?: (dest: Destination) => Promise<boolean>;
  /**
   * Opens a connection to exactly this address, resolving once it is connected; the signal aborts
   * it (timeout or close). Default: a TCP connect. A test injects one that refuses non-loopback
   * addresses.
   */
  readonly connect?: (to: ConnectTarget, signal: AbortSignal) => Promise<Duplex>;
}

export interface NetProxy {
  /** Serve one client connection (from the forwarder). A net.Socket should allow half-open, so a client's end still gets the answer. */
  accept(socket: Duplex): void;
  /** Listen on a unix socket at `path` (made mode 0600; its directory must be the caller's own). */
  listen(path: string): Promise<void>;
  /** The destinations allowed and refused so far: host and port only. */
  report(): NetReport;
  /** Stop listening and destroy every client and upstream connection now. Idempotent. */
  close(): Promise<void>;
}

/** What a refusal needs to be explained: a NetReport refused entry fits, so the controller can reuse the text. */
export interface RefusalFacts {
  readonly kind: RefusalKind;
  readonly host?: string;
  readonly port?: number;
  readonly detail: string;
}

/** host:port as a user writes it in an entry (IPv6 in brackets). */
export function hostPort(host: string, port: number | undefined): string {
  const h = host.includes(":") ? `[${host}]` : host;
  return port === undefined ? h : `${h}:${port}`;
}

const ESCALATE = "or ask for an escalation to run the command outside the sandbox";
const USER_CONFIG = "your auto-mode.json (user configuration)";

/**
 * The one paragraph a refused connection's command reads in the response body, and that the tool
 * result repeats to the model: which destination, why, and what the user can do about it.
 */
export function refusalText(r: RefusalFacts): string {
  const where = r.host === undefined ? undefined : hostPort(r.host, r.port);
  const dest = where ?? "this destination";
  const literal = r.host !== undefined && ipVersion(r.host) !== 0;
  const entries = r.host === undefined ? "it" : literal || r.port === undefined ? `"${dest}"` : `"${r.host}" or "${dest}"`;
  const lead = "The sandbox's network proxy (pi-auto-mode)";
  // A refusal by policy opens with its class's head, as every other refusal of auto mode does.
  const refused = denialHead("network-refused");
  switch (r.kind) {
    case "unlisted":
      return `${refused} ${dest} is not on the sandbox's network allowlist. To let sandboxed commands reach it, add ${entries} to sandbox.network.allow in ${USER_CONFIG}, ${ESCALATE}.`;
    case "denied":
      return `${refused} ${dest} matches "${r.detail}" in sandbox.network.deny, which wins over the allowlist. If sandboxed commands should reach it, remove that entry and add ${entries} to sandbox.network.allow in ${USER_CONFIG}, ${ESCALATE}.`;
    case "review-denied":
      return `${refused} ${dest} is not on the sandbox's network allowlist and the review of this connection did not approve it (${r.detail}). To let sandboxed commands reach it without a review, add ${entries} to sandbox.network.allow in ${USER_CONFIG}, ${ESCALATE}.`;
    case "address": {
      const how = literal ? "is an address" : "has a name that resolves only to addresses";
      return `${refused} ${dest} ${how} that sandboxed commands may not reach (${r.detail}). Loopback, link-local, private, multicast, cloud metadata and other special addresses are reachable only through an exact ip:port entry in sandbox.network.allow; add one to ${USER_CONFIG} if this is intended, ${ESCALATE}.`;
    }
    case "unresolved":
      return `${lead} could not resolve ${r.host ?? "the name"} (${r.detail}), so nothing was connected to ${dest}. Check the name; if it is right, this machine's DNS or network may be down, and an escalation would meet the same failure.`;
    case "unreachable":
      return `${lead} could not connect to ${dest} (${r.detail}). The destination is allowed; it did not accept the connection from this machine. Check that the server is up and the port is right.`;
    case "limit":
      return `${lead} stopped a connection to ${dest}: ${r.detail}. Split the work over several commands, ${ESCALATE}.`;
    case "malformed":
      return `${lead} could not handle this request${where === undefined ? "" : ` to ${where}`}: ${r.detail}. Sandboxed commands reach the network only through this HTTP proxy: https and other protocols with CONNECT (HTTPS_PROXY, ALL_PROXY), plain http with an absolute http:// URL (HTTP_PROXY).`;
  }
}

// ---------------------------------------------------------------------------------------------
// The request head

const TCHAR = "!#$%&'*+\\-.^_`|~0-9A-Za-z";
const REQUEST_LINE = new RegExp(`^([${TCHAR}]+) ([\\x21-\\x7e]+) (HTTP/\\d\\.\\d)$`);
/** A prefix of a request line: lets garbage be refused before the head's end arrives (or never does). */
const REQUEST_LINE_PREFIX = new RegExp(`^[${TCHAR}]*(?: [\\x21-\\x7e]*(?: [HTP/0-9.]*)?)?$`);
const HEADER_LINE = new RegExp(`^([${TCHAR}]+):[ \\t]*([\\t\\x20-\\x7e\\x80-\\xff]*?)[ \\t]*$`);

interface Head {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  readonly headers: readonly (readonly [string, string])[];
}

class Malformed extends Error {
  readonly detail: string;
  readonly status: number;
  readonly dest: Destination | undefined;
  constructor(detail: string, status = 400, dest?: Destination) {
    super(detail);
    this.detail = detail;
    this.status = status;
    this.dest = dest;
  }
}

function parseRequestLine(line: string): Pick<Head, "method" | "target" | "version"> {
  const m = REQUEST_LINE.exec(line);
  if (!m) throw new Malformed("the request line is not HTTP/1.x");
  if (m[3] !== "HTTP/1.1" && m[3] !== "HTTP/1.0") throw new Malformed(`${m[3]} is not spoken here, only HTTP/1.0 and HTTP/1.1`);
  return { method: m[1]!, target: m[2]!, version: m[3] };
}

function parseHead(text: string): Head {
  const lines = text.split("\r\n");
  const line = parseRequestLine(lines[0]!);
  const headers: [string, string][] = [];
  for (const l of lines.slice(1)) {
    const m = HEADER_LINE.exec(l);
    if (!m) throw new Malformed(l.startsWith(" ") || l.startsWith("\t") ? "a folded header line" : "a header line that is not name: value");
    headers.push([m[1]!, m[2]!]);
  }
  return { ...line, headers };
}

/** A CONNECT authority or an http URL's, parsed the way entries are (entries.ts), so a name is judged as the allowlist spells it. */
function authority(text: string, defaultPort: number | undefined): Destination {
  const d = parseDestination(text, defaultPort);
  if (typeof d === "string") throw new Malformed(d);
  return d;
}

/** Dropped when forwarding: they speak to the proxy, or about this one hop. Transfer-Encoding stays: the body is relayed as sent. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "host"]);
/** A Connection header may not nominate these away: the upstream must frame the body as the client did. */
const FRAMING = new Set(["content-length", "transfer-encoding"]);

type Route = { readonly mode: "connect"; readonly dest: Destination } | { readonly mode: "forward"; readonly dest: Destination; readonly head: Buffer };

function route(head: Head): Route {
  if (head.method === "CONNECT") return { mode: "connect", dest: authority(head.target, undefined) };
  const url = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([/?][^#]*)?$/.exec(head.target);
  if (!url) {
    if (head.target.startsWith("/") || head.target === "*") throw new Malformed("a request for the proxy itself rather than through it (origin form)");
    throw new Malformed("a request target that is neither host:port with CONNECT nor an absolute http:// URL");
  }
  const scheme = url[1]!.toLowerCase();
  if (scheme !== "http") {
    let dest: Destination | undefined;
    try {
      dest = authority(url[2]!, scheme === "https" ? 443 : undefined);
    } catch {}
    throw new Malformed(`an ${scheme}:// URL sent as a plain request; ${scheme} goes through CONNECT`, 400, dest);
  }
  const dest = authority(url[2]!, 80);
  const path = url[3] === undefined ? "/" : url[3].startsWith("?") ? `/${url[3]}` : url[3];

  const named = new Set<string>();
  let lengths = 0;
  let chunked = false;
  for (const [name, value] of head.headers) {
    const n = name.toLowerCase();
    if (n === "connection" || n === "proxy-connection") for (const t of value.split(",")) named.add(t.trim().toLowerCase());
    if (n === "content-length") lengths++;
    if (n === "transfer-encoding") {
      if (
        !value
          .split(",")
          .map((c) => c.trim().toLowerCase())
          .at(-1)
          ?.startsWith("chunked")
      )
        throw new Malformed("a transfer coding that does not end in chunked", 400, dest);
      chunked = true;
    }
  }
  // The body is relayed as bytes, so its framing must be unambiguous for the upstream (request smuggling).
  if (chunked && lengths > 0) throw new Malformed("both Transfer-Encoding and Content-Length", 400, dest);
  if (lengths > 1) throw new Malformed("more than one Content-Length", 400, dest);

  const lines = [`${head.method} ${path} ${head.version}`, `Host: ${hostPort(dest.host, dest.port === 80 ? undefined : dest.port)}`];
  for (const [name, value] of head.headers) {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || n.startsWith("proxy-") || (named.has(n) && !FRAMING.has(n))) continue;
    lines.push(`${name}: ${value}`);
  }
  lines.push("Connection: close", "", "");
  return { mode: "forward", dest, head: Buffer.from(lines.join("\r\n"), "latin1") };
}

// ---------------------------------------------------------------------------------------------
// The proxy

const REASONS: Readonly<Record<number, string>> = {
  400: "Bad Request",
  403: "Forbidden",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

const STATUS: Readonly<Record<RefusalKind, number>> = {
  unlisted: 403,
  denied: 403,
  "review-denied": 403,
  address: 403,
  malformed: 400,
  unresolved: 502,
  unreachable: 502,
  limit: 503,
};

function refusalResponse(facts: RefusalFacts, status: number): Buffer {
  const body = Buffer.from(`${refusalText(facts)}\n`, "utf8");
  const head = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}`,
    "Content-Type: text/plain; charset=utf-8",
    `Content-Length: ${body.length}`,
    `X-Pi-Auto-Mode-Refused: ${facts.kind}`,
    "Connection: close",
    "",
    "",
  ].join("\r\n");
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

const ESTABLISHED = Buffer.from("HTTP/1.1 200 Connection Established\r\n\r\n", "latin1");
/** Addresses tried for one connection: a resolver's long answer must not multiply the connect timeout without end. */
const MAX_ATTEMPTS = 4;
/** Client connections open at once: each holds a host descriptor, and the sandbox must not exhaust them. */
const MAX_OPEN_CLIENTS = 512;
/** Distinct destinations a report keeps per list: a command naming endless hosts must not grow it without end. */
const MAX_REPORT_ENTRIES = 256;
const TIMED_OUT = Symbol("timed out");

interface Conn {
  readonly client: Duplex;
  upstream?: Duplex;
  dest?: Destination;
  done: boolean;
  /** A refusal was sent: the connection only lingers until the client reads it. */
  answered: boolean;
  bytes: number;
  readonly abort: AbortController;
  readonly timers: NodeJS.Timeout[];
  idle?: NodeJS.Timeout;
}

function defaultLookup(host: string): Promise<readonly ResolvedAddress[]> {
  return dnsLookup(host, { all: true, verbatim: true }) as Promise<ResolvedAddress[]>;
}

function defaultConnect(to: ConnectTarget, signal: AbortSignal): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host: to.address, port: to.port, family: to.family, allowHalfOpen: true });
    // Kept for the socket's life: an error between 'connect' and the relay's own listener must not go uncaught.
    s.on("error", () => {});
    const onAbort = (): void => {
      s.destroy();
      reject(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    s.once("error", (e) => {
      signal.removeEventListener("abort", onAbort);
      s.destroy();
      reject(e);
    });
    s.once("connect", () => {
      signal.removeEventListener("abort", onAbort);
      resolve(s);
    });
  });
}

function errorDetail(e: unknown): string {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^[A-Z0-9_]+$/.test(code) ? code : "failed";
}

function timer(ms: number, fn: () => void): NodeJS.Timeout {
  const t = setTimeout(fn, ms);
  t.unref();
  return t;
}

export function createNetProxy(opts: ProxyOptions): NetProxy {
  const limits: ProxyLimits = { ...networkData().proxy, ...opts.limits };
  const { policy } = opts;
  const lookup = opts.lookup ?? defaultLookup;
  const connect = opts.connect ?? defaultConnect;
  const conns = new Set<Conn>();
  const servers: Server[] = [];
  let closed = false;
  let closing: Promise<void> | undefined;
  let started = 0;

  const allowed = new Map<string, { host: string; port: number; connections: number; reviewed?: boolean }>();
  const refused = new Map<string, { host: string; port: number; kind: RefusalKind; detail: string; connections: number }>();

  function recordAllowed(dest: Destination, reviewed: boolean): void {
    const key = `${dest.host}|${dest.port}|${reviewed}`;
    const e = allowed.get(key);
    if (e) e.connections++;
    else if (allowed.size < MAX_REPORT_ENTRIES) allowed.set(key, { host: dest.host, port: dest.port, connections: 1, ...(reviewed ? { reviewed: true } : {}) });
  }

  function recordRefused(dest: Destination, kind: RefusalKind, detail: string): void {
    const key = `${kind}|${dest.host}|${dest.port}`;
    const e = refused.get(key);
    if (e) e.connections++;
    else if (refused.size < MAX_REPORT_ENTRIES) refused.set(key, { host: dest.host, port: dest.port, kind, detail, connections: 1 });
  }

  function finish(conn: Conn): void {
    if (conn.done) return;
    conn.done = true;
    for (const t of conn.timers) clearTimeout(t);
    if (conn.idle) clearTimeout(conn.idle);
    conn.abort.abort();
    conn.client.destroy();
    conn.upstream?.destroy();
    conns.delete(conn);
  }

  /** Answer with a refusal and end; the client's further bytes are read and dropped so it sees the answer, not a reset. */
  function refuse(conn: Conn, facts: RefusalFacts, status = STATUS[facts.kind]): void {
    if (conn.done || conn.answered) return;
    conn.answered = true;
    if (facts.host !== undefined && facts.port !== undefined) recordRefused({ host: facts.host, port: facts.port }, facts.kind, facts.detail);
    const { client } = conn;
    client.removeAllListeners("data");
    client.on("data", () => {});
    client.resume();
    if (client.writable) client.end(refusalResponse(facts, status));
    conn.timers.push(timer(Math.min(limits.headTimeoutMs, 5_000), () => finish(conn)));
  }

  function accept(client: Duplex): void {
    const conn: Conn = { client, done: false, answered: false, bytes: 0, abort: new AbortController(), timers: [] };
    client.on("error", () => finish(conn));
    client.on("close", () => finish(conn));
    if (closed || conns.size >= MAX_OPEN_CLIENTS) {
      client.destroy();
      return;
    }
    conns.add(conn);
    conn.timers.push(
      timer(limits.maxConnectionMs, () => overLimit(conn, `the connection passed its time limit of ${Math.round(limits.maxConnectionMs / 1000)} s`)),
    );
    const headTimer = timer(limits.headTimeoutMs, () =>
      refuse(conn, { kind: "malformed", detail: `no complete request head within ${limits.headTimeoutMs} ms` }, 408),
    );
    conn.timers.push(headTimer);

    let buf: Buffer = Buffer.alloc(0);
    const onEnd = (): void => refuse(conn, { kind: "malformed", detail: "the connection ended before the request head did" });
    const onData = (chunk: Buffer) => {
      if (conn.done) return;
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0 || end + 4 > limits.maxHeaderBytes) {
        if (buf.length > limits.maxHeaderBytes || end >= 0) {
          stopReading();
          return refuse(conn, { kind: "malformed", detail: `a request head longer than ${limits.maxHeaderBytes} bytes` }, 431);
        }
        const lineEnd = buf.indexOf("\r\n");
        // A chunk may end between the line's CR and LF.
        const first = buf
          .subarray(0, lineEnd < 0 ? buf.length : lineEnd)
          .toString("latin1")
          .replace(/\r$/, "");
        try {
          if (lineEnd >= 0) parseRequestLine(first);
          else if (!REQUEST_LINE_PREFIX.test(first)) throw new Malformed("bytes that do not begin an HTTP request");
        } catch (e) {
          stopReading();
          return refuse(conn, { kind: "malformed", detail: (e as Malformed).detail });
        }
        return;
      }
      stopReading();
      clearTimeout(headTimer);
      const rest = buf.subarray(end + 4);
      let r: Route;
      try {
        r = route(parseHead(buf.subarray(0, end).toString("latin1")));
      } catch (e) {
        if (!(e instanceof Malformed)) return finish(conn);
        return refuse(conn, { kind: "malformed", detail: e.detail, ...e.dest }, e.status);
      }
      serve(conn, r, rest).catch(() => finish(conn));
    };
    const stopReading = (): void => {
      client.off("data", onData);
      client.off("end", onEnd);
      client.pause();
    };
    client.on("data", onData);
    client.on("end", onEnd);
  }

  function overLimit(conn: Conn, detail: string): void {
    if (conn.done) return;
    if (conn.upstream && conn.dest) recordRefused(conn.dest, "limit", detail);
    finish(conn);
  }

  async function serve(conn: Conn, r: Route, rest: Buffer): Promise<void> {
    const { dest } = r;
    conn.dest = dest;
    const facts = (kind: RefusalKind, detail: string): RefusalFacts => ({ kind, host: dest.host, port: dest.port, detail });
    const verdict = policy.judge(dest);
    if (verdict.kind === "deny") return refuse(conn, facts("denied", verdict.entry));
    const reviewing = verdict.kind === "unlisted";
    if (reviewing && !(policy.spec.reviewUnlisted && opts.review)) return refuse(conn, facts("unlisted", "not in sandbox.network.allow"));
    // Counted before the review too: the reviewer is a cost the run's bound covers.
    if (started >= limits.maxConnectionsPerRun)
      return refuse(conn, facts("limit", `this run reached its limit of ${limits.maxConnectionsPerRun} proxied connections`));
    started++;
    if (reviewing) {
      let ok = false;
      let detail = "the reviewer refused it";
      try {
        ok = (await opts.review!(dest)) === true;
      } catch {
        detail = "the review failed";
      }
      if (conn.done) return;
      if (!ok) return refuse(conn, facts("review-denied", detail));
    }

    let addresses: readonly ResolvedAddress[];
    const literal = ipVersion(dest.host);
    if (literal !== 0) addresses = [{ address: dest.host, family: literal }];
    else {
      try {
        addresses = await bounded(conn, lookup(dest.host));
      } catch (e) {
        if (conn.done) return;
        return refuse(conn, facts("unresolved", e === TIMED_OUT ? "the lookup timed out" : errorDetail(e)));
      }
      if (conn.done) return;
      if (addresses.length === 0) return refuse(conn, facts("unresolved", "no addresses"));
    }

    // Every answer is judged: one refused address among accepted ones is skipped, never connected to.
    const accepted: ResolvedAddress[] = [];
    const refusals: string[] = [];
    for (const a of addresses) {
      if (a.family !== 4 && a.family !== 6) continue;
      const why = policy.addressRefusal(a.address, dest.port);
      if (why === undefined) accepted.push(a);
      else refusals.push(why);
    }
    if (accepted.length === 0) {
      // The policy's reason names the address, its class and the entry that would allow it; one is enough to act on.
      const more = refusals.length > 1 ? ` (and ${refusals.length - 1} more refused address${refusals.length > 2 ? "es" : ""})` : "";
      return refuse(conn, facts("address", refusals.length > 0 ? `${refusals[0]}${more}` : "no usable address"));
    }

    let upstream: Duplex | undefined;
    let timedOut = false;
    let lastError = "failed";
    for (const a of accepted.slice(0, MAX_ATTEMPTS)) {
      try {
        const attempt = new AbortController();
        const onAbort = (): void => attempt.abort();
        conn.abort.signal.addEventListener("abort", onAbort, { once: true });
        try {
          upstream = await bounded(conn, connect({ address: a.address, family: a.family, port: dest.port }, attempt.signal), (s) => {
            attempt.abort();
            s.destroy();
          });
        } finally {
          conn.abort.signal.removeEventListener("abort", onAbort);
          if (!upstream) attempt.abort();
        }
        break;
      } catch (e) {
        if (conn.done) return;
        if (e === TIMED_OUT) timedOut = true;
        else lastError = errorDetail(e);
      }
    }
    if (conn.done) {
      upstream?.destroy();
      return;
    }
    if (!upstream) return refuse(conn, facts("unreachable", timedOut ? "the connection timed out" : lastError), timedOut ? 504 : 502);

    recordAllowed(dest, reviewing);
    relay(conn, upstream, r.mode === "connect" ? ESTABLISHED : undefined, r.mode === "forward" ? Buffer.concat([r.head, rest]) : rest);
  }

  /** A promise bounded by the connect timeout and the connection's end; what it yields too late is handed to `late`. */
  function bounded<T>(conn: Conn, p: Promise<T>, late?: (value: T) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const t = timer(limits.connectTimeoutMs, () => settle(() => reject(TIMED_OUT)));
      const onAbort = (): void => settle(() => reject(new Error("closed")));
      conn.abort.signal.addEventListener("abort", onAbort, { once: true });
      function settle(fn: () => void): void {
        if (settled) return;
        settled = true;
        clearTimeout(t);
        conn.abort.signal.removeEventListener("abort", onAbort);
        fn();
      }
      p.then(
        (v) => {
          if (settled) late?.(v);
          else settle(() => resolve(v));
        },
        (e) => settle(() => reject(e)),
      );
    });
  }

  function relay(conn: Conn, upstream: Duplex, toClient: Buffer | undefined, toUpstream: Buffer): void {
    const { client } = conn;
    conn.upstream = upstream;
    let upstreamEnded = false;
    upstream.on("error", () => finish(conn));
    upstream.on("end", () => {
      upstreamEnded = true;
    });
    // A reset or destroyed upstream takes the client with it; an ended one lets the client flush first.
    upstream.on("close", () => {
      if (!upstreamEnded) finish(conn);
    });
    conn.idle = timer(limits.idleTimeoutMs, () => finish(conn));

    const pump = (from: Duplex, to: Duplex): void => {
      from.on("data", (chunk: Buffer) => {
        if (conn.done) return;
        if (!count(chunk.length)) return;
        if (to.destroyed) return finish(conn);
        if (!to.write(chunk)) {
          from.pause();
          to.once("drain", () => from.resume());
        }
      });
      from.on("end", () => {
        if (!to.destroyed) to.end();
      });
    };
    const count = (n: number): boolean => {
      conn.bytes += n;
      if (conn.bytes > limits.maxBytesPerConnection) {
        overLimit(conn, `the connection passed its limit of ${limits.maxBytesPerConnection} bytes`);
        return false;
      }
      conn.idle?.refresh();
      return true;
    };

    if (toClient) client.write(toClient);
    if (toUpstream.length > 0) {
      if (!count(toUpstream.length)) return;
      upstream.write(toUpstream);
    }
    pump(client, upstream);
    pump(upstream, client);
    client.resume();
    upstream.resume();
  }

  async function listen(path: string): Promise<void> {
    if (closed) throw new Error("the network proxy is closed");
    const server = createServer({ allowHalfOpen: true }, (s) => accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // A listening server's later errors concern one accept; the clients carry their own.
    server.on("error", () => {});
    if (closed) {
      server.close();
      throw new Error("the network proxy is closed");
    }
    servers.push(server);
    await chmod(path, 0o600);
  }

  function report(): NetReport {
    return { allowed: [...allowed.values()].map((e) => ({ ...e })), refused: [...refused.values()].map((e) => ({ ...e })) };
  }

  function close(): Promise<void> {
    closing ??= (async () => {
      closed = true;
      for (const c of [...conns]) finish(c);
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    })();
    return closing;
  }

  return { accept, listen, report, close };
}
