// Archivers and dd: what tar and zip pack is read, where tar and unzip unpack is written (and a
// download unpacked stays a download); dd reads if= and writes of=.

import { isAbsolute, join } from "node:path";
import { finding, type Finding } from "../finding.ts";
import { hasFlag, operands, optionValues, type Handler, type HandlerRegistry } from "../invocation.ts";
import { isDownloaded, markDownloaded } from "../locate.ts";
import type { Arg } from "../parse.ts";
import { judgeRead } from "../reads.ts";
import { judgeDirWrite, judgeWrite } from "../writes.ts";

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

/** This family's code handlers, by the name commands.json gives them. */
export const ARCHIVE_HANDLERS: HandlerRegistry = { dd: () => dd, tar: () => tar, unzip: () => unzip, zip: () => zip };
