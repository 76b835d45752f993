// The network forwarder (see network.ts): it runs in a network namespace of its own, the one the
// command's sandbox then joins, and is the only way out of it. It listens on that namespace's
// loopback and connects each connection, as it comes, to the host-side proxy's unix socket, whose
// path it reaches because it sees the host's file system. It judges nothing: the proxy does.
//
// It is not inside the command's sandbox: the command cannot see it (another pid namespace),
// signal it, or use its unix socket; it only reaches its TCP port, as any proxy client would.
//
// argv: the proxy's socket path, the port. When it listens it writes "ready <pid>\n" on fd 7 (the
// host hands the holder the pid, whose network namespace the sandbox joins) and keeps it open: fd 7
// is its end of a socket pair whose other end only the host holds, and the host closes that end
// when the holder has exited. The end of fd 7 is the end of the forwarder, whatever killed the
// holder: the holder's own kill and bwrap's --die-with-parent are not enough (a SIGKILL of the
// holder's process group while the forwarder's bwrap is still setting up leaves the forwarder,
// already in a session of its own, without a parent-death signal: reparented to init).

import { connect, createServer, Socket } from "node:net";

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

// The host's end closed (or failed): the run is over, so is the forwarder.
const life = new Socket({ fd: READY_FD, readable: true, writable: true });
const gone = () => process.exit(0);
life.on("end", gone);
life.on("close", gone);
life.on("error", gone);
life.resume();

const server = createServer({ noDelay: true }, pair);
server.on("error", (e) => {
  process.stderr.write(`pi-auto-mode forwarder: ${e.message}\n`);
  process.exit(1);
});
server.listen({ host: "127.0.0.1", port, backlog: 256 }, () => {
  life.write(`ready ${process.pid}\n`);
});
// The holder kills it when the command ends; the host's end of fd 7 closing ends it on every path.
