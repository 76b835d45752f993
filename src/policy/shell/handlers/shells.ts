// Shells and what runs a shell command line: sh -c and scripts (a constant piped text or
// here-document is read as a script), source, trap handlers, and the options of other programs
// whose value is a command line they run.

import { finding, type Finding } from "../finding.ts";
import { hasFlag, operands, optionValues, type Analyzer, type Handler, type HandlerRegistry, type Invocation } from "../invocation.ts";
import { isDownloaded, locate } from "../locate.ts";
import type { Arg } from "../parse.ts";
import { isSecretishFile, judgeRead } from "../reads.ts";
import { COMMAND_OPTIONS, SSH_COMMAND_OPTIONS } from "../table.ts";

export function runsDownloaded(an: Analyzer, arg: Arg | undefined): boolean {
  return arg !== undefined && isDownloaded(an.state, arg.value);
}

/** The first word of a here-document body fed to this command, if any. */
export function heredocBody(inv: Invocation): { body: string; dynamic: boolean } | undefined {
  const h = inv.source.redirs.find((r) => r.heredoc)?.heredoc;
  const hereString = inv.source.redirs.find((r) => r.op === "<<<");
  if (h) return { body: h.body, dynamic: h.dynamic };
  if (hereString?.target) return { body: hereString.target.value ?? "", dynamic: hereString.target.value === null };
  return undefined;
}

/** Script files that are really standard input. */
const STDIN_FILES = new Set(["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);

const readsStdinFile = (inv: Invocation) => inv.source.redirs.some((r) => r.op === "<" && !r.heredoc);

export const shell: Handler = (inv, an) => {
  const args = inv.args;
  if (hasFlag(args, "", ["--version", "--help"])) return [finding("read-only", `${inv.name} prints its version`)];
  const cIndex = args.findIndex((a) => a.value !== null && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a.value));
  if (cIndex >= 0) {
    const script = args[cIndex + 1];
    if (!script || script.value === null) return [finding("dynamic-command", `${inv.name} -c runs a script only known at run time`)];
    // The words after the script are its $0, $1, ...: `sh -c 'rm -rf "$1"' _ ~` removes home.
    return an.script(script.value, `${inv.name} -c`, args.slice(cIndex + 2));
  }
  if (hasFlag(args, "n", ["--noexec"])) return [finding("read-only", `${inv.name} -n only checks syntax`)];
  const file = operands(args, ["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]).find((a) => !STDIN_FILES.has(a.value ?? ""));
  if (file) {
    if (file.value === null) return [finding("remote-code", `${inv.name} runs a script only known at run time (${file.text})`)];
    if (runsDownloaded(an, file)) return [finding("remote-code", `${inv.name} runs ${file.value}, downloaded by this command`)];
    return [finding("inline-code", `${inv.name} runs the script ${file.value}`), ...[judgeRead(an.env, an.state, file, false)].filter((f) => f !== undefined)];
  }
  if (inv.pipedInput) {
    const text = an.state.pipedText.get(inv.source);
    if (text === undefined) return [finding("remote-code", `pipes data into ${inv.name}, which runs it as code`)];
    return an.script(text, `${inv.name} reading constant piped text`);
  }
  const body = heredocBody(inv);
  if (body) {
    if (body.dynamic) return [finding("dynamic-command", `${inv.name} runs a here-document with run-time expansions`)];
    return an.script(body.body, `${inv.name} here-document`);
  }
  if (readsStdinFile(inv)) return [finding("inline-code", `${inv.name} runs a script from a file`)];
  return [finding("inline-code", `${inv.name} starts an interactive shell`)];
};

const source: Handler = (inv, an) => {
  const file = inv.args[0];
  if (file?.value && STDIN_FILES.has(file.value)) return shell({ ...inv, args: [] }, an);
  if (!file || file.value === null) return [finding("remote-code", `${inv.name} runs a script only known at run time`)];
  if (runsDownloaded(an, file)) return [finding("remote-code", `${inv.name} runs ${file.value}, downloaded by this command`)];
  for (const p of locate(an.state, file.value) ?? []) if (isSecretishFile(p.real)) an.state.secretSource ??= file.value;
  return [finding("inline-code", `${inv.name} runs ${file.value} in the shell`), ...[judgeRead(an.env, an.state, file, false)].filter((f) => f !== undefined)];
};

const trap: Handler = (inv, an) => {
  const action = inv.args[0];
  if (!action || inv.args.length < 2 || action.value === "-" || action.value === "" || action.value?.startsWith("-"))
    return [finding("read-only", "trap lists or resets handlers")];
  if (action.value === null) return [finding("dynamic-command", "trap installs a handler only known at run time")];
  return an.script(action.value, "trap handler");
};

const SSH_CLIENTS = new Set(["ssh", "scp", "sftp", "autossh"]);

/**
 * Options whose value is a command line the command itself runs (`tar --to-command`, `zip -TT`,
 * `rsync -e`, `ssh -o ProxyCommand=`): read like `sh -c`; one only known at run time is unseen code.
 */
export function commandOptionFindings(inv: Invocation, an: Analyzer): Finding[] {
  const lines: Array<string | null> = [];
  for (const { option, prefix } of COMMAND_OPTIONS.get(inv.name) ?? []) {
    // Single letters may be bundled (`-xIzstd`); longer names (`--to-command`, zip's `-TT`) are whole words.
    const long = option.length > 2 ? [option] : [];
    const short = long.length === 0 ? [option] : [];
    for (const v of optionValues(inv.args, short, long)) {
      if (v.value === null) lines.push(null);
      else if (v.value.startsWith(prefix)) lines.push(v.value.slice(prefix.length));
    }
  }
  if (SSH_CLIENTS.has(inv.name)) {
    for (const v of optionValues(inv.args, ["-o"], [])) {
      const m = v.value === null ? null : /^\s*([A-Za-z]+)\s*[= ]\s*(.*)$/s.exec(v.value);
      if (v.value === null) lines.push(null);
      else if (m && SSH_COMMAND_OPTIONS.has(m[1]!.toLowerCase()) && m[2]!.toLowerCase() !== "none") lines.push(m[2]!);
    }
  }
  return lines.flatMap((line) =>
    line === null
      ? [finding("dynamic-command", `${inv.name} runs a command given in an option only known at run time`)]
      : an.script(line, `${inv.name} option command`),
  );
}

/** This family's code handlers, by the name commands.json gives them. */
export const SHELL_HANDLERS: HandlerRegistry = {
  shell: () => shell,
  source: () => source,
  trap: () => trap,
};
