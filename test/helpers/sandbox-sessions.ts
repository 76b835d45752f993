// Real AgentSessions over the real sandbox, for e2e tests: probes the sandbox once before the
// file's tests (a test skips on the probe's printed reason) and disposes every harness after them.

import { after, before } from "node:test";
import { resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import type { PiHarness } from "./pi-session.ts";

export interface SandboxSessions {
  /** Harnesses to dispose after the file's tests. */
  readonly harnesses: PiHarness[];
  /** Why the sandbox cannot run here, or undefined when it can. */
  readonly unavailable: string | undefined;
}

export function sandboxSessions(): SandboxSessions {
  const harnesses: PiHarness[] = [];
  let unavailable: string | undefined;
  before(async () => {
    resetSharedController();
    const s = await sharedController().ready();
    if (s.backend !== "sandboxed") unavailable = `${s.backend}: ${s.reason}`;
  });
  after(async () => {
    for (const h of harnesses) await h.dispose();
    resetSharedController();
  });
  return {
    harnesses,
    get unavailable() {
      return unavailable;
    },
  };
}
