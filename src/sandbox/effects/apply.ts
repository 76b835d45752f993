// Applying a judged effect set to the real workspace, crash-safe (P17):
//
// 1. Under the workspace's apply lock, every op is checked against the file system as it is now:
//    a target that is no longer what the command saw changed outside the sandbox: a conflict, not
//    overwritten (the command's version stays in the undo entry for the user).
// 2. An intent journal listing every op, with the identities of its source and target, is written
//    durably before the first change.
// 3. Each op is atomic on its own: a staged file is renamed over its target (same file system) or
//    copied beside it and renamed; what it replaces or removes is first hard-linked (or moved) into
//    the undo entry. So after a crash at any point every file is either its old or its new version.
//    (A path whose type changes, a file replaced by a directory or the reverse, is a remove and a
//    put: between the two renames it is absent, as no portable call swaps two paths at once.)
// 4. The undo manifest records what each target is now; then the journal goes.
//
// A journal found at start (its process died) is rolled forward from the file system's state:
// every op is found done, still to do (and then done), or no longer possible (reported). Every
// intermediate state an op can leave has a name derived from the journal (`.pi-auto-mode-<id>-<op>`
// beside its target), so the roll-forward finds and finishes it, and leaves no temp file behind.

import { linkSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import type { ApplyOp, Conflict } from "./judge.ts";
import { identityAt, sameIdentity, sameInode, type Identity } from "./identity.ts";
import { ensureDir, fsyncDir, readStoreText, undoDirOf, withWorkspaceLock, writeDurable, type EffectStore } from "./store.ts";
import { copyEntry, finishUndoEntry, latestUndoAt, pruneUndo, realFolder, treeBytes, treeListing, type UndoBounds, type UndoEntryOp } from "./undo.ts";
import { attributeTool, dropAttributes, prepareToLand } from "./landing.ts";

/** One op as the journal keeps it. */
export interface JournalOp {
  readonly op: ApplyOp;
  /** The staged source's identity before it moved (a rename keeps it). */
  readonly sourceId: Identity | null;
  /** Where the pre-image goes in the undo entry, relative to it; null when nothing is kept. */
  readonly pre: string | null;
}

export interface Journal {
  readonly version: 1;
  readonly id: string;
  readonly workspace: string;
  readonly command: string;
  readonly at: number;
  readonly undoEntry: string;
  readonly kept: boolean;
  /** Bytes of the pre-images kept (for the undo store's bound). */
  readonly preBytes?: number;
  /** Content git cannot give back that the command removed (under the thresholds): counted across commands. */
  readonly lostBytes?: number;
  readonly ops: readonly JournalOp[];
}

export interface ApplyRequest {
  readonly store: EffectStore;
  readonly workspace: string;
  readonly command: string;
  readonly ops: readonly ApplyOp[];
  readonly bounds: UndoBounds;
  /** Apply nothing if any op conflicts (kept effects the user approved: exactly those changes or none). */
  readonly allOrNothing?: boolean;
  /** For the crash tests: called after each op is done. */
  readonly afterOp?: (i: number) => void;
  /** Content git cannot give back the command removed (under the thresholds), recorded for later judgements. */
  readonly lostBytes?: number;
}

export interface ApplyResult {
  readonly applied: number;
  readonly conflicts: readonly Conflict[];
  /** The undo entry, when anything was applied. */
  readonly undoId: string | undefined;
  /** Whether what the command overwrote or removed was kept for undo. */
  readonly kept: boolean;
  /** Interrupted applies into this workspace that were finished first. */
  readonly repaired?: readonly Recovery[];
}

/** How long an apply waits for another process's apply or undo in the same workspace. */
const LOCK_WAIT_MS = 70_000;

export async function applyEffects(req: ApplyRequest): Promise<ApplyResult> {
  const locked = await withWorkspaceLock(req.store, req.workspace, LOCK_WAIT_MS, (beat) => applyLocked(req, beat));
  if (locked.kind === "held") return locked.value;
  throw new Error(locked.kind === "busy" ? "another Pi process kept this workspace's apply lock too long" : locked.message);
}

const _within = (parent: string, p: string) => p.startsWith(parent + "/");

/** Ops grouped by target: a remove and a put of one path stand or fall together. */
function preflight(ops: readonly ApplyOp[]): { ok: ApplyOp[]; conflicts: Conflict[] } {
  const ok: ApplyOp[] = [];
  const conflicts: Conflict[] = [];
  const bad = new Set<string>();
  // What each target must be now: the first op on it says (a later put on the same path expects
  // what the earlier remove leaves: nothing).
  const expected = new Map<string, Identity | null>();
  for (const op of ops) if (!expected.has(op.target)) expected.set(op.target, op.before);
  // Targets are real paths (the judge builds them from real roots). A folder on the way replaced
  // by a symlink meanwhile (while a reviewer considered the command, or by a command applied
  // since) would send the rename, and the lstat that checks the target, somewhere else.
  const real = new Map<string, boolean>();
  const redirected = new Set<string>();
  for (const [target, want] of expected) {
    if (!realFolder(dirname(target), real)) {
      bad.add(target);
      redirected.add(target);
    } else if (!sameIdentity(identityAt(target), want)) bad.add(target);
  }
  const underBad = (t: string) => {
    for (let p = dirname(t); p !== dirname(p); p = dirname(p)) if (bad.has(p)) return true;
    return false;
  };
  const reported = new Set<string>();
  for (const op of ops) {
    if (bad.has(op.target) || (bad.size > 0 && underBad(op.target))) {
      if (!reported.has(op.target)) {
        reported.add(op.target);
        const detail = redirected.has(op.target)
          ? "a folder on its path was replaced (by a symlink) outside the sandbox meanwhile"
          : op.before === null
            ? "something was created there outside the sandbox meanwhile"
            : "it changed outside the sandbox after the command ended";
        conflicts.push({ path: op.target, detail });
      }
      continue;
    }
    ok.push(op);
  }
  return { ok, conflicts };
}

/**
 * Puts that a tree put moves along: an entry inside a new tree whose own op only asked for its
 * setuid/setgid bits to go (done on the staged file before anything moves). Moving it on its own
 * would find its source gone with the tree, or make the tree's target before the tree arrives.
 */
function carriedByTree(ops: readonly ApplyOp[]): Set<ApplyOp> {
  const trees = ops.filter((o) => o.kind === "put" && o.type === "dir");
  const out = new Set<ApplyOp>();
  if (trees.length === 0) return out;
  const bySource = new Map(trees.map((t) => [(t as Extract<ApplyOp, { kind: "put" }>).source, t]));
  for (const op of ops) {
    if (op.kind !== "put" || op.before !== null) continue;
    for (let p = dirname(op.source); p !== dirname(p); p = dirname(p)) {
      const t = bySource.get(p);
      if (t && t !== op && join(t.target, relative(p, op.source)) === op.target) {
        out.add(op);
        break;
      }
    }
  }
  return out;
}

function applyLocked(req: ApplyRequest, beat: () => void): ApplyResult {
  // An apply into this workspace a crash interrupted comes first: this command ran on what it left.
  const repaired = recoverWorkspace(req.store, req.workspace, req.bounds, beat);
  const extra = repaired.length > 0 ? { repaired } : {};
  const checked = preflight(req.ops);
  const { conflicts } = checked;
  if (checked.ok.length === 0 || (req.allOrNothing && conflicts.length > 0)) return { applied: 0, conflicts, undoId: undefined, kept: false, ...extra };
  // Every staged entry that will land, whatever tree it is in, fit to land (P18): before the
  // journal records the sources (a chmod moves a change time, a copy makes a new inode).
  const ok: ApplyOp[] = [];
  const tool = attributeTool();
  for (const op of checked.ok) {
    if (op.kind === "put") {
      const landing = prepareToLand(op.source, tool === undefined);
      if (!landing.ok) {
        conflicts.push({ path: op.target, detail: landing.why });
        continue;
      }
    }
    ok.push(op);
  }
  if (tool)
    dropAttributes(
      tool,
      ok.flatMap((op) => (op.kind === "put" ? [op.source] : [])),
    );
  if (ok.length === 0 || (req.allOrNothing && conflicts.length > 0)) return { applied: 0, conflicts, undoId: undefined, kept: false, ...extra };
  const undoDir = undoDirOf(req.store, req.workspace);
  // Strictly increasing per workspace, so undo's newest-first order is the order of the applies.
  const at = Math.max(Date.now(), latestUndoAt(undoDir) + 1);
  const id = `${at.toString(36).padStart(9, "0")}-${randomBytes(4).toString("hex")}`;
  const undoEntry = join(undoDir, id);
  // Keep pre-images only while they fit the undo store's bound.
  let preBytes = 0;
  for (const op of ok) {
    if (!op.keep || op.before === null) continue;
    preBytes += op.kind === "remove" && op.type === "dir" ? treeBytes(op.target, req.bounds.maxBytes + 1) : Number(op.before.size);
    if (preBytes > req.bounds.maxBytes) break;
  }
  const kept = preBytes <= req.bounds.maxBytes;
  const carried = carriedByTree(ok);
  const jops: JournalOp[] = ok
    .filter((op) => !carried.has(op))
    .map((op, i) => ({
      op,
      sourceId: op.kind === "put" ? identityAt(op.source) : null,
      pre: kept && op.keep && op.before !== null ? `pre/${i}` : null,
    }));
  const journal: Journal = {
    version: 1,
    id,
    workspace: req.workspace,
    command: req.command,
    at,
    undoEntry,
    kept,
    preBytes: kept ? preBytes : 0,
    lostBytes: req.lostBytes ?? 0,
    ops: jops,
  };
  const journalPath = join(req.store.journalDir, `${id}.json`);
  writeDurable(journalPath, JSON.stringify(journal));
  // After the journal: a crash before it leaves no entry behind; the roll-forward makes it again.
  ensureDir(join(undoEntry, "pre"));
  const made = new Set<string>();
  // Each op checked again right before it is done (the checks above are a whole apply earlier: a
  // parallel process may have swapped a folder for a symlink, or a symlink for a folder, since).
  const touched = new Set<string>();
  const done: boolean[] = [];
  const renamed = jops.map((j, i) => {
    const why = stillAsJudged(j.op, touched);
    let r = false;
    if (why) conflicts.push({ path: j.op.target, detail: why });
    else {
      touched.add(j.op.target);
      r = doOp(journal, i, made);
    }
    done.push(why === undefined);
    beat();
    req.afterOp?.(i);
    return r;
  });
  finishJournal(journal, req.bounds, done, renamed);
  rmSync(journalPath, { force: true });
  const skippedNow = done.filter((d) => !d).length;
  return { applied: ok.length - skippedNow, conflicts, undoId: id, kept, ...extra };
}

/**
 * Why an op can no longer be done as judged, checked right before it is: a folder on the target's
 * path is no longer a real folder (a symlink would send the rename, or the folders made for it,
 * elsewhere), or the target is no longer what it was (what an earlier op of this apply left: a
 * removal nothing). A race narrower than one lstat and one rename remains: Node has no renameat on
 * a folder opened without following symlinks.
 */
function stillAsJudged(op: ApplyOp, touched: ReadonlySet<string>): string | undefined {
  if (!realFolder(dirname(op.target), new Map())) return "a folder on its path was replaced (by a symlink) outside the sandbox meanwhile";
  const want = touched.has(op.target) ? null : op.before;
  if (!sameIdentity(identityAt(op.target), want)) return "it changed outside the sandbox while the effects were being applied";
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The ops. Every intermediate name is derived from the journal id and the op's index.

function side(journal: Journal, i: number, what: "tmp" | "ready" | "aside"): string {
  return join(dirname(journal.ops[i]!.op.target), `.pi-auto-mode-${journal.id}-${i}.${what}`);
}

const exists = (p: string) => lstatSync(p, { throwIfNoEntry: false }) !== undefined;
const isExdev = (e: unknown) => (e as NodeJS.ErrnoException).code === "EXDEV";

/** Make `to` a copy of `from`, all at once: a partial copy is never found at `to`. */
function copyInto(from: string, to: string): void {
  const tmp = `${to}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  copyEntry(from, tmp);
  renameSync(tmp, to);
}

/** Keep what is at `target` in the undo entry without disturbing it: a hard link (or a copy). */
function preserve(target: string, keepAt: string): void {
  try {
    linkSync(target, keepAt);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return; // kept before a crash (a copy lands whole, so it is complete)
    if (code !== "EXDEV" && code !== "EPERM" && code !== "EMLINK") throw e;
    copyInto(target, keepAt);
  }
}

/** The target's folder (made if missing), once per folder: `made` remembers. */
function ensureParent(target: string, made: Set<string>): void {
  const d = dirname(target);
  if (made.has(d)) return;
  mkdirSync(d, { recursive: true });
  made.add(d);
}

/** Returns true when a put was one rename (its target is then its staged source's inode). */
function doOp(journal: Journal, i: number, made: Set<string>): boolean {
  const j = journal.ops[i]!;
  const op = j.op;
  const keepAt = j.pre === null ? undefined : join(journal.undoEntry, j.pre);
  if (op.kind === "remove") {
    if (keepAt) {
      try {
        renameSync(op.target, keepAt);
        return false;
      } catch (e) {
        if (!isExdev(e)) throw e;
      }
    } else if (op.before.type !== 0o040000) {
      rmSync(op.target, { force: true }); // one unlink
      return false;
    } else {
      // A tree nothing keeps (build output): into the trash in one rename, removed in the background.
      const trash = trashFor(journal, i);
      try {
        mkdirSync(dirname(trash), { recursive: true, mode: 0o700 });
        renameSync(op.target, trash);
        void rm(trash, { recursive: true, force: true, maxRetries: 2 }).catch(() => {});
        return false;
      } catch (e) {
        if (!isExdev(e)) throw e;
      }
    }
    // A tree (or a pre-image on another file system): out of the way at once, then dealt with.
    const aside = side(journal, i, "aside");
    renameSync(op.target, aside);
    finishAside(aside, keepAt);
    return false;
  }
  if (keepAt && op.before !== null) preserve(op.target, keepAt);
  ensureParent(op.target, made);
  try {
    renameSync(op.source, op.target);
    return true;
  } catch (e) {
    if (!isExdev(e)) throw e;
  }
  // Across file systems: a full copy beside the target first (`.tmp` while it grows, `.ready` once
  // whole), then the staged source goes, then the copy is renamed over the target.
  const tmp = side(journal, i, "tmp");
  const ready = side(journal, i, "ready");
  rmSync(tmp, { recursive: true, force: true });
  copyEntry(op.source, tmp);
  renameSync(tmp, ready);
  rmSync(op.source, { recursive: true, force: true });
  renameSync(ready, op.target);
  return false;
}

/** Where a removed tree nothing keeps goes: the store's trash (swept at every start). */
function trashFor(journal: Journal, i: number): string {
  return join(dirname(dirname(dirname(journal.undoEntry))), "trash", `${journal.id}-${i}`);
}

function finishAside(aside: string, keepAt: string | undefined): void {
  if (keepAt && !exists(keepAt)) copyInto(aside, keepAt);
  rmSync(aside, { recursive: true, force: true });
}

/** Record what each target is now, so undo can tell whether anything changed it since. */
/**
 * `renamed[i]`: op i was a put done by one rename, so its target is its source's inode (what undo
 * compares: inode, size, mtime, type; the rename moved only the change time). Saves an lstat per
 * file, and an edit made outside right after the rename is then seen by undo, not recorded as ours.
 */
function finishJournal(journal: Journal, bounds: UndoBounds, done: readonly boolean[] | undefined, renamed?: readonly boolean[]): void {
  const entries: UndoEntryOp[] = [];
  const trees: { file: string; text: string }[] = [];
  journal.ops.forEach((j, i) => {
    if (done && !done[i]) return;
    // What this op left: a removal left nothing, unless a put of the same path came after it.
    const replaced = j.op.kind === "remove" && journal.ops.some((o, k) => k > i && (!done || done[k]) && o.op.kind === "put" && o.op.target === j.op.target);
    const post = j.op.kind === "remove" && !replaced ? null : renamed?.[i] && j.sourceId !== null ? j.sourceId : identityAt(j.op.target);
    const wholeOutput = j.op.kind === "put" && j.op.regenerable === true;
    const pre = wholeOutput ? "regenerable" : j.op.before === null ? null : j.pre !== null ? j.pre : !journal.kept ? "not-kept" : "regenerable";
    let tree: string | undefined;
    // A tree the command created: what is in it, so an edit inside it is never undone away.
    if (j.op.kind === "put" && !wholeOutput && post !== null && post.type === 0o040000) {
      tree = `trees/${i}.json`;
      trees.push({ file: join(journal.undoEntry, tree), text: JSON.stringify(treeListing(j.op.target)) });
    }
    entries.push({ kind: j.op.kind, target: j.op.target, pre, post, ...(tree ? { tree } : {}) });
  });
  // The workspace's renames, the pre-images and the tree listings are on disk before the manifest.
  for (const d of new Set(journal.ops.map((j) => dirname(j.op.target)))) fsyncDir(d);
  if (trees.length > 0) {
    ensureDir(join(journal.undoEntry, "trees"));
    for (const t of trees) writeFileSync(t.file, t.text, { mode: 0o600 });
    fsyncDir(join(journal.undoEntry, "trees"));
  }
  fsyncDir(join(journal.undoEntry, "pre"));
  finishUndoEntry(
    journal.undoEntry,
    {
      version: 1,
      id: journal.id,
      workspace: journal.workspace,
      command: journal.command,
      at: journal.at,
      kept: journal.kept,
      lostBytes: journal.lostBytes ?? 0,
      ops: entries,
    },
    journal.preBytes,
  );
  pruneUndo(dirname(journal.undoEntry), bounds);
}

export interface Recovery {
  readonly journal: string;
  readonly workspace: string;
  readonly command: string;
  readonly completed: number;
  readonly alreadyDone: number;
  /** Ops that could no longer be done: their staged source was gone, or the target changed. */
  readonly lost: readonly string[];
}

function readJournal(path: string): Journal {
  const journal = JSON.parse(readStoreText(path)) as Journal;
  if (journal.version !== 1 || !Array.isArray(journal.ops)) throw new Error("not a journal of this version");
  return journal;
}

function journalNames(store: EffectStore): string[] {
  try {
    return readdirSync(store.journalDir)
      .filter((n) => n.endsWith(".json"))
      .sort();
  } catch {
    return [];
  }
}

/** Roll one journal forward, record its undo entry, drop it. Under the workspace's lock. */
function recoverOne(path: string, journal: Journal, bounds: UndoBounds, beat: () => void): Recovery {
  const out = rollForward(journal, beat);
  finishJournal(journal, bounds, out.done);
  rmSync(path, { force: true });
  return { journal: path, workspace: journal.workspace, command: journal.command, completed: out.completed, alreadyDone: out.alreadyDone, lost: out.lost };
}

/** The interrupted applies of one workspace, oldest first. Under its lock. */
function recoverWorkspace(store: EffectStore, workspace: string, bounds: UndoBounds, beat: () => void): Recovery[] {
  const out: Recovery[] = [];
  for (const n of journalNames(store)) {
    const path = join(store.journalDir, n);
    let journal: Journal;
    try {
      journal = readJournal(path);
    } catch {
      continue; // reported by recoverJournals
    }
    if (journal.workspace !== workspace) continue;
    try {
      out.push(recoverOne(path, journal, bounds, beat));
    } catch {
      // left for the start-up repair, which reports it; this command ran on the state as it is
    }
  }
  return out;
}

/** Roll forward every journal whose apply was interrupted. Reports what it did; never throws for one bad journal. */
export async function recoverJournals(store: EffectStore, bounds: UndoBounds): Promise<{ recovered: Recovery[]; failed: string[] }> {
  const recovered: Recovery[] = [];
  const failed: string[] = [];
  const done = new Set<string>();
  for (const n of journalNames(store)) {
    const path = join(store.journalDir, n);
    let journal: Journal;
    try {
      journal = readJournal(path);
    } catch (e) {
      failed.push(`${path}: ${(e as Error).message}`);
      continue;
    }
    if (done.has(journal.workspace)) continue;
    done.add(journal.workspace);
    // The lock is free only when no live process applies there; one that does finishes its own.
    const r = await withWorkspaceLock(store, journal.workspace, 0, (beat) => {
      const out: Recovery[] = [];
      const errors: string[] = [];
      for (const m of journalNames(store)) {
        const p = join(store.journalDir, m);
        let jr: Journal;
        try {
          jr = readJournal(p);
        } catch {
          continue; // reported above, or gone meanwhile
        }
        if (jr.workspace !== journal.workspace) continue;
        try {
          out.push(recoverOne(p, jr, bounds, beat));
        } catch (e) {
          errors.push(`${p}: ${(e as Error).message}`);
        }
      }
      return { out, errors };
    });
    if (r.kind === "held") {
      recovered.push(...r.value.out);
      failed.push(...r.value.errors);
    } else if (r.kind === "error") failed.push(`${path}: ${r.message}`);
  }
  return { recovered, failed };
}

function rollForward(journal: Journal, beat: () => void): { completed: number; alreadyDone: number; lost: string[]; done: boolean[] } {
  let completed = 0;
  let alreadyDone = 0;
  const lost: string[] = [];
  const done: boolean[] = journal.ops.map(() => false);
  const made = new Set<string>();
  const real = new Map<string, boolean>();
  ensureDir(join(journal.undoEntry, "pre"));
  journal.ops.forEach((j, i) => {
    beat();
    const op = j.op;
    const keepAt = j.pre === null ? undefined : join(journal.undoEntry, j.pre);
    if (keepAt) rmSync(`${keepAt}.tmp`, { recursive: true, force: true });
    // A folder on the way replaced by a symlink since the crash: nothing there is ours to touch.
    if (!realFolder(dirname(op.target), real)) {
      lost.push(op.target);
      return;
    }
    const now = identityAt(op.target);
    if (op.kind === "remove") {
      const aside = side(journal, i, "aside");
      if (exists(aside)) {
        // Moved out of the way; its pre-image copy or its removal was cut short.
        finishAside(aside, keepAt);
        completed++;
        done[i] = true;
      } else if (sameIdentity(now, op.before)) {
        doOp(journal, i, made);
        completed++;
        done[i] = true;
      } else if (keepAt ? exists(keepAt) : now === null || journal.ops.some((o, k) => k > i && o.op.kind === "put" && o.op.target === op.target)) {
        alreadyDone++;
        done[i] = true;
      } else lost.push(op.target);
      return;
    }
    const tmp = side(journal, i, "tmp");
    const ready = side(journal, i, "ready");
    rmSync(tmp, { recursive: true, force: true });
    const lose = () => {
      lost.push(op.target);
      rmSync(ready, { recursive: true, force: true });
      // A pre-image linked for a put that did not happen is not the command's to keep.
      if (keepAt) rmSync(keepAt, { recursive: true, force: true });
    };
    if (j.sourceId !== null && sameInode(now, j.sourceId)) {
      alreadyDone++;
      done[i] = true;
      return;
    }
    // Still the old version: its identity, or its inode with the change time our link moved.
    const unchanged =
      sameIdentity(now, op.before) ||
      (keepAt !== undefined && op.before !== null && now !== null && sameInode(now, op.before) && identityAt(keepAt)?.ino === now.ino);
    if (exists(ready)) {
      // A copy across file systems, whole, not yet renamed into place.
      if (!unchanged) {
        lose();
        return;
      }
      rmSync(op.source, { recursive: true, force: true });
      renameSync(ready, op.target);
      completed++;
      done[i] = true;
      return;
    }
    const sourceNow = identityAt(op.source);
    if (sourceNow === null) {
      // The staged source goes only once its copy is whole: gone and no copy left means it landed.
      if (unchanged) {
        lose();
        return;
      }
      alreadyDone++;
      done[i] = true;
      return;
    }
    if (!sameInode(sourceNow, j.sourceId) || !unchanged) {
      lose();
      return;
    }
    doOp(journal, i, made);
    completed++;
    done[i] = true;
  });
  return { completed, alreadyDone, lost, done };
}

export function unlinkQuietly(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    // gone already
  }
}
