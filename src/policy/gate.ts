// The deterministic gate: canonical request, judgement, route. Everything the CLI, the eval and
// the extension decide goes through `decide`.

import { lstatSync } from "node:fs";
import { join } from "node:path";
import { buildRequest, type CanonicalRequest } from "../request/canonical.ts";
import { loadPolicyConfig, type ConfigResult } from "./config/load.ts";
import { judge, type JudgeContext, type Judgement } from "./judge.ts";
import { buildPlaces, type Places } from "./places.ts";
import { route } from "./route.ts";
import { inspectRepository, type ShellEnv } from "./shell/env.ts";
import { decision, type Backend, type Decision } from "./types.ts";

export interface GateSetup {
  readonly cwd: string;
  readonly home: string;
  readonly agentDir: string;
  /** The temporary writable root, unless the user config names one. */
  readonly defaultTmpRoot: string;
  /** This extension's own files: writes to them are denied. */
  readonly selfPaths: readonly string[];
}

export interface GateContext {
  readonly setup: GateSetup;
  readonly config: ConfigResult;
  readonly judge: JudgeContext;
}

// Places cost dozens of realpath calls; they only change with the setup, so keep a few.
const placesCache = new Map<string, Places>();
const PLACES_CACHE_SIZE = 16;

/** Changes when the workspace's `.git` is created, replaced or rewritten (a `.git` file names the git dir). */
function dotGitStamp(cwd: string): string {
  try {
    const st = lstatSync(join(cwd, ".git"), { throwIfNoEntry: false });
    return st ? `${st.mode}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : "none";
  } catch {
    return "error";
  }
}

function cachedPlaces(setup: GateSetup, tmpRoot: string): Places {
  // The git dirs a `.git` file points to are read when places are built: a `.git` file written
  // after the first call (git init --separate-git-dir) must not leave its hooks unprotected.
  const key = JSON.stringify([setup.cwd, tmpRoot, setup.home, setup.agentDir, setup.selfPaths, dotGitStamp(setup.cwd)]);
  let places = placesCache.get(key);
  if (!places) {
    places = buildPlaces({ workspace: setup.cwd, tmpRoot, home: setup.home, agentDir: setup.agentDir, selfPaths: setup.selfPaths });
    if (placesCache.size >= PLACES_CACHE_SIZE) placesCache.delete(placesCache.keys().next().value!);
    placesCache.set(key, places);
  }
  return places;
}

/** Build what a decision needs for one cwd: the places, the repository facts, the configuration. */
export function prepareGate(setup: GateSetup): GateContext {
  const config = loadPolicyConfig({ agentDir: setup.agentDir, cwd: setup.cwd, home: setup.home });
  const tmpRoot = (config.ok ? config.config.tmpRoot : undefined) ?? setup.defaultTmpRoot;
  const places = cachedPlaces(setup, tmpRoot);
  const repo = inspectRepository(places);
  const shell: ShellEnv = { places, cwd: setup.cwd, home: setup.home, ...repo };
  const rules = config.ok ? config.config.allow.length + config.config.review.length + config.config.deny.length : 0;
  return { setup, config, judge: { places, shell, protectedGlobs: config.ok ? config.config.protectedPaths : [], rulesConfigured: rules > 0 } };
}

export interface GateResult {
  readonly request: CanonicalRequest | undefined;
  readonly judgement: Judgement | undefined;
  readonly decision: Decision;
}

export function decide(tool: string, input: unknown, gate: GateContext, backend: Backend): GateResult {
  try {
    const built = buildRequest(tool, input, gate.setup.cwd, gate.setup.home);
    if (!built.ok)
      return { request: undefined, judgement: undefined, decision: decision("deny", "unsupported-input", `The tool input cannot be judged: ${built.reason}.`) };
    const judgement = judge(built.request, gate.judge);
    return { request: built.request, judgement, decision: route(judgement, backend, gate.config) };
  } catch (e) {
    // Silence is never consent (P5): a bug in the gate denies the call.
    return { request: undefined, judgement: undefined, decision: decision("deny", "gate-error", `The gate failed while judging this call: ${(e as Error).message}`) };
  }
}
