// Loopback servers and clients for the network proxy's tests: an HTTP server that echoes what it
// was sent, a raw TCP sink that records bytes, a connect that refuses anything but loopback (so a
// bug can never send a test's traffic off this machine), and a client that reads one answer.

import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, createServer, isIP, type AddressInfo, type Socket } from "node:net";
import type { Duplex } from "node:stream";

export interface Echoed {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

export interface EchoHttp {
  readonly port: number;
  readonly requests: Echoed[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that answers every request with a JSON copy of it. */
export async function echoHttp(): Promise<EchoHttp> {
  const requests: Echoed[] = [];
  const sockets = new Set<Socket>();
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const e: Echoed = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      requests.push(e);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(e));
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface SinkConnection {
  readonly socket: Socket;
  received: Buffer;
  readonly closed: Promise<void>;
}

export interface TcpSink {
  readonly port: number;
  readonly connections: SinkConnection[];
  /** Resolves with the n-th connection (0-based) once it is accepted. */
  connection(n: number): Promise<SinkConnection>;
  /** Resolves once the n-th connection has received at least `bytes` bytes. */
  receivedAtLeast(n: number, bytes: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** A raw TCP server on 127.0.0.1 that keeps every byte each connection sends, and echoes them when asked. */
export async function tcpSink(opts: { echo?: boolean; host?: string } = {}): Promise<TcpSink> {
  const connections: SinkConnection[] = [];
  const waiters: (() => void)[] = [];
  const wake = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    let done!: () => void;
    const c: SinkConnection = { socket, received: Buffer.alloc(0), closed: new Promise<void>((r) => (done = r)) };
    connections.push(c);
    socket.on("data", (d: Buffer) => {
      c.received = Buffer.concat([c.received, d]);
      if (opts.echo) socket.write(d);
      wake();
    });
    socket.on("end", () => socket.end());
    socket.on("error", () => {});
    socket.on("close", () => {
      done();
      wake();
    });
    wake();
  });
  await new Promise<void>((resolve) => server.listen(0, opts.host ?? "127.0.0.1", resolve));
  const until = async (ok: () => boolean): Promise<void> => {
    while (!ok()) await new Promise<void>((r) => waiters.push(r));
  };
  return {
    port: (server.address() as AddressInfo).port,
    connections,
    async connection(n) {
      await until(() => connections.length > n);
      return connections[n]!;
    },
    async receivedAtLeast(n, bytes) {
      await until(() => (connections[n]?.received.length ?? 0) >= bytes);
      return connections[n]!.received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of connections) c.socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export const isLoopback = (address: string): boolean =>
  (isIP(address) === 4 && address.startsWith("127.")) || address === "::1" || address === "::ffff:127.0.0.1";

/**
 * A connect for the proxy that opens TCP only to loopback addresses and records every address it
 * was asked for: a test's fake "public" address is a loopback one, and anything else is a bug that
 * must fail here rather than leave the machine.
 */
export function loopbackConnect(): {
  readonly asked: string[];
  connect(to: { address: string; port: number; family: 4 | 6 }, signal: AbortSignal): Promise<Duplex>;
} {
  const asked: string[] = [];
  return {
    asked,
    connect(to, signal) {
      asked.push(`${to.address}:${to.port}`);
      if (!isLoopback(to.address)) return Promise.reject(new Error(`test connect refused a non-loopback address ${to.address}`));
      return new Promise((resolve, reject) => {
        const s = connect({ host: to.address, port: to.port, family: to.family, allowHalfOpen: true });
        s.on("error", reject);
        signal.addEventListener("abort", () => {
          s.destroy();
          reject(signal.reason);
        });
        s.once("connect", () => resolve(s));
      });
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly raw: string;
}

export function parseAnswer(raw: string): Answer {
  const end = raw.indexOf("\r\n\r\n");
  const head = end < 0 ? raw : raw.slice(0, end);
  const [line, ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.\d (\d{3})/.exec(line ?? "")?.[1] ?? 0), headers, body: end < 0 ? "" : raw.slice(end + 4), raw };
}

/** Send `data` over a new connection to the unix socket at `path` and read until the other side closes. */
export function exchange(path: string, data: string | Buffer | readonly (string | Buffer)[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    const chunks: Buffer[] = [];
    s.on("data", (c: Buffer) => chunks.push(c));
    s.on("error", reject);
    s.on("close", () => resolve(parseAnswer(Buffer.concat(chunks).toString("utf8"))));
    for (const d of Array.isArray(data) ? data : [data]) s.write(d);
  });
}

export interface Tunnel {
  readonly socket: Socket;
  readonly answer: Answer;
  /** Bytes that came after the answer's head in the same read. */
  readonly rest: Buffer;
}

/** Open a CONNECT tunnel through the proxy at `path`; resolves once the proxy has answered (200 or a refusal). */
export function tunnel(path: string, target: string, after?: string | Buffer): Promise<Tunnel> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    let buf = Buffer.alloc(0);
    const onData = (c: Buffer): void => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      s.off("data", onData);
      s.pause();
      resolve({ socket: s, answer: parseAnswer(buf.subarray(0, end + 4).toString("utf8")), rest: buf.subarray(end + 4) });
    };
    s.on("data", onData);
    s.once("error", reject);
    s.once("close", () => reject(new Error(`closed before an answer: ${JSON.stringify(buf.toString("latin1"))}`)));
    s.write(Buffer.concat([Buffer.from(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`), Buffer.from(after ?? "")]));
  });
}

/** Read from a socket until it closes; what it read. */
export function readToClose(s: Socket): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    s.on("data", (c: Buffer) => chunks.push(c));
    s.on("error", () => {});
    s.on("close", () => resolve(Buffer.concat(chunks)));
    s.resume();
  });
}
