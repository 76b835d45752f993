// Sandboxes are started by one small helper process rather than by the agent itself, for two
// measured reasons:
// - Where a pids cgroup holds the process limit (as root), moving each sandbox into it waits for
//   an RCU grace period, 0-10 ms per command here; a child inherits its parent's cgroup for free,
//   so the helper is moved in once and every sandbox is born there.
// - Forking a small process is cheaper than forking the agent's large one: ~2 ms per command.
// If the helper dies, commands in flight end as "may have run" and the backend is marked failed;
// nothing is replayed.

import { fork, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SpawnIo, SpawnOutcome, SpawnSpec } from "../spawn.ts";
import type { Destination } from "../../policy/network/types.ts";
import { hostEnv } from "./host-tools.ts";

type Reply =
  | { readonly type: "ready" }
  | { readonly type: "data"; readonly id: number; readonly data: Uint8Array }
  | { readonly type: "done"; readonly id: number; readonly outcome: SpawnOutcome }
  | { readonly type: "net-review"; readonly id: number; readonly rid: number; readonly dest: Destination };

export interface Spawner {
  readonly pid: number;
  exec(spec: SpawnSpec, io: SpawnIo): Promise<SpawnOutcome>;
  /** Start a staged spec's holder ahead of its command (see launches.ts). */
  launch(spec: SpawnSpec): void;
  cancel(launch: string): void;
  /** Stop the helper and wait until it is gone (its cgroup can then be removed). */
  close(): Promise<void>;
  /** At process exit: stop it now, without waiting. */
  kill(): void;
}

const START_TIMEOUT_MS = 10_000;
const CLOSE_TIMEOUT_MS = 2_000;

/**
 * The helper's entry file: JavaScript from the build, or TypeScript from the sources. Node strips
 * types only outside node_modules, so an installed package (Pi loads its sources through jiti)
 * runs the helper from its build in dist/.
 */
export function spawnerEntry(moduleUrl: string = import.meta.url): URL {
  return helperEntry("spawner-main", moduleUrl);
}

/** The entry file of a helper process beside this one (`spawner-main`, `forwarder-main`), by the same rule. */
export function helperEntry(name: "spawner-main" | "forwarder-main", moduleUrl: string = import.meta.url): URL {
  if (!moduleUrl.endsWith(".ts")) return new URL(`./${name}.js`, moduleUrl);
  const source = new URL(`./${name}.ts`, moduleUrl);
  if (!source.pathname.includes("/node_modules/")) return source;
  return new URL(source.href.replace(new RegExp(`/src/sandbox/linux/${name}\\.ts$`), `/dist/sandbox/linux/${name}.js`));
}

export async function startSpawner(cgroupDir: string | undefined): Promise<Spawner> {
  const cgroupProcs = cgroupDir === undefined ? undefined : join(cgroupDir, "cgroup.procs");
  const child: ChildProcess = fork(spawnerEntry(), cgroupDir === undefined ? [] : [cgroupDir], {
    serialization: "advanced",
    stdio: ["ignore", "ignore", "inherit", "ipc"],
    execArgv: [],
    // A host process: a fixed PATH and nothing of the agent's environment (host-tools.ts).
    env: hostEnv(),
    // Its own process group: a Ctrl-C meant for the agent must not kill the sandboxes' parent.
    detached: true,
  });
  // Idle, the helper must not keep the agent's process alive; busy, it must.
  const channel = (child as unknown as { channel?: { ref(): void; unref(): void } }).channel;
  const hold = (busy: boolean) => (busy ? channel?.ref() : channel?.unref());
  child.unref();
  const pending = new Map<number, { io: SpawnIo; resolve: (o: SpawnOutcome) => void; reject: (e: Error) => void }>();
  let seq = 0;
  let gone: Error | undefined;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the sandbox spawner did not start")), START_TIMEOUT_MS);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the sandbox spawner exited at start (${code ?? signal})`));
    });
    child.once("message", (m: Reply) => {
      clearTimeout(timer);
      if (m.type === "ready") resolve();
      else reject(new Error("the sandbox spawner said something unexpected at start"));
    });
  });
  try {
    // The one move into the cgroup; everything the helper starts is born in it.
    if (cgroupProcs !== undefined) await writeFile(cgroupProcs, String(child.pid));
  } catch (e) {
    child.kill("SIGKILL");
    throw new Error(`could not move the sandbox spawner into its pids cgroup: ${(e as Error).message}`);
  }

  hold(false);
  child.on("message", (m: Reply) => {
    if (m.type === "ready") return;
    const p = pending.get(m.id);
    if (!p) return;
    if (m.type === "data") p.io.onData(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
    else if (m.type === "net-review") {
      const ask = p.io.reviewDestination;
      // No reviewer, or one that fails: that connection is refused, nothing else changes.
      void (ask ? ask(m.dest).catch(() => false) : Promise.resolve(false)).then((allow) => {
        if (!gone) child.send({ type: "net-verdict", rid: m.rid, allow }, () => {});
      });
    } else {
      pending.delete(m.id);
      if (pending.size === 0) hold(false);
      p.resolve(m.outcome);
    }
  });
  child.on("exit", (code, signal) => {
    gone = new Error(`the sandbox spawner exited (${code ?? signal})`);
    for (const p of pending.values()) p.reject(gone);
    pending.clear();
  });

  return {
    pid: child.pid!,
    exec(spec, io) {
      if (gone) return Promise.reject(gone);
      const id = ++seq;
      return new Promise<SpawnOutcome>((resolve, reject) => {
        const onAbort = () => child.send({ type: "abort", id });
        const done = () => io.signal?.removeEventListener("abort", onAbort);
        if (pending.size === 0) hold(true);
        pending.set(id, {
          io,
          resolve: (o) => {
            done();
            resolve(o);
          },
          reject: (e) => {
            done();
            reject(e);
          },
        });
        child.send({ type: "run", id, spec, timeout: io.timeout }, (e) => {
          if (!e) return;
          // Not sent, so not started: say so plainly.
          pending.delete(id);
          if (pending.size === 0) hold(false);
          done();
          resolve({ kind: "not-started", detail: `could not reach the sandbox spawner: ${e.message}` });
        });
        if (io.signal?.aborted) onAbort();
        else io.signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
    launch(spec) {
      if (!gone) child.send({ type: "launch", spec }, () => {});
    },
    cancel(launch) {
      if (!gone) child.send({ type: "cancel", launch }, () => {});
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.disconnect();
        const timer = setTimeout(() => child.kill("SIGKILL"), CLOSE_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
    },
    kill() {
      // At exit: let it go on its own (it stops its sandboxes and removes its cgroup when the
      // channel closes with us); a SIGKILL would leave the cgroup behind.
      child.disconnect();
    },
  };
}
