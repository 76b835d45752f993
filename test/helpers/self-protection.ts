// Decisions over an eval workspace under both backends, and the check that a list of calls is
// every one denied as self-disabling (reason self-protection): the self-protection tests' shared
// ground.

import assert from "node:assert/strict";
import { substitute } from "../../src/eval/corpus.ts";
import { decideLikeTheExtension, evalSetup } from "../../src/eval/score.ts";
import type { EvalWorkspace } from "../../src/eval/workspace.ts";
import type { Backend } from "../../src/policy/types.ts";

export const BACKENDS = ["review-only", "sandboxed"] as const;

/** The extension's decision on one call in the workspace `w()` (`{{ws}}`, `{{home}}`, `{{tmp}}` substituted). */
export function decider(w: () => EvalWorkspace) {
  return (tool: string, input: unknown, backend: Exclude<Backend, "unavailable">) =>
    decideLikeTheExtension(tool, substitute(input, { ws: w().ws, home: w().home, tmp: w().tmp }), evalSetup(w()), backend).decision;
}

/** Asserts every call is denied as self-protection under both backends; the message lists those that are not. */
export function assertAllDenied(decideOf: ReturnType<typeof decider>, calls: ReadonlyArray<readonly [string, unknown]>): void {
  for (const backend of BACKENDS) {
    const bad = calls
      .map(([tool, input]) => ({ tool, input, d: decideOf(tool, input, backend) }))
      .filter(({ d }) => d.route !== "deny" || d.reason !== "self-protection")
      .map(({ tool, input, d }) => `${backend} ${tool} ${JSON.stringify(input)} -> ${d.route} (${d.reason}) ${d.message}`);
    assert.deepEqual(bad, []);
  }
}
