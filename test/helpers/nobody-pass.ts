// A test file's second pass as nobody (uid 65534, via setpriv), from a root run: root ignores file
// modes and runs the sandbox with privileges, so some checks mean something only unprivileged. The
// child pass has `flag` set in its environment, so it does not start a pass of its own.

import { spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

const NOBODY = 65534;

/** Whether this run can start the nobody pass: it is root, not itself that pass, and setpriv is there. */
export function canRunAsNobody(flag: string): boolean {
  return process.getuid?.() === 0 && !process.env[flag] && existsSync("/usr/bin/setpriv");
}

export interface NobodyPass {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The tap summary's tests, pass, fail and skipped lines (each also told as a diagnostic of the test). */
  readonly summary: string[];
  /** The tap lines of the tests that failed. */
  readonly failures: string[];
}

/**
 * Runs `file` with node's test runner as nobody, from `cwd`, with a home of its own (made under the
 * temp folder with `homePrefix`, removed after) and without the variables named in `unset`.
 */
export function runAsNobody(t: TestContext, opts: { file: string; cwd: string; flag: string; homePrefix: string; unset?: readonly string[] }): NobodyPass {
  const home = mkdtempSync(join(tmpdir(), opts.homePrefix));
  chownSync(home, NOBODY, NOBODY);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, [opts.flag]: "1", TMPDIR: "/tmp" };
  delete env.NODE_TEST_CONTEXT;
  for (const name of opts.unset ?? []) delete env[name];
  const r = spawnSync(
    "/usr/bin/setpriv",
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--inh-caps=-all", process.execPath, "--test", "--test-reporter=tap", opts.file],
    { cwd: opts.cwd, encoding: "utf8", env, timeout: 240_000 },
  );
  rmSync(home, { recursive: true, force: true });
  const stdout = r.stdout ?? "";
  const summary = stdout.split("\n").filter((l) => /^# (tests|pass|fail|skipped)/.test(l));
  for (const l of summary) t.diagnostic(`as nobody: ${l.slice(2)}`);
  const failures = stdout.split("\n").filter((l) => /^\s*not ok/.test(l));
  return { status: r.status, stdout, stderr: r.stderr ?? "", summary, failures };
}
