// The host-side allowlist proxy (issue 13), over its real unix socket, against loopback servers
// only: CONNECT and absolute-form http through to a local server named by an ip:port entry; every
// refusal (unlisted, denied, an address a name resolves to, review, lookup, connect, the run's
// connection bound) answered with its text; malformed heads answered without hanging; the
// per-connection bounds; close(); and a report that holds host and port only.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { request } from "node:http";
import { connect, createServer, isIP } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createNetProxy, refusalText, type NetProxy, type ProxyOptions } from "../../../src/sandbox/network/proxy.ts";
import { compileNetworkPolicy } from "../../../src/policy/network/entries.ts";
import type { Destination, NetworkPolicy, RefusalKind } from "../../../src/policy/network/types.ts";
import { echoHttp, exchange, loopbackConnect, parseAnswer, readToClose, tcpSink, tunnel, type EchoHttp } from "../../helpers/net-servers.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-auto-mode-proxy-"));
after(() => rmSync(dir, { recursive: true, force: true }));

// The real compiled allowlist; `publicAddresses` lets a loopback address stand for a public one
// (a test never connects anywhere else).
function testPolicy(
  allow: readonly string[],
  opts: { deny?: readonly string[]; reviewUnlisted?: boolean; publicAddresses?: readonly string[] } = {},
): NetworkPolicy {
  const real = compileNetworkPolicy({ allow, deny: opts.deny ?? [], reviewUnlisted: opts.reviewUnlisted ?? false });
  if (!opts.publicAddresses) return real;
  const pub = new Set(opts.publicAddresses);
  return { spec: real.spec, judge: (d) => real.judge(d), addressRefusal: (a, p) => (pub.has(a) ? undefined : real.addressRefusal(a, p)) };
}

let sockets = 0;
const open: NetProxy[] = [];
after(async () => {
  await Promise.all(open.map((p) => p.close()));
});

/** A proxy listening on a fresh unix socket; never connects anywhere but loopback. */
async function proxy(opts: Partial<ProxyOptions> & { policy: NetworkPolicy }): Promise<{ proxy: NetProxy; path: string; asked: string[] }> {
  const guard = loopbackConnect();
  const p = createNetProxy({
    lookup: async (host) => {
      throw Object.assign(new Error(`no lookup in this test for ${host}`), { code: "ENOTFOUND" });
    },
    connect: guard.connect,
    ...opts,
  });
  open.push(p);
  const path = join(dir, `p${sockets++}.sock`);
  await p.listen(path);
  return { proxy: p, path, asked: guard.asked };
}

const fakeLookup =
  (table: Readonly<Record<string, readonly string[]>>) =>
  async (host: string): Promise<readonly { address: string; family: 4 | 6 }[]> => {
    const list = table[host];
    if (!list) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return list.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  };

function assertRefused(a: { status: number; headers: Readonly<Record<string, string>>; body: string }, status: number, kind: RefusalKind, hp: string): void {
  assert.equal(a.status, status, a.body);
  assert.equal(a.headers["x-pi-auto-mode-refused"], kind);
  assert.equal(a.headers["content-type"], "text/plain; charset=utf-8");
  assert.equal(a.headers.connection, "close");
  assert.ok(a.body.includes(hp), `${hp} in: ${a.body}`);
}

/** Not a bound on speed: a bug that leaves a connection hanging fails its test instead of the run. */
const HANG = { timeout: 20_000 };

const GET = (host: string): string => `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

let web: EchoHttp;
before(async () => {
  web = await echoHttp();
});
after(() => web.close());

describe("through the proxy to a loopback server named by an ip:port entry", () => {
  test("CONNECT opens a tunnel: 200, then the server's own answer", HANG, async () => {
    const { proxy: p, path } = await proxy({ policy: testPolicy([`127.0.0.1:${web.port}`]) });
    const t = await tunnel(path, `127.0.0.1:${web.port}`);
    assert.equal(t.answer.raw, "HTTP/1.1 200 Connection Established\r\n\r\n");
    t.socket.write(GET(`127.0.0.1:${web.port}`));
    const a = parseAnswer((await readToClose(t.socket)).toString());
    assert.equal(a.status, 200);
    assert.equal(JSON.parse(a.body.slice(a.body.indexOf("{"), a.body.lastIndexOf("}") + 1)).url, "/");
    assert.deepEqual(p.report(), { allowed: [{ host: "127.0.0.1", port: web.port, connections: 1 }], refused: [] });
  });

  test("an absolute-form GET goes out in origin form, hop-by-hop and Proxy-* headers removed, Host set, Connection: close", HANG, async () => {
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${web.port}`]) });
    const body = await new Promise<string>((resolve, reject) => {
      const req = request({
        socketPath: path,
        method: "GET",
        path: `http://127.0.0.1:${web.port}/some/where?q=1`,
        headers: {
          Host: "somewhere-else.example",
          "Proxy-Authorization": "Basic c2VjcmV0",
          "Proxy-Connection": "keep-alive",
          Connection: "keep-alive, X-Hop",
          "X-Hop": "1",
          "X-Kept": "yes",
        },
      });
      req.on("response", (res) => {
        let s = "";
        res.on("data", (c: Buffer) => (s += c));
        res.on("end", () => resolve(s));
      });
      req.on("error", reject);
      req.end();
    });
    const seen = JSON.parse(body);
    assert.equal(seen.url, "/some/where?q=1");
    assert.equal(seen.headers.host, `127.0.0.1:${web.port}`);
    assert.equal(seen.headers.connection, "close");
    assert.equal(seen.headers["x-kept"], "yes");
    for (const gone of ["proxy-authorization", "proxy-connection", "x-hop"]) assert.equal(seen.headers[gone], undefined, gone);
  });

  test("an absolute-form POST's body follows the head, including bytes sent in the same write", HANG, async () => {
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${web.port}`]) });
    const a = await exchange(path, [`POST http://127.0.0.1:${web.port}/up HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello`, " world"]);
    assert.equal(a.status, 200, a.raw);
    const seen = JSON.parse(a.body);
    assert.equal(seen.method, "POST");
    assert.equal(seen.body, "hello world");
  });

  test("an absolute-form URL without a path asks for /, and port 80 is the default", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const { path, asked } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`, "plain.proxy.test:80"]), lookup: fakeLookup({}) });
    const s = connect(path);
    s.write(`GET http://127.0.0.1:${sink.port}?x HTTP/1.1\r\nHost: h\r\n\r\n`);
    const head = (await sink.receivedAtLeast(0, 1)).toString("latin1");
    assert.match(head, new RegExp(`^GET /\\?x HTTP/1\\.1\\r\\nHost: 127\\.0\\.0\\.1:${sink.port}\\r\\n`));
    s.destroy();
    const a = await exchange(path, "GET http://plain.proxy.test/ HTTP/1.1\r\nHost: plain.proxy.test\r\n\r\n");
    assertRefused(a, 502, "unresolved", "plain.proxy.test:80");
    assert.deepEqual(asked, [`127.0.0.1:${sink.port}`]);
  });

  test("bytes sent after the CONNECT head in the same packet arrive upstream, in order", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]) });
    const t = await tunnel(path, `127.0.0.1:${sink.port}`, "EARLY-BYTES|");
    assert.equal(t.answer.status, 200);
    t.socket.write("later");
    assert.equal((await sink.receivedAtLeast(0, 17)).toString(), "EARLY-BYTES|later");
    t.socket.destroy();
  });

  test("the tunnel relays both ways and half-closes: the client's end reaches the server, the server's answer still comes back", HANG, async () => {
    const sink = await tcpSink({ echo: true });
    after(() => sink.close());
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]) });
    const t = await tunnel(path, `127.0.0.1:${sink.port}`);
    const back = readToClose(t.socket);
    t.socket.end("ping");
    assert.equal((await back).toString(), "ping");
    await (await sink.connection(0)).closed;
  });

  test("the default connect (no injection), to IP literals only so nothing is resolved: a tunnel, and a refused port", HANG, async () => {
    const closed = await tcpSink();
    const deadPort = closed.port;
    await closed.close();
    const p = createNetProxy({ policy: testPolicy([`127.0.0.1:${web.port}`, `127.0.0.1:${deadPort}`]) });
    open.push(p);
    const path = join(dir, `p${sockets++}.sock`);
    await p.listen(path);
    const t = await tunnel(path, `127.0.0.1:${web.port}`);
    assert.equal(t.answer.status, 200);
    t.socket.write(GET("x"));
    assert.match((await readToClose(t.socket)).toString(), /^HTTP\/1\.1 200/);
    const a = await exchange(path, `CONNECT 127.0.0.1:${deadPort} HTTP/1.1\r\n\r\n`);
    assertRefused(a, 502, "unreachable", `127.0.0.1:${deadPort}`);
    assert.match(a.body, /ECONNREFUSED/);
  });

  test("an IPv6 literal in brackets, where ::1 is available", HANG, async (t) => {
    const sink = await tcpSink({ host: "::1" }).catch(() => undefined);
    if (!sink) return t.skip("no ::1 on this machine");
    after(() => sink.close());
    const { path } = await proxy({ policy: testPolicy([`[::1]:${sink.port}`]) });
    const tun = await tunnel(path, `[0:0::1]:${sink.port}`, "v6");
    assert.equal(tun.answer.status, 200, tun.answer.raw);
    assert.equal((await sink.receivedAtLeast(0, 2)).toString(), "v6");
    tun.socket.destroy();
  });
});

describe("refusals: status, X-Pi-Auto-Mode-Refused, and a text naming host:port and the way out", () => {
  test("an unlisted host, and an unlisted port on an allowed loopback address", HANG, async () => {
    const { path, asked } = await proxy({ policy: testPolicy([`127.0.0.1:${web.port}`]) });
    const a = await exchange(path, "CONNECT example.org:443 HTTP/1.1\r\n\r\n");
    assertRefused(a, 403, "unlisted", "example.org:443");
    assert.match(a.body, /sandbox\.network\.allow in your auto-mode\.json \(user configuration\), or ask for an escalation/);
    const b = await exchange(path, `CONNECT 127.0.0.1:${web.port + 1} HTTP/1.1\r\n\r\n`);
    assertRefused(b, 403, "unlisted", `127.0.0.1:${web.port + 1}`);
    const c = await exchange(path, `GET http://127.0.0.1:${web.port + 1}/ HTTP/1.1\r\n\r\n`);
    assertRefused(c, 403, "unlisted", `127.0.0.1:${web.port + 1}`);
    assert.deepEqual(asked, []);
  });

  test("a denied host, even when an allow entry matches it", HANG, async () => {
    const { path } = await proxy({ policy: testPolicy(["*.corp.proxy.test"], { deny: ["secret.corp.proxy.test"] }), lookup: fakeLookup({}) });
    const a = await exchange(path, "CONNECT secret.corp.proxy.test:443 HTTP/1.1\r\n\r\n");
    assertRefused(a, 403, "denied", "secret.corp.proxy.test:443");
    assert.match(a.body, /"secret\.corp\.proxy\.test" in sandbox\.network\.deny/);
  });

  for (const [address, klass] of [
    ["127.0.0.1", "a loopback address"],
    ["169.254.169.254", "a cloud metadata address"],
    ["10.0.0.1", "a private address"],
    ["::1", "a loopback address"],
    ["fe80::1", "a link-local address"],
  ] as const) {
    test(`a listed name that resolves to ${address} (${klass}) is refused and never connected to`, HANG, async () => {
      const { path, asked } = await proxy({ policy: testPolicy(["*.proxy.test"]), lookup: fakeLookup({ "rebind.proxy.test": [address] }) });
      const a = await exchange(path, "CONNECT rebind.proxy.test:443 HTTP/1.1\r\n\r\n");
      assertRefused(a, 403, "address", "rebind.proxy.test:443");
      assert.ok(a.body.includes(`${address} is ${klass}`), a.body);
      assert.ok(a.body.includes(`naming exactly ${address.includes(":") ? `[${address}]` : address}:443`), a.body);
      assert.match(a.body, /exact ip:port entry in sandbox\.network\.allow/);
      assert.deepEqual(asked, []);
    });
  }

  test("an IP literal is checked like a resolved address", HANG, async () => {
    const { path, asked } = await proxy({ policy: testPolicy(["169.254.169.254", "[fe80::1]"]) });
    assertRefused(await exchange(path, "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n"), 403, "address", "169.254.169.254:80");
    assertRefused(await exchange(path, "CONNECT [fe80::1]:443 HTTP/1.1\r\n\r\n"), 403, "address", "[fe80::1]:443");
    assert.deepEqual(asked, []);
  });

  test("mixed answers: the refused address is skipped, the accepted one connected to exactly", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const { path, asked } = await proxy({
      policy: testPolicy([`mixed.proxy.test:${sink.port}`], { publicAddresses: ["127.0.0.1"] }),
      lookup: fakeLookup({ "mixed.proxy.test": ["10.0.0.1", "127.0.0.1", "169.254.169.254"] }),
    });
    const t = await tunnel(path, `mixed.proxy.test:${sink.port}`, "x");
    assert.equal(t.answer.status, 200);
    await sink.receivedAtLeast(0, 1);
    assert.deepEqual(asked, [`127.0.0.1:${sink.port}`]);
    t.socket.destroy();
  });

  test("a failing accepted address is followed by the next accepted one", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const closed = await tcpSink();
    const deadPort = closed.port;
    await closed.close();
    const { path, asked } = await proxy({
      policy: testPolicy([`two.proxy.test:${sink.port}`], { publicAddresses: ["127.0.0.2", "127.0.0.1"] }),
      lookup: async () => [
        { address: "127.0.0.2", family: 4 },
        { address: "127.0.0.1", family: 4 },
      ],
      connect: (to, signal) => loopbackConnect().connect(to.address === "127.0.0.2" ? { ...to, port: deadPort } : to, signal),
    });
    const t = await tunnel(path, `two.proxy.test:${sink.port}`);
    assert.equal(t.answer.status, 200, t.answer.raw);
    assert.deepEqual(asked, []);
    t.socket.destroy();
  });

  test("a lookup failure is 502 unresolved; a refused connect 502 unreachable; a connect that hangs 504", HANG, async () => {
    const closed = await tcpSink();
    const deadPort = closed.port;
    await closed.close();
    const { path } = await proxy({ policy: testPolicy(["*.proxy.test", `127.0.0.1:${deadPort}`]), lookup: fakeLookup({}) });
    assertRefused(await exchange(path, "CONNECT nowhere.proxy.test:443 HTTP/1.1\r\n\r\n"), 502, "unresolved", "nowhere.proxy.test:443");
    const b = await exchange(path, `CONNECT 127.0.0.1:${deadPort} HTTP/1.1\r\n\r\n`);
    assertRefused(b, 502, "unreachable", `127.0.0.1:${deadPort}`);
    assert.match(b.body, /ECONNREFUSED/);

    let aborted = 0;
    const { path: slow } = await proxy({
      policy: testPolicy(["127.0.0.1:9"]),
      limits: { connectTimeoutMs: 50 },
      connect: (_to, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => {
            aborted++;
            reject(new Error("aborted"));
          }),
        ),
    });
    assertRefused(await exchange(slow, "CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n"), 504, "unreachable", "127.0.0.1:9");
    assert.equal(aborted, 1, "the hanging attempt is aborted");

    const { path: hung } = await proxy({ policy: testPolicy(["*.proxy.test"]), limits: { connectTimeoutMs: 50 }, lookup: () => new Promise(() => {}) });
    const c = await exchange(hung, "CONNECT stuck.proxy.test:443 HTTP/1.1\r\n\r\n");
    assertRefused(c, 502, "unresolved", "stuck.proxy.test:443");
    assert.match(c.body, /timed out/);
  });

  test("past maxConnectionsPerRun: 503 limit, nothing asked or connected", HANG, async () => {
    let reviews = 0;
    const { path, asked } = await proxy({
      policy: testPolicy([`127.0.0.1:${web.port}`], { reviewUnlisted: true }),
      limits: { maxConnectionsPerRun: 1 },
      review: async () => (reviews++, true),
    });
    const t = await tunnel(path, `127.0.0.1:${web.port}`);
    assert.equal(t.answer.status, 200);
    t.socket.destroy();
    assertRefused(await exchange(path, `CONNECT 127.0.0.1:${web.port} HTTP/1.1\r\n\r\n`), 503, "limit", `127.0.0.1:${web.port}`);
    assertRefused(await exchange(path, `CONNECT unlisted.proxy.test:${web.port} HTTP/1.1\r\n\r\n`), 503, "limit", `unlisted.proxy.test:${web.port}`);
    assert.equal(reviews, 0);
    assert.equal(asked.length, 1);
  });
});

describe("review of an unlisted destination", () => {
  test("true allows that one connection; the next is asked again and refused", HANG, async () => {
    const answers = [true, false];
    const asked: Destination[] = [];
    const { path, proxy: p } = await proxy({
      policy: testPolicy([`127.0.0.1:${web.port}`], { reviewUnlisted: true }),
      lookup: fakeLookup({ "review.proxy.test": ["127.0.0.1"] }),
      review: async (d) => (asked.push(d), answers.shift() ?? false),
    });
    const first = await tunnel(path, `review.proxy.test:${web.port}`);
    assert.equal(first.answer.status, 200);
    first.socket.destroy();
    const second = await exchange(path, `CONNECT review.proxy.test:${web.port} HTTP/1.1\r\n\r\n`);
    assertRefused(second, 403, "review-denied", `review.proxy.test:${web.port}`);
    assert.deepEqual(asked, [
      { host: "review.proxy.test", port: web.port },
      { host: "review.proxy.test", port: web.port },
    ]);
    assert.deepEqual(p.report().allowed, [{ host: "review.proxy.test", port: web.port, connections: 1, reviewed: true }]);
    assert.deepEqual(
      p.report().refused.map((r) => r.kind),
      ["review-denied"],
    );
  });

  test("a review that throws refuses; listed and denied destinations are never reviewed; without reviewUnlisted nothing is asked", HANG, async () => {
    let reviews = 0;
    const { path } = await proxy({
      policy: testPolicy([`127.0.0.1:${web.port}`], { reviewUnlisted: true, deny: ["bad.proxy.test"] }),
      review: async () => {
        reviews++;
        throw new Error("broker gone");
      },
    });
    assertRefused(await exchange(path, "CONNECT other.proxy.test:443 HTTP/1.1\r\n\r\n"), 403, "review-denied", "other.proxy.test:443");
    assertRefused(await exchange(path, "CONNECT bad.proxy.test:443 HTTP/1.1\r\n\r\n"), 403, "denied", "bad.proxy.test:443");
    const t = await tunnel(path, `127.0.0.1:${web.port}`);
    assert.equal(t.answer.status, 200);
    t.socket.destroy();
    assert.equal(reviews, 1);

    let unasked = 0;
    const { path: off } = await proxy({ policy: testPolicy([]), review: async () => (unasked++, true) });
    assertRefused(await exchange(off, "CONNECT other.proxy.test:443 HTTP/1.1\r\n\r\n"), 403, "unlisted", "other.proxy.test:443");
    assert.equal(unasked, 0);
  });
});

describe("malformed requests are answered, never left hanging", () => {
  const cases: readonly (readonly [string, string | Buffer, number, RegExp?])[] = [
    ["garbage", Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]), 400],
    ["a NUL in the request line", "GET\0 http://a.proxy.test/ HTTP/1.1\r\n\r\n", 400],
    ["an origin-form request", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, /origin form/],
    ["an https:// absolute form", "GET https://a.proxy.test/ HTTP/1.1\r\n\r\n", 400, /CONNECT/],
    ["an ftp:// absolute form", "GET ftp://a.proxy.test/x HTTP/1.1\r\n\r\n", 400, /CONNECT/],
    ["CONNECT without a port", "CONNECT a.proxy.test HTTP/1.1\r\n\r\n", 400],
    ["CONNECT to port 0", "CONNECT a.proxy.test:0 HTTP/1.1\r\n\r\n", 400],
    ["HTTP/2", "CONNECT a.proxy.test:443 HTTP/2.0\r\n\r\n", 400],
    ["credentials in the URL", "GET http://user:pw@a.proxy.test/ HTTP/1.1\r\n\r\n", 400, /user name/],
    ["a numeric host", "CONNECT 2130706433:80 HTTP/1.1\r\n\r\n", 400],
    ["a short IPv4 form", "CONNECT 127.1:80 HTTP/1.1\r\n\r\n", 400],
    ["a bracketed non-IPv6 host", "CONNECT [a.proxy.test]:443 HTTP/1.1\r\n\r\n", 400],
    ["a folded header", "GET http://a.proxy.test/ HTTP/1.1\r\nX: a\r\n  b\r\n\r\n", 400, /folded/],
    ["bare LF line ends", "CONNECT a.proxy.test:443 HTTP/1.1\nHost: a\n\n", 400],
    ["Content-Length with chunked", "POST http://a.proxy.test/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400],
    ["two Content-Lengths", "POST http://a.proxy.test/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400],
    ["a huge header", `GET http://a.proxy.test/ HTTP/1.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431],
    ["no CRLF CRLF within the bound", `GET http://a.proxy.test/ HTTP/1.1\r\n${"X: y\r\n".repeat(4_000)}`, 431],
    ["a connection that ends before its head does", "CONNECT a.proxy.test:443 HTTP/1.1\r\nHost: a", 400, /ended before/],
  ];
  for (const [name, data, status, body] of cases) {
    test(`${name}: ${status}`, HANG, async () => {
      const { path, asked } = await proxy({ policy: testPolicy(["a.proxy.test", "*.proxy.test"]), lookup: fakeLookup({ "a.proxy.test": ["127.0.0.1"] }) });
      const a = await new Promise<ReturnType<typeof parseAnswer>>((resolve, reject) => {
        const s = connect(path);
        const chunks: Buffer[] = [];
        s.on("data", (c: Buffer) => chunks.push(c));
        s.on("error", reject);
        s.on("close", () => resolve(parseAnswer(Buffer.concat(chunks).toString())));
        if (name.startsWith("a connection that ends")) s.end(data);
        else s.write(data);
      });
      assert.equal(a.status, status, a.raw.slice(0, 300));
      assert.equal(a.headers["x-pi-auto-mode-refused"], "malformed");
      if (body) assert.match(a.body, body);
      assert.deepEqual(asked, []);
    });
  }

  test("a head that never completes gets 408 after the head timeout", HANG, async () => {
    const { path } = await proxy({ policy: testPolicy(["*.proxy.test"]), limits: { headTimeoutMs: 50 } });
    const a = await exchange(path, "CONNECT a.proxy.test:443 HTTP/1.1\r\nHost: a");
    assert.equal(a.status, 408);
    assert.equal(a.headers["x-pi-auto-mode-refused"], "malformed");
  });

  test("a request line split between CR and LF is still read", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]) });
    const s = connect(path);
    s.write(`CONNECT 127.0.0.1:${sink.port} HTTP/1.1\r`);
    await new Promise((r) => setTimeout(r, 20));
    s.write("\n\r\nok");
    assert.equal((await sink.receivedAtLeast(0, 2)).toString(), "ok");
    s.destroy();
  });
});

describe("bounds", () => {
  test("an idle tunnel is ended on both sides", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]), limits: { idleTimeoutMs: 100 } });
    const t = await tunnel(path, `127.0.0.1:${sink.port}`);
    await readToClose(t.socket);
    await (await sink.connection(0)).closed;
  });

  test("the byte cap (both directions together) ends a tunnel and is reported as a limit", HANG, async () => {
    const sink = await tcpSink({ echo: true });
    after(() => sink.close());
    const { path, proxy: p } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]), limits: { maxBytesPerConnection: 1000 } });
    const t = await tunnel(path, `127.0.0.1:${sink.port}`);
    const back = readToClose(t.socket);
    t.socket.write("a".repeat(400));
    await sink.receivedAtLeast(0, 400);
    t.socket.write("b".repeat(400));
    const got = await back;
    assert.ok(got.length <= 600, `${got.length} bytes came back`);
    await (await sink.connection(0)).closed;
    assert.deepEqual(
      p.report().refused.map((r) => [r.kind, r.host, r.port]),
      [["limit", "127.0.0.1", sink.port]],
    );
  });

  test("the lifetime bound ends a tunnel that keeps moving", HANG, async () => {
    const sink = await tcpSink({ echo: true });
    after(() => sink.close());
    const { path, proxy: p } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]), limits: { maxConnectionMs: 200, idleTimeoutMs: 60_000 } });
    const t = await tunnel(path, `127.0.0.1:${sink.port}`);
    const tick = setInterval(() => t.socket.write("."), 20);
    await readToClose(t.socket);
    clearInterval(tick);
    assert.match(p.report().refused[0]?.detail ?? "", /time limit/);
  });

  test("the client going destroys the upstream, and the upstream going ends the client", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    const { path } = await proxy({ policy: testPolicy([`127.0.0.1:${sink.port}`]) });
    const a = await tunnel(path, `127.0.0.1:${sink.port}`);
    const upA = await sink.connection(0);
    a.socket.destroy();
    await upA.closed;
    const b = await tunnel(path, `127.0.0.1:${sink.port}`);
    const upB = await sink.connection(1);
    const ended = readToClose(b.socket);
    upB.socket.destroy();
    await ended;
  });

  test("close() destroys open tunnels and waiting clients, stops listening, and is idempotent", HANG, async () => {
    const sink = await tcpSink();
    after(() => sink.close());
    let hold!: () => void;
    const { path, proxy: p } = await proxy({
      policy: testPolicy([`127.0.0.1:${sink.port}`], { reviewUnlisted: true }),
      review: () => new Promise<boolean>((r) => (hold = () => r(true))),
    });
    const t = await tunnel(path, `127.0.0.1:${sink.port}`);
    const up = await sink.connection(0);
    const waiting = connect(path);
    waiting.write(`CONNECT held.proxy.test:${sink.port} HTTP/1.1\r\n\r\n`);
    const waitingClosed = readToClose(waiting);
    while (!hold) await new Promise((r) => setTimeout(r, 5));
    const partial = connect(path);
    partial.write("CONNECT a.te");
    const partialClosed = readToClose(partial);
    await new Promise((r) => setTimeout(r, 20));
    await Promise.all([p.close(), p.close()]);
    await readToClose(t.socket);
    await up.closed;
    assert.equal((await waitingClosed).length, 0, "no answer after close");
    assert.equal((await partialClosed).length, 0);
    hold();
    await new Promise<void>((resolve) => {
      const s = connect(path);
      s.on("error", () => resolve());
      s.on("connect", () => assert.fail("still listening"));
    });
    assert.equal(sink.connections.length, 1, "the held review connected nothing");
    await assert.rejects(p.listen(join(dir, "after-close.sock")));
  });
});

describe("listen and report", () => {
  test("the unix socket is mode 0600 and works end to end with net.connect(path); accept() serves a socket handed over", HANG, async () => {
    const { path, proxy: p } = await proxy({ policy: testPolicy([`127.0.0.1:${web.port}`]) });
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const t = await tunnel(path, `127.0.0.1:${web.port}`);
    t.socket.write(GET("x"));
    assert.match((await readToClose(t.socket)).toString(), /^HTTP\/1\.1 200/);

    const server = createServer({ allowHalfOpen: true }, (s) => p.accept(s));
    const handed = join(dir, "handed.sock");
    await new Promise<void>((r) => server.listen(handed, r));
    after(() => new Promise<void>((r) => server.close(() => r())));
    assertRefused(await exchange(handed, "CONNECT elsewhere.proxy.test:443 HTTP/1.1\r\n\r\n"), 403, "unlisted", "elsewhere.proxy.test:443");
  });

  test("the report holds host and port (deduplicated with counts), never paths, queries, headers or bodies", HANG, async () => {
    const { path, proxy: p } = await proxy({ policy: testPolicy([`127.0.0.1:${web.port}`]) });
    for (let i = 0; i < 2; i++) {
      const a = await exchange(
        path,
        `POST http://127.0.0.1:${web.port}/secret-path?token=hunter2 HTTP/1.1\r\nX-Secret-Header: s3cr3t\r\nContent-Length: 9\r\n\r\nbody-text`,
      );
      assert.equal(a.status, 200);
    }
    await exchange(path, "GET http://unlisted.proxy.test/private-path?key=k HTTP/1.1\r\nCookie: c=1\r\n\r\n");
    await exchange(path, "GET http://unlisted.proxy.test/again HTTP/1.1\r\n\r\n");
    await exchange(path, "GET https://unlisted.proxy.test/x?y HTTP/1.1\r\n\r\n");
    const r = p.report();
    assert.deepEqual(r.allowed, [{ host: "127.0.0.1", port: web.port, connections: 2 }]);
    assert.deepEqual(
      r.refused.map(({ host, port, kind, connections }) => ({ host, port, kind, connections })),
      [
        { host: "unlisted.proxy.test", port: 80, kind: "unlisted", connections: 2 },
        { host: "unlisted.proxy.test", port: 443, kind: "malformed", connections: 1 },
      ],
    );
    const text = JSON.stringify(r);
    for (const leak of ["secret", "token", "hunter2", "s3cr3t", "body-text", "private", "key=", "Cookie", "again", "/x"]) assert.ok(!text.includes(leak), leak);
  });

  test("refusalText: one paragraph per kind, naming host:port", HANG, () => {
    const kinds: RefusalKind[] = ["unlisted", "denied", "address", "review-denied", "malformed", "unresolved", "unreachable", "limit"];
    for (const kind of kinds) {
      const text = refusalText({ kind, host: "registry.example", port: 8443, detail: "some detail" });
      assert.ok(text.includes("registry.example:8443"), kind);
      assert.ok(!text.includes("\n"), kind);
    }
    const where = /sandbox\.network\.allow in your auto-mode\.json \(user configuration\), or ask for an escalation/;
    for (const kind of ["unlisted", "denied", "review-denied"] as const)
      assert.match(refusalText({ kind, host: "a.example", port: 443, detail: "x" }), where, kind);
    assert.match(refusalText({ kind: "unlisted", host: "a.example", port: 8443, detail: "" }), /add "a\.example" or "a\.example:8443"/);
    assert.match(
      refusalText({ kind: "address", host: "fe80::1", port: 80, detail: "fe80::1 is a link-local address" }),
      /network destination refused\. \[fe80::1\]:80 is an address .*exact ip:port entry/,
    );
    assert.match(refusalText({ kind: "unlisted", host: "::1", port: 80, detail: "" }), /add "\[::1\]:80" to sandbox\.network\.allow/);
    assert.match(
      refusalText({ kind: "malformed", detail: "bytes that do not begin an HTTP request" }),
      /^The sandbox's network proxy \(pi-auto-mode\) could not handle this request: bytes/,
    );
  });
});
