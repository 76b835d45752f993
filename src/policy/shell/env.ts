// What the shell analysis knows about the machine it judges commands for.

import type { FreshDir } from "../../request/paths.ts";
import type { Places } from "../places.ts";
import type { BudgetOptions } from "./script-state.ts";

export interface ShellEnv {
  readonly places: Places;
  /** The session's working directory, where every bash call starts. */
  readonly cwd: string;
  readonly home: string;
  /** The repository's hooks are in a place the agent may write (core.hooksPath to an unprotected dir). */
  readonly gitHooksWritable: boolean;
  /** The repository has hooks that will run (an executable, non-sample file in its hooks dir). */
  readonly gitHooksActive: boolean;
  /** The checked-out branch of the workspace repository, when `.git/HEAD` names one. */
  readonly currentBranch: string | undefined;
  /**
   * Directories this call's preparation found unchanged (the workspace, the home directory, the
   * temporary root), with their real forms: the analysis takes them as they are.
   */
  readonly trusted?: ReadonlyMap<string, string>;
  /** This call's lstat of real directories (the trusted ones), which vouch for what they hold (PathFacts). */
  readonly fresh?: ReadonlyMap<string, FreshDir>;
  /** The analysis's bound when not the gate's own (GateSetup.analysisBudget: tests only). */
  readonly budget?: BudgetOptions;
}

/**
 * Variables the agent's shell inherits whose value the gate knows. Pi finds its agent dir (and
 * with it auto mode's own files) through PI_CODING_AGENT_DIR; when it is unset the variable is
 * empty, and reading it as the agent dir is the stricter of the two.
 */
export function knownEnvironment(env: ShellEnv): ReadonlyMap<string, string> {
  let known = environmentCache.get(env.places);
  if (!known) environmentCache.set(env.places, (known = new Map([["PI_CODING_AGENT_DIR", env.places.agentDir]])));
  return known;
}
const environmentCache = new WeakMap<Places, ReadonlyMap<string, string>>();

// For gate.ts and table.ts, which import these from here.
export { globToRegExp } from "./locate.ts";
export { repositoryFacts, type RepositoryFacts } from "./repository.ts";
