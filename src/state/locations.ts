// Where auto mode keeps its own files under Pi's agent directory. Every tool call that would
// write one of them is denied statically: the agent must not be able to switch its gate off.

import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { USER_CONFIG_FILE } from "../policy/config/files.ts";

/** The state directory (durable global state, its lock and temp files). */
export const STATE_DIR_NAME = "auto-mode";
/**
 * The revision anchor, beside the state directory rather than in it, so a copy of the directory put
 * back cannot rewind it (src/state/artifacts.ts says what it catches and what it cannot).
 */
export const ANCHOR_FILE = "auto-mode.anchor";

/** Pi's agent directory the way Pi computes it: $PI_CODING_AGENT_DIR (with ~ expanded) or ~/.pi/agent. */
export function agentDirFromEnv(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const fromEnv = env.PI_CODING_AGENT_DIR;
  if (fromEnv) return resolve(fromEnv === "~" ? home : fromEnv.startsWith("~/") ? join(home, fromEnv.slice(2)) : fromEnv);
  return join(home, ".pi", "agent");
}

export function selfPaths(agentDir: string): string[] {
  return [join(agentDir, USER_CONFIG_FILE), join(agentDir, STATE_DIR_NAME), join(agentDir, ANCHOR_FILE)];
}

/** Where the default temporary root lives (each session's folder is made in it: temp-root.ts). */
export { defaultTmpRootPath } from "./temp-root.ts";
