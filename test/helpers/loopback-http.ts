// An HTTP server of a test on this machine's loopback only, at a port the system picks, that can be
// closed while a request still hangs: its open connections are ended with it.

import type { Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Listening {
  readonly port: number;
  /** Ends every open connection, then closes the server. */
  close(): Promise<void>;
}

/** Starts `server` on 127.0.0.1 at a free port. */
export async function listenOnLoopback(server: Server): Promise<Listening> {
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
