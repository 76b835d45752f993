// The effects dependencies of the bash tool for tests: a store under the test's own agent dir,
// the default undo bounds, and no reviewer for held effects (they are discarded).

import { tmpdir } from "node:os";
import { join } from "node:path";
import { effectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../../src/sandbox/effects/undo.ts";
import type { EffectsDeps } from "../../src/tools/bash.ts";

export function testEffects(agentDir: string = join(tmpdir(), "pi-auto-mode-test-agent")): EffectsDeps {
  return { store: () => effectStore(agentDir), bounds: () => DEFAULT_UNDO_BOUNDS };
}

/** A probe result for fake drivers: the sandbox works, the workspace is written in place. */
export const UNSTAGED_STAGING = { available: false, reason: "a fake driver stages nothing" } as const;
