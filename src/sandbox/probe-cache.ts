// A passed probe, remembered across processes, so Pi's start and `pi-auto-mode sandbox` do not pay
// for the real run every time. An entry is trusted only when its key, everything the probe's
// verdict rests on, matches exactly (bubblewrap and the staging tools by path and inode, the kernel,
// the user namespace settings, the seccomp program, the user, this package's probe), and only for a
// day. Only passes are kept: a failure (doctor's fresh probe) forgets the pass under its key, and
// anything unreadable is probed afresh. The file
// lives in the sandbox's private run folder, which only the user can write.

import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type { ProbeResult } from "./types.ts";

const MAX_AGE_MS = 24 * 60 * 60 * 1000;
// The agent and the CLI run the sandbox differently (through the spawner helper or not), and
// both keys are kept, so neither makes the other probe again.
const MAX_ENTRIES = 4;

interface Entry {
  readonly key: string;
  readonly at: number;
  readonly result: Extract<ProbeResult, { ok: true }>;
}

function entries(file: string): Entry[] {
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return Array.isArray(raw) ? (raw as Entry[]) : [];
  } catch {
    return [];
  }
}

export function readProbeCache(file: string, key: string, now = Date.now()): Extract<ProbeResult, { ok: true }> | undefined {
  const e = entries(file).find((x) => x?.key === key);
  if (!e || typeof e.at !== "number" || now - e.at > MAX_AGE_MS || now < e.at || e.result?.ok !== true) return undefined;
  if (!Array.isArray(e.result.notes) || typeof e.result.staging !== "object" || e.result.staging === null) return undefined;
  return e.result;
}

/** Remember a pass under its key; a failure forgets any pass under that key (doctor's fresh probe). */
export function writeProbeCache(file: string, key: string, result: ProbeResult, now = Date.now()): void {
  try {
    const kept = entries(file).filter((x) => x && typeof x.key === "string" && x.key !== key && typeof x.at === "number" && now - x.at <= MAX_AGE_MS);
    const next = result.ok ? [{ key, at: now, result } satisfies Entry, ...kept].slice(0, MAX_ENTRIES) : kept;
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(next), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // a cache that cannot be written only costs the next start a probe
  }
}
