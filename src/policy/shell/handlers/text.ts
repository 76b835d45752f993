// Programs that edit text files: sed and awk, whose scripts may run commands or write other
// files besides their operands, and patch.

import { finding, type Finding } from "../finding.ts";
import { operands, optionValues, staticArg, type Analyzer, type Handler, type HandlerRegistry } from "../invocation.ts";
import { judgeRead } from "../reads.ts";
import { judgeWrite } from "../writes.ts";

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

const patch: Handler = (inv, an) => {
  const out = optionValues(inv.args, ["-o"], ["--output"]).map((o) => judgeWrite(an.env, an.state, o, "patch writes"));
  const dirs = optionValues(inv.args, ["-d"], ["--directory"]);
  const target = dirs[0] ?? { text: ".", value: ".", glob: false };
  out.push(judgeWrite(an.env, an.state, target, "patch changes files in"));
  return out;
};

/** This family's code handlers, by the name commands.json gives them. */
export const TEXT_HANDLERS: HandlerRegistry = { sed: () => sed, awk: () => awk, patch: () => patch };
