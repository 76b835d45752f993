// The sandbox spawner process (see spawner.ts): it lives in the pids cgroup, so every sandbox it
// starts is born there. It runs sandboxes the parent asks for and relays their output and ending
// over the IPC channel; when the parent goes, it stops them and exits.

import { rmdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createLaunchPool } from "../launches.ts";
import type { SpawnSpec } from "../spawn.ts";
import type { Destination } from "../../policy/network/types.ts";

type Request =
  | { readonly type: "run"; readonly id: number; readonly spec: SpawnSpec; readonly timeout?: number }
  | { readonly type: "abort"; readonly id: number }
  | { readonly type: "launch"; readonly spec: SpawnSpec }
  | { readonly type: "cancel"; readonly launch: string }
  | { readonly type: "net-verdict"; readonly rid: number; readonly allow: boolean };

const launches = createLaunchPool();

const runs = new Map<number, AbortController>();
// Unlisted destinations a run's proxy asks about: the parent, which has the reviewer, answers.
const reviews = new Map<number, (allow: boolean) => void>();
let reviewSeq = 0;
const send = (m: unknown) => {
  try {
    process.send?.(m);
  } catch {
    // the parent is gone; disconnect handles the rest
  }
};

process.on("message", (m: Request) => {
  if (m.type === "abort") {
    runs.get(m.id)?.abort();
    return;
  }
  if (m.type === "launch") return launches.launch(m.spec);
  if (m.type === "cancel") return launches.cancel(m.launch);
  if (m.type === "net-verdict") {
    reviews.get(m.rid)?.(m.allow === true);
    reviews.delete(m.rid);
    return;
  }
  const abort = new AbortController();
  runs.set(m.id, abort);
  const reviewDestination = (dest: Destination) =>
    new Promise<boolean>((resolve) => {
      const rid = ++reviewSeq;
      reviews.set(rid, resolve);
      send({ type: "net-review", id: m.id, rid, dest });
    });
  const io = { onData: (data: Uint8Array) => send({ type: "data", id: m.id, data }), signal: abort.signal, timeout: m.timeout, reviewDestination };
  void launches.run(m.spec, io).then((outcome) => {
    runs.delete(m.id);
    send({ type: "done", id: m.id, outcome });
  });
});

// The pids cgroup this helper lives in, if any (argv[2]). Only the last process in it can
// remove it, and the parent cannot wait for that at its own exit: so the helper does it.
const cgroup = process.argv[2];

function leave(): void {
  if (!cgroup) return;
  try {
    writeFileSync(join(dirname(cgroup), "cgroup.procs"), String(process.pid));
    rmdirSync(cgroup);
  } catch {
    // left for the next start's clean-up of dead processes' cgroups
  }
}

// No parent, no sandboxes: bwrap's --die-with-parent takes each sandbox down with this process.
process.on("disconnect", () => {
  launches.cancelAll();
  for (const a of runs.values()) a.abort();
  const started = Date.now();
  const finish = () => {
    if (runs.size > 0 && Date.now() - started < 2000) return void setTimeout(finish, 10);
    leave();
    process.exit(0);
  };
  finish();
});

send({ type: "ready" });
