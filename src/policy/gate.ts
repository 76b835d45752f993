// The deterministic gate: canonical request, judgement, route. Everything the CLI, the eval and
// the extension decide goes through `decide`, after `prepareGate` (which the extension runs before
// every call, so it is kept cheap: what it reads is cached, keyed by the stat identities of what
// the cached facts were read from; see stamps.ts).

import { existsSync, type Stats } from "node:fs";
import { join, resolve } from "node:path";
import { buildRequest, type CanonicalRequest } from "../request/canonical.ts";
import type { FreshDir } from "../request/paths.ts";
import { loadPolicyConfig, type ConfigResult } from "./config/load.ts";
import pathData from "./data/paths.json" with { type: "json" };
import { judge, type JudgeContext, type Judgement } from "./judge.ts";
import { buildPlaces, type Places } from "./places.ts";
import { route } from "./route.ts";
import { repositoryFacts, type RepositoryFacts, type ShellEnv } from "./shell/env.ts";
import type { BudgetOptions } from "./shell/script-state.ts";
import { fullStamp, hasStamp, lstatOrUndefined, settled, StampBook, stampOf, unchanged, type Dependency, type Stamp } from "../request/stamps.ts";
import { decision, type Backend, type Decision } from "./types.ts";

export interface GateSetup {
  readonly cwd: string;
  readonly home: string;
  readonly agentDir: string;
  /** The temporary writable root, unless the user config names one (or `tempFolder` gives the session's). */
  readonly defaultTmpRoot: string;
  /**
   * This session's private temporary folder in the configured root (or the default one for
   * `undefined`): the writable root the gate and the sandbox use. A root it refuses (a symlink, a
   * folder of another account) is a configuration fault: every call is denied with its reason.
   * Without it the root itself is used (the CLI's static check, the eval).
   */
  readonly tempFolder?: (configured: string | undefined) => TempFolderChoice;
  /** This extension's own files: writes to them are denied. */
  readonly selfPaths: readonly string[];
  /**
   * The shell analysis's bound, when not the gate's own (steps and a wall-clock deadline). Only
   * for tests that compare decisions across runs: the deadline makes a decision depend on load.
   */
  readonly analysisBudget?: BudgetOptions;
}

export type TempFolderChoice = { readonly ok: true; readonly path: string } | { readonly ok: false; readonly root: string; readonly reason: string };

export interface GateContext {
  readonly setup: GateSetup;
  readonly config: ConfigResult;
  readonly judge: JudgeContext;
}

// Places cost a few hundred lstat and realpath calls; they change only with the setup and with the
// directories they were resolved through, so a few are kept, each with the stamps of those.
interface PlacesEntry {
  readonly places: Places;
  /** Checked at every call; the workspace's `.git` among them unless `dotGit` holds it. */
  readonly deps: readonly Dependency[];
  /**
   * The workspace's `.git` when it was a directory or missing: looked up only when the workspace's
   * entries may have changed (see `holds`).
   */
  readonly dotGit: Dependency | undefined;
  /** A settled full stamp of the workspace, taken before `.git` was last found as `dotGit` says. */
  workspace: Stamp | undefined;
  /** Every stamp was old enough to tell a later change apart (stamps.ts `settled`). */
  readonly settled: boolean;
  /** The roots the stamps check, for the analysis (ShellEnv.trusted). */
  readonly trusted: ReadonlyMap<string, string>;
}
const placesCache = new Map<string, PlacesEntry>();
const PLACES_CACHE_SIZE = 16;

/** Listed locations below the home directory (`~/.config/gh`, `~/.local/share/keyrings`), lexically. */
const HOME_ENTRIES = [...pathData.identitySecrets, ...pathData.persistence].filter((e) => e.startsWith("~/")).map((e) => e.slice(2));

/**
 * The directories strictly below the home directory through which a listed location is reached
 * (`~/.config` for `~/.config/gh`), as far as they exist now: a symlink that appears in one of them
 * changes its entries, and so its stamp. A missing one shows up in its parent's stamp when created.
 */
function homeDirectories(home: string): string[] {
  const out = new Set<string>();
  for (const e of HOME_ENTRIES) {
    let dir = home;
    const parts = e.split("/");
    for (let i = 0; i < parts.length - 1; i++) {
      dir = join(dir, parts[i]!);
      if (out.has(dir)) continue;
      if (!existsSync(dir)) break;
      out.add(dir);
    }
  }
  return [...out];
}

/**
 * What a Places value was read from:
 * - the workspace, the temporary root: which directory each is (their entries do not matter);
 * - the workspace's `.git`: which directory, or the whole stamp of a `.git` file or symlink (a
 *   rewritten `.git` file names another git dir), and then that git dir and its `commondir` file;
 * - the home directory, the agent dir and the home's directories holding listed locations: their
 *   entries too (`~/.ssh` replaced by a symlink changes the home directory's stamp).
 * Listed locations outside the home (`/etc/ssh`, `/usr/local/bin`) are resolved once: only root
 * can move them, and their spellings stay listed lexically too.
 */
function placesDependencies(
  setup: GateSetup,
  tmpRoot: string,
  places: Places | undefined,
  now: number,
): { deps: Dependency[]; settled: boolean; workspace: Stamp | undefined; dotGitVouched: boolean } {
  const deps: Dependency[] = [];
  let allSettled = true;
  const add = (path: string, follow: boolean, identity: boolean, known?: { st: Stats | undefined }) => {
    const { dep, st } = stampOf(path, follow, identity, known);
    deps.push(dep);
    if (!identity && !settled(st, now)) allSettled = false;
    return st;
  };
  const ws = add(resolve(setup.cwd), false, true);
  add(resolve(tmpRoot), false, true);
  const dotGit = join(setup.cwd, ".git");
  const st = lstatOrUndefined(dotGit);
  add(dotGit, false, st?.isDirectory() === true, { st });
  add(resolve(setup.home), false, false);
  add(resolve(setup.agentDir), false, false);
  if (places) {
    for (const d of places.gitDirs) add(d, false, true);
    if (places.gitDirs[0] && !st?.isDirectory()) add(join(places.gitDirs[0], "commondir"), true, false);
    for (const d of homeDirectories(resolve(setup.home))) add(d, false, false);
  }
  // The workspace's full stamp is the stamp of what its entries are (see `holds`).
  const workspace = ws?.isDirectory() && settled(ws, now) ? fullStamp(ws) : undefined;
  return { deps, settled: allSettled, workspace, dotGitVouched: st === undefined || st.isDirectory() };
}

// The order placesDependencies stamps in: the workspace, the temporary root, `.git`, the home directory.
const DEP_WORKSPACE = 0;
const DEP_DOT_GIT = 2;

/**
 * Whether a cached Places value still holds: every dependency has its stamp, the workspace's `.git`
 * included, except that `.git` needs no look-up of its own while the workspace keeps a full stamp
 * it had before `.git` was found unchanged. A directory's times move whenever an entry in it is
 * created, removed or renamed (stamps.ts Absence relies on the same), so while the workspace keeps
 * that (settled) stamp, `.git` is the entry it was then: the same directory, or still missing. What
 * may change inside that directory (its entries, its mode) is not what the places were read from
 * (buildPlaces looks only at whether `.git` is a directory, a file or a symlink; the repository
 * facts have stamps of their own), and a mount over `.git` keeps it a directory. A `.git` file or
 * symlink, whose content names the git dir, is looked up at every call as before.
 */
function holds(hit: PlacesEntry, book: StampBook): boolean {
  if (!unchanged(hit.deps, book)) return false;
  const dotGit = hit.dotGit;
  if (dotGit === undefined) return true;
  // Looked up already by `unchanged` (it is deps[0]): no system call of its own.
  const ws = book.lstat(hit.deps[DEP_WORKSPACE]!.path);
  if (hit.workspace !== undefined && ws !== undefined && hasStamp(hit.workspace, ws)) return true;
  // The workspace's entries changed (or no stamp vouched yet): `.git` itself, as for any dependency.
  const after = book.seen(dotGit.path) === undefined;
  if (!unchanged([dotGit], book)) return false;
  // `.git` was just found as it was, after the workspace was looked up: while the workspace keeps
  // the stamp this call saw, `.git` stays as found. Kept only when that stamp is settled.
  hit.workspace = after && ws?.isDirectory() && settled(ws, book.now) ? fullStamp(ws) : undefined;
  return true;
}

/**
 * The root directories the stamps just checked, with their real forms: a directory that is not a
 * symlink and is the same object as when the places were read is where the places say it is.
 */
function trustedRoots(p: Places, deps: readonly Dependency[]): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  const [cwd, tmp, , home] = deps;
  const isDir = (d: Dependency | undefined) => d?.stamp !== undefined && (d.stamp.mode & S_IFMT) === S_IFDIR;
  if (isDir(cwd)) out.set(cwd!.path, p.workspace);
  if (isDir(tmp)) out.set(tmp!.path, p.tmpRoot);
  if (isDir(home)) out.set(home!.path, p.homeReal);
  return out;
}
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;

function cachedPlaces(setup: GateSetup, tmpRoot: string, book: StampBook): { places: Places; trusted: ReadonlyMap<string, string> } {
  const key = `${setup.cwd}\0${tmpRoot}\0${setup.home}\0${setup.agentDir}\0${setup.selfPaths.join("\0")}`;
  const hit = placesCache.get(key);
  if (hit?.settled && holds(hit, book)) return { places: hit.places, trusted: hit.trusted };
  // Stamped before the places are read: a change while they are read shows at the next call.
  const now = Date.now();
  const before = placesDependencies(setup, tmpRoot, undefined, now);
  const places = buildPlaces({ workspace: setup.cwd, tmpRoot, home: setup.home, agentDir: setup.agentDir, selfPaths: setup.selfPaths });
  // The git dirs and home directories the places were read through are known only now; their
  // stamps are taken right after, and the fixed ones are kept from before the read.
  const after = placesDependencies(setup, tmpRoot, places, now);
  const deps = [...before.deps, ...after.deps.slice(before.deps.length)];
  placesCache.delete(key);
  if (placesCache.size >= PLACES_CACHE_SIZE) placesCache.delete(placesCache.keys().next().value!);
  const isSettled = before.settled && after.settled && unchanged(before.deps);
  // Trusted only where nothing moved while the places were read.
  const trusted = isSettled ? trustedRoots(places, deps) : new Map<string, string>();
  // A `.git` directory (or none) is kept apart: the workspace's stamp can vouch for it (see `holds`).
  const apart = before.dotGitVouched;
  placesCache.set(key, {
    places,
    deps: apart ? deps.filter((_, i) => i !== DEP_DOT_GIT) : deps,
    dotGit: apart ? deps[DEP_DOT_GIT] : undefined,
    workspace: apart ? before.workspace : undefined,
    settled: isSettled,
    trusted,
  });
  return { places, trusted };
}

/**
 * The shell's view of the machine. Repository facts (hooks, branch) are read only if a git
 * command asks, once per call, from a cache keyed by the files they come from.
 */
class CallShellEnv implements ShellEnv {
  readonly places: Places;
  readonly cwd: string;
  readonly home: string;
  readonly trusted: ReadonlyMap<string, string>;
  readonly book: StampBook;
  readonly budget: BudgetOptions | undefined;
  private repo: RepositoryFacts | undefined;

  constructor(places: Places, cwd: string, home: string, trusted: ReadonlyMap<string, string>, book: StampBook, budget?: BudgetOptions) {
    this.places = places;
    this.cwd = cwd;
    this.home = home;
    this.trusted = trusted;
    this.book = book;
    this.budget = budget;
  }

  private facts(): RepositoryFacts {
    return (this.repo ??= repositoryFacts(this.places, this.book));
  }

  /** The trusted roots as this call's stamps saw them, by real path. */
  get fresh(): ReadonlyMap<string, FreshDir> {
    const out = new Map<string, FreshDir>();
    for (const [dir, real] of this.trusted) {
      const st = this.book.seen(dir);
      if (st) out.set(real, { st, now: this.book.now });
    }
    return out;
  }

  get gitHooksWritable(): boolean {
    return this.facts().gitHooksWritable;
  }

  get gitHooksActive(): boolean {
    return this.facts().gitHooksActive;
  }

  get currentBranch(): string | undefined {
    return this.facts().currentBranch;
  }
}

/**
 * Build what a decision needs for one cwd: the places, the repository facts, the configuration.
 * `book`: the call's look-ups when it prepares more than once (admit-call.ts, for another set of
 * protected paths): each path is looked up once per call, and the call takes the file system as
 * still while it is judged. A fresh one otherwise.
 */
export function prepareGate(setup: GateSetup, book: StampBook = new StampBook()): GateContext {
  // One set of look-ups for the call: the caches below check some of the same directories.
  const loaded = loadPolicyConfig({ agentDir: setup.agentDir, cwd: setup.cwd, home: setup.home }, book);
  const configured = loaded.ok ? loaded.config.tmpRoot : undefined;
  const temp = loaded.ok && setup.tempFolder ? setup.tempFolder(configured) : undefined;
  // A temp root that cannot be used safely stops the gate as an invalid configuration does.
  const config: ConfigResult = temp && !temp.ok ? { ok: false, path: temp.root, message: temp.reason } : loaded;
  // Refused, the root is never a writable root: the workspace is the only one (every call is denied anyway).
  const tmpRoot = temp === undefined ? (configured ?? setup.defaultTmpRoot) : temp.ok ? temp.path : setup.cwd;
  const { places, trusted } = cachedPlaces(setup, tmpRoot, book);
  const shell = new CallShellEnv(places, setup.cwd, setup.home, trusted, book, setup.analysisBudget);
  const rules = config.ok ? config.config.allow.length + config.config.review.length + config.config.deny.length : 0;
  return { setup, config, judge: { places, shell, protectedGlobs: config.ok ? config.config.protectedPaths : [], rulesConfigured: rules > 0 } };
}

export interface GateResult {
  readonly request: CanonicalRequest | undefined;
  readonly judgement: Judgement | undefined;
  readonly decision: Decision;
}

export function decide(tool: string, input: unknown, gate: GateContext, backend: Backend): GateResult {
  try {
    const built = buildRequest(tool, input, gate.setup.cwd, gate.setup.home);
    if (!built.ok)
      return { request: undefined, judgement: undefined, decision: decision("deny", "unsupported-input", `The tool input cannot be judged: ${built.reason}.`) };
    const judgement = judge(built.request, gate.judge);
    return { request: built.request, judgement, decision: route(judgement, backend, gate.config) };
  } catch (e) {
    // Silence is never consent (P5): a bug in the gate denies the call.
    return {
      request: undefined,
      judgement: undefined,
      decision: decision("deny", "gate-error", `The gate failed while judging this call: ${(e as Error).message}`),
    };
  }
}
