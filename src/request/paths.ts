// Path resolution that judges exactly the file a tool will touch.
//
// Step 1 mirrors Pi 1.6's own tools (utils/paths.js `resolvePath` and tools/path-utils.js):
// Unicode spaces become ASCII spaces, one leading "@" is dropped, "~" and "~/" expand to the
// home directory, file:// URLs become paths, and the result is resolved against the cwd.
// Step 2 follows symlinks the way the kernel will when the tool opens the path, including a
// dangling symlink whose target a write would create.

import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync, Stats } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { fullStamp, hasStamp, settled, type Stamp } from "./stamps.ts";

const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;
const MAX_SYMLINK_HOPS = 40;

// Pi normalizes the tool argument with Unicode spaces and "@" handled, but the cwd only with
// "~" and file:// handled (utils/paths.js `resolvePath` calls `normalizePath(baseDir)` without options).
function normalizeLikePi(input: string, home: string, isArgument: boolean): string {
  let s = isArgument ? input.replace(UNICODE_SPACES, " ") : input;
  if (isArgument && s.startsWith("@")) s = s.slice(1);
  if (s === "~") return home;
  if (s.startsWith("~/")) return join(home, s.slice(2));
  if (/^file:\/\//.test(s)) return fileURLToPath(s);
  return s;
}

/** The absolute path Pi's file tools compute for `input` (before any symlink is followed). Throws on input Pi would also reject. */
export function resolveLikePi(input: string, cwd: string, home: string): string {
  const normalized = normalizeLikePi(input, home, true);
  const base = normalizeLikePi(cwd, home, false);
  // Checked after normalization: a file URL can carry an encoded NUL ("%00"). Also where a later
  // ".." takes the NUL's component away (Pi would open "x\0y/../f" as "f"): a NUL in a path is
  // malformed input, never judged as the path it would become.
  if (normalized.includes("\0")) throw new Error("path contains a NUL byte");
  return isAbsolute(normalized) ? resolve(normalized) : resolve(base, normalized);
}

/**
 * Pi's `read` tool falls back to macOS screenshot-name variants when the plain path is missing;
 * the gate must judge the variant Pi will actually open.
 */
export function resolveReadLikePi(input: string, cwd: string, home: string): string {
  const plain = resolveLikePi(input, cwd, home);
  if (existsSync(plain)) return plain;
  const amPm = plain.replace(/ (AM|PM)\./gi, "\u202F$1.");
  const nfd = plain.normalize("NFD");
  const curly = (p: string) => p.replace(/'/g, "\u2019");
  for (const candidate of [amPm, nfd, curly(plain), curly(nfd)]) {
    if (candidate !== plain && existsSync(candidate)) return candidate;
  }
  return plain;
}

export interface RealPath {
  /** The absolute path with every symlink on the way resolved, as far as the file system lets us see. */
  readonly real: string;
  /** Whether the full path exists now. */
  readonly exists: boolean;
}

/**
 * Resolve symlinks in an absolute, normalized path (as Pi hands it to the file system). For a
 * path that does not exist yet, walk up to the nearest existing ancestor, resolve it, and append
 * the rest; a dangling symlink on the way is followed to the target a write would create.
 * Throws where the kernel would fail too (symlink loop, a file used as a directory) and on a
 * ".." that would have to climb out of a directory that does not exist.
 */
export function resolveReal(absolute: string): RealPath {
  // lstat with throwIfNoEntry avoids exceptions on the common "new file" path (they cost ~20 µs each).
  const own = lstatSync(absolute, { throwIfNoEntry: false });
  if (own) {
    try {
      return { real: realpathSync.native(absolute), exists: true };
    } catch {
      // dangling symlink, loop or permission problem: resolved by the walk below
    }
  }
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    // The walk starts from the lstat of the path just made, not from a second one a moment later
    // (a new file cost two). Safe: the answer is the file system as one lookup of each component
    // saw it, as for every other component of the walk; a change after that lookup could as well
    // fall after the second one, and the tool opens the path after the decision in any case.
    const st = current === absolute ? own : lstatSync(current, { throwIfNoEntry: false });
    if (st) {
      // A symlink's relative target is relative to the directory that really holds the link,
      // which may differ from the lexical parent when an ancestor is itself a symlink.
      if (st.isSymbolicLink()) return walk(realpathSync.native(dirname(current)), [...linkTarget(current, "/"), ...rest], 1);
      const realCurrent = realpathSync.native(current);
      return { real: rest.length === 0 ? realCurrent : join(realCurrent, ...rest), exists: rest.length === 0 };
    }
    const parent = dirname(current);
    if (parent === current) return { real: absolute, exists: false };
    rest.unshift(current.slice(parent.length).replace(/^\//, ""));
    current = parent;
  }
}

/**
 * A path as a shell command's system calls see it: the kernel walks `relative` from `base`
 * component by component, so a `..` after a symlink climbs out of the link's target, not out of
 * the directory holding the link (`link-out/../etc/shadow` with link-out -> /etc is /etc/shadow).
 * Pi's file tools differ: they normalize the path lexically first (see resolveLikePi).
 */
export function resolvePhysical(base: string, relative: string): RealPath {
  const start = isAbsolute(relative) ? "/" : realpathSync.native(base);
  return walk(start, relative.split("/"), 0);
}

function linkTarget(link: string, root: string): string[] {
  const target = readlinkSync(link);
  return isAbsolute(target) ? [root, ...target.split("/")] : target.split("/");
}

type Lstat = (p: string) => Stats | undefined;
const plainLstat: Lstat = (p) => lstatSync(p, { throwIfNoEntry: false });

/** Component by component, the way the kernel walks a path: `..` applies to the real directory reached so far. */
function walk(base: string, parts: string[], hops: number, lstat: Lstat = plainLstat): RealPath {
  let current = base;
  let queue = parts;
  for (let i = 0; i < queue.length; i++) {
    const part = queue[i]!;
    if (part === "" || part === ".") continue;
    if (part === "/") {
      current = "/";
      continue;
    }
    if (part === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    const st = lstat(next);
    if (!st) {
      const tail = queue.slice(i + 1).filter((p) => p !== "" && p !== ".");
      if (tail.includes("..")) throw new Error(`cannot resolve ".." below ${next}, which does not exist`);
      return { real: join(next, ...tail), exists: false };
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw new Error("too many levels of symbolic links");
      queue = [...linkTarget(next, "/"), ...queue.slice(i + 1)];
      i = -1;
      continue;
    }
    current = next;
  }
  return { real: current, exists: true };
}

/** join(dir, name) for a normalized absolute directory and a plain name, without normalizing the whole path again. */
function childOf(dir: string, name: string): string {
  if (name === "" || name === "." || name === "..") return join(dir, name);
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

/** What an entry is, without following a symlink at its own name. */
export type EntryKind = "file" | "directory" | "symlink" | "other";

/**
 * What a directory was seen to hold, kept from one call to the next: the kind of each name looked
 * up in it (null: no such entry) and, once it was listed, all its names. It holds while the
 * directory keeps the full stamp it had when they were read (see stamps.ts): creating, removing or
 * renaming an entry moves the directory's times, and an entry cannot change its kind without
 * that. Only the directory's own entries are vouched for: what a symlink leads to is resolved
 * again at each call, and the link count of a file is read from the file.
 */
interface DirEntries {
  readonly stamp: Stamp;
  readonly kinds: Map<string, EntryKind | null>;
  /** All names, when the directory was listed under this stamp. */
  listing: { readonly names: string[]; readonly set: ReadonlySet<string> } | undefined;
}

/** By real directory path; bounded in directories and in names kept (a listing counts its names), oldest first out. */
const dirCache = new Map<string, DirEntries>();
const DIR_CACHE_SIZE = 512;
const NAMES_PER_DIR = 4096;
const NAMES_KEPT = 32768;
let namesKept = 0;

const sizeOf = (e: DirEntries) => e.kinds.size + (e.listing?.names.length ?? 0);

function forget(dir: string): void {
  const e = dirCache.get(dir);
  if (e === undefined) return;
  namesKept -= sizeOf(e);
  dirCache.delete(dir);
}

/** Room for `n` more names, made by dropping the oldest directories (never `keep` itself); false when there is none to make. */
function room(n: number, keep: string): boolean {
  for (const dir of dirCache.keys()) {
    if (namesKept + n <= NAMES_KEPT) break;
    if (dir !== keep) forget(dir);
  }
  return namesKept + n <= NAMES_KEPT;
}

function keepKind(dir: string, e: DirEntries, name: string, kind: EntryKind | null): void {
  if (e.kinds.has(name) || e.kinds.size >= NAMES_PER_DIR || !room(1, dir)) return;
  e.kinds.set(name, kind);
  namesKept++;
}

/** A directory's lstat taken during this call, and Date.now() from before it (for `settled`). */
export interface FreshDir {
  readonly st: Stats;
  readonly now: number;
}

/**
 * What one decision learns about paths, each fact read once: the kind of an entry, the real form
 * (exactly what resolveReal and resolvePhysical answer), directory listings, link counts. A
 * decision takes the file system as still while it judges one call, so facts are shared by every
 * path of that call and of its nested scripts. From one call to the next only what a directory
 * holds is kept (DirEntries), checked against that directory's stamp in the new call: the
 * directories the preparation stamped anyway (the workspace, the home directory) vouch for their
 * entries at no cost, any other costs one lstat of its own, no more than looking up one of its
 * entries, and then vouches for all of them.
 *
 * The real form of a path that is not a symlink is its parent's real form plus its name, so the
 * paths of one call share the look-ups of their common ancestors (`src/a.ts src/b.ts` costs three
 * lstat calls, not two realpath walks), and a path with many missing components below an existing
 * ancestor costs one look-up, of the first missing one (the root is taken as existing). A listing
 * tells the kind of each entry (d_type), so what a glob matched needs no lstat of its own. `known`
 * names directories whose real form the caller already holds (the workspace, the home directory);
 * they are still looked up, once, to check that they exist and are directories.
 */
export class PathFacts {
  /** System calls made so far (for the analysis budget and for tests). */
  calls = 0;
  private readonly stats = new Map<string, Stats | null | Error>();
  /** Kinds learnt from listings and from DirEntries, for entries not (yet) looked up with lstat. */
  private readonly kinds = new Map<string, EntryKind | null>();
  /**
   * The entry kinds of each directory listed during this call, by name: what its `readdir` told,
   * or the kept DirEntries that this call found valid (with the listing's names, so that only
   * listed names are answered from it). A listed entry's kind is moved to `kinds` when it is first
   * asked for (hint), not for every listed name when the directory is listed: a glob over n
   * entries mostly asks for none of them (`rm -rf *`), and building n paths and map entries at
   * every call cost more than the rest of the listing. Only facts of this call, as `kinds` is: a
   * later call validates the directory's DirEntries against its stamp again.
   */
  private readonly listedKinds = new Map<string, { readonly kinds: ReadonlyMap<string, EntryKind | null>; readonly names?: ReadonlySet<string> }>();
  private readonly reals = new Map<string, RealPath | Error>();
  private readonly listings = new Map<string, string[] | null>();
  private readonly known: ReadonlyMap<string, string>;
  /** Real directories stamped during this call, by the caller or here. */
  private readonly fresh = new Map<string, FreshDir>();
  /** The DirEntries this call found valid (null: none can be kept for that directory). */
  private readonly valid = new Map<string, DirEntries | null>();
  /** Before any look-up of this call: the time every lstat of its own is taken after. */
  private readonly born = Date.now();

  /**
   * `trusted`: directories the caller checked during this same call (their real forms, as known):
   * taken as existing directories without a look-up of their own. `fresh`: the caller's lstat of
   * some real directories during this call.
   */
  constructor(known: ReadonlyMap<string, string> = new Map(), trusted?: ReadonlyMap<string, string>, fresh?: ReadonlyMap<string, FreshDir>) {
    this.known = known;
    if (trusted)
      for (const [dir, real] of trusted) {
        this.kinds.set(dir, "directory");
        this.reals.set(dir, { real, exists: true });
      }
    if (fresh) for (const [dir, f] of fresh) if (f.st.isDirectory()) this.fresh.set(dir, f);
  }

  /**
   * Look-ups asked for, each path (or listing) once per call, whether a system call or the kept
   * DirEntries answered it: what the analysis budget counts, so that a command costs the same
   * steps however warm the caches are, and is judged the same way at its first call as at the next.
   */
  get lookups(): number {
    return this.asked.size + this.resolutions;
  }
  private readonly asked = new Set<string>();
  /** realpath calls for symlinks (once per path and call, as its real form is kept). */
  private resolutions = 0;

  /** lstat, or undefined when nothing is there; throws where lstat throws (ELOOP, ENOTDIR, EACCES). */
  lstat(p: string): Stats | undefined {
    this.asked.add(p);
    return this.lstatOnly(p);
  }

  /** lstat without counting it as a look-up asked for (the stamp of a directory whose entries are kept). */
  private lstatOnly(p: string): Stats | undefined {
    let st = this.stats.get(p);
    if (st === undefined) {
      this.calls++;
      try {
        st = lstatSync(p, { throwIfNoEntry: false }) ?? null;
      } catch (e) {
        st = e as Error;
      }
      this.stats.set(p, st);
    }
    if (st instanceof Error) throw st;
    return st ?? undefined;
  }

  /** The kind of the entry at `p` (a symlink is not followed), or undefined when there is none. */
  kind(p: string): EntryKind | undefined {
    const hint = this.stats.has(p) ? undefined : this.hint(p);
    if (hint === null) return undefined;
    if (hint !== undefined) return hint;
    const st = this.lstat(p);
    if (!st) return undefined;
    return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "other";
  }

  /** resolveReal(absolute), from facts shared with the other paths of this decision. */
  real(absolute: string): RealPath {
    const hit = this.reals.get(absolute);
    if (hit !== undefined) {
      if (hit instanceof Error) throw hit;
      return hit;
    }
    let r: RealPath | Error;
    try {
      r = this.compute(absolute);
    } catch (e) {
      r = e as Error;
    }
    this.reals.set(absolute, r);
    if (r instanceof Error) throw r;
    return r;
  }

  private compute(p: string): RealPath {
    const parent = dirname(p);
    // The root always exists.
    if (parent === p) return { real: p, exists: true };
    const known = this.known.get(p);
    // The parent first: nothing lies below a directory that does not exist, so a path with
    // several missing components costs one look-up, at the first of them.
    const up = known === undefined ? this.real(parent) : undefined;
    if (up !== undefined && !up.exists) return { real: childOf(up.real, basename(p)), exists: false };
    const kind = up === undefined ? this.kind(p) : this.entryKind(up.real, basename(p), p);
    if (kind === "symlink") {
      // Symlinks are rare: the kernel's own resolution, uncached (a dangling or looping one by resolveReal's walk).
      this.calls++;
      this.resolutions++;
      try {
        return { real: realpathSync.native(p), exists: true };
      } catch {
        this.calls++;
        this.resolutions++;
        return resolveReal(p);
      }
    }
    if (known !== undefined && kind === "directory") return { real: known, exists: true };
    // An existing entry has an existing parent; a missing one keeps the missing part.
    return { real: childOf((up ?? this.real(parent)).real, basename(p)), exists: kind !== undefined };
  }

  /** resolvePhysical(base, relative), with the walk's look-ups shared. */
  physical(base: string, relative: string): RealPath {
    let start = "/";
    if (!isAbsolute(relative)) {
      const b = this.real(base);
      if (!b.exists) throw new Error(`${base} does not exist`);
      start = b.real;
    }
    return walk(start, relative.split("/"), 0, (q) => this.lstat(q));
  }

  /**
   * The names in the real directory `dir`, or null when it cannot be listed; their kinds are kept
   * as facts. The directory is stamped first (a fifth of what listing it costs), so the listing
   * can serve later calls while the directory keeps that stamp.
   */
  list(dir: string): string[] | null {
    let names = this.listings.get(dir);
    if (names !== undefined) return names;
    this.asked.add(`\0${dir}`);
    let entries: DirEntries | undefined;
    try {
      entries = this.entriesOf(dir, true);
    } catch {
      entries = undefined;
    }
    if (entries?.listing) {
      names = entries.listing.names;
      // The directory has the stamp its kept kinds were read under: they hold for this call.
      this.listedKinds.set(dir, { kinds: entries.kinds, names: entries.listing.set });
    } else {
      this.calls++;
      try {
        const read = readdirSync(dir, { withFileTypes: true });
        names = [];
        const kinds = new Map<string, EntryKind>();
        for (const e of read) {
          names.push(e.name);
          // DT_UNKNOWN (some file systems) tells nothing: such an entry is looked up when asked.
          const kind: EntryKind | undefined = e.isSymbolicLink() ? "symlink" : e.isDirectory() ? "directory" : e.isFile() ? "file" : undefined;
          if (kind !== undefined) kinds.set(e.name, kind);
          if (entries && kind !== undefined) keepKind(dir, entries, e.name, kind);
        }
        this.listedKinds.set(dir, { kinds });
        if (entries && names.length <= NAMES_PER_DIR && room(names.length, dir)) {
          entries.listing = { names, set: new Set(names) };
          namesKept += names.length;
        }
      } catch {
        names = null;
      }
    }
    this.listings.set(dir, names);
    return names;
  }

  /**
   * The kind of entry `name` of the real directory `dir`, looked up as `p`: from the directory's
   * DirEntries when they hold it and the directory is unchanged (one lstat of the directory at
   * most, which also vouches for its other entries), otherwise by an lstat of `p`, kept for later.
   */
  private entryKind(dir: string, name: string, p: string): EntryKind | undefined {
    if (this.stats.has(p) || this.hint(p) !== undefined) return this.kind(p);
    const cached = dirCache.get(dir);
    // A listed name of unknown kind (DT_UNKNOWN) is looked up; a name the listing lacks has no entry.
    const held =
      cached === undefined ? undefined : cached.kinds.has(name) ? cached.kinds.get(name) : cached.listing && !cached.listing.set.has(name) ? null : undefined;
    let entries: DirEntries | undefined;
    try {
      // Stamping the directory only to look one entry up would cost a call more than the entry itself.
      entries = this.entriesOf(dir, held !== undefined);
    } catch {
      entries = undefined;
    }
    if (entries !== undefined && entries === cached && held !== undefined) {
      this.asked.add(p);
      this.kinds.set(p, held);
      return held ?? undefined;
    }
    const kind = this.kind(p);
    if (entries !== undefined) keepKind(dir, entries, name, kind ?? null);
    return kind;
  }

  /**
   * The DirEntries of the real directory `dir` that hold during this call: the kept ones if the
   * directory's stamp now is theirs, else new ones for this stamp (when it is settled, so that no
   * later change can keep it). `stamp`: whether to lstat the directory if this call has not yet.
   */
  private entriesOf(dir: string, stamp: boolean): DirEntries | undefined {
    const seen = this.valid.get(dir);
    if (seen !== undefined) return seen ?? undefined;
    let f = this.fresh.get(dir);
    if (f === undefined) {
      // Looked up during this call already (its own kind was not known): a stamp at no cost.
      if (!stamp && !(this.stats.get(dir) instanceof Stats)) return undefined;
      const st = this.lstatOnly(dir);
      if (!st?.isDirectory()) {
        this.valid.set(dir, null);
        return undefined;
      }
      f = { st, now: this.born };
      this.fresh.set(dir, f);
    }
    let entries = dirCache.get(dir);
    if (entries === undefined || !hasStamp(entries.stamp, f.st)) {
      forget(dir);
      entries = undefined;
      if (settled(f.st, f.now)) {
        entries = { stamp: fullStamp(f.st)!, kinds: new Map(), listing: undefined };
        if (dirCache.size >= DIR_CACHE_SIZE) forget(dirCache.keys().next().value!);
        dirCache.set(dir, entries);
      }
    }
    this.valid.set(dir, entries ?? null);
    return entries;
  }

  /**
   * The kind this call knows for the entry at `p` without looking it up (null: no such entry),
   * from `kinds` or from a listing of its directory (then kept in `kinds`). Where both know the
   * entry, `kinds` answers: what it held before the listing came from the same directory under the
   * stamp this call found (the DirEntries the listing is part of, or a trusted root this call's
   * preparation checked), so the two differ only if the directory changed during the call, and
   * then each is a view this call took of it (the copy this replaced let the listing answer).
   */
  private hint(p: string): EntryKind | null | undefined {
    const known = this.kinds.get(p);
    if (known !== undefined || this.listedKinds.size === 0) return known;
    const listed = this.listedKind(p);
    if (listed !== undefined) this.kinds.set(p, listed);
    return listed;
  }

  /**
   * The kind a listing of this call gave the entry at `p` (a normalized absolute path): undefined
   * when no listing of its directory tells one (none was made, the name is not in it, or its kind
   * was DT_UNKNOWN), null when the kept entries know the name as missing.
   */
  private listedKind(p: string): EntryKind | null | undefined {
    let listed: { readonly kinds: ReadonlyMap<string, EntryKind | null>; readonly names?: ReadonlySet<string> } | undefined;
    let name: string;
    if (this.listedKinds.size <= 4) {
      // A call lists few directories: comparing with each costs less than cutting `p` into a new
      // directory string and hashing it, for the many paths that lie in none of them.
      for (const [dir, l] of this.listedKinds) {
        const at = dir === "/" ? 1 : dir.length + 1;
        if (p.length > at && p.charCodeAt(at - 1) === 47 && p.startsWith(dir) && p.indexOf("/", at) < 0) {
          listed = l;
          name = p.slice(at);
          break;
        }
      }
      if (listed === undefined) return undefined;
    } else {
      const slash = p.lastIndexOf("/");
      listed = this.listedKinds.get(slash === 0 ? "/" : p.slice(0, slash));
      if (listed === undefined) return undefined;
      name = p.slice(slash + 1);
    }
    return listed.names === undefined || listed.names.has(name!) ? listed.kinds.get(name!) : undefined;
  }

  /** What `p` leads to (symlinks followed), or undefined when it does not resolve to anything. */
  target(p: string): EntryKind | undefined {
    try {
      const r = this.real(p);
      return r.exists ? this.kind(r.real) : undefined;
    } catch {
      return undefined;
    }
  }

  /** The link count of the regular file `p` leads to; undefined for anything else. */
  fileLinks(p: string): number | undefined {
    try {
      const r = this.real(p);
      if (!r.exists || this.kind(r.real) !== "file") return undefined;
      return this.lstat(r.real)?.nlink;
    } catch {
      return undefined;
    }
  }
}
