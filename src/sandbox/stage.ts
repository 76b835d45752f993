// A staged run: the folders a copy-on-write mount of each staged root needs (lower, upper, work,
// merged), under one private stage folder outside every writable root. Platform neutral: the Linux
// holder (linux/holder.ts) mounts them; effects/ reads what the command left in the upper layers.
//
// Where the stage folder lives matters twice: on the workspace's file system, applying a file is
// one rename (else a copy), and it must never lie inside a staged root (an overlay refuses layers
// that overlap) or be writable from inside the sandbox (the layout masks it there).

import { chmodSync, type Dirent, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { isWithin } from "../policy/places.ts";

/** What a staged root is, which decides how its changes are judged. */
export type StagedRootKind = "workspace" | "git-dir";

export interface StagedRoot {
  readonly kind: StagedRootKind;
  /** The real path of the root: the lower layer, and where the merged view is mounted in the sandbox. */
  readonly root: string;
  /** Where the lower layer is bound first when `root` cannot be named in mount options. */
  readonly lower: string;
  readonly upper: string;
  readonly work: string;
  readonly merged: string;
}

export interface StageRun {
  readonly id: string;
  readonly dir: string;
  readonly roots: readonly StagedRoot[];
  /** A file made just before the command starts: its ctime is the file system's clock at start. */
  readonly marker: string;
}

/** Characters the kernel's overlay option parser treats as separators or escapes. */
const UNSAFE_IN_OPTIONS = /[,:\\\n\r\t ]/;

/** Whether a path can be written into overlay mount options as it is. */
export function safeForMountOptions(p: string): boolean {
  return !UNSAFE_IN_OPTIONS.test(p);
}

/** Why a stage folder cannot serve these roots, or undefined when it can. */
export function stageRootProblem(stageRoot: string, roots: readonly string[]): string | undefined {
  if (!safeForMountOptions(stageRoot)) return `its path ${JSON.stringify(stageRoot)} holds a character overlay options cannot carry`;
  for (const r of roots) {
    if (isWithin(r, stageRoot)) return `it lies inside ${r}, which it would stage`;
    if (isWithin(stageRoot, r)) return `it holds ${r}, which it would stage`;
  }
  return undefined;
}

/** The first candidate folder that can stage these roots. */
export function pickStageRoot(candidates: readonly string[], roots: readonly string[]): { readonly dir: string } | { readonly problem: string } {
  const problems: string[] = [];
  for (const c of candidates) {
    const p = stageRootProblem(c, roots);
    if (p === undefined) return { dir: c };
    problems.push(`${c}: ${p}`);
  }
  return { problem: `no folder to stage the workspace in (${problems.join("; ")})` };
}

/** Make the folders of one run. The caller owns the run and must remove it (removeRun). */
export function createRun(stageRoot: string, roots: readonly { readonly kind: StagedRootKind; readonly root: string }[]): StageRun {
  const runs = join(stageRoot, "runs");
  mkdirSync(runs, { recursive: true, mode: 0o700 });
  const id = `${Date.now().toString(36)}-${process.pid}-${randomBytes(4).toString("hex")}`;
  const dir = join(runs, id);
  mkdirSync(dir, { mode: 0o700 });
  const staged: StagedRoot[] = roots.map((r, i) => {
    const base = join(dir, `r${i}`);
    const s: StagedRoot = {
      kind: r.kind,
      root: r.root,
      lower: safeForMountOptions(r.root) ? r.root : join(base, "lower"),
      upper: join(base, "upper"),
      work: join(base, "work"),
      merged: join(base, "merged"),
    };
    mkdirSync(base, { mode: 0o700 });
    for (const d of [s.upper, s.work, s.merged]) mkdirSync(d, { mode: 0o755 });
    if (s.lower !== s.root) mkdirSync(s.lower, { mode: 0o755 });
    return s;
  });
  const marker = join(dir, "started");
  return { id, dir, roots: staged, marker };
}

/** Stamp the start: the marker's ctime is compared with the lower files' ctimes after the run. */
export function markStart(run: StageRun): bigint {
  writeFileSync(run.marker, "");
  return statSync(run.marker, { bigint: true }).ctimeNs;
}

/** The kernel makes each overlay's work/work with mode 0 (and may leave entries in it): open them up. */
function openWorkDirs(dir: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) {
    const inner = join(dir, n, "work", "work");
    try {
      if (lstatSync(inner, { throwIfNoEntry: false })?.isDirectory()) chmodSync(inner, 0o700);
    } catch {
      // the removal says what is wrong
    }
  }
}

/**
 * Remove a folder that may hold overlay work dirs, wherever they are in it: a holder killed while
 * it mounted can leave a mode-0 work/work after its run was opened up, which only root could
 * remove as it is.
 */
export function removeTree(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    return;
  } catch {
    // opened up below, then once more
  }
  const open = (d: string): void => {
    let entries: Dirent[];
    try {
      chmodSync(d, 0o700);
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) open(join(d, e.name));
  };
  open(dir);
  rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
}

/** Remove a run's folders. */
export function removeRun(run: Pick<StageRun, "dir">): void {
  openWorkDirs(run.dir);
  rmSync(run.dir, { recursive: true, force: true, maxRetries: 2 });
}

/**
 * Remove a run off the critical path: opened up and renamed out of the runs folder at once (so
 * nothing mistakes it for a live run), deleted in the background. A crash leaves it to the next
 * start's sweep.
 */
export function discardRun(run: Pick<StageRun, "dir">): void {
  openWorkDirs(run.dir);
  const trash = `${run.dir}.trash`;
  try {
    renameSync(run.dir, trash);
  } catch {
    removeRun(run);
    return;
  }
  void rm(trash, { recursive: true, force: true, maxRetries: 2 }).catch(() => {
    // the next start's sweep removes it
  });
}

/** Runs left by processes that are gone (crashed or killed): their folders hold nothing anyone needs. */
export function staleRuns(stageRoot: string, alive: (pid: number) => boolean): string[] {
  let names: string[];
  try {
    names = readdirSync(join(stageRoot, "runs"));
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const n of names) {
    const pid = Number(n.split("-")[1]);
    if (n.endsWith(".trash") || !Number.isInteger(pid) || pid <= 0 || !alive(pid)) {
      const p = join(stageRoot, "runs", n);
      if (lstatSync(p, { throwIfNoEntry: false })?.isDirectory()) out.push(p);
    }
  }
  return out;
}
