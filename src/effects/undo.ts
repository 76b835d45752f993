// The undo store: for every applied command, what it overwrote or removed (hard links to the old
// inodes, so keeping them costs no copy on the workspace's file system) and what each target was
// right after. Undo restores those pre-images, newest command first, and refuses where a target
// changed since (an edit made after the command must never be thrown away by an undo).
// Bounded per workspace by count and by bytes (the user's auto-mode.json can set both).

import { existsSync, lstatSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { identityAt, sameInode, type Identity } from "./identity.ts";
import { undoDirOf, writeDurable, type EffectStore } from "./store.ts";

export interface UndoBounds {
  /** Applied commands kept per workspace. */
  readonly maxCommands: number;
  /** Bytes of pre-images kept per workspace. */
  readonly maxBytes: number;
}

export const DEFAULT_UNDO_BOUNDS: UndoBounds = { maxCommands: 20, maxBytes: 512 * 2 ** 20 };

export interface UndoEntryOp {
  readonly kind: "put" | "remove";
  readonly target: string;
  /** The pre-image in the entry; null: nothing was there before; "not-kept": over the bound. */
  readonly pre: string | null;
  /** What the target was right after the command (null: nothing). */
  readonly post: Identity | null;
}

export interface UndoManifest {
  readonly version: 1;
  readonly id: string;
  readonly workspace: string;
  readonly command: string;
  readonly at: number;
  readonly kept: boolean;
  readonly ops: readonly UndoEntryOp[];
}

const MANIFEST = "manifest.json";

export function finishUndoEntry(dir: string, m: UndoManifest): void {
  writeDurable(join(dir, MANIFEST), JSON.stringify(m));
}

function readManifest(dir: string): UndoManifest | undefined {
  try {
    const m = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")) as UndoManifest;
    return m.version === 1 && Array.isArray(m.ops) ? m : undefined;
  } catch {
    return undefined;
  }
}

function sizeOf(p: string): number {
  let total = 0;
  const stack = [p];
  while (stack.length > 0) {
    const cur = stack.pop()!;
    const st = lstatSync(cur, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) for (const n of readdirSync(cur)) stack.push(join(cur, n));
    else total += st.size;
  }
  return total;
}

export interface UndoListing {
  readonly dir: string;
  readonly manifest: UndoManifest;
}

/** Applied commands of a workspace, newest first. Entries without a manifest are unfinished applies. */
export function listUndo(store: EffectStore, workspace: string): UndoListing[] {
  const root = undoDirOf(store, workspace);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const out: UndoListing[] = [];
  for (const n of names) {
    const m = readManifest(join(root, n));
    if (m && m.workspace === workspace) out.push({ dir: join(root, n), manifest: m });
  }
  return out.sort((a, b) => b.manifest.at - a.manifest.at || b.manifest.id.localeCompare(a.manifest.id));
}

/** Drop the oldest entries beyond the bounds. */
export function pruneUndo(root: string, bounds: UndoBounds): void {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  const entries = names.flatMap((n) => {
    const m = readManifest(join(root, n));
    return m ? [{ dir: join(root, n), at: m.at, bytes: sizeOf(join(root, n, "pre")) }] : [];
  });
  entries.sort((a, b) => b.at - a.at);
  let bytes = 0;
  entries.forEach((e, i) => {
    bytes += e.bytes;
    if (i >= bounds.maxCommands || bytes > bounds.maxBytes) rmSync(e.dir, { recursive: true, force: true });
  });
}

export type UndoOutcome =
  | { readonly ok: true; readonly undone: readonly { readonly command: string; readonly restored: number }[] }
  | { readonly ok: false; readonly undone: readonly { readonly command: string; readonly restored: number }[]; readonly refused: string };

/** Why one entry cannot be undone now, or undefined when it can. */
function undoProblem(m: UndoManifest): string | undefined {
  const changed: string[] = [];
  for (const op of m.ops) {
    if (op.pre === "not-kept") return `what \`${m.command}\` overwrote or removed was not kept (it was over the undo store's size bound)`;
    if (!sameInode(identityAt(op.target), op.post)) changed.push(op.target);
  }
  if (changed.length > 0) return `${changed.length} file(s) changed since \`${m.command}\` ran: ${changed.slice(0, 5).join(", ")}${changed.length > 5 ? ", ..." : ""}`;
  return undefined;
}

function undoOne(entry: UndoListing): number {
  let restored = 0;
  // Newest change first: a remove and a put of one path undo in reverse.
  for (const op of [...entry.manifest.ops].reverse()) {
    if (op.kind === "put") {
      if (op.post !== null) rmSync(op.target, { recursive: true, force: true });
      if (op.pre !== null && op.pre !== "not-kept") renameSync(join(entry.dir, op.pre), op.target);
    } else if (op.pre !== null && op.pre !== "not-kept") {
      if (existsSync(op.target)) rmSync(op.target, { recursive: true, force: true });
      renameSync(join(entry.dir, op.pre), op.target);
    }
    restored++;
  }
  rmSync(entry.dir, { recursive: true, force: true });
  return restored;
}

/**
 * Undo the last `steps` applied commands of a workspace, newest first. Each is checked whole
 * before any of it is restored; the first that cannot be undone stops the undo and says why.
 */
export function undoLast(store: EffectStore, workspace: string, steps: number): UndoOutcome {
  const entries = listUndo(store, workspace);
  const undone: { command: string; restored: number }[] = [];
  if (entries.length === 0) return { ok: false, undone, refused: "nothing to undo: auto mode applied no command in this workspace (or its undo entries were pruned)" };
  if (steps > entries.length) return { ok: false, undone, refused: `only ${entries.length} applied command(s) can be undone here` };
  for (const e of entries.slice(0, steps)) {
    const problem = undoProblem(e.manifest);
    if (problem) return { ok: false, undone, refused: problem };
    undone.push({ command: e.manifest.command, restored: undoOne(e) });
  }
  return { ok: true, undone };
}
