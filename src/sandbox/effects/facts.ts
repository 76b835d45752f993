// What a staged command actually did to each staged root, read from its upper layer right after
// it ended (all its processes gone) and before the holder lets the merged view go.
//
// The upper layer alone says what was written: new and changed entries are ordinary files there.
// What was removed is harder: a removed lower file leaves a whiteout, but a lower directory that was
// removed and made again is marked opaque with an extended attribute Node cannot read. So for every
// directory that exists in both layers, the lower entries missing from the merged view are the
// removed ones: one comparison covers whiteouts and opaque directories alike.
//
// Plain data out (it crosses the spawner's IPC channel): judging happens elsewhere.

import { lstatSync, type BigIntStats, type Dirent, type Stats } from "node:fs";
import { join } from "node:path";
import { isRegenerableName } from "../../policy/places.ts";
import { identityOf, type Identity } from "./identity.ts";
import { readRefs, type RefSnapshot } from "./git/refs.ts";
import { readIndex } from "./git/index-file.ts";
import { specialEntriesIn } from "./landing.ts";
import { listDir } from "./stage-read.ts";

export type EntryType = "file" | "dir" | "symlink" | "other";

export type Change =
  /** An entry the command wrote: new (`before` null) or replacing what the lower layer had. */
  | {
      readonly op: "write";
      readonly rel: string;
      readonly type: EntryType;
      readonly before: EntryType | null;
      /** The lower entry as it was when the command ended (null: none). */
      readonly beforeId: Identity | null;
      readonly size: number;
      readonly mode: number;
      readonly newTree?: boolean;
    }
  /** A lower entry the command removed (a directory: with everything below it). */
  | { readonly op: "delete"; readonly rel: string; readonly before: EntryType; readonly beforeId: Identity };

export interface RootFacts {
  readonly root: string;
  readonly upper: string;
  readonly changes: readonly Change[];
  /** More entries than the bound: the change set is incomplete and cannot be applied piecemeal. */
  readonly truncated: boolean;
  /** The refs of each git dir the command touched, as the merged view showed them after it. */
  readonly gitAfter: readonly GitAfter[];
  /** Entries whose names are not valid UTF-8: they cannot be named to be applied (held). */
  readonly badNames: readonly string[];
}

export interface GitAfter {
  /** The git dir's real (lower) path. */
  readonly gitDir: string;
  readonly refs: RefSnapshot | undefined;
}

export interface FactsPlanRoot {
  readonly root: string;
  readonly upper: string;
  readonly merged: string;
  /** Git dirs inside this root (real paths) whose refs are read after the command, when it touched them. */
  readonly gitDirs?: readonly string[];
}

export type StagedFacts = { readonly ok: true; readonly roots: readonly RootFacts[] } | { readonly ok: false; readonly reason: string };

export const MAX_CHANGES = 200_000;

export function entryType(st: Stats | BigIntStats): EntryType {
  if (st.isFile()) return "file";
  if (st.isDirectory()) return "dir";
  if (st.isSymbolicLink()) return "symlink";
  return "other";
}

/** A whiteout: the overlay's mark for a removed lower entry (a character device 0/0). */
const parentRel = (rel: string) => (rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "");

export function isWhiteout(st: Stats): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

const lstat = (p: string): BigIntStats | undefined => {
  try {
    return lstatSync(p, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined; // ENOTDIR: a file on the way
  }
};

/**
 * Collect the changes of each root. `viewPrefix` makes a merged path readable from here: the
 * holder's `/proc/<pid>/root` (its mount namespace), or "" where the merged view is mounted here.
 */
export function collectFacts(roots: readonly FactsPlanRoot[], viewPrefix: string, max = MAX_CHANGES): StagedFacts {
  try {
    return { ok: true, roots: roots.map((r) => collectRoot(r, viewPrefix, max)) };
  } catch (e) {
    return { ok: false, reason: `the staged changes could not be read: ${(e as Error).message}` };
  }
}

function collectRoot(r: FactsPlanRoot, viewPrefix: string, max: number): RootFacts {
  const changes: Change[] = [];
  let truncated = false;
  const push = (c: Change) => {
    if (changes.length >= max) truncated = true;
    else changes.push(c);
  };
  const merged = viewPrefix + r.merged;
  const badNames: string[] = [];
  /** Names of a folder; one that is not valid UTF-8 would not name the same entry again. */
  const namesOf = (dir: string, rel: string, written = false): string[] => {
    const raw = listDir(dir, { encoding: "buffer" });
    const out: string[] = [];
    for (const b of raw) {
      const n = b.toString("utf8");
      if (Buffer.from(n, "utf8").equals(b)) out.push(n);
      else if (written && badNames.length < 100) badNames.push(`${rel === "" ? "" : `${rel}/`}${JSON.stringify(b.toString("latin1")).slice(1, -1)}`);
    }
    return out;
  };
  // What git tracks (the index before the command), read once and only if a regenerable-named folder
  // was replaced: a tracked one is the user's work, judged file by file.
  let indexed: string[] | undefined;
  const tracked = (dirRel: string): boolean => {
    if (indexed === undefined) {
      const ix = join(r.root, ".git", "index");
      const parsed = readIndex(ix) ?? readIndex(ix, "sha256");
      // An index that exists but cannot be read: take everything as tracked (judged file by file).
      if (!parsed && lstat(ix)) return true;
      indexed = (parsed?.entries ?? []).map((e) => e.path).sort();
    }
    const key = `${dirRel}/`;
    let lo = 0;
    let hi = indexed.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (indexed[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    return indexed[lo]?.startsWith(key) === true;
  };
  // Inside a tree taken whole (not listed entry by entry): what is never applied, to be reported.
  const listSpecial = (dir: string, rel: string) => {
    for (const e of specialEntriesIn(dir, rel)) push({ op: "write", rel: e.rel, type: "other", before: null, beforeId: null, size: 0, mode: e.mode });
  };
  // Directories to visit, relative to the root ("" is the root itself, present in both layers).
  const stack: Array<{ rel: string; both: boolean }> = [{ rel: "", both: true }];
  while (stack.length > 0 && !truncated) {
    const { rel, both } = stack.pop()!;
    const upperDir = rel === "" ? r.upper : join(r.upper, rel);
    const names = namesOf(upperDir, rel, true);
    if (both) {
      // Lower entries the merged view no longer has: removed (whiteout or opaque directory).
      let lowerNames: string[] = [];
      try {
        lowerNames = namesOf(rel === "" ? r.root : join(r.root, rel), rel);
      } catch {
        lowerNames = [];
      }
      if (lowerNames.length > 0) {
        const now = new Set(namesOf(rel === "" ? merged : join(merged, rel), rel));
        for (const n of lowerNames) {
          if (now.has(n)) continue;
          const st = lstat(join(r.root, rel, n));
          if (st) push({ op: "delete", rel: join(rel, n), before: entryType(st), beforeId: identityOf(st) });
        }
      }
    }
    for (const n of names) {
      const childRel = rel === "" ? n : join(rel, n);
      const up = lstatSync(join(upperDir, n));
      // Counted above, from the merged view; in a new tree there is no lower entry to remove, so
      // it is only a device the command made (never applied, so listed to be reported).
      if (isWhiteout(up) && both) continue;
      const low = both ? lstat(join(r.root, childRel)) : undefined;
      const lowType = low ? entryType(low) : null;
      if (up.isDirectory()) {
        if (lowType === "dir") {
          // Build output replaced whole (rm -rf node_modules && npm ci): where the merged view shows
          // exactly the upper layer at every level, the upper tree is the result. One unit, not
          // one change per file; only a repository inside it is looked for.
          if (isRegenerableName(n) && !tracked(childRel) && replacedWhole(join(upperDir, n), rel === "" ? join(merged, n) : join(merged, rel, n))) {
            push({ op: "write", rel: childRel, type: "dir", before: "dir", beforeId: identityOf(low!), size: 0, mode: up.mode & 0o7777, newTree: true });
            const found = repositoriesIn(join(upperDir, n), childRel);
            if (!found.complete) truncated = true;
            for (const g of found.repos)
              push({ op: "write", rel: g, type: g.endsWith("/HEAD") ? "file" : "dir", before: null, beforeId: null, size: 0, mode: 0o644 });
            listSpecial(join(upperDir, n), childRel);
            continue;
          }
          stack.push({ rel: childRel, both: true });
          continue;
        }
        // A new directory: everything below it is new too. A regenerable one (node_modules, dist)
        // is taken whole and not listed, but for what could run code: a repository inside it.
        const regenerable = isRegenerableName(n);
        push({
          op: "write",
          rel: childRel,
          type: "dir",
          before: lowType,
          beforeId: low ? identityOf(low) : null,
          size: 0,
          mode: up.mode & 0o7777,
          newTree: true,
        });
        if (!regenerable) stack.push({ rel: childRel, both: false });
        else {
          const found = repositoriesIn(join(upperDir, n), childRel);
          if (!found.complete) truncated = true;
          for (const g of found.repos)
            push({ op: "write", rel: g, type: g.endsWith("/HEAD") ? "file" : "dir", before: null, beforeId: null, size: 0, mode: 0o644 });
          listSpecial(join(upperDir, n), childRel);
        }
        continue;
      }
      push({ op: "write", rel: childRel, type: entryType(up), before: lowType, beforeId: low ? identityOf(low) : null, size: up.size, mode: up.mode & 0o7777 });
    }
  }
  // Every git dir a change lies in (the workspace's, a nested repository's, a submodule's, one the
  // command made): the nearest folder above each change shaped like one, as the command left it.
  const gitDirs = new Set<string>();
  const shaped = new Map<string, boolean>();
  const isGitDir = (rel: string): boolean => {
    let hit = shaped.get(rel);
    if (hit === undefined) {
      const at = (n: string) => lstat(rel === "" ? join(merged, n) : join(merged, rel, n));
      hit = at("HEAD")?.isFile() === true && at("objects")?.isDirectory() === true && at("refs")?.isDirectory() === true;
      shaped.set(rel, hit);
    }
    return hit;
  };
  for (const c of changes) {
    for (let d = parentRel(c.rel); ; d = parentRel(d)) {
      if (isGitDir(d)) {
        gitDirs.add(d);
        break;
      }
      if (d === "") break;
    }
  }
  for (const g of r.gitDirs ?? []) if (g === r.root || g.startsWith(r.root + "/")) gitDirs.add(g === r.root ? "" : g.slice(r.root.length + 1));
  const gitAfter: GitAfter[] = [...gitDirs].map((rel) => ({
    gitDir: rel === "" ? r.root : join(r.root, rel),
    refs: readRefs(rel === "" ? merged : join(merged, rel)),
  }));
  return { root: r.root, upper: r.upper, changes, truncated, gitAfter, badNames };
}

const SCAN_DIRS = 100_000;

/** Every folder of the upper tree lists exactly what the merged view shows there: nothing of the lower tree shows through. */
function replacedWhole(upper: string, merged: string): boolean {
  const stack: Array<[string, string]> = [[upper, merged]];
  let seen = 0;
  while (stack.length > 0) {
    if (++seen > SCAN_DIRS) return false;
    const [u, m] = stack.pop()!;
    let up: Dirent[];
    let mv: string[];
    try {
      up = listDir(u, { withFileTypes: true });
      mv = listDir(m);
    } catch {
      return false;
    }
    if (up.length !== mv.length) return false;
    const names = new Set(mv);
    for (const e of up) {
      // A whiteout (a character device) would not be listed in the merged view: not a whole replacement.
      if (!names.has(e.name) || e.isCharacterDevice()) return false;
      if (e.isDirectory()) stack.push([join(u, e.name), join(m, e.name)]);
    }
  }
  return true;
}

/**
 * Inside a new regenerable tree, only what would make git run code: a `.git` (any spelling a
 * case-insensitive file system folds to it) or a folder shaped like a git dir (HEAD, objects, refs).
 */
function repositoriesIn(dir: string, rel: string): { repos: string[]; complete: boolean } {
  const out: string[] = [];
  const stack: Array<[string, string]> = [[dir, rel]];
  let seen = 0;
  while (stack.length > 0 && ++seen <= SCAN_DIRS) {
    const [d, r] = stack.pop()!;
    let entries: Dirent[];
    try {
      entries = listDir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    const names = new Set(entries.map((e) => e.name));
    // Its HEAD stands for it: the git dir above that change is then found like any other.
    if (names.has("HEAD") && names.has("objects") && names.has("refs")) {
      out.push(`${r}/HEAD`);
      continue;
    }
    for (const e of entries) {
      if (e.name.toLowerCase().replace(/[. ]+$/, "") === ".git") out.push(`${r}/${e.name}`);
      else if (e.isDirectory()) stack.push([join(d, e.name), `${r}/${e.name}`]);
    }
  }
  return { repos: out, complete: seen <= SCAN_DIRS };
}
