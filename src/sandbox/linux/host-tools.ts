// The programs the host side of the sandbox runs (P18): bubblewrap, util-linux's unshare, mount and
// nsenter, bash for the holder, node for the spawner and the network forwarder. Each is resolved
// once, to an absolute path, from a fixed list of system folders: never from the agent's PATH, which
// may name a folder of the workspace (an activated .venv, $PWD/node_modules/.bin) where a sandboxed
// command can leave a `mount` that the host would then run outside the sandbox (issue 22).
//
// A candidate is refused, with its reason, when anyone but root or this user could change what it
// runs: the file, every folder above it, and every symlink on the way to the real file must be
// owned by root or this user and writable by neither group nor others. Whether a tool lies under a
// writable root of the sandbox (the workspace, the temporary root, a staged git dir) depends on the
// request, so that is checked for each request (`toolUnderRoot`), against every path on its chain.

import { accessSync, constants, lstatSync, readlinkSync, realpathSync, type Stats } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { isWithin } from "../../policy/places.ts";

/** The only folders a host tool is taken from, in this order (the first that has it decides). */
export const SYSTEM_DIRS = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] as const;

/** The PATH of every host-side child (holder, spawner, forwarder): the system folders, nothing of the agent's. */
export const HOST_PATH = SYSTEM_DIRS.join(":");

export type HostToolName = "bwrap" | "unshare" | "mount" | "nsenter" | "bash" | "node";

export type HostTool =
  | {
      readonly ok: true;
      readonly name: HostToolName;
      /** The absolute path the host runs. */
      readonly path: string;
      /** Every path on the way from `path` to the real file (each symlink and the file, as spelled and physically). */
      readonly chain: readonly string[];
    }
  | { readonly ok: false; readonly name: HostToolName; readonly reason: string; readonly missing: boolean };

/** The environment of every host-side child: a fixed PATH and the C locale, no variable of the agent's. */
export function hostEnv(): NodeJS.ProcessEnv {
  return { PATH: HOST_PATH, LANG: "C" };
}

const MAX_LINKS = 40;

const euid = (): number => (typeof process.geteuid === "function" ? process.geteuid() : -1);

/** Why a file or folder's owner or mode lets someone else change it, or undefined. */
function modeProblem(path: string, st: Stats): string | undefined {
  const me = euid();
  if (st.uid !== 0 && st.uid !== me) return `${path} is owned by uid ${st.uid}, neither root nor this user`;
  if ((st.mode & 0o022) !== 0) {
    const who = [st.mode & 0o020 ? "its group" : "", st.mode & 0o002 ? "others" : ""].filter(Boolean).join(" and ");
    return `${path} is writable by ${who} (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")})`;
  }
  return undefined;
}

/**
 * A root-owned sticky folder open to all (/tmp): others may add names to it, but none may rename or
 * remove an entry they do not own, and the next step on the path is checked for its own owner. A
 * checkout under /tmp (root's or this user's) is as safe as one under a home.
 */
const stickyShared = (st: Stats): boolean => st.uid === 0 && (st.mode & 0o1000) !== 0;

/** Why a folder (and every folder above it, through symlinks) could be changed by someone else, or undefined. */
function folderProblem(dir: string, seen: Set<string>, depth: number): string | undefined {
  if (depth > MAX_LINKS) return `too many symlinks above ${dir}`;
  let cur = "/";
  for (const part of dir.split("/").filter(Boolean)) {
    const next = join(cur, part);
    const st = lstatSync(next, { throwIfNoEntry: false });
    if (!st) return `${next} does not exist`;
    if (st.isSymbolicLink()) {
      // The link's folder is checked already (it is `cur`); where it points is checked as a folder.
      const target = resolve(cur, readlinkSync(next));
      if (!seen.has(target)) {
        seen.add(target);
        const why = folderProblem(target, seen, depth + 1);
        if (why) return why;
      }
      cur = target;
      continue;
    }
    if (!st.isDirectory()) return `${next} is not a folder`;
    const why = stickyShared(st) ? undefined : modeProblem(next, st);
    if (why) return why;
    cur = next;
  }
  const root = lstatSync("/");
  return modeProblem("/", root);
}

/**
 * Whether `path` may be run on the host: every step from it to the real file, and every folder
 * above each step, is root's or this user's and writable by no one else; the real file is a
 * regular, executable file. Gives the chain of paths it followed, or why not.
 */
export function trustedExecutable(path: string): { readonly chain: readonly string[] } | { readonly reason: string } {
  if (!isAbsolute(path)) return { reason: `${path} is not an absolute path` };
  const chain: string[] = [];
  const seen = new Set<string>();
  let cur = resolve(path);
  for (let hops = 0; ; hops++) {
    if (hops > MAX_LINKS) return { reason: `too many symlinks from ${path}` };
    const why = folderProblem(dirname(cur), seen, 0);
    if (why) return { reason: why };
    // Each step both as spelled and where it physically is (its folder's symlinks resolved), so
    // a writable root, which is a real path, is found on it whichever way it is reached.
    chain.push(cur);
    const physical = join(realpathSync(dirname(cur)), basename(cur));
    if (physical !== cur) chain.push(physical);
    let st: Stats | undefined;
    try {
      st = lstatSync(cur, { throwIfNoEntry: false });
    } catch (e) {
      return { reason: `${cur} cannot be examined: ${(e as Error).message}` };
    }
    if (!st) return { reason: `${cur} does not exist` };
    if (st.isSymbolicLink()) {
      cur = resolve(dirname(cur), readlinkSync(cur));
      continue;
    }
    if (!st.isFile()) return { reason: `${cur} is not a regular file` };
    const mode = modeProblem(cur, st);
    if (mode) return { reason: mode };
    try {
      accessSync(cur, constants.X_OK);
    } catch {
      return { reason: `${cur} is not executable` };
    }
    return { chain };
  }
}

/**
 * One host tool: the first of the system folders that has `name` decides (a refused one is not
 * skipped for the next: what is wrong with it is reported). `explicit` (a configured bwrapPath, the
 * running node) is the one candidate instead, held to the same checks.
 */
export function resolveHostTool(name: HostToolName, explicit?: string): HostTool {
  const candidates = explicit !== undefined ? [explicit] : SYSTEM_DIRS.map((d) => join(d, name));
  for (const c of candidates) {
    if (isAbsolute(c) && !lstatSync(c, { throwIfNoEntry: false })) continue;
    const t = trustedExecutable(c);
    if ("reason" in t) return { ok: false, name, reason: `${c} is refused: ${t.reason}`, missing: false };
    return { ok: true, name, path: c, chain: t.chain };
  }
  const where = explicit !== undefined ? explicit : SYSTEM_DIRS.join(", ");
  return { ok: false, name, reason: `${name} is not in ${where}`, missing: true };
}

/** Why a resolved tool may not run for a request with these writable roots (a command could replace it), or undefined. */
export function toolUnderRoot(tool: HostTool & { ok: true }, roots: readonly string[]): string | undefined {
  for (const p of tool.chain)
    for (const r of roots)
      if (isWithin(r, p))
        return `the host tool ${tool.path} lies under ${r}, which the sandboxed command can write (${p === tool.path ? "the file" : `via ${p}`})`;
  return undefined;
}

/** One line for doctor and the driver's facts: the path of each tool, or its refusal with the reason. */
export function hostToolsLine(tools: readonly HostTool[]): string {
  return `host tools (PATH ${HOST_PATH}): ${tools.map((t) => (t.ok ? `${t.name} ${t.path}` : `${t.name} refused: ${t.reason}`)).join("; ")}`;
}
