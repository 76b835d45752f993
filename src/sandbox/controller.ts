// One sandbox controller per process, shared by every session through a well-known symbol (Pi
// loads a fresh copy of the extension module for each session, so module state is not shared).
//
// It owns the policy around the platform driver:
// - backend selection: Linux or macOS with a passing probe -> sandboxed; Linux or macOS with any
//   failure -> unavailable, with the reason; any other platform -> review-only. Never a silent
//   step down from sandboxed to review-only (P5, P16).
// - leases: every command holds one while it runs; shutdown drains them.
// - exactly once (P9): run() never retries. A command that never started is reported as such;
//   one that may have started is never run again. Either kind of infrastructure failure marks
//   the backend failed, so later calls deny and the status line says why.
// - poison: if cleanup fails (a placeholder that cannot be removed, a cgroup still busy, a
//   sandbox that would not die), later calls deny until the process restarts.

import { probeWithCache } from "./probe.ts";
import { isSandboxed } from "../policy/types.ts";
import type { EffectReport } from "./effects/settle.ts";
import { discardRun, markStart } from "./stage.ts";
import type { SpawnIo } from "./spawn.ts";
import type { NetReport } from "../policy/network/types.ts";
import type { BackendStatus, ProbeResult, RunRequest, SandboxDriver } from "./types.ts";
import { createLinuxDriver } from "./linux/driver.ts";
import { createMacDriver } from "./macos/driver.ts";
import { CONTROLLER_PROTOCOL, refusingController, selectBackend } from "./backend.ts";

export { CONTROLLER_PROTOCOL, selectBackend };

const SLOT = Symbol.for("pi-auto-mode:sandbox-controller");
const DRAIN_TIMEOUT_MS = 5_000;
const KILL_GRACE_MS = 2_000;

export type RunResult = RunEnd & {
  /** With network: the destinations the command reached and the ones the proxy refused. */
  readonly network?: NetReport;
};

type RunEnd =
  /** `effects`: for a staged run, what became of the command's changes. */
  | { readonly kind: "exited"; readonly exitCode: number; readonly effects?: EffectReport }
  /** The sandbox stopped the command (it was filling a disk); nothing it staged was applied. */
  | { readonly kind: "stopped"; readonly reason: string }
  /** Nothing ran: the backend is not sandboxed right now, or the call cannot be sandboxed. */
  | { readonly kind: "refused"; readonly reason: string }
  /** Nothing ran: the sandbox itself failed to start. The backend is now failed. */
  | { readonly kind: "not-started"; readonly reason: string }
  /** It may have run. Never retried. The backend is now failed. */
  | { readonly kind: "ambiguous"; readonly reason: string }
  | { readonly kind: "aborted" }
  | { readonly kind: "timeout"; readonly seconds: number };

export interface DrainReport {
  readonly ok: boolean;
  readonly reason?: string;
}

export interface SandboxController {
  readonly protocol: typeof CONTROLLER_PROTOCOL;
  /** Run the probe if it has not run in this process; resolve with the backend. */
  ready(): Promise<BackendStatus>;
  status(): BackendStatus;
  probeResult(): ProbeResult | undefined;
  /** A session starts using the sandbox. */
  attach(owner: string): void;
  /** A session is done; the last one drains and cleans up. */
  detach(owner: string): Promise<DrainReport>;
  run(req: RunRequest, io: SpawnIo): Promise<RunResult>;
  drain(): Promise<DrainReport>;
  activeLeases(): number;
  owners(): readonly string[];
  /** Called whenever status() may have changed. */
  subscribe(listener: (s: BackendStatus) => void): () => void;
  facts(): readonly string[];
}

export interface ControllerOptions {
  /** process.platform, injectable so tests can pick a platform. */
  readonly platform?: string;
  /** The driver for a supported platform; default: bubblewrap on Linux, sandbox-exec on macOS. */
  readonly driver?: SandboxDriver;
  readonly probe?: (driver: SandboxDriver) => Promise<ProbeResult>;
  readonly drainTimeoutMs?: number;
}

type Health = { readonly kind: "ok" } | { readonly kind: "failed"; readonly reason: string } | { readonly kind: "poisoned"; readonly reason: string };

function defaultDriver(platform: string): SandboxDriver | undefined {
  if (platform === "linux") return createLinuxDriver();
  if (platform === "darwin") return createMacDriver();
  return undefined;
}

export function createController(opts: ControllerOptions = {}): SandboxController {
  const platform = opts.platform ?? process.platform;
  const driver = opts.driver ?? defaultDriver(platform);
  const probe = opts.probe ?? probeWithCache;
  const drainTimeout = opts.drainTimeoutMs ?? DRAIN_TIMEOUT_MS;
  let probed: ProbeResult | undefined;
  let probing: Promise<ProbeResult> | undefined;
  let health: Health = { kind: "ok" };
  let draining: Promise<DrainReport> | undefined;
  const owners = new Set<string>();
  const listeners = new Set<(s: BackendStatus) => void>();
  interface Lease {
    readonly abort: AbortController;
    readonly done: Promise<void>;
  }
  const leases = new Map<number, Lease>();
  let leaseSeq = 0;
  let exitHookInstalled = false;

  const status = (): BackendStatus => {
    const base = selectBackend(platform, probed ?? (probing ? "pending" : undefined));
    if (!isSandboxed(base.backend)) return base;
    if (health.kind === "poisoned") return { backend: "unavailable", reason: `sandbox cleanup failed (${health.reason}); restart Pi to use the sandbox again` };
    if (health.kind === "failed")
      return { backend: "unavailable", reason: `the sandbox failed during a command (${health.reason}); shell commands are denied until Pi restarts` };
    if (draining) return { backend: "unavailable", reason: "the sandbox is shutting down" };
    return base;
  };
  const notify = () => {
    const s = status();
    for (const l of listeners) {
      try {
        l(s);
      } catch {
        // a listener's failure is its own
      }
    }
  };
  const fail = (reason: string) => {
    if (health.kind === "ok") health = { kind: "failed", reason };
    notify();
  };
  const poison = (reason: string) => {
    health = { kind: "poisoned", reason };
    notify();
  };

  // On exit, nothing may be left behind: kill what runs (bwrap's --die-with-parent would, too)
  // and give back placeholders synchronously.
  const releaseOnExit = new Map<number, () => void>();
  const installExitHook = () => {
    if (exitHookInstalled) return;
    exitHookInstalled = true;
    onProcessExit(() => {
      for (const l of leases.values()) l.abort.abort();
      for (const r of releaseOnExit.values()) {
        try {
          r();
        } catch {
          // the process is ending; the next start cleans up after dead holders
        }
      }
      try {
        driver?.stopNow();
      } catch {
        // as above
      }
    });
  };

  const ready = async (): Promise<BackendStatus> => {
    if (!driver) return status();
    // The probe already takes resources (a cgroup, the seccomp file): give them back at exit.
    installExitHook();
    if (!probed) {
      probing ??= probe(driver).then((r) => {
        probed = r;
        notify();
        return r;
      });
      notify();
      await probing;
    }
    return status();
  };

  const run = async (req: RunRequest, io: SpawnIo): Promise<RunResult> => {
    const s = status();
    if (!isSandboxed(s.backend) || !driver) return { kind: "refused", reason: s.reason };
    // A staged run needs a backend that stages; a direct one is what the gate admitted elsewhere.
    if (req.workspace === "staged" && s.backend !== "sandboxed") return { kind: "refused", reason: "the workspace cannot be staged here any more" };
    installExitHook();
    const id = ++leaseSeq;
    const abort = new AbortController();
    const onOuterAbort = () => abort.abort();
    if (io.signal?.aborted) abort.abort();
    io.signal?.addEventListener("abort", onOuterAbort, { once: true });
    let finish!: () => void;
    leases.set(id, { abort, done: new Promise<void>((r) => (finish = r)) });
    try {
      let prepared: ReturnType<SandboxDriver["prepare"]>;
      try {
        // A machine whose probe could not give a staged run network: the command runs without any.
        prepared = driver.prepare(req.network && !(probed?.ok && probed.network?.available) ? { ...req, network: undefined } : req);
      } catch (e) {
        const err = e as Error;
        // A call the sandbox cannot take (no workspace, the workspace is "/"): that call's problem.
        if (err?.name === "RequestError") return { kind: "refused", reason: err.message };
        const reason = `could not prepare the sandbox: ${err?.message ?? String(e)}`;
        fail(reason);
        return { kind: "not-started", reason };
      }
      releaseOnExit.set(id, prepared.release);
      const stage = prepared.stage;
      let result: RunResult;
      let ended: { facts: import("./effects/facts.ts").StagedFacts } | undefined;
      let startCtimeNs = 0n;
      let network: NetReport | undefined;
      try {
        if (stage) startCtimeNs = markStart(stage);
        const outcome = await driver.exec(prepared.spec, {
          onData: io.onData,
          signal: abort.signal,
          timeout: io.timeout,
          ...(io.reviewDestination ? { reviewDestination: io.reviewDestination } : {}),
        });
        network = outcome.network;
        switch (outcome.kind) {
          case "exited":
            result = { kind: "exited", exitCode: outcome.exitCode };
            if (stage) ended = { facts: outcome.facts ?? { ok: false, reason: "the sandbox did not report what the command changed" } };
            break;
          case "not-started":
            // Files of the call changed under the sandbox's setup: this call did not run, the sandbox is fine.
            if (driver.transient(outcome.detail))
              result = { kind: "refused", reason: `the workspace changed while the sandbox was set up (${outcome.detail}); nothing ran` };
            else {
              fail(outcome.detail);
              result = { kind: "not-started", reason: outcome.detail };
            }
            break;
          case "aborted":
            result = { kind: "aborted" };
            break;
          case "timeout":
            result = { kind: "timeout", seconds: outcome.seconds };
            break;
          case "disk-full":
            result = { kind: "stopped", reason: `it was stopped because ${outcome.detail}` };
            break;
        }
      } catch (e) {
        // exec resolves every ending it knows; a throw means we cannot tell what ran.
        const reason = `the sandbox runner failed: ${(e as Error)?.message ?? String(e)}`;
        fail(reason);
        result = { kind: "ambiguous", reason };
      } finally {
        releaseOnExit.delete(id);
        try {
          prepared.release();
        } catch (e) {
          poison(`placeholders could not be removed: ${(e as Error)?.message ?? String(e)}`);
        }
      }
      if (stage) {
        // Only a command that ended on its own has its effects judged; anything else is discarded.
        try {
          if (ended && result.kind === "exited") {
            const effects: EffectReport = req.settle
              ? await req.settle({ run: stage, startCtimeNs, facts: ended.facts })
              : { outcome: "discarded", why: "failed", detail: "nothing was set up to judge the command's effects" };
            result = { ...result, effects };
          }
        } finally {
          // Held effects kept for the user's approval own their run's folders now (effects/kept.ts).
          const kept = result.kind === "exited" && result.effects?.outcome === "discarded" && result.effects.kept !== undefined;
          try {
            if (!kept) discardRun(stage);
          } catch {
            // a run folder left behind is removed at the next start
          }
        }
      }
      return network && (network.allowed.length > 0 || network.refused.length > 0) ? { ...result, network } : result;
    } finally {
      io.signal?.removeEventListener("abort", onOuterAbort);
      leases.delete(id);
      finish();
    }
  };

  const drain = (): Promise<DrainReport> => {
    draining ??= (async (): Promise<DrainReport> => {
      notify();
      // Resolves "done" when every lease has ended, "timeout" after ms; the timer never outlives the wait.
      const settle = async (ms: number): Promise<"done" | "timeout"> => {
        let timer: NodeJS.Timeout | undefined;
        const t = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
        try {
          return await Promise.race([Promise.all([...leases.values()].map((l) => l.done)).then(() => "done" as const), t]);
        } finally {
          clearTimeout(timer);
        }
      };
      let report: DrainReport = { ok: true };
      if ((await settle(drainTimeout)) === "timeout") {
        // Still running at shutdown: stop them. A lease that survives even that is a leak.
        for (const l of leases.values()) l.abort.abort();
        if ((await settle(KILL_GRACE_MS)) === "timeout") report = { ok: false, reason: `${leases.size} sandboxed command(s) did not stop` };
      }
      if (report.ok) {
        try {
          await driver?.shutdown();
        } catch (e) {
          report = { ok: false, reason: `sandbox resources could not be released: ${(e as Error)?.message ?? String(e)}` };
        }
      }
      if (!report.ok) poison(report.reason!);
      return report;
    })().finally(() => {
      draining = undefined;
      notify();
    });
    return draining;
  };

  return {
    protocol: CONTROLLER_PROTOCOL,
    ready,
    status,
    probeResult: () => probed,
    attach(owner) {
      owners.add(owner);
    },
    async detach(owner) {
      owners.delete(owner);
      if (owners.size > 0) return { ok: true };
      return drain();
    },
    run,
    drain,
    activeLeases: () => leases.size,
    owners: () => [...owners],
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    facts: () => {
      if (!driver) return [`no OS sandbox on ${platform}`];
      const net = probed?.ok
        ? [
            probed.network?.available
              ? "network: allowlisted destinations through the host's proxy (staged runs)"
              : `network: none (${probed.network?.reason ?? "not probed"})`,
          ]
        : [];
      return [...driver.facts(), ...net];
    },
  };
}

const EXIT_HOOKS = Symbol.for("pi-auto-mode:sandbox-exit-hooks");

/** One `exit` listener per process, whatever the number of controllers (tests make many). */
function onProcessExit(fn: () => void): void {
  const g = globalThis as { [EXIT_HOOKS]?: Set<() => void> };
  if (!g[EXIT_HOOKS]) {
    const hooks = new Set<() => void>();
    g[EXIT_HOOKS] = hooks;
    process.once("exit", () => {
      for (const h of hooks) {
        try {
          h();
        } catch {
          // the process is ending; each hook gets its turn
        }
      }
    });
  }
  g[EXIT_HOOKS].add(fn);
}

/**
 * The process's controller. The first copy of this package to ask creates it; later copies with
 * the same protocol share it. A copy that speaks another protocol must not run a second sandbox
 * manager beside it (two registries could remove each other's placeholders), so it gets a
 * controller that refuses, and its sessions show the sandbox as unavailable.
 */
export function sharedController(create: () => SandboxController = () => createController()): SandboxController {
  const g = globalThis as { [SLOT]?: unknown };
  const existing = g[SLOT] as { protocol?: unknown } | undefined;
  if (existing === undefined) {
    const c = create();
    g[SLOT] = c;
    return c;
  }
  if (existing.protocol === CONTROLLER_PROTOCOL) return existing as SandboxController;
  return refusingController(`another copy of pi-auto-mode (sandbox protocol ${String(existing.protocol)}) owns the sandbox in this process`);
}

/** For tests: forget the process's controller (after draining it). */
export function resetSharedController(): void {
  delete (globalThis as { [SLOT]?: unknown })[SLOT];
}
