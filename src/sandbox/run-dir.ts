// The sandbox's own working files (the seccomp program, the placeholder registry): one private
// folder per user, beside the temporary root but not inside it, so sandboxed commands cannot
// write it. If a configured temporary root holds it anyway, the layout mounts it read-only.
//
// Unlike the temp root, it is not replaced by a fresh folder when its name was taken: every
// process of the user must share it (the placeholder registry counts their leases), so a folder
// that is not a private one of ours (a symlink, another account's, one open to others) makes the
// sandbox unavailable, and the probe's reason says what is there and how to fix it (P18).

import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensurePrivateDir } from "../state/private-dir.ts";

export function defaultRunDir(): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : "user";
  return join(tmpdir(), `pi-auto-mode-${uid}.run`);
}

/** Create the folder (mode 0700, never through a symlink), or check that the one there is a private folder of ours. */
export function ensureRunDir(dir: string): void {
  const r = ensurePrivateDir(dir);
  if (!r.ok) throw new Error(`${r.reason}; remove it (another account may have made it) or point TMPDIR elsewhere`);
}
