// Running the real `pi-auto-mode` command in a child process (on the Node that runs the tests).

import { type ChildProcessByStdio, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

export const BIN = fileURLToPath(new URL("../../bin/pi-auto-mode.js", import.meta.url));

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCli(
  args: readonly string[],
  opts: { readonly cwd: string; readonly env: Readonly<Record<string, string>>; readonly bin?: string },
): Promise<CliRun> {
  return collected(
    spawn(process.execPath, [opts.bin ?? BIN, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
}

/** A child's whole stdout and stderr, and its exit code, once it has closed. */
export function collected(child: ChildProcessByStdio<null, Readable, Readable>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The JSON object a `--json` run prints on its last line. */
export function lastJson(out: string): Record<string, unknown> {
  return JSON.parse(out.trimEnd().split("\n").at(-1)!) as Record<string, unknown>;
}
