// What may land in the workspace from a stage (P18): only regular files, folders and symlinks;
// no setuid/setgid bits (nor sticky on a file); no file capability; no inode shared with a name
// outside what is applied. Checked on every staged entry right before it moves, whatever tree it
// is in: a new build-output tree (node_modules, dist) still arrives by one rename, after one walk
// that fixes its entries in the stage. The stage is this process's own and the command's
// processes are gone, so what the walk saw with lstat is what it changes by path.

import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  constants,
  type Dirent,
  lchownSync,
  lstatSync,
  mkdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  type Stats,
  utimesSync,
} from "node:fs";
import { join } from "node:path";
import { hostEnv, trustedExecutable } from "../linux/host-tools.ts";
import { listDir } from "./stage-read.ts";

export type Landing =
  /** `removed`: special entries (FIFOs, sockets, devices) taken out of a staged tree: never applied. */
  | { readonly ok: true; readonly removed: readonly string[] }
  /** The staged entry itself is a special file: nothing of it is applied. */
  | { readonly ok: false; readonly why: string };

export const SPECIAL_WHY = "a special file (FIFO, socket or device) is never applied";

const isKept = (st: Stats) => st.isFile() || st.isDirectory() || st.isSymbolicLink();

/**
 * Make the staged entry at `source` (a file, a symlink, or a whole tree) fit to land, in place.
 * `fresh`: give every file and folder a new inode (a copy, a new folder the entries move into), so
 * no extended attribute comes along: the way when no tool can remove them (dropAttributes).
 */
export function prepareToLand(source: string, fresh = false): Landing {
  const top = lstatSync(source);
  if (!isKept(top)) return { ok: false, why: SPECIAL_WHY };
  const removed: string[] = [];
  const stack: Array<[string, Stats]> = [[source, top]];
  while (stack.length > 0) {
    const [p, st] = stack.pop()!;
    if (st.isDirectory()) {
      if (fresh) renewFolder(p, st);
      // A setgid folder gives its group to whatever is made in it later: the command's group choice.
      if ((st.mode & 0o6000) !== 0) chmodSync(p, st.mode & 0o1777);
      for (const n of listDir(p)) {
        const child = join(p, n);
        const cst = lstatSync(child);
        if (isKept(cst)) stack.push([child, cst]);
        else {
          rmSync(child, { force: true });
          removed.push(child);
        }
      }
    } else if (st.isFile()) fixFile(p, st, fresh);
  }
  return { ok: true, removed };
}

/** The folder at `p` as a new inode with the same mode and times: its entries move into it. */
function renewFolder(p: string, st: Stats): void {
  const tmp = `${p}.pi-auto-mode-renew`;
  mkdirSync(tmp, { mode: 0o700 });
  for (const n of listDir(p)) renameSync(join(p, n), join(tmp, n));
  rmdirSync(p);
  renameSync(tmp, p);
  chmodSync(p, st.mode & 0o7777);
  utimesSync(p, st.atime, st.mtime);
}

function fixFile(p: string, st: Stats, fresh: boolean): void {
  // Another name for this inode lies elsewhere (a link the command made to a workspace file, or
  // anything a stage could hold): landing it would make the two one file. A copy lands instead.
  if (st.nlink > 1 || fresh) {
    const tmp = `${p}.pi-auto-mode-unlink`;
    rmSync(tmp, { force: true });
    copyFileSync(p, tmp, constants.COPYFILE_EXCL);
    utimesSync(tmp, st.atime, st.mtime);
    renameSync(tmp, p);
  }
  // A change of owner, even to the same one, makes the kernel drop a file capability
  // (security.capability) and the setuid/setgid bits: no xattr call is needed for either.
  lchownSync(p, st.uid, -1);
  if ((st.mode & 0o7000) !== 0) chmodSync(p, st.mode & 0o777);
}

/** Special entries (FIFOs, sockets, devices) inside a staged tree, relative to `rel`: to be reported. */
export function specialEntriesIn(dir: string, rel: string, maxDirs = 100_000): { rel: string; mode: number }[] {
  const out: { rel: string; mode: number }[] = [];
  const stack: Array<[string, string]> = [[dir, rel]];
  let seen = 0;
  while (stack.length > 0 && ++seen <= maxDirs) {
    const [d, r] = stack.pop()!;
    let list: Dirent[];
    try {
      list = listDir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of list) {
      if (e.isDirectory()) stack.push([join(d, e.name), `${r}/${e.name}`]);
      else if (!e.isFile() && !e.isSymbolicLink()) out.push({ rel: `${r}/${e.name}`, mode: 0 });
    }
  }
  return out;
}

// Extended attributes: Node has no call for them. The overlay keeps its own marks in them
// (trusted.overlay.* as root, user.overlay.* in a user namespace: opaque, impure, origin), a
// command as root can set user.overlay.* names, and a copy-up keeps a lower file's security.*
// ones. None of that is the workspace's. python3 at a fixed system path, owned by root and
// writable by no one else, removes them; without it every entry lands as a new inode instead.
const PYTHONS = ["/usr/bin/python3", "/bin/python3"];

const DROP_SCRIPT = `import os, sys
bad = ("trusted.", "security.", "user.overlay.")
def clean(p):
    try: names = os.listxattr(p, follow_symlinks=False)
    except OSError: return
    for a in names:
        if a.startswith(bad) and a != "security.selinux": os.removexattr(p, a, follow_symlinks=False)
for top in sys.stdin.buffer.read().split(b"\\0"):
    if not top: continue
    clean(top)
    if os.path.isdir(top) and not os.path.islink(top):
        for d, ds, fs in os.walk(top):
            for n in ds + fs: clean(os.path.join(d, n))
`;

/** The tool that can remove extended attributes (its real path), or undefined. */
export function attributeTool(candidates: readonly string[] = PYTHONS): string | undefined {
  // The same rule as every other program the host runs around a command (host-tools.ts).
  for (const p of candidates) {
    const t = trustedExecutable(p);
    if ("chain" in t) return t.chain.at(-1);
  }
  return undefined;
}

/** Remove the trusted.*, security.* and user.overlay.* attributes of staged entries (trees whole); throws when it cannot. */
export function dropAttributes(tool: string, paths: readonly string[]): void {
  if (paths.length === 0) return;
  // The paths on its standard input, NUL-separated: any number of them, any bytes but NUL.
  const r = spawnSync(tool, ["-I", "-S", "-c", DROP_SCRIPT], {
    env: { ...hostEnv(), LC_ALL: "C" },
    encoding: "utf8",
    input: `${paths.join("\0")}\0`,
    stdio: ["pipe", "ignore", "pipe"],
    timeout: 120_000,
  });
  if (r.status !== 0)
    throw new Error(`the staged entries' extended attributes could not be removed: ${(r.stderr ?? r.error?.message ?? "").trim().split("\n").at(-1)}`);
}
