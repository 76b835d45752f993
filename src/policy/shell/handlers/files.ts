// Commands that create, change or remove files named by their arguments.

import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { below, isRegenerableName, isWithin, memo, type StatSource } from "../../places.ts";
import type { ShellEnv } from "../env.ts";
import { expandGlob, globToRegExp, isDownloaded, locate, markDownloaded, type Located } from "../locate.ts";
import { judgeRead } from "../reads.ts";
import { spend, WRITE_STEPS } from "../script-state.ts";
import { heldSelf, heldSelves, judgeDirWrite, judgeWrite, writeFinding } from "../writes.ts";
import { finding, strictest, type Finding } from "../finding.ts";
import { DYNAMIC, hasFlag, operands, optionValues, staticArg, type Analyzer, type Handler } from "../invocation.ts";
import type { Arg } from "../parse.ts";
import type { HandlerName, OperandRole } from "../programs.ts";
import { CRITICAL_DIRS, type OperandSpec, REGENERABLE_FILES } from "../table.ts";

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
      if (crit !== undefined && (recursive || t.glob || verb === "shred"))
        out.push(finding("hard-deny", `${verb} ${recursive ? "recursively " : ""}wipes ${crit}`));
      else out.push(judgeDestroy(env, an, t, verb, recursive, alwaysReview));
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

function judgeDestroy(env: ShellEnv, an: Analyzer, t: Arg, verb: string, recursive: boolean, alwaysReview: boolean): Finding {
  if (t.found) return judgeFoundDestroy(env, an, t, verb, alwaysReview);
  if (t.value === null) return finding("destructive", `${verb} removes ${t.text}, a path only known at run time`);
  const places = t.glob ? expandGlob(an.state, t.value) : locate(an.state, t.value);
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

const dd: Handler = (inv, an) => {
  const out: Finding[] = [];
  for (const a of inv.args) {
    const v = a.value;
    if (v === null) {
      out.push(finding("outside-writable-roots", `dd with an operand only known at run time (${a.text})`));
    } else if (v.startsWith("of=")) {
      out.push(judgeWrite(an.env, an.state, { ...a, value: v.slice(3) }, "dd writes"));
    } else if (v.startsWith("if=")) {
      const r = judgeRead(an.env, an.state, { ...a, value: v.slice(3) }, false);
      if (r) out.push(r);
    }
  }
  return out;
};

/** sed -i and awk -i inplace rewrite their file operands; sed's e/w commands run or write elsewhere. */
const sed: Handler = (inv, an) => {
  const inPlace = inv.args.some((a) => a.value !== null && ((/^-[a-zA-Z]*i/.test(a.value) && !a.value.startsWith("--")) || a.value.startsWith("--in-place")));
  const scripts = optionValues(inv.args, ["-e", "-f"], ["--expression", "--file"]);
  const ops = operands(inv.args, ["-e", "-f", "--expression", "--file", "-l", "--line-length"]);
  if (scripts.length === 0 && ops.length > 0) scripts.push(ops.shift()!);
  const out: Finding[] = [];
  for (const s of scripts) {
    if (s.value === null) out.push(finding("inline-code", "sed runs a script only known at run time"));
    else if (/(^|[;\n{}])\s*[ewW]\b|\/[gpIiMm0-9]*[ew][gpIiMm0-9]*\s*($|[;}\n])/.test(s.value) || SED_E_COMMAND.test(s.value) || SED_WRITE.test(s.value))
      out.push(finding("inline-code", "sed script runs commands or writes files (e/w)"));
    if (s.value !== null) out.push(...sedCommandFindings(s.value, an));
  }
  for (const f of ops) {
    if (inPlace) out.push(judgeWrite(an.env, an.state, f, "sed -i rewrites"));
    else {
      const r = judgeRead(an.env, an.state, f, false);
      if (r) out.push(r);
    }
  }
  return out;
};

/** system("cmd"), print | "cmd", "cmd" | getline, over a program whose strings are numbered ("0"). */
const AWK_CONSTANT_COMMAND = /\bsystem\s*\(\s*"(\d+)"\s*\)|(?<!\|)\|&?\s*"(\d+)"|"(\d+)"\s*\|&?\s*getline\b/g;
/** system(expr), expr | getline, print ... | expr: a command built at run time. */
const AWK_BUILT_COMMAND = /\bsystem\s*\((?!\s*"\d+"\s*\))|[^"\s|]\s*\|&?\s*getline\b|\bprintf?\b[^;{}\n]*?(?<!\|)\|&?\s*(?![|"])[A-Za-z_$(]/;

/** The program with every string constant replaced by its number, and the constants unescaped. */
function awkSkeleton(program: string): { code: string; strings: string[] } {
  const strings: string[] = [];
  const code = program.replace(/"((?:[^"\\]|\\.)*)"/g, (_, body: string) => {
    strings.push(body.replace(/\\(.)/g, (_e, c: string) => ({ n: "\n", t: "\t" })[c] ?? c));
    return `"${strings.length - 1}"`;
  });
  return { code, strings };
}

/**
 * The shell commands an awk program runs. Constant ones are read as scripts (awk's output piped
 * into them: `print | "sh"` runs data as code); one built at run time is code the gate cannot see.
 */
function awkCommandFindings(program: string, an: Analyzer): Finding[] {
  const { code, strings } = awkSkeleton(program);
  if (AWK_BUILT_COMMAND.test(code)) return [finding("dynamic-command", "awk program runs a command built at run time")];
  const out: Finding[] = [];
  for (const m of code.matchAll(AWK_CONSTANT_COMMAND)) {
    const cmd = strings[Number(m[1] ?? m[2] ?? m[3])]!;
    out.push(...an.script(m[2] !== undefined ? `: | ${cmd}` : cmd, "awk command"));
  }
  return out;
}

/** A sed address: a line number (with ~step), `$`, or a /regex/ with flags. */
const SED_ADDRESS = String.raw`(?:\d+(?:~\d+)?|\$|\/(?:[^/\\\n]|\\.)*\/[IM]*)`;
/** GNU sed's `e [COMMAND]`, after optional addresses and `!`: the command runs to the end of the line. */
const SED_COMMAND_START = String.raw`(?:^|[;\n{}])\s*(?:${SED_ADDRESS}(?:\s*,\s*${SED_ADDRESS})?)?\s*!?\s*`;
const SED_E_COMMAND = new RegExp(String.raw`${SED_COMMAND_START}e(?:[ \t]+([^\n]*))?(?=\n|$|;|})`);
/** `s/x/y/FLAGS`: group 2 holds the flags, group 3 a `w FILE` flag's file. */
const SED_SUBSTITUTE = /(?:^|[;\n{}])\s*s(.)(?:(?!\1)[^\\\n]|\\.)*\1(?:(?!\1)[^\\\n]|\\.)*\1([gpIiMme0-9]*)(?:w\s*([^\n]+))?/;
/** `w FILE` and `W FILE` write to FILE, which runs to the end of the line. */
const SED_WRITE = new RegExp(String.raw`${SED_COMMAND_START}[wW][ \t]+([^\n]+)`);

/**
 * What a sed script runs and writes besides its operands: `e COMMAND` is a shell script, `e` alone
 * and `s///e` run the edited text, and `w FILE` (also as an s flag) writes FILE.
 */
function sedCommandFindings(script: string, an: Analyzer): Finding[] {
  const out: Finding[] = [];
  for (const m of script.matchAll(new RegExp(SED_SUBSTITUTE, "g"))) {
    if (m[2]!.includes("e")) return [finding("dynamic-command", "sed executes the text it edits as a command (s///e)")];
    if (m[3] !== undefined) out.push(judgeWrite(an.env, an.state, staticArg(m[3]), "sed writes"));
  }
  for (const m of script.matchAll(new RegExp(SED_E_COMMAND, "g"))) {
    if (m[1] === undefined || m[1].trim() === "") return [finding("dynamic-command", "sed executes the text it edits as a command (e)")];
    out.push(...an.script(m[1], "sed e command"));
  }
  for (const m of script.matchAll(new RegExp(SED_WRITE, "g"))) out.push(judgeWrite(an.env, an.state, staticArg(m[1]!), "sed writes"));
  return out;
}

const awk: Handler = (inv, an) => {
  const out: Finding[] = [];
  const hasProgramFile = optionValues(inv.args, ["-f"], ["--file"]).length > 0;
  const ops = operands(inv.args, ["-f", "-v", "-F", "--file", "--assign", "--field-separator", "-i", "--include"]);
  const program = hasProgramFile ? undefined : ops.shift();
  if (hasProgramFile) out.push(finding("inline-code", "awk runs a program file"));
  if (program && (program.value === null || /system\s*\(|\|\s*(getline|")|>\s*"|print[^;]*>|\bfflush\b.*\|/.test(program.value)))
    out.push(finding("inline-code", "awk program runs commands or writes files"));
  if (program?.value) out.push(...awkCommandFindings(program.value, an));
  const inPlace = optionValues(inv.args, ["-i"], ["--include"]).some((a) => a.value === "inplace");
  for (const f of ops) {
    if (f.value?.includes("=")) continue; // var=value assignment operand
    if (inPlace) out.push(judgeWrite(an.env, an.state, f, "awk -i inplace rewrites"));
    else {
      const r = judgeRead(an.env, an.state, f, false);
      if (r) out.push(r);
    }
  }
  return out;
};

const tar: Handler = (inv, an) => {
  const first = inv.args[0]?.value ?? "";
  const modeWord = first.startsWith("-") ? first.slice(1) : first;
  const has = (c: string, long: string) => (!first.startsWith("--") && modeWord.includes(c)) || hasFlag(inv.args, c, [long]);
  const extract = has("x", "--extract") || has("x", "--get");
  const create = has("c", "--create") || has("r", "--append") || has("u", "--update");
  const out: Finding[] = [];
  const files = optionValues(inv.args, ["-f"], ["--file"]);
  const bundledFile = !first.startsWith("-") && modeWord.includes("f") ? inv.args[1] : undefined;
  if (bundledFile) files.push(bundledFile);
  if (extract) {
    const dirs = optionValues(inv.args, ["-C"], ["--directory"]);
    if (dirs.length === 0) dirs.push({ text: ".", value: ".", glob: false });
    for (const d of dirs) out.push(judgeDirWrite(an, d, "tar extracts into"));
    // Unpacking a download (a downloaded file, or a pipe from curl) makes its contents downloads too.
    const fromStdin = files.length === 0 || files.some((f) => f.value === "-");
    if (files.some((f) => isDownloaded(an.state, f.value)) || (fromStdin && inv.pipedInput && an.state.network !== undefined))
      for (const d of dirs) markDownloaded(an.state, d.value);
  }
  if (create) {
    for (const f of files) if (f.value !== "-") out.push(judgeWrite(an.env, an.state, f, "tar writes"));
    const skip = new Set(files);
    // Members are read relative to the last -C directory, or the cwd when there is none.
    const dirs = optionValues(inv.args, ["-C"], ["--directory"]);
    for (const a of operands(inv.args.slice(bundledFile ? 2 : 1), ["-f", "-C", "--file", "--directory", "-T", "-X"])) {
      if (skip.has(a) || dirs.includes(a)) continue;
      for (const m of [a, ...dirs.map((d) => memberOf(d, a))]) {
        const r = judgeRead(an.env, an.state, m, true);
        if (r) out.push(r);
      }
    }
  }
  return out;
};

function memberOf(dir: Arg, member: Arg): Arg {
  if (dir.value === null || member.value === null) return { text: `${dir.text}/${member.text}`, value: null, glob: false };
  return { ...member, value: isAbsolute(member.value) ? member.value : join(dir.value, member.value) };
}

const unzip: Handler = (inv, an) => {
  if (hasFlag(inv.args, "lvtz", [])) return [];
  const dirs = optionValues(inv.args, ["-d"], []);
  if (dirs.length === 0) dirs.push({ text: ".", value: ".", glob: false });
  const archive = operands(inv.args, ["-d", "-x", "-P"])[0];
  if (archive && isDownloaded(an.state, archive.value)) for (const d of dirs) markDownloaded(an.state, d.value);
  return dirs.map((d) => judgeDirWrite(an, d, "unzip extracts into"));
};

const zip: Handler = (inv, an) => {
  const ops = operands(inv.args, ["-x", "-i", "-b", "-n", "-t", "-tt"]);
  const archive = ops.shift();
  const out: Finding[] = archive ? [judgeWrite(an.env, an.state, archive, "zip writes")] : [];
  for (const s of ops) {
    const r = judgeRead(an.env, an.state, s, true);
    if (r) out.push(r);
  }
  return out;
};

const compressInPlace =
  (verb: string): Handler =>
  (inv, an) => {
    if (hasFlag(inv.args, "ctl", ["--stdout", "--to-stdout", "--test", "--list"])) return [];
    return operands(inv.args, ["-S", "--suffix"]).map((a) => judgeWrite(an.env, an.state, a, `${verb} replaces`));
  };

const patch: Handler = (inv, an) => {
  const out = optionValues(inv.args, ["-o"], ["--output"]).map((o) => judgeWrite(an.env, an.state, o, "patch writes"));
  const dirs = optionValues(inv.args, ["-d"], ["--directory"]);
  const target = dirs[0] ?? { text: ".", value: ".", glob: false };
  out.push(judgeWrite(an.env, an.state, target, "patch changes files in"));
  return out;
};

/** Operators that make a find expression more than a conjunction of tests. */
const FIND_NON_AND = new Set(["-o", "-or", "!", "-not", ",", "(", ")"]);

/** The start points of a find command, and where its expression begins. */
function findStarts(args: readonly Arg[]): { starts: Arg[]; exprAt: number } {
  const starts: Arg[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (v !== null && (v.startsWith("-") || v === "(" || v === "!" || v === ")")) break;
    starts.push(args[i]!);
  }
  if (starts.length === 0) starts.push({ text: ".", value: ".", glob: false });
  return { starts, exprAt: i };
}

/**
 * The paths find selects, one per start point. In a pure conjunction every selected path passes
 * every test, so a `-name` pattern is a fact about its name; with `-o` or `!` it is not.
 */
export function foundPaths(args: readonly Arg[]): Arg[] {
  const { starts, exprAt } = findStarts(args);
  const expr = args.slice(exprAt);
  const conjunction = expr.every((a) => a.value !== null && !FIND_NON_AND.has(a.value));
  const nameAt = expr.findIndex((a) => a.value === "-name" || a.value === "-iname");
  const name = conjunction && nameAt >= 0 ? (expr[nameAt + 1]?.value ?? undefined) : undefined;
  return starts.map((base) => ({ text: "{}", value: null, glob: false, found: { base, name } }));
}

/** find: names only, unless it deletes, runs commands or writes listings. */
const find: Handler = (inv, an) => {
  const args = inv.args;
  const { exprAt } = findStarts(args);
  const found = foundPaths(args);
  const out: Finding[] = [];
  for (let i = exprAt; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-delete") {
      for (const f of found) out.push(judgeDestroy(an.env, an, f, "find -delete", true, false));
    } else if (v === "-exec" || v === "-execdir" || v === "-ok" || v === "-okdir") {
      const cmd: Arg[] = [];
      for (i++; i < args.length; i++) {
        const w = args[i]!.value;
        if (w === ";" || w === "+") break;
        cmd.push(args[i]!);
      }
      // `{}` alone is one selected path; inside a longer word it is only known at run time.
      for (const f of found)
        out.push(
          ...an.argv(
            cmd.map((a) => (a.value === "{}" ? f : a.value?.includes("{}") ? DYNAMIC : a)),
            inv.source,
            false,
          ),
        );
    } else if (v === "-fprint" || v === "-fprint0" || v === "-fprintf" || v === "-fls") {
      const f = args[i + 1];
      if (f) out.push(judgeWrite(an.env, an.state, f, `find ${v} writes`));
    }
  }
  return out;
};

/** This family's code handlers, by the name commands.json gives them. */
export const FILE_HANDLERS: Partial<Record<HandlerName, Handler>> = { ln, dd, sed, awk, tar, unzip, zip, patch, find };

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
