// Where the effects machinery keeps its durable files, under auto mode's own folder in Pi's agent
// dir (no tool call may write there): the intent journals of applies in progress, the undo store,
// and a lock per workspace so two Pi processes never apply into the same workspace at once.

import { createHash } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export interface EffectStore {
  readonly base: string;
  readonly journalDir: string;
  readonly undoRoot: string;
  readonly lockDir: string;
}

export function effectStore(agentDir: string): EffectStore {
  const base = join(agentDir, "auto-mode", "staging");
  return { base, journalDir: join(base, "journal"), undoRoot: join(base, "undo"), lockDir: join(base, "locks") };
}

/** A stable short name for a workspace (its real path). */
export function workspaceKey(workspace: string): string {
  return createHash("sha256").update(workspace).digest("hex").slice(0, 16);
}

export function undoDirOf(store: EffectStore, workspace: string): string {
  return join(store.undoRoot, workspaceKey(workspace));
}

export function lockPathOf(store: EffectStore, workspace: string): string {
  return join(store.lockDir, `${workspaceKey(workspace)}.lock`);
}

export function ensureDir(p: string): void {
  mkdirSync(p, { recursive: true, mode: 0o700 });
}

/** Write a file durably: a temp file, fsync, rename, fsync of the folder. */
export function writeDurable(path: string, text: string): void {
  ensureDir(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  const fd = openSync(tmp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDir(dirname(path));
}

export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // some file systems refuse fsync on a directory; the rename is still atomic
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
