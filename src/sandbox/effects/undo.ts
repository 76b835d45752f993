// The undo store: for every applied command, what it overwrote or removed (hard links to the old
// inodes, so keeping them costs no copy on the workspace's file system) and what each target was
// right after. Undo restores those pre-images, newest command first, and refuses where a target
// changed since (an edit made after the command must never be thrown away by an undo), including
// an edit inside a tree the command created (its entries are listed at apply time).
// Bounded per workspace by count and by bytes (the user's auto-mode.json can set both).
//
// Undo runs under the workspace's lock (no apply or other undo beside it) and survives a crash:
// the entry is marked before its first change, every step is one rename (or a copy beside the
// target renamed over it), steps left half done have names derived from the entry, and an undo
// of a marked entry takes up where the crashed one stopped. The entry goes in one rename.

import { copyFileSync, cpSync, lstatSync, readdirSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { identityAt, sameInode, type Identity } from "./identity.ts";
import { fsyncDir, readStoreText, undoDirOf, withWorkspaceLockSync, writeDurable, type EffectStore } from "./store.ts";

export { DEFAULT_UNDO_BOUNDS, type UndoBounds } from "../../policy/config/undo-bounds.ts";
import type { UndoBounds } from "../../policy/config/undo-bounds.ts";

export interface UndoEntryOp {
  readonly kind: "put" | "remove";
  readonly target: string;
  /**
   * The pre-image in the entry; null: nothing was there before; "not-kept": over the bound (the
   * command cannot be undone); "regenerable": in a regenerable folder, never kept (undo leaves it).
   */
  readonly pre: string | null;
  /** What the target was right after the command (null: nothing). */
  readonly post: Identity | null;
  /** For a tree the command put: the listing of everything in it then, in the entry. */
  readonly tree?: string;
}

export interface UndoManifest {
  readonly version: 1;
  readonly id: string;
  readonly workspace: string;
  readonly command: string;
  readonly at: number;
  readonly kept: boolean;
  /** Content git cannot give back this command removed (small enough to be applied). */
  readonly lostBytes?: number;
  readonly ops: readonly UndoEntryOp[];
}

const MANIFEST = "manifest.json";
/** A small summary beside the manifest, so pruning never reads every manifest. */
const META = "meta.json";
/** Written before an undo's first change: the entry is half undone until it goes. */
const UNDOING = "undoing";
const DIR = 0o040000;

const exists = (p: string) => lstatSync(p, { throwIfNoEntry: false }) !== undefined;
const isExdev = (e: unknown) => (e as NodeJS.ErrnoException).code === "EXDEV";

/** The bytes of the files in a tree (symlinks not followed); counting stops once past `cap`. */
export function treeBytes(p: string, cap = Number.POSITIVE_INFINITY): number {
  let total = 0;
  const stack = [p];
  while (stack.length > 0 && total <= cap) {
    const cur = stack.pop()!;
    const st = lstatSync(cur, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) for (const n of readdirSync(cur)) stack.push(join(cur, n));
    else total += st.size;
  }
  return total;
}

/** A full copy of an entry (file, symlink or tree), with its mode and times. */
export function copyEntry(from: string, to: string): void {
  const st = lstatSync(from);
  if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
  else if (st.isDirectory()) cpSync(from, to, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true, errorOnExist: true, force: false });
  else if (st.isFile()) {
    copyFileSync(from, to);
    utimesSync(to, st.atime, st.mtime);
  } else throw new Error(`${from} is not a file, folder or symlink (a FIFO or device is never copied: opening one can block)`);
}

/**
 * Whether `dir` is reached without a symlink on the way: its real path is itself (targets are
 * built from real roots). A folder that does not exist (yet) counts by its nearest existing one.
 */
export function realFolder(dir: string, cache: Map<string, boolean>): boolean {
  const hit = cache.get(dir);
  if (hit !== undefined) return hit;
  let ok: boolean;
  try {
    ok = realpathSync.native(dir) === dir;
  } catch {
    ok = lstatSync(dir, { throwIfNoEntry: false }) === undefined && dirname(dir) !== dir && realFolder(dirname(dir), cache);
  }
  cache.set(dir, ok);
  return ok;
}

/** Everything in a tree: [path relative to it, inode, size, mtime, type]; a folder's size and mtime are left out (undo's renames move them). */
type ListedEntry = readonly [string, string, string, string, number];

export function treeListing(root: string): ListedEntry[] {
  const out: ListedEntry[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      const p = join(dir, n);
      const st = lstatSync(p, { bigint: true, throwIfNoEntry: false });
      if (!st) continue;
      const type = Number(st.mode & 0o170000n);
      if (type === DIR) {
        out.push([relative(root, p), String(st.ino), "", "", type]);
        stack.push(p);
      } else out.push([relative(root, p), String(st.ino), String(st.size), String(st.mtimeNs), type]);
    }
  }
  return out;
}

/** What in a tree differs from its listing: up to `max` paths. */
function treeChanges(root: string, listing: readonly ListedEntry[], max = 6): string[] {
  const want = new Map(listing.map((e) => [e[0], e]));
  const changed: string[] = [];
  for (const e of treeListing(root)) {
    const w = want.get(e[0]);
    want.delete(e[0]);
    if (!w || w[1] !== e[1] || w[2] !== e[2] || w[3] !== e[3] || w[4] !== e[4]) changed.push(join(root, e[0]));
    if (changed.length >= max) return changed;
  }
  for (const rel of want.keys()) {
    changed.push(join(root, rel));
    if (changed.length >= max) break;
  }
  return changed;
}

export function finishUndoEntry(dir: string, m: UndoManifest, preBytes?: number): void {
  writeFileSync(join(dir, META), JSON.stringify({ at: m.at, bytes: preBytes ?? treeBytes(join(dir, "pre")) }), { mode: 0o600 });
  writeDurable(join(dir, MANIFEST), JSON.stringify(m));
}

function readManifest(dir: string): UndoManifest | undefined {
  try {
    const m = JSON.parse(readStoreText(join(dir, MANIFEST))) as UndoManifest;
    return m.version === 1 && Array.isArray(m.ops) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** Entry folders are named by their id (`<time base36>-<hex>`); anything with a dot is not one. */
const entryNames = (root: string): string[] => {
  try {
    return readdirSync(root).filter((n) => !n.includes("."));
  } catch {
    return [];
  }
};

/** The newest entry's time in an undo folder (0 when none): a new one must come after it. */
export function latestUndoAt(root: string): number {
  let latest = 0;
  for (const n of entryNames(root)) {
    const t = parseInt(n.split("-")[0]!, 36);
    if (Number.isFinite(t) && t > latest) latest = t;
  }
  return latest;
}

/** Remove an entry in one step (a half-removed entry must never look like an undoable one). */
function dropEntry(dir: string): void {
  const gone = `${dir}.gone`;
  rmSync(gone, { recursive: true, force: true });
  try {
    renameSync(dir, gone);
  } catch {
    return;
  }
  rmSync(gone, { recursive: true, force: true });
}

export interface UndoListing {
  readonly dir: string;
  readonly manifest: UndoManifest;
}

/** Applied commands of a workspace, newest first. Entries without a manifest are unfinished applies. */
export function listUndo(store: EffectStore, workspace: string): UndoListing[] {
  const root = undoDirOf(store, workspace);
  const out: UndoListing[] = [];
  for (const n of entryNames(root)) {
    const m = readManifest(join(root, n));
    if (m && m.workspace === workspace) out.push({ dir: join(root, n), manifest: m });
  }
  return out.sort((a, b) => b.manifest.at - a.manifest.at || (b.manifest.id < a.manifest.id ? -1 : b.manifest.id > a.manifest.id ? 1 : 0));
}

/** Entries whose removal a crash cut short (renamed to `<id>.gone` first, so never listed). */
function clearGone(root: string): void {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const n of names) if (n.endsWith(".gone")) rmSync(join(root, n), { recursive: true, force: true });
}

/** Drop the oldest entries beyond the bounds. */
export function pruneUndo(root: string, bounds: UndoBounds): void {
  clearGone(root);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  const entries = names.flatMap((n) => {
    if (n.includes(".")) return [];
    const dir = join(root, n);
    try {
      const meta = JSON.parse(readStoreText(join(dir, META), 4096)) as { at: number; bytes: number };
      if (exists(join(dir, MANIFEST))) return [{ dir, at: meta.at, bytes: meta.bytes }];
    } catch {
      // an entry without a summary: read it whole
    }
    const m = readManifest(dir);
    return m ? [{ dir, at: m.at, bytes: treeBytes(join(dir, "pre")) }] : [];
  });
  entries.sort((a, b) => b.at - a.at);
  let bytes = 0;
  entries.forEach((e, i) => {
    bytes += e.bytes;
    if (i >= bounds.maxCommands || bytes > bounds.maxBytes) dropEntry(e.dir);
  });
}

export type UndoOutcome =
  | { readonly ok: true; readonly undone: readonly { readonly command: string; readonly restored: number }[] }
  | { readonly ok: false; readonly undone: readonly { readonly command: string; readonly restored: number }[]; readonly refused: string };

/** Names of an undo step left half done, beside its target. */
function undoSide(e: UndoListing, k: number, what: "trash" | "tmp" | "ready"): string {
  return join(dirname(e.manifest.ops[k]!.target), `.pi-auto-mode-undo-${e.manifest.id}-${k}.${what}`);
}

/** Whether a target is still what the command left: a folder by its inode (its listing covers the rest). */
function samePost(now: Identity | null, op: UndoEntryOp): boolean {
  if (op.tree !== undefined && now !== null && op.post !== null && op.post.type === DIR) return now.ino === op.post.ino && now.type === DIR;
  return sameInode(now, op.post);
}

type OpState = "todo" | "done" | "skip" | { readonly changed: readonly string[] };

function opState(e: UndoListing, k: number, resuming: boolean): OpState {
  const op = e.manifest.ops[k]!;
  if (op.pre === "regenerable") return "skip";
  if (exists(undoSide(e, k, "ready")) || exists(undoSide(e, k, "trash"))) return resuming ? "todo" : { changed: [op.target] };
  const pre = op.pre === null ? undefined : join(e.dir, op.pre);
  const missing = { changed: [`${op.target} (the kept version is missing from the undo store)`] };
  const now = identityAt(op.target);
  if (op.kind === "remove") {
    if (pre === undefined) return "skip";
    if (!exists(pre)) return resuming ? "done" : missing;
    return now === null || samePost(now, op) ? "todo" : { changed: [op.target] };
  }
  if (pre !== undefined && !exists(pre)) return resuming ? "done" : missing;
  if (samePost(now, op)) {
    if (op.tree === undefined) return "todo";
    let listing: ListedEntry[];
    try {
      listing = JSON.parse(readStoreText(join(e.dir, op.tree))) as ListedEntry[];
    } catch {
      return { changed: [`${op.target} (the record of what was in it is missing from the undo store)`] };
    }
    const diff = treeChanges(op.target, listing);
    return diff.length === 0 ? "todo" : { changed: diff };
  }
  if (resuming && pre === undefined) {
    // Created: removed already, or the path's earlier removal was undone after it (reverse order).
    if (now === null) return "done";
    const restored = e.manifest.ops.some(
      (o, m) => m < k && o.kind === "remove" && o.target === op.target && typeof o.pre === "string" && o.pre !== "regenerable" && !exists(join(e.dir, o.pre)),
    );
    if (restored) return "done";
  }
  return { changed: [op.target] };
}

/** Why one entry cannot be undone now, or undefined when it can. */
function undoProblem(e: UndoListing): string | undefined {
  const m = e.manifest;
  if (m.ops.some((op) => op.pre === "not-kept")) return `what \`${m.command}\` overwrote or removed was not kept (it was over the undo store's size bound)`;
  const resuming = exists(join(e.dir, UNDOING));
  const changed: string[] = [];
  const real = new Map<string, boolean>();
  for (let k = 0; k < m.ops.length; k++) {
    // A folder on the way replaced by a symlink since: the restore would land somewhere else.
    if (!realFolder(dirname(m.ops[k]!.target), real)) {
      if (!changed.includes(m.ops[k]!.target)) changed.push(m.ops[k]!.target);
      continue;
    }
    const s = opState(e, k, resuming);
    if (typeof s === "object") changed.push(...s.changed.filter((c) => !changed.includes(c)));
  }
  if (changed.length > 0)
    return `${changed.length} file(s) changed since \`${m.command}\` ran: ${changed.slice(0, 5).join(", ")}${changed.length > 5 ? ", ..." : ""}`;
  return undefined;
}

/** Put the pre-image `pre` at `target`, replacing what is there in one rename. */
function restoreInto(pre: string, target: string, tmp: string, ready: string): void {
  try {
    renameSync(pre, target);
    return;
  } catch (e) {
    if (!isExdev(e)) throw e;
  }
  // The undo store is on another file system: a whole copy beside the target first.
  rmSync(tmp, { recursive: true, force: true });
  copyEntry(pre, tmp);
  renameSync(tmp, ready);
  rmSync(pre, { recursive: true, force: true });
  renameSync(ready, target);
}

/** One op undone (or finished, after a crash). Returns whether it restored anything. */
function undoOp(e: UndoListing, k: number): boolean {
  const op = e.manifest.ops[k]!;
  if (op.pre === "regenerable" || op.pre === "not-kept") return false;
  const trash = undoSide(e, k, "trash");
  const tmp = undoSide(e, k, "tmp");
  const ready = undoSide(e, k, "ready");
  rmSync(tmp, { recursive: true, force: true });
  const pre = op.pre === null ? undefined : join(e.dir, op.pre);
  if (exists(ready)) {
    // A copy back from another file system, whole: its rename was cut short.
    if (pre) rmSync(pre, { recursive: true, force: true });
    renameSync(ready, op.target);
    rmSync(trash, { recursive: true, force: true });
    return true;
  }
  if (op.kind === "put") {
    if (pre === undefined) {
      // Created by the command: out of the way in one rename, then removed.
      if (samePost(identityAt(op.target), op)) renameSync(op.target, trash);
      rmSync(trash, { recursive: true, force: true });
      return true;
    }
    if (!exists(pre)) {
      rmSync(trash, { recursive: true, force: true });
      return false;
    }
    // A folder cannot be renamed over (nor be renamed over a file): it steps aside first.
    const st = lstatSync(op.target, { throwIfNoEntry: false });
    if (st && (st.isDirectory() || lstatSync(pre).isDirectory()) && samePost(identityAt(op.target), op)) renameSync(op.target, trash);
    restoreInto(pre, op.target, tmp, ready);
    rmSync(trash, { recursive: true, force: true });
    return true;
  }
  if (pre === undefined || !exists(pre)) return false;
  restoreInto(pre, op.target, tmp, ready);
  return true;
}

function undoOne(e: UndoListing, beat: () => void): number {
  const marker = join(e.dir, UNDOING);
  if (!exists(marker)) writeDurable(marker, JSON.stringify({ at: Date.now() }));
  let restored = 0;
  // Newest change first: a remove and a put of one path undo in reverse.
  for (let k = e.manifest.ops.length - 1; k >= 0; k--) {
    beat();
    if (undoOp(e, k)) restored++;
  }
  for (const d of new Set(e.manifest.ops.map((op) => dirname(op.target)))) fsyncDir(d);
  dropEntry(e.dir);
  return restored;
}

/** How long an undo waits for an apply or another undo in the same workspace (it blocks meanwhile). */
const UNDO_WAIT_MS = 10_000;

/**
 * Undo the last `steps` applied commands of a workspace, newest first. Each is checked whole
 * before any of it is restored; the first that cannot be undone stops the undo and says why.
 */
export function undoLast(store: EffectStore, workspace: string, steps: number): UndoOutcome {
  const r = withWorkspaceLockSync(store, workspace, UNDO_WAIT_MS, (beat): UndoOutcome => {
    clearGone(undoDirOf(store, workspace));
    const entries = listUndo(store, workspace);
    const undone: { command: string; restored: number }[] = [];
    if (entries.length === 0)
      return { ok: false, undone, refused: "nothing to undo: auto mode applied no command in this workspace (or its undo entries were pruned)" };
    if (steps > entries.length) return { ok: false, undone, refused: `only ${entries.length} applied command(s) can be undone here` };
    for (const e of entries.slice(0, steps)) {
      const problem = undoProblem(e);
      if (problem) return { ok: false, undone, refused: problem };
      undone.push({ command: e.manifest.command, restored: undoOne(e, beat) });
    }
    return { ok: true, undone };
  });
  if (r.kind === "held") return r.value;
  return {
    ok: false,
    undone: [],
    refused: r.kind === "busy" ? "another Pi process is applying or undoing in this workspace right now; try again in a moment" : r.message,
  };
}

/** Content git cannot give back that the applied commands of the last `windowMs` removed. */
export function recentLoss(store: EffectStore, workspace: string, windowMs: number, now = Date.now()): number {
  return listUndo(store, workspace)
    .filter((e) => now - e.manifest.at <= windowMs)
    .reduce((n, e) => n + (e.manifest.lostBytes ?? 0), 0);
}
