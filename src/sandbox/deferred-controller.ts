// The process's sandbox controller, loaded when something needs it rather than when Pi loads the
// extension. The controller brings the drivers, the probe, staging and the platform modules (a
// third of the extension's code); a session that never runs a shell command need not pay for
// them, and one that does pays while Pi waits for the model, not before its first prompt.
//
// Until it is loaded the backend is what selectBackend says of a probe that has not finished
// (unavailable on Linux and macOS, review-only elsewhere), which is what the controller itself
// says while its probe runs: nothing may treat a deferred sandbox as working.

import type { DrainReport, RunResult, SandboxController } from "./controller.ts";
import { CONTROLLER_PROTOCOL, refusingController, selectBackend } from "./backend.ts";
import type { BackendStatus, ProbeResult } from "./types.ts";

export interface DeferredController extends SandboxController {
  /** Loads the controller and runs its probe once the process has been idle for `ms` (never keeps it alive). */
  loadWhenIdle(ms: number): void;
  /** Resolves when the probe has finished, however it was started; starts nothing itself. */
  settled(): Promise<BackendStatus>;
}

export function deferredController(load: () => Promise<SandboxController>, platform: string = process.platform): DeferredController {
  let real: SandboxController | undefined;
  let loading: Promise<SandboxController> | undefined;
  const owners = new Set<string>();
  const listeners = new Set<(s: BackendStatus) => void>();
  const forwarded = new Map<(s: BackendStatus) => void, () => void>();
  let settle: (s: BackendStatus) => void = () => {};
  const settledOnce = new Promise<BackendStatus>((r) => {
    settle = r;
  });

  const controller = (): Promise<SandboxController> => {
    loading ??= load().then(
      (c) => {
        real = c;
        for (const o of owners) c.attach(o);
        owners.clear();
        for (const l of listeners) forwarded.set(l, c.subscribe(l));
        return c;
      },
      (e: unknown) => {
        // A copy whose sandbox modules cannot load has no sandbox: every shell command is denied.
        const reason = `the sandbox could not be loaded: ${(e as Error).message}`;
        real = refusingController(reason);
        return real;
      },
    );
    return loading;
  };
  const ready = async (): Promise<BackendStatus> => {
    const s = await (await controller()).ready();
    settle(s);
    return s;
  };

  return {
    protocol: CONTROLLER_PROTOCOL,
    ready,
    loadWhenIdle(ms) {
      if (loading) return;
      setTimeout(() => void ready().catch(() => {}), ms).unref();
    },
    settled: () => settledOnce,
    status: () => real?.status() ?? selectBackend(platform, "pending"),
    probeResult: (): ProbeResult | undefined => real?.probeResult(),
    attach(owner) {
      if (real) real.attach(owner);
      else owners.add(owner);
    },
    detach: async (owner): Promise<DrainReport> => {
      owners.delete(owner);
      // A load under way finishes first, so the owner it attaches is the one detached here.
      const c = real ?? (loading ? await loading : undefined);
      return c ? c.detach(owner) : { ok: true };
    },
    run: async (req, io): Promise<RunResult> => {
      const c = await controller();
      await ready();
      return c.run(req, io);
    },
    drain: async () => (real ?? (loading ? await loading : undefined))?.drain() ?? { ok: true },
    activeLeases: () => real?.activeLeases() ?? 0,
    owners: () => real?.owners() ?? [...owners],
    subscribe(listener) {
      listeners.add(listener);
      if (real) forwarded.set(listener, real.subscribe(listener));
      return () => {
        listeners.delete(listener);
        forwarded.get(listener)?.();
        forwarded.delete(listener);
      };
    },
    facts: () => real?.facts() ?? [],
  };
}
