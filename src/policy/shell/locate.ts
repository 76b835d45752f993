// Where a path argument leads: from every directory a `cd` may have left the script in, through
// the links the script creates, and what a glob expands to; and whether it is something the
// script downloaded.

import { basename, dirname, isAbsolute, resolve } from "node:path";
import { isHarmlessDevice, isWithin, memo } from "../places.ts";
import { FS_STEPS, type JudgedRole, spend, type ScriptState } from "./script-state.ts";

export interface Located {
  readonly lexical: string;
  readonly real: string;
  readonly exists: boolean;
}

const DOT_DOT = /(^|\/)\.\.(\/|$)/;

/** Every place a static path argument may name; null when the cwd is unknown and the path is relative. */
export function locate(state: ScriptState, value: string): Located[] | null {
  // `/proc/self/cwd` and `/proc/self/root` are links the kernel resolves for the process that
  // opens them: the command's own cwd and root, not the gate's. Another process's (`/proc/<pid>/cwd`,
  // `/proc/self/task/<tid>/cwd`) is unknown here.
  if (value.startsWith("/") && /^\/+proc\/+[^/]/.test(value)) {
    // Not path.normalize: a `..` after /proc/self/cwd climbs out of the cwd, not back to /proc/self.
    const v = value.replace(/\/+/g, "/").replace(/\/\.(?=\/|$)/g, "");
    const own = /^\/proc\/(?:self|thread-self)\/(cwd|root)(\/.*)?$/.exec(v);
    if (own) return locate(state, own[1] === "root" ? (own[2] ?? "/") : `.${own[2] ?? ""}`);
    if (/^\/proc\/[^/]+\/(?:task\/[^/]+\/)?(?:cwd|root)(\/|$)/.test(v) || /^\/proc(\/[^/]+)*\/\.\.(\/|$)/.test(v)) return null;
  }
  const out: Located[] = [];
  const facts = state.facts;
  for (const cwd of isAbsolute(value) ? ["/"] : state.cwds) {
    if (cwd === null) return null;
    const asked = facts.lookups;
    const lexical = resolve(cwd, value);
    const target = throughLinks(state, lexical);
    // A `..` may climb out of a symlink's target: only the kernel's own walk says where it lands.
    const physical = target === lexical && DOT_DOT.test(value);
    const key = physical ? `${cwd}\0${value}` : target;
    let r = state.resolved.get(key);
    if (r === undefined) {
      try {
        r = physical ? facts.physical(cwd, value) : facts.real(target);
      } catch {
        r = null;
      }
      state.resolved.set(key, r);
    }
    spend(state, 1 + FS_STEPS * (facts.lookups - asked), "looking paths up");
    if (r === null) return null;
    out.push({ lexical, real: r.real, exists: r.exists });
  }
  return out;
}

/**
 * Notes the places a judged path argument leads to, lexical and real, under its role (a write
 * outranks the others): only while the analysis is asked for them (ScriptState.judged). A device
 * named as such (`/dev/null`) is no place.
 */
export function noteJudged(state: ScriptState, located: readonly Located[] | null, role: JudgedRole): void {
  const into = state.judged;
  if (into === undefined || located === null) return;
  for (const p of located) {
    if (isHarmlessDevice(p.lexical) || isHarmlessDevice(p.real)) continue;
    noteOne(into, p.lexical, role);
    if (p.real !== p.lexical) noteOne(into, p.real, role);
  }
}

/** Notes a path argument where its words put it from each possible cwd, without a look-up (a glob as written, a cd target). */
export function noteNamed(state: ScriptState, value: string | null, role: JudgedRole): void {
  const into = state.judged;
  if (into === undefined || value === null || value === "" || isHarmlessDevice(value)) return;
  for (const cwd of isAbsolute(value) ? ["/"] : state.cwds) if (cwd !== null) noteOne(into, resolve(cwd, value), role);
}

function noteOne(into: Map<string, JudgedRole>, p: string, role: JudgedRole): void {
  if (role === "write" || !into.has(p)) into.set(p, role);
}

/** Marks what a static path may name as downloaded: running anything at or below it runs remote code. */
export function markDownloaded(state: ScriptState, value: string | null): void {
  if (value === null) return;
  for (const p of locate(state, value) ?? []) state.downloads.add(p.real);
}

/** Whether a static path is, or lies below, something this script downloaded. */
export function isDownloaded(state: ScriptState, value: string | null): boolean {
  if (value === null || state.downloads.size === 0) return false;
  spend(state, state.downloads.size >> 3, "checking downloads");
  return (locate(state, value) ?? []).some((p) => [...state.downloads].some((d) => isWithin(d, p.real)));
}

/** A path below a link this script created resolves through the link, although the link does not exist yet. */
function throughLinks(state: ScriptState, p: string): string {
  if (state.links.size === 0) return p;
  spend(state, state.links.size >> 2, "following the links the command creates");
  for (let hops = 0; hops < 8; hops++) {
    let next: string | undefined;
    for (const [link, target] of state.links) {
      if (p === link) next = target;
      else if (p.startsWith(link + "/")) next = target + p.slice(link.length);
      if (next !== undefined) break;
    }
    if (next === undefined) return p;
    p = next;
  }
  return p;
}

/** The pattern as an anchored regular expression (no flags, so one object serves every caller). */
export const globToRegExp = memo(globRegExp, 1024);

function globRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const close = glob.indexOf("]", i + 1);
      if (close < 0) re += "\\[";
      else {
        re += `[${glob
          .slice(i + 1, close)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\")}]`;
        i = close;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** Existing entries a glob argument would expand to (one directory level), each where it leads, or null if unknowable; with `withDirectory`, also the pattern's directory, standing for matches not there yet. */
export function expandGlob(state: ScriptState, pattern: string, withDirectory = true): Located[] | null {
  const dir = dirname(pattern);
  // A pattern in the directory part (`*/out.js`) is expanded level by level: the directories it
  // matches, each where it leads, are the bases (a match that is a file holds nothing). One that
  // starts with a dot (`.*/x`) may match `..` in a bash before 5.2, which no listing shows: unknown.
  if (/(^|\/)\.[^/]*[*?[]/.test(dir)) return null;
  const bases = /[*?[]/.test(dir) ? expandGlob(state, dir, false)?.filter((p) => p.exists && state.facts.kind(p.real) === "directory") : locate(state, dir);
  if (!bases) return null;
  const re = globToRegExp(basename(pattern));
  const out: Located[] = [];
  for (const base of bases) {
    const asked = state.facts.lookups;
    const names = state.facts.list(base.real) ?? [];
    spend(state, FS_STEPS * (state.facts.lookups - asked) + (names.length >> 2), "expanding globs");
    for (const name of names) {
      // Like bash without dotglob: a leading "." must be matched explicitly.
      if (name.startsWith(".") && !basename(pattern).startsWith(".")) continue;
      if (!re.test(name)) continue;
      // A listed name holds no "/": joining is concatenation.
      const lexical = base.lexical === "/" ? `/${name}` : `${base.lexical}/${name}`;
      const real = base.real === "/" ? `/${name}` : `${base.real}/${name}`;
      // A match that is a symlink names where it leads, as the same path named plainly does: the
      // command opens the target (`cat build/*` through build/out.js -> ~/.ssh/id_ed25519).
      // The listing's entry kinds say which matches are links; only those are followed.
      if (state.facts.kind(real) === "symlink") {
        const asked2 = state.facts.lookups;
        let r: { readonly real: string; readonly exists: boolean } | null;
        try {
          r = state.facts.real(real);
        } catch {
          r = null;
        }
        spend(state, 1 + FS_STEPS * (state.facts.lookups - asked2), "following a glob's links");
        if (r === null) return null;
        out.push({ lexical, real: r.real, exists: r.exists });
        continue;
      }
      out.push({ lexical, real, exists: true });
    }
    if (withDirectory) out.push({ lexical: base.lexical, real: base.real, exists: base.exists });
  }
  return out;
}
