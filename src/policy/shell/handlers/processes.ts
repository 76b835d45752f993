// Programs that run or reach other processes: xargs and parallel run a command once per input,
// kill signals processes, crontab schedules jobs.

import { finding, type Finding } from "../finding.ts";
import { operands, staticArg, type Handler, type HandlerRegistry } from "../invocation.ts";
import type { Arg } from "../parse.ts";

/**
 * GNU parallel runs a command once per input: the words after `:::` (or `::::` files, or
 * standard input). Judged like xargs: the command with each known input, or an unknown one;
 * a command given as one string runs through the shell.
 */
export const parallel: Handler = (inv, an) => {
  const valueOpts = [
    "-j",
    "-J",
    "-P",
    "-S",
    "-n",
    "-N",
    "-L",
    "-l",
    "-a",
    "-d",
    "-I",
    "-E",
    "--jobs",
    "--sshlogin",
    "--sshloginfile",
    "--arg-file",
    "--delimiter",
    "--joblog",
    "--results",
    "--colsep",
    "--tmpdir",
    "--delay",
    "--timeout",
    "--retries",
    "--tag-string",
    "--env",
    "--basefile",
    "--transfer-file",
    "--return",
    "--workdir",
    "--memfree",
    "--load",
    "--halt",
    "--shebang-wrap",
  ];
  const out: Finding[] = [];
  let i = 0;
  let replace = "{}";
  for (; i < inv.args.length; i++) {
    const v = inv.args[i]!.value;
    if (v === null) return [finding("dynamic-command", "parallel with an option only known at run time")];
    if (v === "--") {
      i++;
      break;
    }
    if (!v.startsWith("-") || v === ":::" || v === "::::") break;
    if (v === "-S" || v === "--sshlogin" || v.startsWith("--sshlogin")) out.push(finding("network", "parallel runs jobs on other machines"));
    if (v === "-I") replace = inv.args[i + 1]?.value ?? replace;
    if (valueOpts.includes(v)) i++;
  }
  const sep = inv.args.findIndex((a, j) => j >= i && (a.value === ":::" || a.value === "::::" || a.value === ":::+" || a.value === "::::+"));
  const cmd = inv.args.slice(i, sep < 0 ? undefined : sep);
  const fromFiles = sep >= 0 && inv.args[sep]!.value!.startsWith("::::");
  const inputs: Arg[] =
    sep < 0 || fromFiles ? [{ text: "<input>", value: null, glob: false }] : inv.args.slice(sep + 1).filter((a) => !/^::::?\+?$/.test(a.value ?? ""));
  if (cmd.length === 0) return [...out, finding("dynamic-command", "parallel runs commands read from its input")];
  for (const input of inputs) {
    const subst = (a: Arg): Arg =>
      a.value?.includes(replace)
        ? input.value === null
          ? { text: a.text, value: null, glob: false }
          : { ...a, value: a.value.split(replace).join(input.value) }
        : a;
    const uses = cmd.some((a) => a.value?.includes(replace));
    if (cmd.length === 1 && cmd[0]!.value !== null && /\s/.test(cmd[0]!.value)) {
      const line = subst(cmd[0]!);
      if (line.value === null) return [...out, finding("dynamic-command", "parallel runs a shell command only known at run time")];
      out.push(
        ...an.script(
          uses ? line.value : `${line.value} ${input.value === null ? '"$1"' : input.value}`,
          "parallel",
          input.value === null ? [input] : undefined,
        ),
      );
    } else out.push(...an.argv(uses ? cmd.map(subst) : [...cmd, input], inv.source, false));
  }
  return out;
};

/** xargs appends words from standard input; from `echo ... |` they are known, otherwise not. */
export function xargs(fed: readonly Arg[] | undefined): Handler {
  return (inv, an) => {
    const valueOpts = [
      "-n",
      "-L",
      "-l",
      "-P",
      "-s",
      "-d",
      "-E",
      "-e",
      "-a",
      "-I",
      "-i",
      "--max-args",
      "--max-lines",
      "--max-procs",
      "--max-chars",
      "--delimiter",
      "--eof",
      "--arg-file",
      "--replace",
      "--process-slot-var",
    ];
    let i = 0;
    let replace: string | undefined;
    for (; i < inv.args.length; i++) {
      const v = inv.args[i]!.value;
      if (v === null) return [finding("dynamic-command", "xargs with an option only known at run time")];
      if (v === "--") {
        i++;
        break;
      }
      if (!v.startsWith("-")) break;
      if (v === "-I") replace = inv.args[i + 1]?.value ?? undefined;
      else if (v.startsWith("-I"))
        replace = v.slice(2); // `-I{}`: the string is attached
      else if (v.startsWith("-i")) replace = v.slice(2) || "{}";
      else if (v.startsWith("--replace")) replace = v.includes("=") ? v.slice(10) : "{}";
      if (valueOpts.includes(v)) i++;
    }
    let cmd = inv.args.slice(i);
    if (cmd.length === 0) cmd = [staticArg("echo")];
    const input = fed ?? [{ text: "<stdin>", value: null, glob: false }];
    if (replace !== undefined) {
      const r = replace;
      cmd = cmd.map((a) =>
        a.value?.includes(r)
          ? fed && fed.length === 1 && fed[0]!.value !== null
            ? { ...a, value: a.value.split(r).join(fed[0]!.value) }
            : { text: a.text, value: null, glob: false }
          : a,
      );
    } else cmd = [...cmd, ...input];
    return an.argv(cmd, inv.source, false);
  };
}

/** `%1`, and `$!` (the job this script last started in the background): the shell's own children. */
const OWN_JOB = /^("?)(\$!|\$\{!\})\1$/;

const ownJob = (a: Arg) => (a.value !== null ? a.value.startsWith("%") : OWN_JOB.test(a.text));

const kill: Handler = (inv) => {
  const ops = operands(inv.args, ["-s", "-n", "--signal"]);
  if (inv.args.some((a) => a.value === "-l" || a.value === "-L") || (ops.length > 0 && ops.every(ownJob)))
    return [finding("read-only", `${inv.name} lists signals or signals the shell's own jobs`)];
  return [finding("foreign-process", `${inv.name} signals processes that may not belong to this project`)];
};

const crontab: Handler = (inv) =>
  inv.args.length === 1 && inv.args[0]!.value === "-l"
    ? [finding("read-only", "crontab -l lists jobs")]
    : [finding("persistence", "crontab installs or removes scheduled jobs")];

/** This family's code handlers, by the name commands.json gives them. */
export const PROCESS_HANDLERS: HandlerRegistry = {
  parallel: () => parallel,
  kill: () => kill,
  crontab: () => crontab,
};
