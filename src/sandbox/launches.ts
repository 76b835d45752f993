// Holders launched ahead of their command. Mounting a staged workspace costs a few processes
// (unshare, a shell, mount); done while the agent is between commands, the next command only
// pays for bwrap. A launched holder has run nothing: it waits for its argv and the word to start,
// and one that is not claimed is cancelled (killed) with nothing of any command begun.
// Used in the process that spawns sandboxes (the spawner helper, or the agent itself).

import { launchSandbox, spawnSandbox, type Launched, type SpawnIo, type SpawnOutcome, type SpawnSpec } from "./spawn.ts";

export interface LaunchPool {
  /** Start a staged spec's holder now; `run` with the same launch id claims it. */
  launch(spec: SpawnSpec): void;
  /** Run a spec: on its launched holder when there is one still alive, else freshly. */
  run(spec: SpawnSpec, io: SpawnIo): Promise<SpawnOutcome>;
  cancel(id: string): void;
  cancelAll(): void;
  size(): number;
}

export function createLaunchPool(): LaunchPool {
  const held = new Map<string, Launched>();
  const cancel = (id: string) => {
    held.get(id)?.cancel();
    held.delete(id);
  };
  return {
    launch(spec) {
      if (!spec.staged) return;
      cancel(spec.staged.id);
      held.set(spec.staged.id, launchSandbox(spec));
    },
    run(spec, io) {
      const id = spec.staged?.id;
      const l = id === undefined ? undefined : held.get(id);
      if (id !== undefined) held.delete(id);
      if (l && !l.gone()) return l.run(io, spec.staged?.argv, spec.disk);
      l?.cancel();
      return spawnSandbox(spec, io);
    },
    cancel,
    cancelAll() {
      for (const id of [...held.keys()]) cancel(id);
    },
    size: () => held.size,
  };
}
