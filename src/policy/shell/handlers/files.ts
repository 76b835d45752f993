// Commands that create, change or remove files named by their arguments.

import { basename } from "node:path";
import { isRegenerableName, isWithin } from "../../places.ts";
import { expandGlob, judgeRead, judgeWrite, locate, type ShellEnv } from "../env.ts";
import { finding, type Finding } from "../finding.ts";
import { DYNAMIC, hasFlag, operands, optionValues, type Analyzer, type Handler, type Invocation } from "../invocation.ts";
import type { Arg } from "../parse.ts";
import { CRITICAL_DIRS } from "../table.ts";

function criticalPaths(env: ShellEnv): Set<string> {
  const out = new Set<string>();
  for (const d of CRITICAL_DIRS) {
    if (d === "~") out.add(env.home).add(env.places.homeReal);
    else if (d.startsWith("~/")) out.add(env.home + d.slice(1)).add(env.places.homeReal + d.slice(1));
    else if (d === "@agent") out.add(env.places.agentDir);
    else out.add(d);
  }
  return out;
}

const criticalCache = new WeakMap<ShellEnv, Set<string>>();
function isCritical(env: ShellEnv, p: string): boolean {
  let set = criticalCache.get(env);
  if (!set) criticalCache.set(env, (set = criticalPaths(env)));
  return set.has(p.length > 1 ? p.replace(/\/+$/, "") : p);
}

/** A glob directly inside a critical directory (`/*`, `~/*`) wipes it as surely as the directory itself. */
function criticalTarget(env: ShellEnv, an: Analyzer, arg: Arg): string | undefined {
  if (arg.value === null) return undefined;
  if (arg.glob) {
    const dir = arg.value.replace(/\/[^/]*$/, "") || "/";
    const bases = locate(an.state, dir);
    if (/^[^/]*[*?[]/.test(arg.value.split("/").pop() ?? "") && bases?.some((b) => isCritical(env, b.lexical) || isCritical(env, b.real)))
      return arg.value;
    return undefined;
  }
  const located = locate(an.state, arg.value);
  return located?.some((p) => isCritical(env, p.lexical) || isCritical(env, p.real)) ? arg.value : undefined;
}

/** rm, rmdir, unlink, shred, truncate: removal or destruction of file contents. */
function destroys(verb: string, recursiveFlags: { short: string; long: string[] }, alwaysReview = false): Handler {
  return (inv, an) => {
    const { env } = an;
    const recursive = hasFlag(inv.args, recursiveFlags.short, recursiveFlags.long);
    const valueOpts = verb === "truncate" ? ["-s", "--size", "-r", "--reference"] : [];
    const targets = operands(inv.args, valueOpts);
    const out: Finding[] = [];
    for (const t of targets) {
      const crit = criticalTarget(env, an, t);
      if (crit !== undefined && (recursive || t.glob || verb === "shred"))
        out.push(finding("deny", "hard-deny", `${verb} ${recursive ? "recursively " : ""}wipes ${crit}`));
      else out.push(judgeDestroy(env, an, t, verb, recursive, alwaysReview));
    }
    return out;
  };
}

function judgeDestroy(env: ShellEnv, an: Analyzer, t: Arg, verb: string, recursive: boolean, alwaysReview: boolean): Finding {
  if (t.value === null) return finding("review", "destructive", `${verb} removes ${t.text}, a path only known at run time`);
  // A directory that contains the workspace (`..`, the home dir) takes the workspace with it,
  // and the sandbox cannot stop that part: the workspace is writable inside it.
  const candidates = (t.glob ? expandGlob(an.state, t.value)?.slice(0, -1) : locate(an.state, t.value)) ?? [];
  const containing = candidates.find((p) => (t.glob || p.real !== env.places.workspace) && isWithin(p.real, env.places.workspace));
  if (containing && (recursive || alwaysReview)) return finding("review", "destructive", `${verb} removes ${t.value}, which contains the whole workspace`);
  const where = judgeWrite(env, an.state, t, `${verb} changes`);
  if (where.cls !== "workspace-write") return where;
  if (alwaysReview) return finding("review", "destructive", `${verb} irrecoverably destroys ${t.value}`);
  const located = t.glob ? null : locate(an.state, t.value);
  if (t.glob || !located) return finding("review", "destructive", `${verb} removes every match of ${t.value} in the workspace`);
  if (located.every((p) => !isWithin(env.places.workspace, p.real))) return where; // temporary root: scratch space
  if (located.every((p) => p.real !== env.places.workspace && isRegenerableName(basename(p.real))))
    return finding("cleanup", "regenerable-cleanup", `${verb} removes ${t.value}, regenerable build output`);
  if (!recursive) return finding("workspace-write", "workspace-write", `${verb} removes the file ${t.value}`);
  return finding("review", "destructive", `${verb} recursively removes ${t.value}, work that cannot be regenerated`);
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
    for (const s of sources) {
      const crit = removesSources ? criticalTarget(an.env, an, s) : undefined;
      if (crit) out.push(finding("deny", "hard-deny", `${verb} moves away ${crit}`));
      else if (removesSources) out.push(judgeWrite(an.env, an.state, s, `${verb} removes`));
      const r = judgeRead(an.env, an.state, s, recursive || removesSources);
      if (r) out.push(r);
    }
    return out;
  };
}

/** Every operand is written (touch, mkdir, tee, sponge, gzip, ...). */
function writesOperands(verb: string, valueOpts: readonly string[] = [], skipFirst = 0): Handler {
  return (inv, an) => operands(inv.args, valueOpts).slice(skipFirst).map((a) => judgeWrite(an.env, an.state, a, `${verb} writes`));
}

const ln: Handler = (inv, an) => {
  const symbolic = hasFlag(inv.args, "s", ["--symbolic"]);
  const ops = operands(inv.args, ["-t", "--target-directory", "-S", "--suffix"]);
  const explicit = optionValues(inv.args, ["-t"], ["--target-directory"]);
  const link = explicit[0] ?? (ops.length >= 2 ? ops[ops.length - 1] : undefined);
  const out: Finding[] = [];
  if (link) out.push(judgeWrite(an.env, an.state, link, "ln creates"));
  else out.push(finding("workspace-write", "workspace-write", "ln creates a link in the current directory"));
  if (!symbolic) {
    // A hard link to a file outside the roots lets a later in-workspace write change that file.
    for (const src of explicit.length > 0 ? ops : ops.slice(0, -1)) {
      const w = judgeWrite(an.env, an.state, src, "ln hard-links");
      if (w.cls !== "workspace-write") out.push(finding("contain", "outside-writable-roots", `ln hard-links ${src.text}, which lies outside the writable roots`));
    }
  }
  return out;
};

const chmodLike =
  (verb: string): Handler =>
  (inv, an) => {
    const recursive = hasFlag(inv.args, "R", ["--recursive"]);
    const ops = operands(inv.args, ["--reference"]);
    const spec = optionValues(inv.args, [], ["--reference"]).length > 0 ? undefined : ops.shift();
    const out: Finding[] = [];
    if (verb === "chmod" && spec?.value && /(^|[,ugoa]*)[+=][rwxXt]*s|^[0-7]?[4-7][0-7]{3}$/.test(spec.value))
      out.push(finding("review", "privilege", `chmod sets a setuid or setgid bit (${spec.value})`));
    for (const t of ops) {
      const crit = criticalTarget(an.env, an, t);
      if (crit && recursive) out.push(finding("deny", "hard-deny", `${verb} -R changes the whole of ${crit}`));
      else out.push(judgeWrite(an.env, an.state, t, `${verb} changes`));
      if (verb === "chmod" && spec?.value && /x/.test(spec.value) && t.value) {
        for (const p of locate(an.state, t.value) ?? []) {
          if (an.state.downloads.has(p.real)) out.push(finding("review", "remote-code", `chmod makes the downloaded ${t.value} executable`));
        }
      }
    }
    return out;
  };

const dd: Handler = (inv, an) => {
  const out: Finding[] = [];
  for (const a of inv.args) {
    const v = a.value;
    if (v === null) {
      out.push(finding("contain", "outside-writable-roots", `dd with an operand only known at run time (${a.text})`));
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
  const inPlace = inv.args.some((a) => a.value !== null && (/^-[a-zA-Z]*i/.test(a.value) && !a.value.startsWith("--") || a.value.startsWith("--in-place")));
  const scripts = optionValues(inv.args, ["-e", "-f"], ["--expression", "--file"]);
  const ops = operands(inv.args, ["-e", "-f", "--expression", "--file", "-l", "--line-length"]);
  if (scripts.length === 0 && ops.length > 0) scripts.push(ops.shift()!);
  const out: Finding[] = [];
  for (const s of scripts) {
    if (s.value === null) out.push(finding("contain", "inline-code", "sed runs a script only known at run time"));
    else if (/(^|[;\n{}])\s*[ewW]\b|\/[gpIiMm0-9]*[ew][gpIiMm0-9]*\s*($|[;}\n])/.test(s.value))
      out.push(finding("contain", "inline-code", "sed script runs commands or writes files (e/w)"));
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

const awk: Handler = (inv, an) => {
  const out: Finding[] = [];
  const hasProgramFile = optionValues(inv.args, ["-f"], ["--file"]).length > 0;
  const ops = operands(inv.args, ["-f", "-v", "-F", "--file", "--assign", "--field-separator", "-i", "--include"]);
  const program = hasProgramFile ? undefined : ops.shift();
  if (hasProgramFile) out.push(finding("contain", "inline-code", "awk runs a program file"));
  if (program && (program.value === null || /system\s*\(|\|\s*(getline|")|>\s*"|print[^;]*>|\bfflush\b.*\|/.test(program.value)))
    out.push(finding("contain", "inline-code", "awk program runs commands or writes files"));
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
  const has = (c: string, long: string) =>
    (!first.startsWith("--") && modeWord.includes(c)) || hasFlag(inv.args, c, [long]);
  const extract = has("x", "--extract") || has("x", "--get");
  const create = has("c", "--create") || has("r", "--append") || has("u", "--update");
  const out: Finding[] = [];
  const files = optionValues(inv.args, ["-f"], ["--file"]);
  const bundledFile = !first.startsWith("-") && modeWord.includes("f") ? inv.args[1] : undefined;
  if (bundledFile) files.push(bundledFile);
  if (extract) {
    const dirs = optionValues(inv.args, ["-C"], ["--directory"]);
    if (dirs.length === 0) dirs.push({ text: ".", value: ".", glob: false });
    for (const d of dirs) out.push(judgeWrite(an.env, an.state, d, "tar extracts into"));
  }
  if (create) {
    for (const f of files) if (f.value !== "-") out.push(judgeWrite(an.env, an.state, f, "tar writes"));
    const skip = new Set(files);
    for (const a of operands(inv.args.slice(bundledFile ? 2 : 1), ["-f", "-C", "--file", "--directory", "-T", "-X"])) {
      if (skip.has(a)) continue;
      const r = judgeRead(an.env, an.state, a, true);
      if (r) out.push(r);
    }
  }
  return out;
};

const unzip: Handler = (inv, an) => {
  if (hasFlag(inv.args, "lvtz", [])) return [];
  const dirs = optionValues(inv.args, ["-d"], []);
  if (dirs.length === 0) dirs.push({ text: ".", value: ".", glob: false });
  return dirs.map((d) => judgeWrite(an.env, an.state, d, "unzip extracts into"));
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

/** find: names only, unless it deletes, runs commands or writes listings. */
const find: Handler = (inv, an) => {
  const args = inv.args;
  const starts: Arg[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (v !== null && (v.startsWith("-") || v === "(" || v === "!" || v === ")")) break;
    starts.push(args[i]!);
  }
  if (starts.length === 0) starts.push({ text: ".", value: ".", glob: false });
  const out: Finding[] = [];
  for (; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === "-delete") {
      for (const s of starts) {
        const crit = criticalTarget(an.env, an, s);
        out.push(crit ? finding("deny", "hard-deny", `find -delete wipes ${crit}`) : judgeDestroy(an.env, an, s, "find -delete", true, false));
      }
    } else if (v === "-exec" || v === "-execdir" || v === "-ok" || v === "-okdir") {
      const cmd: Arg[] = [];
      for (i++; i < args.length; i++) {
        const w = args[i]!.value;
        if (w === ";" || w === "+") break;
        cmd.push(w !== null && w.includes("{}") ? DYNAMIC : args[i]!);
      }
      out.push(...an.argv(cmd, inv.source, false));
    } else if (v === "-fprint" || v === "-fprint0" || v === "-fprintf" || v === "-fls") {
      const f = args[i + 1];
      if (f) out.push(judgeWrite(an.env, an.state, f, `find ${v} writes`));
    }
  }
  return out;
};

export const FILE_HANDLERS: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ["rm", destroys("rm", { short: "rR", long: ["--recursive"] })],
  ["rmdir", destroys("rmdir", { short: "", long: [] })],
  ["unlink", destroys("unlink", { short: "", long: [] })],
  ["shred", destroys("shred", { short: "", long: [] }, true)],
  ["srm", destroys("srm", { short: "rR", long: ["--recursive"] }, true)],
  ["wipe", destroys("wipe", { short: "r", long: [] }, true)],
  ["truncate", destroys("truncate", { short: "", long: [] })],
  ["cp", copyLike("cp", false)],
  ["install", copyLike("install", false)],
  ["mv", copyLike("mv", true)],
  ["rsync-local", copyLike("rsync", false)],
  ["ln", ln],
  ["touch", writesOperands("touch", ["-d", "-r", "-t", "--date", "--reference"])],
  ["mkdir", writesOperands("mkdir", ["-m", "--mode"])],
  ["tee", writesOperands("tee")],
  ["sponge", writesOperands("sponge")],
  ["split", writesOperands("split", ["-b", "-l", "-n", "-a", "--bytes", "--lines", "--number", "--suffix-length"], 1)],
  ["chmod", chmodLike("chmod")],
  ["chown", chmodLike("chown")],
  ["chgrp", chmodLike("chgrp")],
  ["dd", dd],
  ["sed", sed],
  ["gsed", sed],
  ["awk", awk],
  ["gawk", awk],
  ["mawk", awk],
  ["nawk", awk],
  ["tar", tar],
  ["gtar", tar],
  ["bsdtar", tar],
  ["unzip", unzip],
  ["zip", zip],
  ["gzip", compressInPlace("gzip")],
  ["gunzip", compressInPlace("gunzip")],
  ["bzip2", compressInPlace("bzip2")],
  ["bunzip2", compressInPlace("bunzip2")],
  ["xz", compressInPlace("xz")],
  ["unxz", compressInPlace("unxz")],
  ["zstd", compressInPlace("zstd")],
  ["unzstd", compressInPlace("unzstd")],
  ["patch", patch],
  ["find", find],
]);

export function judgeReadOperands(inv: Invocation, an: Analyzer, recursive: boolean): Finding[] {
  const out: Finding[] = [];
  for (const a of inv.args) {
    if (a.value === null || a.value.startsWith("-")) continue;
    const r = judgeRead(an.env, an.state, a, recursive);
    if (r) out.push(r);
  }
  return out;
}
