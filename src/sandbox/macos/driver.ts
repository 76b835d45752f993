// The macOS driver: `sandbox-exec` with the generated Seatbelt profile. UNTESTED ON REAL
// HARDWARE; the probe runs it for real before the backend is trusted, and any failure makes the
// backend unavailable rather than unsandboxed.

import { existsSync } from "node:fs";
import { join } from "node:path";
import pathData from "../../policy/data/paths.json" with { type: "json" };
import { withPrelude } from "../linux/bwrap.ts";
import { sandboxLimits, type Limits } from "../linux/limits.ts";
import { sandboxEnv } from "../env.ts";
import { computeLayout } from "../layout.ts";
import { spawnSandbox } from "../spawn.ts";
import type { Prepared, RunRequest, SandboxDriver, StaticCheck } from "../types.ts";
import { seatbeltProfile } from "./profile.ts";

export const SANDBOX_EXEC = "/usr/bin/sandbox-exec";
/** Why a macOS command has no network: said by the probe, the controller's facts and doctor. */
export const MAC_NO_NETWORK =
  "macOS: the Seatbelt profile denies every network operation (macOS has no private loopback for the proxy's forwarder), so the sandbox.network allowlist is not used; a command that needs the network needs an approved escalation";
const STARTED_FD = 4;

export interface MacDriverOptions {
  readonly sandboxExec?: string;
  readonly limits?: Limits;
}

export function createMacDriver(opts: MacDriverOptions = {}): SandboxDriver {
  const exe = opts.sandboxExec ?? SANDBOX_EXEC;
  const limits = sandboxLimits(opts.limits);
  const check = (): StaticCheck =>
    existsSync(exe)
      ? { ok: true, notes: [`sandbox-exec at ${exe} (macOS backend, untested on real hardware)`] }
      : { ok: false, reason: `${exe} not found`, missing: ["sandbox-exec (part of macOS)"] };
  return {
    name: "sandbox-exec",
    platform: "darwin",
    check,
    stagingCheck: () => ({ available: false, reason: "macOS has no copy-on-write mount auto mode can use" }),
    networkCheck: () => MAC_NO_NETWORK,
    prepare(req: RunRequest): Prepared {
      const c = check();
      if (!c.ok) throw new Error(c.reason);
      const layout = computeLayout({ places: req.scope.places, protectedGlobs: req.scope.protectedGlobs, ownPaths: [] });
      // Every protected name at the workspace root, whether it exists or not: Seatbelt matches paths.
      const rootEntries = [...pathData.protectedNames, ...pathData.protectedFileNames, ...pathData.protectedSequences.map((s) => s.join("/"))].map((n) =>
        join(layout.workspace, n),
      );
      const profile = seatbeltProfile({ layout, protectedPaths: [...new Set([...layout.readOnly, ...layout.missing, ...rootEntries])] });
      return {
        layout,
        spec: {
          file: exe,
          args: ["-p", profile, req.shell, "-c", withPrelude(req.command, limits, STARTED_FD, false)],
          env: sandboxEnv(req.env, layout.tmpRoot),
          cwd: req.cwd,
          startedFd: STARTED_FD,
        },
        release: () => {},
      };
    },
    exec: spawnSandbox,
    transient: () => false,
    settle() {},
    shutdown: async () => {},
    stopNow() {},
    facts() {
      const c = check();
      return c.ok ? c.notes : [c.reason];
    },
  };
}
