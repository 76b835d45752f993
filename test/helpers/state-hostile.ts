// Hostile file-system shapes for auto mode's durable files, and a way to run a read of them that
// cannot hang the suite: a FIFO where a file is expected blocks a reader inside open(2), which no
// timer in the same process can interrupt, so the read runs in a child with a deadline.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stripToJs } from "../fixtures/state-strip.ts";

export interface Run {
  readonly hung: boolean;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Run a child; past `deadlineMs` it is killed (SIGKILL: a process blocked in open(2) may not even take SIGTERM). */
export function runWithDeadline(args: readonly string[], deadlineMs: number, env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      child.kill("SIGKILL");
    }, deadlineMs);
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ hung, code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** Generous: a loaded 2-core box starts a Node child in well under a second. */
export const PROBE_DEADLINE_MS = 15_000;

/**
 * test/fixtures/state-probe.ts, type-stripped once into `scratch` (a child then starts in tens of
 * milliseconds), as a function that runs one probe and returns the JSON it printed.
 */
export function stateProbe(scratch: string): (...args: string[]) => Promise<unknown> {
  const script = stripToJs(fileURLToPath(new URL("../fixtures/state-probe.ts", import.meta.url)), scratch);
  return async (...args) => {
    const r = await runWithDeadline([script, ...args], PROBE_DEADLINE_MS);
    assert.equal(r.hung, false, `probe ${args.join(" ")} hung (killed after ${PROBE_DEADLINE_MS} ms)`);
    assert.equal(r.code, 0, `probe ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
  };
}

/** Runs `fns` at most `width` at a time. */
export async function pool<T>(fns: ReadonlyArray<() => Promise<T>>, width = 6): Promise<T[]> {
  const out: T[] = new Array(fns.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, fns.length) }, async () => {
      while (next < fns.length) {
        const i = next++;
        out[i] = await fns[i]!();
      }
    }),
  );
  return out;
}

export const IS_ROOT = process.getuid?.() === 0;

export type Kind = "fifo" | "socket" | "directory" | "symlink" | "dangling-symlink" | "symlink-to-fifo" | "device";
/** Every kind this user can make; a character device needs root (the caller says so when it is left out). */
export const KINDS: readonly Kind[] = [
  "fifo",
  "socket",
  "directory",
  "symlink",
  "dangling-symlink",
  "symlink-to-fifo",
  ...(IS_ROOT ? (["device"] as const) : []),
];

let n = 0;

/** Put a `kind` at `path`, where a file with `text` belongs (a symlink points at a faithful copy). */
export async function plant(path: string, kind: Kind, text = ""): Promise<void> {
  rmSync(path, { recursive: true, force: true });
  switch (kind) {
    case "fifo":
      execFileSync("mkfifo", [path]);
      return;
    case "socket": {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(path, resolve));
      // Left listening (Node removes the socket file when its server closes), without keeping the process alive.
      server.unref();
      return;
    }
    case "directory":
      mkdirSync(path);
      return;
    case "symlink": {
      const real = `${path}.real-${process.pid}-${n++}`;
      writeFileSync(real, text);
      symlinkSync(real, path);
      return;
    }
    case "dangling-symlink":
      symlinkSync(join(`${path}.nowhere`), path);
      return;
    case "symlink-to-fifo":
      execFileSync("mkfifo", [`${path}.fifo-${process.pid}-${n}`]);
      symlinkSync(`${path}.fifo-${process.pid}-${n++}`, path);
      return;
    case "device":
      // /dev/zero: endless zeros, so a reader without a size bound would never stop either.
      execFileSync("mknod", [path, "c", "1", "5"]);
      return;
  }
}
