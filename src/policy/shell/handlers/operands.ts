// File operators, judged by what their operands are for (a record's `operands` in commands.json):
// removal (rm, shred, truncate), copy and move, writing, mode changes and compression in place;
// and ln, whose links the script's later commands see.

import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { below, isRegenerableName, isWithin, memo, type StatSource } from "../../places.ts";
import type { ShellEnv } from "../env.ts";
import { finding, strictest, type Finding } from "../finding.ts";
import { hasFlag, operands, optionValues, type Analyzer, type Handler, type HandlerRegistry } from "../invocation.ts";
import { expandGlob, globToRegExp, isDownloaded, locate, type Located, noteJudged, noteNamed } from "../locate.ts";
import type { Arg } from "../parse.ts";
import type { OperandRole } from "../programs.ts";
import { judgeRead } from "../reads.ts";
import { spend, WRITE_STEPS } from "../script-state.ts";
import { CRITICAL_DIRS, type OperandSpec, REGENERABLE_FILES } from "../table.ts";
import { heldSelf, heldSelves, judgeWrite, writeFinding } from "../writes.ts";

function criticalPaths(env: ShellEnv): Set<string> {
  const out = new Set<string>();
  for (const d of CRITICAL_DIRS) {
    if (d === "~") out.add(env.home).add(env.places.homeReal);
    else if (d.startsWith("~/")) out.add(resolve(env.home + d.slice(1))).add(resolve(env.places.homeReal + d.slice(1)));
    else if (d === "@agent") out.add(env.places.agentDir);
    else out.add(d);
  }
  return out;
}

// Keyed by the places (kept across calls while nothing they depend on changes) and the home spelling.
const criticalCache = new WeakMap<object, Map<string, Set<string>>>();

function isCritical(env: ShellEnv, p: string): boolean {
  let byHome = criticalCache.get(env.places);
  if (!byHome) criticalCache.set(env.places, (byHome = new Map()));
  let set = byHome.get(env.home);
  if (!set) byHome.set(env.home, (set = criticalPaths(env)));
  return set.has(p.length > 1 ? p.replace(/\/+$/, "") : p);
}

/** A glob directly inside a critical directory (`/*`, `~/*`) wipes it as surely as the directory itself. */
function criticalTarget(env: ShellEnv, an: Analyzer, arg: Arg): string | undefined {
  if (arg.value === null) {
    // `/home/$USER`, `"$HOME/$DIR"`: an unknown entry of a critical directory, or the directory itself.
    const bases = arg.within === undefined ? null : locate(an.state, arg.within);
    return bases?.some((b) => isCritical(env, b.lexical) || isCritical(env, b.real)) ? arg.text : undefined;
  }
  if (arg.glob) {
    const v = arg.value.replace(/\/+$/, "") || "/"; // `/*/` is `/*` limited to directories
    const dir = v.includes("/") ? v.replace(/\/[^/]*$/, "") || "/" : ".";
    const bases = locate(an.state, dir);
    if (/^[^/]*[*?[]/.test(v.split("/").pop() ?? "") && bases?.some((b) => isCritical(env, b.lexical) || isCritical(env, b.real))) return arg.value;
    return undefined;
  }
  const located = locate(an.state, arg.value);
  return located?.some((p) => isCritical(env, p.lexical) || isCritical(env, p.real)) ? arg.value : undefined;
}

/** rm, rmdir, unlink, shred, truncate: removal or destruction of file contents. */
function destroys(
  verb: string,
  recursiveFlags: { readonly short: string; readonly long: readonly string[] },
  alwaysReview: boolean,
  valueOpts: readonly string[],
): Handler {
  return (inv, an) => {
    const { env } = an;
    const recursive = hasFlag(inv.args, recursiveFlags.short, recursiveFlags.long);
    const targets = operands(inv.args, valueOpts);
    const out: Finding[] = [];
    for (const t of targets) {
      const crit = criticalTarget(env, an, t);
      if (crit !== undefined && (recursive || t.glob || verb === "shred")) {
        out.push(finding("hard-deny", `${verb} ${recursive ? "recursively " : ""}wipes ${crit}`));
        if (an.state.judged) noteNamed(an.state, t.value ?? t.within ?? null, "write");
      } else out.push(judgeDestroy(env, an, t, verb, recursive, alwaysReview));
    }
    return out;
  };
}

interface DestroyHow {
  readonly verb: string;
  readonly recursive: boolean;
  readonly alwaysReview: boolean;
  /** The glob of the last path component, when the operand is a pattern. */
  readonly pattern: string | undefined;
}

export function judgeDestroy(env: ShellEnv, an: Analyzer, t: Arg, verb: string, recursive: boolean, alwaysReview: boolean): Finding {
  if (t.found) return judgeFoundDestroy(env, an, t, verb, alwaysReview);
  if (t.value === null) return finding("destructive", `${verb} removes ${t.text}, a path only known at run time`);
  const places = t.glob ? expandGlob(an.state, t.value) : locate(an.state, t.value);
  if (an.state.judged) {
    noteJudged(an.state, places, "write");
    if (t.glob) noteNamed(an.state, t.value, "write");
  }
  if (!places) return finding("destructive", `${verb} removes ${t.value} relative to a directory only known at run time`);
  spend(an.state, WRITE_STEPS * places.length, "judging removals");
  const how: DestroyHow = { verb, recursive, alwaysReview, pattern: t.glob ? basename(t.value) : undefined };
  // expandGlob also lists the pattern's directory, standing for matches that do not exist yet.
  const bases = new Set(t.glob ? (locate(an.state, dirname(t.value)) ?? []).map((b) => b.lexical) : []);
  return (
    strictest(places.map((p) => (bases.has(p.lexical) ? matchesInside(env, p, t.value!, how, an) : destroyFinding(env, p, t.value!, how, an)))) ??
    finding("read-only", `${verb} removes nothing`)
  );
}

/** Future matches of a pattern directly inside a directory. */
function matchesInside(env: ShellEnv, dir: Located, shown: string, how: DestroyHow, an: Analyzer): Finding {
  const ws = env.places.workspace;
  const where = writeFinding(env, dir, shown, `${how.verb} changes`, an.state.facts);
  if (where.cls !== "workspace-write" || !isWithin(ws, dir.real)) return where;
  if (how.alwaysReview) return finding("destructive", `${how.verb} irrecoverably destroys ${shown}`);
  if (regenerablePath(below(ws, dir.real)) || isRegenerableFile(how.pattern ?? ""))
    return finding("regenerable-cleanup", `${how.verb} removes ${shown}, regenerable build output`);
  return finding("destructive", `${how.verb} removes every match of ${shown} in the workspace`);
}

const UNLINKS = new Set(["rm", "rmdir", "unlink"]);

const ONE_LINK: StatSource = { fileLinks: () => 1 };

/** One place a removal may hit. Only the workspace's own regenerable output is cleanup. */
function destroyFinding(env: ShellEnv, p: Located, shown: string, how: DestroyHow, an: Analyzer): Finding {
  const ws = env.places.workspace;
  const { verb } = how;
  // A directory that contains the workspace (`..`, the home dir) takes the workspace with it,
  // and the sandbox cannot stop that part: the workspace is writable inside it.
  if (p.real !== ws && isWithin(p.real, ws)) return finding("destructive", `${verb} removes ${shown}, which contains the whole workspace`);
  const own = heldSelf(env, p);
  if (own)
    return finding("self-protection", `${verb} removes ${shown}, which holds ${own}, auto mode's own configuration or state or the settings that load it`);
  // Removing a name leaves a file's other hard links and their data alone: only what rewrites the
  // data (truncate, shred) may change a file outside through one, so only it needs the link count.
  const where = writeFinding(env, p, shown, `${verb} changes`, UNLINKS.has(verb) ? ONE_LINK : an.state.facts);
  if (where.cls !== "workspace-write" || !isWithin(ws, p.real)) return where; // protected, outside, or the temporary root (scratch)
  if (how.alwaysReview) return finding("destructive", `${verb} irrecoverably destroys ${shown}`);
  if (p.real === ws) return finding("destructive", `${verb} removes ${shown}, the whole workspace`);
  if (regenerablePath(below(ws, p.real)) || isRegenerableFile(how.pattern ?? basename(p.real)))
    return finding("regenerable-cleanup", `${verb} removes ${shown}, regenerable build output`);
  if (how.pattern !== undefined) return finding("destructive", `${verb} removes every match of ${shown} in the workspace`);
  // `rm -rf file` removes one file: the flag only matters for directories.
  if (!how.recursive || (p.exists && !isDirectory(p.real, an))) return finding("workspace-write", `${verb} removes the file ${shown}`);
  return finding("destructive", `${verb} recursively removes ${shown}, work that cannot be regenerated`);
}

/** A static path inside the workspace that names regenerable output only (`build/`, `dist/x.js`, `a.pyc`). */
export function isRegenerableTarget(env: ShellEnv, an: Analyzer, arg: Arg): boolean {
  if (arg.value === null || arg.glob) return false;
  const ws = env.places.workspace;
  const places = locate(an.state, arg.value);
  return places?.every((p) => p.real !== ws && isWithin(ws, p.real) && (regenerablePath(below(ws, p.real)) || isRegenerableFile(basename(p.real)))) === true;
}

/** Inside a regenerable directory (`target/debug/incremental`, `node_modules/.cache`). */
function regenerablePath(rel: string): boolean {
  return rel !== "" && !rel.startsWith("..") && rel.split("/").some(isRegenerableName);
}

/** A file name or name pattern of regenerable files (`*.pyc`, `*.o`), or a regenerable directory name. */
export const isRegenerableFile = memo(regenerableFile);

function regenerableFile(name: string): boolean {
  const lower = name.toLowerCase();
  if (isRegenerableName(lower) || REGENERABLE_FILES.some((r) => r.pattern === lower)) return true;
  if (!/[*?[\]]/.test(lower)) return REGENERABLE_FILES.some((r) => r.re.test(lower));
  // A pattern is covered by a listed `*SUFFIX` when every name it matches ends with that suffix.
  const tail = /[^*?[\]]*$/.exec(lower)![0];
  return REGENERABLE_FILES.some((r) => r.pattern.startsWith("*") && !/[*?[]/.test(r.pattern.slice(1)) && tail.endsWith(r.pattern.slice(1)));
}

/** Removal of what `find` selects below a start point: everything, unless its name is forced. */
function judgeFoundDestroy(env: ShellEnv, an: Analyzer, t: Arg, verb: string, alwaysReview: boolean): Finding {
  const { base, name } = t.found!;
  if (base.value === null) return finding("destructive", `${verb} removes what find selects below ${base.text}, a path only known at run time`);
  const places = base.glob ? expandGlob(an.state, base.value) : locate(an.state, base.value);
  if (an.state.judged) noteJudged(an.state, places, "write");
  if (!places) return finding("destructive", `${verb} removes what find selects below ${base.value}, relative to an unknown directory`);
  const ws = env.places.workspace;
  const one = (p: Located): Finding => {
    if (name === undefined && (isCritical(env, p.lexical) || isCritical(env, p.real)))
      return finding("hard-deny", `${verb} wipes everything below ${base.value}`);
    const own = heldSelves(env, p).find((s) => s !== p.real && (name === undefined || globToRegExp(name).test(basename(s))));
    if (own) return finding("self-protection", `${verb} may remove ${own}, auto mode's own configuration or state`);
    if (p.real !== ws && isWithin(p.real, ws)) return finding("destructive", `${verb} removes files below ${base.value}, which contains the whole workspace`);
    const where = writeFinding(env, p, base.value!, `${verb} changes files below`, an.state.facts);
    if (where.cls !== "workspace-write" || !isWithin(ws, p.real)) return where;
    if (alwaysReview) return finding("destructive", `${verb} irrecoverably destroys files below ${base.value}`);
    if ((name !== undefined && isRegenerableFile(name)) || regenerablePath(below(ws, p.real)))
      return finding("regenerable-cleanup", `${verb} removes ${name ?? "files"} below ${base.value}, regenerable output`);
    return finding("destructive", `${verb} removes ${name === undefined ? "every file" : `every ${name}`} below ${base.value}`);
  };
  return strictest(places.map(one)) ?? finding("read-only", `${verb} removes nothing`);
}

/** What removing (or emptying) the files find selects does: `arg` must carry `found`. */
export function judgeFoundRemoval(an: Analyzer, arg: Arg, verb: string): Finding {
  return judgeFoundDestroy(an.env, an, arg, verb, false);
}

/** The last operand is the destination; `-t DIR` names it explicitly. */
function copyLike(verb: string, removesSources: boolean): Handler {
  return (inv, an) => {
    const valueOpts = ["-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group"];
    const explicit = optionValues(inv.args, ["-t"], ["--target-directory"]);
    const ops = operands(inv.args, valueOpts);
    const dest = explicit[0] ?? (ops.length >= 2 ? ops[ops.length - 1] : undefined);
    const sources = explicit.length > 0 ? ops : ops.slice(0, -1);
    const recursive = hasFlag(inv.args, "rRa", ["--recursive", "--archive"]);
    const out: Finding[] = [];
    if (dest) out.push(judgeWrite(an.env, an.state, dest, `${verb} writes`));
    // Into an existing directory each source lands at DIR/NAME (its contents, for `SRC/.` or rsync's `SRC/`),
    // and a tree copied or moved there replaces whatever DIR/NAME holds.
    const intoDir =
      dest !== undefined && dest.value !== null && (explicit.length > 0 || (locate(an.state, dest.value) ?? []).some((p) => isDirectory(p.real, an)));
    for (const s of dest !== undefined && dest.value !== null ? sources : []) {
      if (s.value === null || s.glob) continue;
      const name = s.value.endsWith("/") || basename(s.value) === "." ? "" : basename(s.value);
      const landing = intoDir && name !== "" ? { ...dest!, value: join(dest!.value!, name), glob: false } : dest!;
      if (landing !== dest) out.push(judgeWrite(an.env, an.state, landing, `${verb} writes`));
      if (!recursive && !removesSources) continue;
      const own = (locate(an.state, landing.value!) ?? []).map((p) => heldSelf(an.env, p)).find((o) => o !== undefined);
      if (own)
        out.push(
          finding(
            "self-protection",
            `${verb} replaces ${landing.value}, which holds ${own}, auto mode's own configuration or state or the settings that load it`,
          ),
        );
    }
    const away = removesSources && dest !== undefined && outOfReach(an, dest);
    for (const s of sources) {
      const crit = removesSources ? criticalTarget(an.env, an, s) : undefined;
      const own =
        removesSources && s.value !== null && !s.glob
          ? (locate(an.state, s.value) ?? []).map((p) => heldSelf(an.env, p)).find((o) => o !== undefined)
          : undefined;
      if (crit) out.push(finding("hard-deny", `${verb} moves away ${crit}`));
      else if (own)
        out.push(
          finding("self-protection", `${verb} moves away ${s.value}, which holds ${own}, auto mode's own configuration or state or the settings that load it`),
        );
      else if (away && isWorkspaceWork(an, s))
        out.push(finding("destructive", `${verb} moves ${s.value} out of the workspace or into regenerable output, where cleanup may delete it`));
      else if (removesSources) out.push(judgeWrite(an.env, an.state, s, `${verb} removes`));
      const r = judgeRead(an.env, an.state, s, recursive || removesSources);
      if (r) out.push(r);
    }
    return out;
  };
}

/** A move destination outside the workspace, or inside output that cleanup removes without review. */
function outOfReach(an: Analyzer, dest: Arg): boolean {
  if (dest.value === null) return false;
  const ws = an.env.places.workspace;
  return isRegenerableTarget(an.env, an, dest) || (locate(an.state, dest.value) ?? []).some((p) => !isWithin(ws, p.real));
}

/** Existing workspace content that is not itself regenerable. */
function isWorkspaceWork(an: Analyzer, src: Arg): boolean {
  if (src.value === null || src.glob) return false;
  const ws = an.env.places.workspace;
  const places = locate(an.state, src.value) ?? [];
  return places.some((p) => p.exists && isWithin(ws, p.real)) && !isRegenerableTarget(an.env, an, src);
}

const RSYNC_VALUE_OPTIONS = [
  "-e",
  "--rsh",
  "--exclude",
  "--include",
  "--filter",
  "-f",
  "--exclude-from",
  "--include-from",
  "--files-from",
  "--backup-dir",
  "--suffix",
  "--chmod",
  "--chown",
  "--log-file",
  "--partial-dir",
  "--temp-dir",
  "-T",
];

/**
 * rsync between local paths is a copy; `--remove-source-files` makes it a move, and `--delete`
 * (any spelling) removes whatever the destination holds beyond the source: into the home
 * directory from an empty source, that is a wipe.
 */
export const rsyncLocal: Handler = (inv, an) => {
  const out = copyLike("rsync", hasFlag(inv.args, "", ["--remove-source-files"]))(inv, an);
  if (!inv.args.some((a) => a.value !== null && /^--del(ete(-[a-z]+)?)?$/.test(a.value))) return out;
  const dest = operands(inv.args, RSYNC_VALUE_OPTIONS).at(-1);
  if (!dest) return out;
  const located = dest.value === null || dest.glob ? null : locate(an.state, dest.value);
  if (located?.every((p) => !p.exists)) return out; // a new destination has nothing to delete
  const crit = criticalTarget(an.env, an, dest);
  // A wipe comes first: it is what the message should name, before what the destination holds.
  if (crit !== undefined) out.unshift(finding("hard-deny", `rsync --delete empties ${crit}`));
  else out.push(judgeDestroy(an.env, an, dest, "rsync --delete", true, false));
  return out;
};

/** Every operand is written (touch, mkdir, tee, sponge, gzip, ...). */
function writesOperands(verb: string, valueOpts: readonly string[] = [], skipFirst = 0): Handler {
  return (inv, an) =>
    operands(inv.args, valueOpts)
      .slice(skipFirst)
      .map((a) => judgeWrite(an.env, an.state, a, `${verb} writes`));
}

const ln: Handler = (inv, an) => {
  const symbolic = hasFlag(inv.args, "s", ["--symbolic"]);
  const ops = operands(inv.args, ["-t", "--target-directory", "-S", "--suffix"]);
  const explicit = optionValues(inv.args, ["-t"], ["--target-directory"]);
  const link = explicit[0] ?? (ops.length >= 2 ? ops[ops.length - 1] : undefined);
  const out: Finding[] = [];
  if (link) out.push(judgeWrite(an.env, an.state, link, "ln creates"));
  else out.push(finding("workspace-write", "ln creates a link in the current directory"));
  const sources = explicit.length > 0 ? ops : ops.length >= 2 ? ops.slice(0, -1) : ops;
  rememberLinks(an, sources, link, symbolic, hasFlag(inv.args, "nT", ["--no-dereference", "--no-target-directory"]));
  if (!symbolic) {
    // A hard link to a file outside the roots lets a later in-workspace write change that file.
    for (const src of explicit.length > 0 ? ops : ops.slice(0, -1)) {
      const w = judgeWrite(an.env, an.state, src, "ln hard-links");
      if (w.cls !== "workspace-write") out.push(finding("outside-writable-roots", `ln hard-links ${src.text}, which lies outside the writable roots`));
    }
  }
  return out;
};

/**
 * Later commands of the same script see links this one creates: `ln -s ~/.ssh keys; tar c keys`
 * reads the keys although `keys` does not exist while the gate judges the command.
 */
function rememberLinks(an: Analyzer, sources: readonly Arg[], link: Arg | undefined, symbolic: boolean, noDeref: boolean): void {
  for (const src of sources) {
    if (src.value === null) continue;
    for (const cwd of an.state.cwds) {
      if (cwd === null) continue;
      let at = resolve(cwd, link?.value ?? basename(src.value));
      if (link?.value === null) continue;
      if (!noDeref && isDirectory(at, an)) at = join(at, basename(src.value));
      // A symbolic link's target is relative to the link's own directory; a hard link's to the cwd.
      const target = isAbsolute(src.value) ? src.value : resolve(symbolic ? dirname(at) : cwd, src.value);
      an.state.links.set(at, target);
    }
  }
}

function isDirectory(p: string, an: Analyzer): boolean {
  return an.state.facts.target(p) === "directory";
}

/** A static path that is the workspace root or a directory above it. */
function holdsWorkspace(an: Analyzer, t: Arg): boolean {
  if (t.value === null || t.glob) return false;
  return (locate(an.state, t.value) ?? []).some((p) => isWithin(p.real, an.env.places.workspace));
}

const chmodLike =
  (verb: string): Handler =>
  (inv, an) => {
    const recursive = hasFlag(inv.args, "R", ["--recursive"]);
    const ops = operands(inv.args, ["--reference"]);
    const spec = optionValues(inv.args, [], ["--reference"]).length > 0 ? undefined : ops.shift();
    const out: Finding[] = [];
    if (verb === "chmod" && spec?.value && /(^|[,ugoa]*)[+=][rwxXt]*s|^[0-7]?[4-7][0-7]{3}$/.test(spec.value))
      out.push(finding("privilege", `chmod sets a setuid or setgid bit (${spec.value})`));
    for (const t of ops) {
      const crit = criticalTarget(an.env, an, t);
      if (crit && recursive) out.push(finding("hard-deny", `${verb} -R changes the whole of ${crit}`));
      else if (recursive && holdsWorkspace(an, t))
        out.push(finding("protected-path", `${verb} -R changes ${t.value} and everything below, the workspace's .git and protected files included`));
      else out.push(judgeWrite(an.env, an.state, t, `${verb} changes`));
      if (verb === "chmod" && spec?.value && /x/.test(spec.value) && t.value) {
        if (isDownloaded(an.state, t.value)) out.push(finding("remote-code", `chmod makes the downloaded ${t.value} executable`));
      }
    }
    return out;
  };

const compressInPlace =
  (verb: string): Handler =>
  (inv, an) => {
    if (hasFlag(inv.args, "ctl", ["--stdout", "--to-stdout", "--test", "--list"])) return [];
    return operands(inv.args, ["-S", "--suffix"]).map((a) => judgeWrite(an.env, an.state, a, `${verb} replaces`));
  };

/** A file operator's handler, from its record's operands. */
export function operandHandler(tool: string, spec: OperandSpec): Handler {
  const role = spec.role as OperandRole; // the schema allows only these
  switch (role) {
    case "remove":
      return destroys(tool, spec.recursive ?? { short: "", long: [] }, spec.irrecoverable === true, spec.valueOptions ?? []);
    case "copy":
      return copyLike(tool, false);
    case "move":
      return copyLike(tool, true);
    case "write":
      return writesOperands(tool, spec.valueOptions, spec.skipOperands);
    case "mode":
      return chmodLike(tool);
    case "compress":
      return compressInPlace(tool);
  }
}

/** This family's code handlers, by the name commands.json gives them. */
export const OPERAND_HANDLERS: HandlerRegistry = { ln: () => ln };
