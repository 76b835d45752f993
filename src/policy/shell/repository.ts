// Facts about the workspace's git repository that the shell analysis needs (whether its hooks
// run or may be written, the checked-out branch), read from its files and kept while they are unchanged.

import { readdirSync, readFileSync, type Stats } from "node:fs";
import { join, resolve } from "node:path";
import { settled, stampOf, unchanged, type Dependency, type StampBook } from "../../request/stamps.ts";
import { isWithin, protectedComponent, type Places } from "../places.ts";

/**
 * The files a repository fact was read from, each stamped before it was read, so a cache of the
 * fact can tell when any of them changed (see stamps.ts).
 */
class Reads {
  readonly deps: Dependency[] = [];
  readonly now = Date.now();
  settled = true;

  private note(path: string): Stats | undefined {
    // A missing file (no ~/.gitconfig) is checked later through the directory that would hold it.
    const { dep, st } = stampOf(path, true, false, undefined, this.now);
    this.deps.push(dep);
    if (!settled(st, this.now)) this.settled = false;
    return st;
  }

  stat(path: string): Stats | undefined {
    return this.note(path);
  }

  text(path: string): string | undefined {
    if (!this.note(path)) return undefined;
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  }

  names(dir: string): string[] | undefined {
    if (!this.note(dir)) return undefined;
    try {
      return readdirSync(dir);
    } catch {
      return undefined;
    }
  }
}

/** Any executable, non-sample file in a hooks directory: git will run it. */
function hasActiveHooks(dir: string, reads: Reads): boolean {
  const names = reads.names(dir);
  if (!names) return false;
  // Every candidate is stamped (not only up to the first hit): a chmod changes a file, not its directory.
  let active = false;
  for (const name of names) {
    if (name.endsWith(".sample")) continue;
    const st = reads.stat(join(dir, name));
    if (st?.isFile() && (st.mode & 0o111) !== 0) active = true;
  }
  return active;
}

export interface RepositoryFacts {
  readonly gitHooksWritable: boolean;
  readonly gitHooksActive: boolean;
  readonly currentBranch: string | undefined;
}

/** Read `core.hooksPath`, the hooks and the current branch from the workspace repository (cheap file reads). */
export function inspectRepository(places: Places, reads: Reads = new Reads()): RepositoryFacts {
  const { workspace, home } = places;
  const gitDir = join(workspace, ".git");
  const head = reads.text(join(gitDir, "HEAD"));
  const currentBranch = head === undefined ? undefined : /^ref: refs\/heads\/(.+)$/m.exec(head)?.[1]?.trim();
  const configs = [join(gitDir, "config"), join(home, ".gitconfig"), join(home, ".config", "git", "config")];
  let hooksPath: string | undefined;
  for (const file of configs) {
    // An unreadable config: git would not use it either.
    const text = reads.text(file);
    const m = text === undefined ? null : /^\s*hookspath\s*=\s*(.+?)\s*$/im.exec(text);
    if (m?.[1]) {
      hooksPath = m[1].replace(/^"|"$/g, "");
      break;
    }
  }
  // A worktree or submodule keeps its hooks in the shared git dir (the last one places found).
  const defaultHooks = join(places.gitDirs.at(-1) ?? gitDir, "hooks");
  if (!hooksPath) return { gitHooksWritable: false, gitHooksActive: hasActiveHooks(defaultHooks, reads), currentBranch };
  const abs = hooksPath.startsWith("~/") ? join(home, hooksPath.slice(2)) : resolve(workspace, hooksPath);
  // Hooks the agent may write without review would run outside the sandbox on the next commit.
  const writable = [workspace, places.tmpRoot].some((root) => isWithin(root, abs) && protectedComponent(abs.slice(root.length + 1)) === undefined);
  return { gitHooksWritable: writable, gitHooksActive: hasActiveHooks(abs, reads), currentBranch };
}

const repositoryCache = new WeakMap<Places, { readonly facts: RepositoryFacts; readonly deps: readonly Dependency[]; readonly settled: boolean }>();

/**
 * inspectRepository, read again only when one of the files it read (HEAD, the git configs, the
 * hooks directory and each candidate hook) changed, or when they had changed too recently for
 * their stamps to tell a second change apart.
 */
export function repositoryFacts(places: Places, book?: StampBook): RepositoryFacts {
  const hit = repositoryCache.get(places);
  if (hit?.settled && unchanged(hit.deps, book)) return hit.facts;
  const reads = new Reads();
  const facts = inspectRepository(places, reads);
  repositoryCache.set(places, { facts, deps: reads.deps, settled: reads.settled });
  return facts;
}
