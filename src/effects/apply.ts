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
// 4. The undo manifest records what each target is now; then the journal goes.
//
// A journal found at start (its process died) is rolled forward from the file system's state:
// every op is found done, still to do (and then done), or no longer possible (reported).

import { chmodSync, copyFileSync, cpSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { withLock, type Locked } from "../state/lock.ts";
import type { ApplyOp, Conflict } from "./judge.ts";
import { identityAt, sameIdentity, sameInode, type Identity } from "./identity.ts";
import { ensureDir, fsyncDir, lockPathOf, undoDirOf, writeDurable, type EffectStore } from "./store.ts";
import { finishUndoEntry, pruneUndo, type UndoBounds, type UndoEntryOp } from "./undo.ts";

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
  readonly ops: readonly JournalOp[];
}

export interface ApplyRequest {
  readonly store: EffectStore;
  readonly workspace: string;
  readonly command: string;
  readonly ops: readonly ApplyOp[];
  readonly bounds: UndoBounds;
  /** For the crash tests: called after each op is done. */
  readonly afterOp?: (i: number) => void;
}

export interface ApplyResult {
  readonly applied: number;
  readonly conflicts: readonly Conflict[];
  /** The undo entry, when anything was applied. */
  readonly undoId: string | undefined;
  /** Whether what the command overwrote or removed was kept for undo. */
  readonly kept: boolean;
}

const LOCK_TIMING = { staleMs: 60_000, waitMs: 70_000 };

export async function applyEffects(req: ApplyRequest): Promise<ApplyResult> {
  ensureDir(req.store.lockDir);
  const locked: Locked<ApplyResult> = await withLock(lockPathOf(req.store, req.workspace), LOCK_TIMING, () => applyLocked(req));
  if (locked.kind === "held") return locked.value;
  throw new Error(locked.kind === "busy" ? "another Pi process kept this workspace's apply lock too long" : locked.message);
}

/** Ops grouped by target: a remove and a put of one path stand or fall together. */
function preflight(ops: readonly ApplyOp[]): { ok: ApplyOp[]; conflicts: Conflict[] } {
  const ok: ApplyOp[] = [];
  const conflicts: Conflict[] = [];
  const bad = new Set<string>();
  // What each target must be now: the first op on it says (a later put on the same path expects
  // what the earlier remove leaves: nothing).
  const expected = new Map<string, Identity | null>();
  for (const op of ops) if (!expected.has(op.target)) expected.set(op.target, op.before);
  for (const [target, want] of expected) {
    if (!sameIdentity(identityAt(target), want)) bad.add(target);
  }
  for (const op of ops) {
    if (bad.has(op.target) || [...bad].some((b) => op.target.startsWith(b + "/"))) {
      if (!conflicts.some((c) => c.path === op.target)) conflicts.push({ path: op.target, detail: op.before === null ? "something was created there outside the sandbox meanwhile" : "it changed outside the sandbox after the command ended" });
      continue;
    }
    ok.push(op);
  }
  return { ok, conflicts };
}

function bytesOf(p: string, cap: number): number {
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

function applyLocked(req: ApplyRequest): ApplyResult {
  const { ok, conflicts } = preflight(req.ops);
  if (ok.length === 0) return { applied: 0, conflicts, undoId: undefined, kept: false };
  const id = `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
  const undoEntry = join(undoDirOf(req.store, req.workspace), id);
  // Keep pre-images only while they fit the undo store's bound.
  let preBytes = 0;
  for (const op of ok) {
    if (!op.keep || op.before === null) continue;
    preBytes += op.kind === "remove" && op.type === "dir" ? bytesOf(op.target, req.bounds.maxBytes + 1) : Number(op.before.size);
    if (preBytes > req.bounds.maxBytes) break;
  }
  const kept = preBytes <= req.bounds.maxBytes;
  // Before the journal records the sources: a chmod moves a source's change time.
  for (const op of ok) {
    if (op.kind !== "put" || !op.stripSetid) continue;
    const st = lstatSync(op.source, { throwIfNoEntry: false });
    if (st?.isFile()) chmodSync(op.source, st.mode & 0o1777);
  }
  const jops: JournalOp[] = ok.map((op, i) => ({
    op,
    sourceId: op.kind === "put" ? identityAt(op.source) : null,
    pre: kept && op.keep && op.before !== null ? `pre/${i}` : null,
  }));
  const journal: Journal = { version: 1, id, workspace: req.workspace, command: req.command, at: Date.now(), undoEntry, kept, ops: jops };
  ensureDir(join(undoEntry, "pre"));
  const journalPath = join(req.store.journalDir, `${id}.json`);
  writeDurable(journalPath, JSON.stringify(journal));
  let applied = 0;
  jops.forEach((j, i) => {
    doOp(j, undoEntry);
    applied++;
    req.afterOp?.(i);
  });
  for (const d of new Set(jops.map((j) => dirname(j.op.target)))) fsyncDir(d);
  finishJournal(journal, req.store, req.bounds);
  rmSync(journalPath, { force: true });
  return { applied, conflicts, undoId: id, kept };
}

/** Move `from` to `to`; across file systems, copy beside `to` and rename (atomic for `to`), then remove `from`. */
function moveInto(from: string, to: string): void {
  try {
    renameSync(from, to);
    return;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EXDEV") throw e;
  }
  const tmp = join(dirname(to), `.pi-auto-mode-${randomBytes(4).toString("hex")}.tmp`);
  const st = lstatSync(from);
  if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), tmp);
  else if (st.isDirectory()) cpSync(from, tmp, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  else copyFileSync(from, tmp);
  renameSync(tmp, to);
  rmSync(from, { recursive: true, force: true });
}

/** Keep what is at `target` in the undo entry without disturbing it: a hard link (or a copy). */
function preserve(target: string, keepAt: string): void {
  if (existsSync(keepAt) || lstatSync(keepAt, { throwIfNoEntry: false })) return;
  try {
    linkSync(target, keepAt);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "EXDEV" && code !== "EPERM" && code !== "EMLINK") throw e;
    const st = lstatSync(target);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(target), keepAt);
    else copyFileSync(target, keepAt);
  }
}

function doOp(j: JournalOp, undoEntry: string): void {
  const op = j.op;
  const keepAt = j.pre === null ? undefined : join(undoEntry, j.pre);
  if (op.kind === "remove") {
    if (keepAt) moveInto(op.target, keepAt);
    else rmSync(op.target, { recursive: true, force: true });
    return;
  }
  if (keepAt && op.before !== null) preserve(op.target, keepAt);
  mkdirSync(dirname(op.target), { recursive: true });
  moveInto(op.source, op.target);
}

/** Record what each target is now, so undo can tell whether anything changed it since. */
function finishJournal(journal: Journal, store: EffectStore, bounds: UndoBounds): void {
  const entries: UndoEntryOp[] = journal.ops.map((j) => ({
    kind: j.op.kind,
    target: j.op.target,
    pre: j.op.before === null ? null : j.pre ?? "not-kept",
    post: identityAt(j.op.target),
  }));
  finishUndoEntry(journal.undoEntry, { version: 1, id: journal.id, workspace: journal.workspace, command: journal.command, at: journal.at, kept: journal.kept, ops: entries });
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

/** Roll forward every journal whose apply was interrupted. Reports what it did; never throws for one bad journal. */
export async function recoverJournals(store: EffectStore, bounds: UndoBounds): Promise<{ recovered: Recovery[]; failed: string[] }> {
  const recovered: Recovery[] = [];
  const failed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(store.journalDir).filter((n) => n.endsWith(".json"));
  } catch {
    return { recovered, failed };
  }
  for (const n of names) {
    const path = join(store.journalDir, n);
    let journal: Journal;
    try {
      journal = JSON.parse(readFileSync(path, "utf8")) as Journal;
      if (journal.version !== 1 || !Array.isArray(journal.ops)) throw new Error("not a journal of this version");
    } catch (e) {
      failed.push(`${path}: ${(e as Error).message}`);
      continue;
    }
    // The lock is free only when the applying process is gone.
    ensureDir(store.lockDir);
    const r = await withLock(lockPathOf(store, journal.workspace), { staleMs: LOCK_TIMING.staleMs, waitMs: 0 }, () => {
      if (!existsSync(path)) return undefined; // finished meanwhile
      const out = rollForward(journal);
      finishJournal(journal, store, bounds);
      rmSync(path, { force: true });
      return out;
    });
    if (r.kind === "held" && r.value) recovered.push({ journal: path, workspace: journal.workspace, command: journal.command, ...r.value });
    else if (r.kind === "error") failed.push(`${path}: ${r.message}`);
  }
  return { recovered, failed };
}

function rollForward(journal: Journal): { completed: number; alreadyDone: number; lost: string[] } {
  let completed = 0;
  let alreadyDone = 0;
  const lost: string[] = [];
  ensureDir(join(journal.undoEntry, "pre"));
  // Targets an op of this journal already changed: a later op on the same path expects that.
  for (const j of journal.ops) {
    const op = j.op;
    const now = identityAt(op.target);
    if (op.kind === "put") {
      const sourceNow = identityAt(op.source);
      if (j.sourceId !== null && sameInode(now, j.sourceId)) {
        alreadyDone++;
        continue;
      }
      if (sourceNow === null || !sameInode(sourceNow, j.sourceId)) {
        // A copy that landed and whose source was removed, or a source that is gone.
        if (sourceNow === null && now !== null && !sameIdentity(now, op.before)) alreadyDone++;
        else lost.push(op.target);
        continue;
      }
      if (!sameIdentity(now, op.before)) {
        lost.push(op.target);
        continue;
      }
      doOp(j, journal.undoEntry);
      completed++;
    } else {
      if (now === null || !sameIdentity(now, op.before)) {
        alreadyDone++;
        continue;
      }
      doOp(j, journal.undoEntry);
      completed++;
    }
  }
  return { completed, alreadyDone, lost };
}

export function unlinkQuietly(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    // gone already
  }
}
