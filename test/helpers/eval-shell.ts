// The shell environment a decision gets in the eval workspace, built the way prepareGate builds it,
// for tests that run the shell analysis directly. Registers its own before/after hooks.

import { after, before } from "node:test";
import { buildEvalWorkspace, type EvalWorkspace } from "../../src/eval/workspace.ts";
import { prepareGate } from "../../src/policy/gate.ts";
import type { ShellEnv } from "../../src/policy/shell/env.ts";
import { selfPaths } from "../../src/state/locations.ts";

export function evalShellEnv(): { readonly env: () => ShellEnv; readonly workspace: () => EvalWorkspace } {
  let w: EvalWorkspace | undefined;
  let env: ShellEnv | undefined;
  before(() => {
    w = buildEvalWorkspace();
    env = prepareGate({ cwd: w.ws, home: w.home, agentDir: w.agentDir, defaultTmpRoot: w.tmp, selfPaths: selfPaths(w.agentDir) }).judge.shell;
  });
  after(() => w?.dispose());
  return { env: () => env!, workspace: () => w! };
}
