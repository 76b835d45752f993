// The sandbox's own working files (the seccomp program, the placeholder registry): one private
// folder per user, beside the temporary root but not inside it, so sandboxed commands cannot
// write it. If a configured temporary root holds it anyway, the layout mounts it read-only.

import { lstatSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function defaultRunDir(): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : "user";
  return join(tmpdir(), `pi-auto-mode-${uid}.run`);
}

/** Create the folder, or check that the existing one is a real directory that only we can write. */
export function ensureRunDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  // Someone else's folder, or one others can write, could feed us a different seccomp program.
  if (uid !== undefined && st.uid !== uid) throw new Error(`${dir} belongs to uid ${st.uid}, not to us`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
}
