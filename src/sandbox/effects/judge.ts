// The judgement of a staged command's effects (P17): what it actually did, read from its upper
// layers, against a policy kept as data. Pure decisions over the file system as it is now; nothing
// is changed here. The outcome is one of:
// - apply:   ordinary work (creations, edits, regenerable cleanup, commits, branches, fast-forwards);
// - hold:    loss of content git cannot give back beyond the thresholds, ref rewrites and deletions,
//            any change under a protected name at any depth: only a reviewer may let it through;
// - discard: what no reviewer may let through (auto mode's own files), or what could not be read.
// Held effects are all-or-nothing: a command's effects are one change, applied whole or not at all.

import { lstatSync, type BigIntStats } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { minimatch } from "minimatch";
import pathData from "../../policy/data/paths.json" with { type: "json" };
import { isRegenerableName, isWithin, protectedComponent, type Places } from "../../policy/places.ts";
import type { StageRun, StagedRoot } from "../stage.ts";
import type { Change, EntryType, RootFacts, StagedFacts } from "./facts.ts";
import { judgeGitDir, NOTHING_RECOVERABLE, type AfterPath, type GitJudgement, type Recoverable, type RepoLocation } from "./git-effects.ts";
import { changedSince, identityAt, identityOf, type Identity } from "./identity.ts";
import { lostBytes } from "./retention.ts";
import { gitConfigPaths } from "./git-config.ts";
import type { EffectPolicy } from "./rules.ts";
import { listDir, readFileBounded, readTextBounded } from "./stage-read.ts";

/** One change the effects apply, in terms of real paths. */
export type ApplyOp =
  /** Move the staged entry (a file, a symlink, or a whole new directory tree) into place. */
  | {
      readonly kind: "put";
      readonly target: string;
      readonly source: string;
      readonly type: EntryType;
      readonly before: Identity | null;
      readonly keep: boolean;
      readonly stripSetid: boolean;
      /** Build output replaced whole: undo leaves it as it is (nothing of the old one is kept either). */
      readonly regenerable?: boolean;
    }
  /** Remove what is there (a directory with everything in it). */
  | { readonly kind: "remove"; readonly target: string; readonly before: Identity; readonly type: EntryType; readonly keep: boolean };

export type HeldItem =
  | { readonly kind: "protected-name"; readonly path: string; readonly entry: string }
  | { readonly kind: "lost-content"; readonly files: readonly LostFile[]; readonly bytes: number; readonly earlier?: number }
  | {
      readonly kind: "git-ref";
      readonly ref: string;
      readonly change: "deleted" | "rewritten" | "moved" | "replace-ref";
      readonly from: string | null;
      readonly to: string | null;
      readonly detail: string;
    }
  | { readonly kind: "git-file"; readonly path: string; readonly detail: string }
  | { readonly kind: "persistence"; readonly path: string }
  | { readonly kind: "too-many-changes"; readonly count: number }
  | { readonly kind: "permissions"; readonly path: string; readonly mode: number };

export interface LostFile {
  readonly path: string;
  readonly bytes: number;
  readonly how: "deleted" | "emptied" | "overwritten";
  /** Whether git tracks the file (its committed version can come back; the uncommitted changes not). */
  readonly tracked: boolean;
}

export interface Conflict {
  readonly path: string;
  readonly detail: string;
}

export interface EffectCounts {
  readonly created: number;
  readonly modified: number;
  readonly deleted: number;
  readonly gitChanged: number;
}

export type EffectJudgement =
  | {
      readonly verdict: "apply" | "hold";
      readonly ops: readonly ApplyOp[];
      readonly held: readonly HeldItem[];
      readonly conflicts: readonly Conflict[];
      /** Staged entries that are never applied, with why (lock files a killed git left, FIFOs). */
      readonly skipped: readonly { readonly path: string; readonly why: string }[];
      readonly counts: EffectCounts;
      /** Lost content that stayed under the thresholds (it is in the undo store once applied). */
      readonly smallLoss: readonly LostFile[];
    }
  | { readonly verdict: "discard"; readonly reason: string; readonly counts: EffectCounts };

export interface JudgeInput {
  readonly run: StageRun;
  readonly startCtimeNs: bigint;
  readonly facts: StagedFacts;
  readonly places: Places;
  readonly protectedGlobs: readonly string[];
  readonly policy: EffectPolicy;
  /** Entries auto mode itself created in an earlier applied command and nobody changed since. */
  readonly agentCreated?: (path: string, id: Identity) => boolean;
  /** Content git cannot give back the recent applied commands removed: the thresholds hold across commands. */
  readonly recentLoss?: number;
}

const ZERO: EffectCounts = { created: 0, modified: 0, deleted: 0, gitChanged: 0 };

function lstatBig(p: string): BigIntStats | undefined {
  try {
    return lstatSync(p, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

const REGENERABLE_FILES = pathData.regenerableFiles.map((p) => minimatch.filter(p.toLowerCase(), { dot: true }));

/**
 * Whether a path is build output: under a folder with a regenerable name (node_modules, dist,
 * target) or itself a regenerable file (*.o, a lock file), and in neither case tracked by git.
 * A name alone proves nothing: a tracked `build/` with uncommitted edits is the user's work.
 */
function regenerablePath(rel: string, rec: Recoverable): boolean {
  const parts = rel.split(sep);
  for (let i = 0; i < parts.length; i++) if (isRegenerableName(parts[i]!)) return !rec.tracksUnder(parts.slice(0, i + 1).join(sep));
  const base = parts.at(-1)!.toLowerCase();
  return REGENERABLE_FILES.some((m) => m(base)) && !rec.tracked(rel);
}

export function judgeEffects(input: JudgeInput): EffectJudgement {
  const { facts, run } = input;
  if (!facts.ok) return { verdict: "discard", reason: facts.reason, counts: ZERO };
  for (const rf of facts.roots) {
    if (!run.roots.some((r) => r.root === rf.root))
      return { verdict: "discard", reason: `the staged changes name a root that was not staged (${rf.root})`, counts: ZERO };
  }
  const ops: ApplyOp[] = [];
  const held: HeldItem[] = [];
  const conflicts: Conflict[] = [];
  const skipped: { path: string; why: string }[] = [];
  const lost: LostFile[] = [];
  let created = 0;
  let modified = 0;
  let deleted = 0;
  let forbidden: string | undefined;

  // The repositories the changes lie in: the workspace's own, and every other git dir (a nested
  // repository, a submodule's, one the command made). Each is judged by git's rules; a change
  // belongs to the deepest one holding it.
  const main = repoLocation(input.places);
  const after = facts.roots.flatMap((rf) => rf.gitAfter);
  const repos: RepoLocation[] = main ? [main] : [];
  for (const a of after) if (!repos.some((r) => r.gitDir === a.gitDir || r.commonDir === a.gitDir)) repos.push({ gitDir: a.gitDir, commonDir: a.gitDir });
  const repoOf = (abs: string): RepoLocation | undefined => {
    let best: RepoLocation | undefined;
    let depth = -1;
    for (const r of repos)
      for (const d of [r.gitDir, r.commonDir])
        if (isWithin(d, abs) && d.length > depth) {
          best = r;
          depth = d.length;
        }
    return best;
  };
  const gitChanges = new Map<RepoLocation, { root: RootFacts; change: Change }[]>();
  const workChanges: { root: RootFacts; change: Change; abs: string }[] = [];
  for (const rf of facts.roots) {
    if (rf.truncated) held.push({ kind: "too-many-changes", count: rf.changes.length });
    // A name that is not valid UTF-8 cannot be named to be applied: that entry is left out, and said so.
    for (const b of rf.badNames) skipped.push({ path: join(rf.root, b), why: "its name is not valid UTF-8, so it cannot be applied" });
    for (const c of rf.changes) {
      const abs = join(rf.root, c.rel);
      const r = repoOf(abs);
      if (r) gitChanges.set(r, [...(gitChanges.get(r) ?? []), { root: rf, change: c }]);
      else workChanges.push({ root: rf, change: c, abs });
    }
  }
  const afterPath = afterPaths(facts.roots);
  const judged: GitJudgement[] = [];
  let recoverable: Recoverable = NOTHING_RECOVERABLE;
  for (const repo of repos) {
    const changes = gitChanges.get(repo) ?? [];
    const isMain = repo === main;
    if (changes.length === 0 && !(isMain && workChanges.some((w) => w.change.op === "delete" || w.change.before !== null))) continue;
    // A repository the command made: its config and hooks would run code wherever git runs there.
    if (!isMain && !lstatSync(join(repo.gitDir, "HEAD"), { throwIfNoEntry: false })?.isFile()) {
      held.push({
        kind: "git-file",
        path: repo.gitDir,
        detail: "the command creates a git repository here; its config and hooks would run code whenever git is used in it",
      });
      for (const { root, change } of changes) plainOp(root, change, join(root.root, change.rel), ops);
      continue;
    }
    const commonRoot = facts.roots.find((rf) => isWithin(rf.root, repo.commonDir));
    const upperObjects = commonRoot ? [join(commonRoot.upper, relative(commonRoot.root, join(repo.commonDir, "objects")))] : [];
    const g = judgeGitDir({
      policy: input.policy,
      repo,
      changes,
      after,
      afterPath,
      upperObjects,
      startCtimeNs: input.startCtimeNs,
      newContent: newContentOf(workChanges),
    });
    judged.push(g);
    held.push(...g.held);
    conflicts.push(...g.conflicts);
    skipped.push(...g.skipped);
    if (isMain) recoverable = g.recoverable;
    // Git's own files are applied like any other staged file; the judgement above decided whether they may be.
    for (const { root, change } of changes) {
      const abs = join(root.root, change.rel);
      if (g.skipped.some((s) => s.path === abs) || g.conflicts.some((c) => c.path === abs)) continue;
      // A FIFO, socket or device in git's folder is never applied, as anywhere else.
      if (change.op === "write" && change.type === "other") {
        skipped.push({ path: abs, why: "a special file (FIFO, socket or device) is never applied" });
        continue;
      }
      plainOp(root, change, abs, ops);
    }
  }
  const gitChanged = [...gitChanges.values()].reduce((n, l) => n + l.length, 0);
  // Files git's configuration runs or reads (a hooks folder, filter programs, includes): protected.
  const configured = main ? gitConfigPaths({ gitDir: main.gitDir, commonDir: main.commonDir, workspace: input.places.workspace, home: input.places.home }) : [];
  const blocked = new Set<string>();
  try {
    for (const { root: rf, change: c, abs } of workChanges) {
      const staged = run.roots.find((r) => r.root === rf.root)!;
      // Our own files: never applied, whoever reviews.
      if (input.places.selfProtected.some((s) => isWithin(s, abs))) {
        forbidden ??= `it changed auto mode's own files (${abs})`;
        continue;
      }
      const guard = protectedGuard(input, staged, c.rel, abs, recoverable, configured);
      if (guard && !(main && isNewWorktreeLink(c, abs, main, afterPath))) held.push(guard);
      if (c.op === "write" && c.type === "other") {
        skipped.push({ path: abs, why: "a special file (FIFO, socket or device) is never applied" });
        continue;
      }
      judgeChange(input, rf, c, abs, recoverable, { ops, conflicts, lost, held, blocked, configured });
      if (c.op === "delete") deleted++;
      else if (c.before === null) created++;
      else modified++;
    }
  } finally {
    for (const g of judged) g.close();
  }
  const counts: EffectCounts = { created, modified, deleted, gitChanged };
  if (forbidden) return { verdict: "discard", reason: forbidden, counts };

  // Content git cannot give back: within the thresholds it is applied (and kept for undo).
  const unrecoverable = lost.filter((l) => l.bytes > 0);
  const total = unrecoverable.reduce((n, l) => n + l.bytes, 0);
  const recent = input.recentLoss ?? 0;
  let smallLoss: LostFile[] = [];
  // Across commands too: three commands each losing a little add up to one that loses a lot.
  if (total > 0 && (total + recent > input.policy.loss.maxLostBytes || unrecoverable.length > input.policy.loss.maxLostFiles))
    held.push({ kind: "lost-content", files: unrecoverable.sort((a, b) => b.bytes - a.bytes), bytes: total, ...(recent > 0 ? { earlier: recent } : {}) });
  else smallLoss = unrecoverable;
  return { verdict: held.length > 0 ? "hold" : "apply", ops, held, conflicts, skipped, counts, smallLoss };
}

/**
 * The `.git` file of a worktree this command added inside the workspace: it names a new admin
 * folder of the workspace's repository, which names it back (git-effects.ts accepts that folder).
 */
function isNewWorktreeLink(c: Change, abs: string, repo: RepoLocation, afterPath: AfterPath): boolean {
  if (c.op !== "write" || c.type !== "file" || c.before !== null || !abs.endsWith(`${sep}.git`)) return false;
  const p = afterPath(abs);
  const m = p ? /^gitdir: (.+)\n?$/.exec(readTextBounded(p, 4096) ?? "") : null;
  if (!m) return false;
  const admin = m[1]!;
  if (dirname(admin) !== join(repo.commonDir, "worktrees") || lstatSync(admin, { throwIfNoEntry: false })) return false;
  const back = afterPath(join(admin, "gitdir"));
  return back !== null && readTextBounded(back, 4096)?.trim() === abs;
}

/** The workspace's repository: its own `.git` folder, or the git dir a `.git` file names (worktree, submodule). */
function repoLocation(places: Places): RepoLocation | undefined {
  const dotGit = join(places.workspace, ".git");
  if (lstatSync(dotGit, { throwIfNoEntry: false })?.isDirectory()) return { gitDir: dotGit, commonDir: dotGit };
  const [first] = places.gitDirs;
  const last = places.gitDirs.at(-1);
  return first && last ? { gitDir: first, commonDir: last } : undefined;
}

/** A git file as an op: the git judgement already decided whether it may land. */
function plainOp(rf: RootFacts, c: Change, abs: string, ops: ApplyOp[]): void {
  if (c.op === "delete") {
    ops.push({ kind: "remove", target: abs, before: c.beforeId, type: c.before, keep: true });
    return;
  }
  if (isInsideNewTree(rf, c.rel)) return;
  if (c.type === "dir" && !c.newTree) return;
  if (c.before === "dir" && c.beforeId) {
    ops.push({ kind: "remove", target: abs, before: c.beforeId, type: "dir", keep: true });
    ops.push({ kind: "put", target: abs, source: join(rf.upper, c.rel), type: c.type, before: null, keep: true, stripSetid: false });
    return;
  }
  ops.push({ kind: "put", target: abs, source: join(rf.upper, c.rel), type: c.type, before: c.beforeId, keep: c.beforeId !== null, stripSetid: false });
}

/** Where a lower path is after the command: its upper copy, null when removed, the lower path when untouched. */
function afterPaths(roots: readonly RootFacts[]): AfterPath {
  const map = new Map<string, string | null>();
  const trees: string[] = [];
  const gone: string[] = [];
  for (const rf of roots) {
    for (const c of rf.changes) {
      const abs = join(rf.root, c.rel);
      if (c.op === "delete") {
        map.set(abs, null);
        if (c.before === "dir") gone.push(abs);
      } else {
        map.set(abs, join(rf.upper, c.rel));
        if (c.newTree) trees.push(abs);
      }
    }
  }
  return (p) => {
    const hit = map.get(p);
    if (hit !== undefined) return hit;
    for (const t of trees) if (isWithin(t, p)) return map.get(t) === null ? null : join(map.get(t)!, relative(t, p));
    for (const g of gone) if (isWithin(g, p)) return null;
    return lstatSync(p, { throwIfNoEntry: false }) ? p : null;
  };
}

/** The new content of the work tree, by size: a file moved is not a file lost. */
function newContentOf(changes: readonly { root: RootFacts; change: Change }[]): (size: number) => Buffer[] {
  const bySize = new Map<number, string[]>();
  for (const { root, change } of changes) {
    // Content moved into build output is not kept: the next cleanup removes it unjudged.
    if (change.op !== "write" || change.type !== "file" || change.rel.split(sep).some(isRegenerableName)) continue;
    const l = bySize.get(change.size) ?? [];
    l.push(join(root.upper, change.rel));
    bySize.set(change.size, l);
  }
  let budget = 64 * 2 ** 20;
  return (size) => {
    const out: Buffer[] = [];
    for (const p of bySize.get(size) ?? []) {
      if ((budget -= size) < 0) break;
      const b = readBounded(p, size);
      if (b) out.push(b);
    }
    return out;
  };
}

function protectedGuard(input: JudgeInput, root: StagedRoot, rel: string, abs: string, rec: Recoverable, configured: readonly string[]): HeldItem | undefined {
  const named = configured.find((p) => isWithin(p, abs));
  if (named) return { kind: "protected-name", path: abs, entry: `${relative(input.places.workspace, named) || "."}, which git's configuration runs or reads` };
  if (root.kind === "workspace") {
    const entry = protectedComponent(rel);
    // In build output only a repository matters (packages ship .github and the like, harmlessly);
    // a `.git` there still makes git run its config wherever git is used in that folder.
    if (entry && (!regenerablePath(rel, rec) || entry.split("/").at(-1) === ".git")) return { kind: "protected-name", path: abs, entry };
  }
  for (const g of input.protectedGlobs)
    if (minimatch(abs, g, { dot: true }) || minimatch(abs, `${g}/**`, { dot: true })) return { kind: "protected-name", path: abs, entry: g };
  const p = input.places;
  if ([...p.persistence, ...p.identitySecrets].some((s) => isWithin(s, abs))) return { kind: "persistence", path: abs };
  return undefined;
}

interface Sink {
  readonly ops: ApplyOp[];
  readonly conflicts: Conflict[];
  readonly lost: LostFile[];
  readonly held: HeldItem[];
  /** Paths (relative to their root) whose changes are not applied: nothing below them is either. */
  readonly blocked: Set<string>;
  /** Files git's configuration runs or reads. */
  readonly configured: readonly string[];
}

function judgeChange(input: JudgeInput, rf: RootFacts, c: Change, abs: string, rec: Recoverable, sink: Sink): void {
  const regenerable = regenerablePath(c.rel, rec);
  const keep = !regenerable;
  const beforeId = c.beforeId;
  // Below a path that conflicts, nothing is applied: what is there now may not even be a folder.
  for (let p = parentOf(c.rel); p !== ""; p = parentOf(p)) if (sink.blocked.has(`${rf.root}\0${p}`)) return;
  if (beforeId !== null && changedSince(beforeId, input.startCtimeNs)) {
    sink.blocked.add(`${rf.root}\0${c.rel}`);
    sink.conflicts.push({ path: abs, detail: "it also changed outside the sandbox while the command ran" });
    return;
  }
  if (c.op === "delete") {
    // Removed from a folder whose entries changed outside while the command ran: the command may
    // never have seen what is there now (a parallel command's new files), so it is not removed.
    const parentId = identityAt(dirname(abs));
    if (parentId !== null && changedSince(parentId, input.startCtimeNs)) {
      sink.blocked.add(`${rf.root}\0${c.rel}`);
      sink.conflicts.push({ path: abs, detail: "its folder also changed outside the sandbox while the command ran" });
      return;
    }
    // A regenerable folder (node_modules, dist) goes whole, unjudged and not kept for undo.
    if (c.before === "dir" && !regenerable) {
      if (!takeRemovedTree(input, rf, c.rel, abs, rec, sink, regenerable)) return;
    } else if (!regenerable) sink.lost.push(lossOfRemoval(input, rec, c.rel, abs, c.beforeId));
    sink.ops.push({ kind: "remove", target: abs, before: c.beforeId, type: c.before, keep });
    return;
  }
  const source = join(rf.upper, c.rel);
  if (c.before !== null && beforeId !== null) {
    if (c.before === "dir" && regenerable) {
      // Build output replaced whole: the old tree goes unjudged and unkept, the new one arrives in one piece.
      sink.ops.push({ kind: "remove", target: abs, before: beforeId, type: "dir", keep: false });
      sink.ops.push({ kind: "put", target: abs, source, type: c.type, before: null, keep: false, stripSetid: false, regenerable: true });
      return;
    }
    if (c.before === "dir") {
      // A directory replaced by something else: everything in it goes first.
      if (!takeRemovedTree(input, rf, c.rel, abs, rec, sink, regenerable)) return;
      sink.ops.push({ kind: "remove", target: abs, before: beforeId, type: "dir", keep });
      sink.ops.push({ kind: "put", target: abs, source, type: c.type, before: null, keep, stripSetid: (c.mode & 0o6000) !== 0 });
      return;
    }
    if (!regenerable && c.before === "file") sink.lost.push(lossOfOverwrite(input, rec, c, abs, source, beforeId));
    // Opening a user's file to writes by others (chmod 666) is a weakening, not work.
    const lowMode = c.before === "file" ? (lstatSync(abs, { throwIfNoEntry: false })?.mode ?? 0) & 0o7777 : 0o777;
    if (c.type !== "symlink" && (c.mode & ~lowMode & 0o022) !== 0) sink.held.push({ kind: "permissions", path: abs, mode: c.mode });
    if (c.type === "dir") {
      // A file replaced by a new directory tree.
      sink.ops.push({ kind: "remove", target: abs, before: beforeId, type: c.before, keep });
      sink.ops.push({ kind: "put", target: abs, source, type: "dir", before: null, keep, stripSetid: false });
      return;
    }
  }
  // Children of a new tree arrive with it.
  if (isInsideNewTree(rf, c.rel)) {
    if ((c.mode & 0o6000) !== 0 && c.type === "file")
      sink.ops.push({ kind: "put", target: abs, source, type: c.type, before: null, keep: false, stripSetid: true });
    return;
  }
  sink.ops.push({
    kind: "put",
    target: abs,
    source,
    type: c.type,
    before: beforeId,
    keep: keep && beforeId !== null,
    stripSetid: c.type === "file" && (c.mode & 0o6000) !== 0,
    // A new build output tree (node_modules, dist) arrives in one piece and is not listed for undo.
    ...(c.op === "write" && c.newTree && regenerable ? { regenerable: true } : {}),
  });
}

const newTreeCache = new WeakMap<RootFacts, Set<string>>();
function isInsideNewTree(rf: RootFacts, rel: string): boolean {
  let trees = newTreeCache.get(rf);
  if (!trees) {
    // A new tree replaces whatever was there (nothing, a file, a symlink) and carries its children.
    trees = new Set(rf.changes.flatMap((c) => (c.op === "write" && c.newTree ? [c.rel] : [])));
    newTreeCache.set(rf, trees);
  }
  for (let p = parentOf(rel); p !== ""; p = parentOf(p)) if (trees.has(p)) return true;
  return false;
}
const parentOf = (rel: string) => (rel.includes(sep) ? rel.slice(0, rel.lastIndexOf(sep)) : "");

const readBounded = readFileBounded;

function lossOfOverwrite(input: JudgeInput, rec: Recoverable, c: Extract<Change, { op: "write" }>, abs: string, source: string, beforeId: Identity): LostFile {
  const { maxCompareBytes } = input.policy.loss;
  const size = Number(beforeId.size);
  const rel = relative(input.places.workspace, abs);
  const tracked = rec.tracked(rel);
  if (size === 0 || input.agentCreated?.(abs, beforeId)) return { path: abs, bytes: 0, how: "overwritten", tracked };
  const before = readBounded(abs, maxCompareBytes);
  const after = c.type === "file" ? readBounded(source, maxCompareBytes) : Buffer.alloc(0);
  if (before && rec.content(rel, before)) return { path: abs, bytes: 0, how: "overwritten", tracked };
  const how = c.type === "file" && c.size === 0 ? "emptied" : "overwritten";
  if (!before || !after) return { path: abs, bytes: size, how, tracked };
  return { path: abs, bytes: lostBytes(before, after), how, tracked };
}

function lossOfRemoval(input: JudgeInput, rec: Recoverable, _rel: string, abs: string, id: Identity): LostFile {
  const how = "deleted";
  const size = Number(id.size);
  const rel = relative(input.places.workspace, abs);
  const tracked = rec.tracked(rel);
  // A symlink holds only a target name; an empty file nothing.
  if (size === 0 || id.type === 0o120000 || input.agentCreated?.(abs, id)) return { path: abs, bytes: 0, how, tracked };
  const content = readBounded(abs, input.policy.loss.maxHashBytes);
  if (content && rec.content(rel, content)) return { path: abs, bytes: 0, how, tracked };
  return { path: abs, bytes: size, how, tracked };
}

/** Judge into the sink what a removed tree takes with it; false when it changed outside meanwhile (then nothing of it is applied). */
function takeRemovedTree(input: JudgeInput, rf: RootFacts, rel: string, abs: string, rec: Recoverable, sink: Sink, regenerable: boolean): boolean {
  const sub = inspectRemovedTree(input, rf, rel, abs, rec, sink.configured);
  if (sub.conflict) {
    sink.blocked.add(`${rf.root}\0${rel}`);
    sink.conflicts.push({ path: sub.conflict, detail: "it also changed outside the sandbox while the command ran" });
    return false;
  }
  sink.held.push(...sub.held);
  if (!regenerable) sink.lost.push(...sub.lost);
  return true;
}

/** What removing a lower directory loses, and whether anything in it is protected or changed meanwhile. */
function inspectRemovedTree(
  input: JudgeInput,
  rf: RootFacts,
  rel: string,
  abs: string,
  rec: Recoverable,
  configured: readonly string[],
): { lost: LostFile[]; held: HeldItem[]; conflict?: string } {
  const lost: LostFile[] = [];
  const held: HeldItem[] = [];
  const root = input.run.roots.find((r) => r.root === rf.root)!;
  const stack = [rel];
  let visited = 0;
  while (stack.length > 0) {
    const dirRel = stack.pop()!;
    let names: string[];
    try {
      names = listDir(join(rf.root, dirRel));
    } catch {
      continue;
    }
    for (const n of names) {
      const childRel = join(dirRel, n);
      const childAbs = join(rf.root, childRel);
      const st = lstatBig(childAbs);
      if (!st) continue;
      const id = identityOf(st);
      if (changedSince(id, input.startCtimeNs)) return { lost, held, conflict: childAbs };
      const guard = protectedGuard(input, root, childRel, childAbs, rec, configured);
      if (guard) {
        held.push(guard);
        continue;
      }
      if (st.isDirectory()) {
        if (!regenerablePath(childRel, rec)) stack.push(childRel);
        continue;
      }
      if (regenerablePath(childRel, rec)) continue;
      if (++visited > 100_000) {
        lost.push({ path: abs, bytes: Number.MAX_SAFE_INTEGER, how: "deleted", tracked: false });
        return { lost, held };
      }
      if (st.isFile()) lost.push(lossOfRemoval(input, rec, childRel, childAbs, id));
    }
  }
  return { lost, held };
}
