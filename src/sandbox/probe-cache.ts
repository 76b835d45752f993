// A passed probe, remembered across processes, so Pi's start and `pi-auto-mode sandbox` do not pay
// for the real run every time. An entry is trusted only when its key, everything the probe's
// verdict rests on, matches exactly (bubblewrap and the staging tools by path and inode, the kernel,
// the user namespace settings, the seccomp program, the user, this package's probe), and only for a
// day. Only passes are kept: a failure is probed afresh, and so is anything unreadable. The file
// lives in the sandbox's private run folder, which only the user can write.

import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type { ProbeResult } from "./types.ts";

const MAX_AGE_MS = 24 * 60 * 60 * 1000;

interface Entry {
  readonly key: string;
  readonly at: number;
  readonly result: Extract<ProbeResult, { ok: true }>;
}

export function readProbeCache(file: string, key: string, now = Date.now()): Extract<ProbeResult, { ok: true }> | undefined {
  try {
    const e = JSON.parse(readFileSync(file, "utf8")) as Entry;
    if (e.key !== key || typeof e.at !== "number" || now - e.at > MAX_AGE_MS || now < e.at || e.result?.ok !== true) return undefined;
    if (!Array.isArray(e.result.notes) || typeof e.result.staging !== "object" || e.result.staging === null) return undefined;
    return e.result;
  } catch {
    return undefined;
  }
}

export function writeProbeCache(file: string, key: string, result: ProbeResult): void {
  if (!result.ok) return;
  try {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ key, at: Date.now(), result } satisfies Entry), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // a cache that cannot be written only costs the next start a probe
  }
}
