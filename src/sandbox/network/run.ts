// One staged run's network, on the host side, in the process that spawns the sandbox (the spawner
// helper, or the agent itself): the proxy listening on the run's unix socket, and the wait for the
// forwarder the holder starts (linux/forwarder-main.ts) to say it listens. Both live exactly as
// long as the run: the spawning code closes them when the sandbox ends or is cancelled.

import { rmSync } from "node:fs";
import type { Readable } from "node:stream";
import { compileNetworkPolicy } from "../../policy/network/entries.ts";
import type { NetProxy } from "./proxy.ts";
import { EMPTY_NET_REPORT, type Destination, type NetReport, type NetworkSpec } from "../../policy/network/types.ts";

/** What a spawn spec carries for a run with network. Plain data: it crosses to the spawner. */
export interface SpawnNetwork {
  readonly spec: NetworkSpec;
  /** The unix socket the proxy listens on and the forwarder connects to. */
  readonly socket: string;
  /** The fd the forwarder says "ready <pid>" on. */
  readonly readyFd: number;
}

export type ForwarderReady = { readonly pid: number } | { readonly problem: string };

export interface RunNetwork {
  /** Who is asked about an unlisted destination (set when the run is claimed). */
  reviewer: ((dest: Destination) => Promise<boolean>) | undefined;
  forwarderReady(stream: Readable | null): Promise<ForwarderReady>;
  report(): NetReport;
  close(): Promise<void>;
}

/** A forwarder is a Node process: this is generous, and only a broken machine reaches it. */
const READY_TIMEOUT_MS = 15_000;
const MAX_READY_LINE = 64;

export function startRunNetwork(n: SpawnNetwork): RunNetwork {
  const policy = compileNetworkPolicy(n.spec);
  let reviewer: RunNetwork["reviewer"];
  // A socket left by a run that died: ours (the run folder is private), and nothing listens there.
  rmSync(n.socket, { force: true });
  // The proxy's code loads with the first run that has network, not with every process that might start one.
  let proxy: NetProxy | undefined;
  const started = import("./proxy.ts").then(({ createNetProxy }) => {
    proxy = createNetProxy({ policy, review: (dest: Destination) => (reviewer ? reviewer(dest) : Promise.resolve(false)) });
    return proxy;
  });
  const listening = started
    .then((p) => p.listen(n.socket))
    .then(
      () => undefined,
      (e: Error) => e.message,
    );
  let closing: Promise<void> | undefined;
  return {
    get reviewer() {
      return reviewer;
    },
    set reviewer(r) {
      reviewer = r;
    },
    forwarderReady(stream) {
      const said = new Promise<ForwarderReady>((resolve) => {
        if (!stream) return resolve({ problem: "no channel to the forwarder" });
        let text = "";
        const timer = setTimeout(() => done({ problem: `it did not listen within ${READY_TIMEOUT_MS / 1000} s` }), READY_TIMEOUT_MS);
        timer.unref();
        const done = (r: ForwarderReady) => {
          clearTimeout(timer);
          stream.removeAllListeners("data");
          resolve(r);
        };
        stream.on("data", (chunk: Buffer) => {
          text += chunk.toString("latin1");
          const m = /^ready (\d{1,10})\n/.exec(text);
          if (m) done({ pid: Number(m[1]) });
          else if (text.length > MAX_READY_LINE || text.includes("\n")) done({ problem: "it said something unexpected" });
        });
        stream.on("error", () => done({ problem: "its channel failed" }));
        stream.on("end", () => done({ problem: "it exited before it listened" }));
      });
      return Promise.all([listening, said]).then(([failed, ready]) => (failed !== undefined ? { problem: `the proxy could not listen: ${failed}` } : ready));
    },
    report: () => proxy?.report() ?? EMPTY_NET_REPORT,
    close() {
      if (!closing)
        closing = started
          .then(
            (p) => p.close(),
            () => undefined,
          )
          .finally(() => rmSync(n.socket, { force: true }));
      return closing;
    },
  };
}
