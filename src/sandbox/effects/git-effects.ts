// What a staged command did to a git repository, judged without running git (git-reader in
// ./git/): which refs moved and how, whether what it removed or overwrote in the work tree can come
// back from git, and which files under the git dir it touched.
//
// Refs, by what git can give back:
// - created refs, fast-forwards, HEAD switching branches: applied;
// - a branch deleted or moved backwards whose old tip stays reachable from a ref that remains
//   (a merged branch deleted): nothing is lost, applied;
// - a branch rewritten by replaying its commits (rebase, cherry-pick, amend without edits: every
//   dropped commit has a new one with the same author, date and message) while the old tip stays
//   in the branch's reflog: applied;
// - a stash entry dropped whose changes are in the work tree afterwards (a pop): applied;
// - anything else that deletes or rewinds a ref, moves a tag or touches refs/replace: held.

import { lstatSync } from "node:fs";
import { isWithin, protectedComponent } from "../../policy/places.ts";
import { join, relative, sep } from "node:path";
import type { Change, GitAfter, RootFacts } from "./facts.ts";
import { changedSince, type Identity } from "./identity.ts";
import type { Conflict, HeldItem } from "./judge.ts";
import type { EffectPolicy } from "./rules.ts";
import { commitsBetween, isAncestor, reachableFromAny } from "./git/history.ts";
import { readIndex, type GitIndex } from "./git/index-file.ts";
import { hashObject, openObjectStore, parseCommit, parseTree, treeEntryAt, type ObjectStore } from "./git/objects.ts";
import { objectFormat, readRefs, reflogOids, type RefSnapshot } from "./git/refs.ts";
import { readFileBounded, readTextBounded } from "./stage-read.ts";

/** Whether content removed from the work tree can come back from git. */
export interface Recoverable {
  /** Git tracks this path (index or HEAD): its committed version can come back. */
  tracked(rel: string): boolean;
  /** Git tracks something at or below this folder (then a regenerable name proves nothing). */
  tracksUnder(rel: string): boolean;
  /** This exact content of this path is in git (index, HEAD's tree, a commit this command made) or still in the work tree elsewhere. */
  content(rel: string, content: Buffer): boolean;
}

export const NOTHING_RECOVERABLE: Recoverable = { tracked: () => false, tracksUnder: () => false, content: () => false };

/** Where the workspace's repository lives, before (lower) and after (upper, or lower where unchanged). */
export interface RepoLocation {
  /** The git dir (HEAD, index): `.git`, or a worktree's admin folder. */
  readonly gitDir: string;
  /** Where objects and refs live (the same as gitDir except for worktrees). */
  readonly commonDir: string;
}

/** A path as the command left it: its upper copy, null when removed, or the lower one when untouched. */
export type AfterPath = (lowerPath: string) => string | null;

export interface GitJudgeInput {
  readonly policy: EffectPolicy;
  readonly repo: RepoLocation;
  /** The changes under the git dirs, with their root's facts (for paths). */
  readonly changes: readonly { readonly root: RootFacts; readonly change: Change }[];
  readonly after: readonly GitAfter[];
  readonly afterPath: AfterPath;
  /** Upper object folders of the staged roots holding the common dir (new objects live there). */
  readonly upperObjects: readonly string[];
  readonly startCtimeNs: bigint;
  /** New content in the work tree, by size, to recognize a file moved rather than lost. */
  readonly newContent: (size: number) => readonly Buffer[];
}

export interface GitJudgement {
  readonly held: readonly HeldItem[];
  readonly conflicts: readonly Conflict[];
  readonly skipped: readonly { readonly path: string; readonly why: string }[];
  readonly recoverable: Recoverable;
  readonly close: () => void;
}

const WALK_LIMIT = 10_000;
const short = (oid: string | null | undefined) => (oid ? oid.slice(0, 12) : "none");

function refsAfter(after: readonly GitAfter[], dir: string): RefSnapshot | undefined {
  return after.find((a) => a.gitDir === dir)?.refs;
}

export function judgeGitDir(input: GitJudgeInput): GitJudgement {
  const { repo, policy } = input;
  const held: HeldItem[] = [];
  const conflicts: Conflict[] = [];
  const skipped: { path: string; why: string }[] = [];
  const known = objectFormat(repo.commonDir);
  if (known === undefined)
    held.push({ kind: "git-file", path: join(repo.commonDir, "config"), detail: "the repository's object format is not one auto mode can read" });
  const format = known ?? "sha1";
  const store = openObjectStore([...input.upperObjects, join(repo.commonDir, "objects")], format);

  // 1. Every touched file of the git dirs, by class.
  const removedObjects: { abs: string; rel: string }[] = [];
  const removedLogs: { abs: string; rel: string }[] = [];
  for (const { root, change } of input.changes) {
    const abs = join(root.root, change.rel);
    const rel = gitRelative(repo, abs);
    if (rel === undefined) {
      held.push({ kind: "git-file", path: abs, detail: "it is in another repository's git dir" });
      continue;
    }
    const cls = newWorktree(input, repo, rel) ? "state" : policy.classifyGitPath(inWorkspaceWorktree(repo, rel) ?? rel);
    if (cls === "lock") {
      skipped.push({ path: abs, why: "a lock file a stopped git left behind is never applied" });
      continue;
    }
    if (change.beforeId !== null && changedSince(change.beforeId, input.startCtimeNs) && cls !== "object")
      conflicts.push({ path: abs, detail: "git changed it outside the sandbox while the command ran" });
    if (cls === "protected") {
      held.push({
        kind: "git-file",
        path: abs,
        detail: "it configures git or runs code (config, hooks, attributes, alternates) or is not a file git writes in ordinary work",
      });
      continue;
    }
    if (cls === "object") {
      // Objects never change: a rewrite of one (other than a byte-identical refresh) corrupts history.
      if (change.op === "write" && change.before === "file" && !sameBytes(abs, join(root.upper, change.rel)))
        held.push({ kind: "git-file", path: abs, detail: "it rewrites an existing git object, which changes or corrupts history" });
      if (change.op === "delete") removedObjects.push({ abs, rel });
    }
    if (cls === "log" && change.op === "write" && change.before === "file" && !isAppend(abs, join(root.upper, change.rel)))
      held.push({ kind: "git-file", path: abs, detail: "it rewrites a reflog (expire or delete): the record of where refs were" });
    if (cls === "log" && change.op === "delete") removedLogs.push({ abs, rel });
    // An unfinished rebase or cherry-pick whose todo list runs a command: git would run it on the host.
    if (
      cls === "state" &&
      change.op === "write" &&
      change.type === "file" &&
      /(^|\/)(git-rebase-todo|todo|done)$/.test(rel) &&
      TODO_EXEC.test(readSmall(join(root.upper, change.rel)))
    )
      held.push({ kind: "git-file", path: abs, detail: "it leaves a rebase or sequencer todo list that runs a command (exec) when git continues it" });
  }

  // 2. Refs.
  const before = readRefs(repo.commonDir);
  const afterCommon = refsAfter(input.after, repo.commonDir);
  const beforeHead = repo.gitDir === repo.commonDir ? before?.head : readRefs(repo.gitDir)?.head;
  const afterHead = repo.gitDir === repo.commonDir ? afterCommon?.head : (refsAfter(input.after, repo.gitDir)?.head ?? beforeHead);
  const touchedRefs = input.changes.some(({ root, change }) => {
    const rel = gitRelative(repo, join(root.root, change.rel));
    return rel !== undefined && (policy.classifyGitPath(rel) === "ref" || policy.classifyGitPath(rel) === "log");
  });
  if (touchedRefs && (!before || !afterCommon))
    held.push({ kind: "git-file", path: repo.commonDir, detail: "its refs could not be read before or after the command" });
  else if (before && afterCommon) judgeRefs({ before, after: afterCommon, store, input, held });

  // A reflog is how git gives back where a ref was: removing one is fine only with its ref gone too
  // (a deletion the ref judgement accepted). HEAD's own, or one of a ref that remains, is held.
  for (const l of removedLogs) {
    const ref = l.rel === "logs" ? undefined : l.rel.slice("logs/".length);
    if (ref !== undefined && ref !== "HEAD" && ref.startsWith("refs/") && afterCommon && !afterCommon.refs.has(ref) && !/\/$/.test(ref) && isFileRefLog(l))
      continue;
    held.push({ kind: "git-file", path: l.abs, detail: "it removes a reflog, the record git gives lost commits back from" });
  }
  // Loose objects gc or repack removed are fine where a pack this command wrote holds them now.
  if (removedObjects.length > 0) {
    const packed = openObjectStore(input.upperObjects, format);
    try {
      for (const o of removedObjects) {
        const m = /^objects\/([0-9a-f]{2})\/([0-9a-f]{38,62})$/.exec(o.rel);
        if (m && packed.has(m[1]! + m[2]!)) continue;
        held.push({ kind: "git-file", path: o.abs, detail: "it removes objects from the repository (gc, prune or a deletion)" });
        break;
      }
    } finally {
      packed.close();
    }
  }
  if (before && afterCommon) judgeNewCommits({ before, after: afterCommon, store, input, held });

  // 3. What the work tree's removed content can come back from.
  const indexAfterPath = input.afterPath(join(repo.gitDir, "index"));
  const index: GitIndex | undefined = indexAfterPath ? readIndex(indexAfterPath, format) : undefined;
  const indexBefore = readIndex(join(repo.gitDir, "index"), format);
  const indexed = new Set<string>();
  const indexOids = new Map<string, Set<string>>();
  for (const ix of [index, indexBefore]) {
    for (const e of ix?.entries ?? []) {
      indexed.add(e.path);
      if (ix !== index) continue;
      let s = indexOids.get(e.path);
      if (!s) indexOids.set(e.path, (s = new Set()));
      s.add(e.oid);
    }
  }
  // The index as the command left it: a new entry under a protected name, or one it hid from
  // `git status` (skip-worktree, assume-unchanged), is held.
  if (index) {
    const was = new Map((indexBefore?.entries ?? []).map((e) => [`${e.path}\0${e.stage}`, e]));
    for (const e of index.entries) {
      const old = was.get(`${e.path}\0${e.stage}`);
      if (old?.oid === e.oid && old.skipWorktree === e.skipWorktree && old.assumeValid === e.assumeValid) continue;
      const entry = protectedComponent(e.path);
      if (entry) held.push({ kind: "protected-name", path: join(workTreeRoot(repo), e.path), entry: `${entry} (staged in git's index)` });
      else if ((e.skipWorktree && !old?.skipWorktree) || (e.assumeValid && !old?.assumeValid))
        held.push({ kind: "git-file", path: join(repo.gitDir, "index"), detail: `it hides ${e.path} from git status (skip-worktree or assume-unchanged)` });
    }
  }
  // Trees whose content counts as kept: HEAD before and after, and what this command committed or stashed.
  const trees = new Set<string>();
  const headOid = (h: RefSnapshot["head"], refs: RefSnapshot | undefined) =>
    h?.kind === "detached" ? h.oid : h?.kind === "symbolic" ? refs?.refs.get(h.target) : undefined;
  for (const c of [headOid(beforeHead, before), headOid(afterHead, afterCommon)]) addTree(store, c, trees);
  if (before && afterCommon) {
    for (const [name, oid] of afterCommon.refs) {
      if (before.refs.get(name) === oid) continue;
      addTree(store, oid, trees);
      // A stash commit's parents hold the index and the untracked files.
      const c = commitOf(store, oid);
      for (const p of c?.parents.slice(1) ?? []) addTree(store, p, trees);
    }
  }
  const treeList = [...trees];
  const indexedPaths = [...indexed].sort();
  const recoverable: Recoverable = {
    tracked: (rel) => indexed.has(toGitPath(rel)) || treeList.some((t) => treeEntryAt(store, t, toGitPath(rel)) !== undefined),
    tracksUnder: (rel) => {
      const p = toGitPath(rel);
      if (indexed.has(p)) return true;
      // The first index path at or after "p/" tells whether any lies below p.
      let lo = 0;
      let hi = indexedPaths.length;
      const key = `${p}/`;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (indexedPaths[mid]! < key) lo = mid + 1;
        else hi = mid;
      }
      return indexedPaths[lo]?.startsWith(key) === true || treeList.some((t) => treeEntryAt(store, t, p) !== undefined);
    },
    content: (rel, content) => {
      const oid = hashObject("blob", content, format);
      const p = toGitPath(rel);
      // The index names the content only if the object is really there.
      if (indexOids.get(p)?.has(oid) && store.has(oid)) return true;
      if (treeList.some((t) => treeEntryAt(store, t, p)?.oid === oid)) return true;
      return input.newContent(content.length).some((b) => b.equals(content));
    },
  };
  return { held, conflicts, skipped, recoverable, close: () => store.close() };
}

const toGitPath = (rel: string) => rel.split(sep).join("/");

/** A path relative to the git dir or the common dir (a worktree's admin folder is seen through its own paths). */
function gitRelative(repo: RepoLocation, abs: string): string | undefined {
  for (const dir of [repo.gitDir, repo.commonDir]) {
    const rel = relative(dir, abs);
    if (rel === "" || (!rel.startsWith("..") && !rel.startsWith(sep))) return toGitPath(rel) || ".";
  }
  return undefined;
}

const WORKTREE_FILES = /^worktrees\/([^/]+)(?:\/(?:HEAD|ORIG_HEAD|index|commondir|gitdir|logs|logs\/HEAD|locked))?$/;

/**
 * `git worktree add DIR` inside the workspace: the admin folder worktrees/<name> it creates is
 * ordinary state when it is new, names the shared repository as `../..` and points back at a
 * `.git` file inside the workspace (which judge.ts then accepts in the work tree).
 */
function newWorktree(input: GitJudgeInput, repo: RepoLocation, rel: string): boolean {
  if (rel === "worktrees") return !lstatSync(join(repo.commonDir, "worktrees"), { throwIfNoEntry: false });
  const m = WORKTREE_FILES.exec(rel);
  if (!m) return false;
  const admin = join(repo.commonDir, "worktrees", m[1]!);
  if (lstatSync(admin, { throwIfNoEntry: false })) return false;
  const after = (name: string) => {
    const p = input.afterPath(join(admin, name));
    return p ? readSmall(p).trim() : undefined;
  };
  const back = after("gitdir");
  return after("commondir") === "../.." && back !== undefined && isWithin(workTreeRoot(repo), back) && back.endsWith(`${sep}.git`);
}

/**
 * A path in the admin folder of a worktree that lives inside the workspace (worktrees/<name>/...):
 * that worktree's own HEAD, index and logs, judged like the main ones. Undefined otherwise.
 */
function inWorkspaceWorktree(repo: RepoLocation, rel: string): string | undefined {
  const m = /^worktrees\/([^/]+)\/(.+)$/.exec(rel);
  if (!m) return undefined;
  const back = readSmall(join(repo.commonDir, "worktrees", m[1]!, "gitdir")).trim();
  return back && isWithin(workTreeRoot(repo), back) && back.endsWith(`${sep}.git`) ? m[2] : undefined;
}

/** A todo line git runs as a shell command: `exec CMD` or `x CMD` (also after a `break`). */
const TODO_EXEC = /^\s*(exec|x)\s/m;

/** A small state file's text ("" for anything that is not a regular file of at most 1 MiB). */
function readSmall(p: string): string {
  return readTextBounded(p) ?? "";
}

/** Git objects and reflogs compared whole: past this they count as different (held). */
const MAX_COMPARED_GIT_FILE = 64 * 2 ** 20;

function sameBytes(a: string, b: string): boolean {
  const x = readFileBounded(a, MAX_COMPARED_GIT_FILE);
  const y = x && readFileBounded(b, MAX_COMPARED_GIT_FILE);
  return x !== undefined && y !== undefined && x.equals(y);
}

/** A removed reflog that was a file (a ref's log), not a folder of them. */
function isFileRefLog(l: { abs: string }): boolean {
  return lstatSync(l.abs, { throwIfNoEntry: false })?.isFile() === true;
}

function isAppend(lowerPath: string, upperPath: string): boolean {
  const a = readFileBounded(lowerPath, MAX_COMPARED_GIT_FILE);
  const b = a && readFileBounded(upperPath, MAX_COMPARED_GIT_FILE);
  return a !== undefined && b !== undefined && b.length >= a.length && b.subarray(0, a.length).equals(a);
}

function commitOf(store: ObjectStore, oid: string | undefined) {
  if (!oid) return undefined;
  const o = store.read(oid);
  return o?.type === "commit" ? parseCommit(o.data) : undefined;
}

function addTree(store: ObjectStore, commit: string | undefined, out: Set<string>): void {
  const c = commitOf(store, commit);
  if (c) out.add(c.tree);
}

interface RefJudge {
  readonly before: RefSnapshot;
  readonly after: RefSnapshot;
  readonly store: ObjectStore;
  readonly input: GitJudgeInput;
  readonly held: HeldItem[];
}

function judgeRefs(j: RefJudge): void {
  const { before, after, store, held } = j;
  const names = new Set([...before.refs.keys(), ...after.refs.keys()]);
  const remainingTips = [...after.refs.values()];
  for (const name of names) {
    const from = before.refs.get(name) ?? null;
    const to = after.refs.get(name) ?? null;
    if (from === to) continue;
    if (name.startsWith("refs/replace/")) {
      held.push({ kind: "git-ref", ref: name, change: "replace-ref", from, to, detail: "a replace ref changes what every git command shows for an object" });
      continue;
    }
    if (from === null) continue; // a new branch, tag, note or stash
    if (name === "refs/stash") {
      judgeStash(j, from, to);
      continue;
    }
    if (name.startsWith("refs/tags/")) {
      held.push({
        kind: "git-ref",
        ref: name,
        change: to === null ? "deleted" : "moved",
        from,
        to,
        detail: to === null ? "the tag was deleted" : "the tag was moved to another commit",
      });
      continue;
    }
    if (to !== null && isAncestor(store, from, to, WALK_LIMIT) === true) continue; // fast-forward
    // Nothing lost when the old tip stays reachable from a ref that remains.
    if (reachableFromAny(store, from, remainingTips, WALK_LIMIT) === true) continue;
    if (to !== null && isReplay(store, from, to) && reflogKeeps(j, name, from)) continue;
    const lostCommits = commitsBetween(store, from, remainingTips, 1000);
    const n = lostCommits === "unknown" ? "some" : String(lostCommits.length);
    held.push({
      kind: "git-ref",
      ref: name,
      change: to === null ? "deleted" : "rewritten",
      from,
      to,
      detail: `${to === null ? "deleted" : `moved from ${short(from)} to ${short(to)}, not a fast-forward`}; ${n} commit(s) would be on no branch any more`,
    });
  }
}

/** Every commit the move dropped has a replayed twin among the added ones: same author, date and message. */
function isReplay(store: ObjectStore, from: string, to: string): boolean {
  const dropped = commitsBetween(store, from, [to], 1000);
  const added = commitsBetween(store, to, [from], 1000);
  if (dropped === "unknown" || added === "unknown" || dropped.length === 0) return false;
  const key = (oid: string) => {
    const c = commitOf(store, oid);
    return c ? `${c.author}\n${c.message}` : undefined;
  };
  const twins = new Map<string, string>();
  for (const a of added) {
    const k = key(a);
    if (k !== undefined) twins.set(k, a);
  }
  // Same author, date and message, and the same change: the same paths, each to the same content
  // unless the base it was replayed onto had that path changed too (a rebase's merge).
  return dropped.every((d) => {
    const k = key(d);
    const a = k === undefined ? undefined : twins.get(k);
    return a !== undefined && sameChange(store, d, a);
  });
}

function sameChange(store: ObjectStore, d: string, a: string): boolean {
  const cd = commitOf(store, d);
  const ca = commitOf(store, a);
  if (!cd || !ca || cd.parents.length > 1 || ca.parents.length > 1) return false;
  const pd = commitOf(store, cd.parents[0])?.tree;
  const pa = commitOf(store, ca.parents[0])?.tree;
  const paths = diffPaths(store, pd, cd.tree, "");
  const again = diffPaths(store, pa, ca.tree, "");
  if (!paths || !again || paths.length !== again.length || !paths.every((p) => again.includes(p))) return false;
  return paths.every((p) => {
    const to = (t: string | undefined) => (t ? treeEntryAt(store, t, p)?.oid : undefined);
    return to(cd.tree) === to(ca.tree) || to(pd) !== to(pa);
  });
}

/** Commits this command added to a ref (not the stash): none may change a protected name. */
function judgeNewCommits(j: RefJudge): void {
  const { before, after, store, held } = j;
  const old = [...before.refs.values()];
  const seen = new Set<string>();
  for (const [name, to] of after.refs) {
    if (name === "refs/stash" || before.refs.get(name) === to) continue;
    const fresh = commitsBetween(store, to, old, 200);
    if (fresh === "unknown") {
      held.push({ kind: "git-ref", ref: name, change: "moved", from: before.refs.get(name) ?? null, to, detail: "its new commits could not be read" });
      continue;
    }
    for (const c of fresh) {
      if (seen.has(c)) continue;
      seen.add(c);
      const commit = commitOf(store, c);
      const parent = commitOf(store, commit?.parents[0])?.tree;
      const changed = commit ? diffPaths(store, parent, commit.tree, "") : undefined;
      const bad = changed?.find((p) => protectedComponent(p) !== undefined);
      if (changed === undefined || bad !== undefined) {
        held.push({
          kind: "git-ref",
          ref: name,
          change: "moved",
          from: before.refs.get(name) ?? null,
          to,
          detail: bad ? `commit ${short(c)} changes ${bad}, a protected path` : `commit ${short(c)} could not be read`,
        });
        break;
      }
    }
  }
}

/** The branch's reflog, as the command left it, still names the old tip. */
function reflogKeeps(j: RefJudge, name: string, oid: string): boolean {
  const log = j.input.afterPath(join(j.input.repo.commonDir, "logs", ...name.split("/")));
  if (!log) return false;
  const dir = log.slice(0, log.length - join("logs", ...name.split("/")).length - 1);
  return reflogOids(dir, name).includes(oid);
}

/** A stash entry that went is fine only if its changes are in the work tree now (a pop). */
function judgeStash(j: RefJudge, from: string, to: string | null): void {
  const beforeEntries = reflogOids(j.input.repo.commonDir, "refs/stash");
  const logAfter = j.input.afterPath(join(j.input.repo.commonDir, "logs", "refs", "stash"));
  const afterEntries = logAfter ? reflogOids(logAfter.slice(0, logAfter.length - "/logs/refs/stash".length), "refs/stash") : [];
  const gone = [...new Set([from, ...beforeEntries])].filter((o) => o !== to && !afterEntries.includes(o) && /^[0-9a-f]{40,64}$/.test(o) && !/^0+$/.test(o));
  for (const w of gone) {
    if (stashApplied(j, w)) continue;
    j.held.push({
      kind: "git-ref",
      ref: "refs/stash",
      change: "deleted",
      from: w,
      to,
      detail: `stash entry ${short(w)} was dropped and its changes are not in the work tree`,
    });
  }
}

function stashApplied(j: RefJudge, w: string): boolean {
  const store = j.store;
  const c = commitOf(store, w);
  const base = commitOf(store, c?.parents[0]);
  if (!c || !base) return false;
  const changed = diffPaths(store, base.tree, c.tree, "");
  if (changed === undefined) return false;
  // `stash -u` keeps the untracked files in a third parent: they must be back in the work tree too.
  const untracked = c.parents[2] ? commitOf(store, c.parents[2]) : undefined;
  if (c.parents[2] && !untracked) return false;
  const wanted: Array<{ path: string; tree: string }> = changed.map((p) => ({ path: p, tree: c.tree }));
  if (untracked) {
    const files = diffPaths(store, undefined, untracked.tree, "");
    if (files === undefined) return false;
    wanted.push(...files.map((p) => ({ path: p, tree: untracked.tree })));
  }
  const ws = workTreeRoot(j.input.repo);
  for (const { path: p, tree } of wanted) {
    const want = treeEntryAt(store, tree, p);
    const afterPath = j.input.afterPath(join(ws, ...p.split("/")));
    if (!want) {
      if (afterPath !== null) return false;
      continue;
    }
    if (!afterPath) return false;
    const content = readFileBounded(afterPath, MAX_COMPARED_GIT_FILE);
    if (!content || hashObject("blob", content, want.oid.length === 64 ? "sha256" : "sha1") !== want.oid) return false;
  }
  return true;
}

function workTreeRoot(repo: RepoLocation): string {
  return repo.gitDir.endsWith(`${sep}.git`) ? repo.gitDir.slice(0, -5) : repo.gitDir;
}

/** Paths (files) that differ between two trees, bounded. */
function diffPaths(store: ObjectStore, a: string | undefined, b: string | undefined, prefix: string, budget = { n: 20_000 }): string[] | undefined {
  if (a === b) return [];
  if (--budget.n < 0) return undefined;
  const read = (t: string | undefined) => {
    if (!t) return [];
    const o = store.read(t);
    return o?.type === "tree" ? parseTree(o.data, t.length === 64 ? "sha256" : "sha1") : undefined;
  };
  const ea = read(a);
  const eb = read(b);
  if (!ea || !eb) return undefined;
  const ma = new Map(ea.map((e) => [e.name, e]));
  const mb = new Map(eb.map((e) => [e.name, e]));
  const out: string[] = [];
  for (const name of new Set([...ma.keys(), ...mb.keys()])) {
    const x = ma.get(name);
    const y = mb.get(name);
    if (x?.oid === y?.oid && x?.mode === y?.mode) continue;
    const path = prefix ? `${prefix}/${name}` : name;
    const isTree = (e: typeof x) => e?.mode === "40000";
    if (isTree(x) || isTree(y)) {
      const sub = diffPaths(store, isTree(x) ? x!.oid : undefined, isTree(y) ? y!.oid : undefined, path, budget);
      if (sub === undefined) return undefined;
      out.push(...sub);
      if (!isTree(x) && x) out.push(path);
      if (!isTree(y) && y) out.push(path);
    } else out.push(path);
  }
  return out;
}

export type { Identity };
