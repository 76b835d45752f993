// The network forwarder (see network.ts): it runs in a network namespace of its own, the one the
// command's sandbox then joins, and is the only way out of it. It listens on that namespace's
// loopback and connects each connection, as it comes, to the host-side proxy's unix socket, whose
// path it reaches because it sees the host's file system. It judges nothing: the proxy does.
//
// It is not inside the command's sandbox: the command cannot see it (another pid namespace),
// signal it, or use its unix socket; it only reaches its TCP port, as any proxy client would.
//
// argv: the proxy's socket path, the port. When it listens it writes "ready <pid>\n" on fd 7 (the
// host hands the holder the pid, whose network namespace the sandbox joins) and closes it.

import { closeSync, writeSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";

const [socketPath, portText] = process.argv.slice(2);
const READY_FD = 7;
const port = Number(portText);
if (!socketPath || !Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write("pi-auto-mode forwarder: usage: forwarder SOCKET PORT\n");
  process.exit(2);
}

function pair(client: Socket): void {
  const upstream = connect(socketPath!);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", end);
  upstream.on("error", end);
  client.on("close", end);
  upstream.on("close", end);
  client.pipe(upstream);
  upstream.pipe(client);
}

const server = createServer({ noDelay: true }, pair);
server.on("error", (e) => {
  process.stderr.write(`pi-auto-mode forwarder: ${e.message}\n`);
  process.exit(1);
});
server.listen({ host: "127.0.0.1", port, backlog: 256 }, () => {
  writeSync(READY_FD, `ready ${process.pid}\n`);
  closeSync(READY_FD);
});
// The holder kills it when the command ends; bwrap's --die-with-parent if the holder goes first.
