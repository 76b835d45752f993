// git for the sandbox tests' fixtures, with no user or system configuration on either side: what
// git does is what the repository says.

import { spawnSync } from "node:child_process";

export const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "a",
  GIT_AUTHOR_EMAIL: "a@b",
  GIT_COMMITTER_NAME: "a",
  GIT_COMMITTER_EMAIL: "a@b",
};

/** git in `cwd` (main as the first branch); throws with git's message when it fails, else its output trimmed. */
export function git(cwd: string, ...args: string[]): string {
  const r = spawnSync("git", ["-c", "init.defaultBranch=main", ...args], { cwd, encoding: "utf8", env: { ...process.env, ...GIT_ENV } });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}
