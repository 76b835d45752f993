// The sandbox's vocabulary: what a platform driver does, what a probe finds, how a run ends.

import type { Backend } from "../policy/types.ts";
import type { SandboxLayout } from "./layout.ts";
import type { SpawnIo, SpawnOutcome, SpawnSpec } from "./spawn.ts";
import type { StageRun } from "./stage.ts";
import type { SandboxScope, WorkspaceAccess } from "../grants/tickets.ts";
import type { StagedFacts } from "./effects/facts.ts";

export type { SandboxScope, WorkspaceAccess } from "../grants/tickets.ts";
import type { EffectReport } from "./effects/settle.ts";
import type { NetworkSpec } from "../policy/network/types.ts";

export interface RunRequest {
  /** The command string exactly as Pi's bash tool would run it (command prefix included). */
  readonly command: string;
  readonly cwd: string;
  readonly scope: SandboxScope;
  /** The environment Pi would give the command; the driver filters it. */
  readonly env: NodeJS.ProcessEnv;
  /** The bash to run inside (Pi's shellPath setting, or /bin/bash). */
  readonly shell: string;
  /**
   * How the command sees the workspace: `staged` (copy-on-write, its effects judged when it ends),
   * `direct` (written in place, .git read-only), or `direct-git` (in place with .git writable but
   * its code-running parts: only for a git command a reviewer approved where nothing can be staged).
   */
  readonly workspace: WorkspaceAccess;
  /**
   * The user's network allowlist (P15-layered). A staged run with allow entries gets a proxy to
   * them (network/); without, or unstaged, the sandbox has no network at all.
   */
  readonly network?: NetworkSpec;
  /** For a staged run: judge, review and apply or discard what the command did. Without it, nothing is applied. */
  readonly settle?: (staged: StagedEnd) => Promise<EffectReport>;
}

/** A staged run that ended: what settling its effects needs. */
export interface StagedEnd {
  readonly run: StageRun;
  readonly startCtimeNs: bigint;
  readonly facts: StagedFacts;
}

/** Whether a staged run can be given network (linux/holder.ts), found by the probe. */
export type NetworkStatus = { readonly available: true } | { readonly available: false; readonly reason: string };

/** Whether this machine can stage a workspace, found by the probe. */
export type StagingStatus = { readonly available: true; readonly how: string } | { readonly available: false; readonly reason: string };

export interface Prepared {
  readonly spec: SpawnSpec;
  readonly layout: SandboxLayout;
  /** A staged run's folders; whoever settles its effects removes them. */
  readonly stage?: StageRun;
  /** Give back what `prepare` took (placeholders). Throws when cleanup fails. */
  release(): void;
}

export type ProbeResult =
  | {
      readonly ok: true;
      readonly ms: number;
      readonly driver: string;
      readonly notes: readonly string[];
      readonly staging: StagingStatus;
      /** Whether a staged run can have network here (the forwarder's namespace, tried by the probe). */
      readonly network?: NetworkStatus;
      readonly cached?: boolean;
    }
  | { readonly ok: false; readonly ms: number; readonly driver: string; readonly reason: string; readonly missing: readonly string[] };

export type StaticCheck =
  | { readonly ok: true; readonly notes: readonly string[] }
  | { readonly ok: false; readonly reason: string; readonly missing: readonly string[] };

/** One platform's sandbox. The controller owns the policy around it (leases, failures, drain). */
export interface SandboxDriver {
  readonly name: string;
  readonly platform: "linux" | "darwin";
  /** Dependencies and kernel features, before anything runs (probe.ts then runs the real thing). */
  check(): StaticCheck;
  /** Whether the tools and the kernel for a staged workspace are there (the probe then tries it). */
  stagingCheck(): StagingStatus;
  /** Why a staged run cannot have network here before trying (undefined: the probe tries it); absent: never. */
  networkCheck?(): string | undefined;
  /**
   * Where a passed probe may be remembered, and the key it is valid under (everything its verdict
   * rests on); undefined when this driver's probe is never cached. Only after a passing check().
   */
  probeCache?(): { readonly file: string; readonly key: string } | undefined;
  /** Compute the layout, take placeholders, build the command line. Throws `RequestError` for a call the sandbox cannot take, anything else for an infrastructure fault. */
  prepare(req: RunRequest): Prepared;
  exec(spec: SpawnSpec, io: SpawnIo): Promise<SpawnOutcome>;
  /** A start failure caused by the call's own files changing under it (a path removed meanwhile), not by the sandbox. */
  transient(detail: string): boolean;
  /** Nothing follows for now: cancel the holder launched ahead, and remove placeholders that no command holds any more, now rather than after their linger. Throws when cleanup fails. */
  settle(): void;
  /** Release process-wide resources (placeholders, helper process, cgroup). Rejects when cleanup fails. */
  shutdown(): Promise<void>;
  /** At process exit: stop everything now, synchronously, as far as that goes. */
  stopNow(): void;
  /** Facts for `doctor`. */
  facts(): readonly string[];
}

/** A call the sandbox cannot take for reasons of its own (not an infrastructure fault). */
export class RequestError extends Error {
  override name = "RequestError";
}

export interface BackendStatus {
  readonly backend: Backend;
  /** Why the backend is not `sandboxed`, or what runs it. */
  readonly reason: string;
}
