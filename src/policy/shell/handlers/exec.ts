// Commands that run other code: shells, interpreters, package managers, task runners,
// xargs and friends, and commands that reach the network.

import { basename } from "node:path";
import { isWithin } from "../../places.ts";
import { isDownloaded, locate, markDownloaded } from "../locate.ts";
import { isSecretishFile, judgeRead, judgeReadOperands } from "../reads.ts";
import { judgeDirWrite, judgeWrite, outputFindings, redirectWrites } from "../writes.ts";
import { finding, type Finding } from "../finding.ts";
import { hasFlag, operands, optionValues, staticArg, type Analyzer, type Handler, type HandlerRegistry, type Invocation } from "../invocation.ts";
import type { Arg } from "../parse.ts";
import type { HandlerName } from "../programs.ts";
import {
  CLUSTER_SECRET_RESOURCE,
  CONTAINER_HOST_ACCESS,
  COMMAND_ALIASES,
  COMMAND_OPTIONS,
  INLINE_CODE_HAZARDS,
  INLINE_CODE_OPTIONS,
  INLINE_CODE_SELF_DISABLING,
  INTERPRETER_HAZARDS,
  INTERPRETERS,
  NETWORK_TOOLS,
  NPX_LOCAL_TOOLS,
  PI_CLI,
  PROGRAMS,
  PYTHON_MODULES,
  reasonOf,
  RUN_SUBCOMMANDS,
  SECRET_OPTIONS,
  SERVING_SCRIPTS,
  SHELLS,
  SIMPLE,
  SSH_COMMAND_OPTIONS,
  SUBCOMMANDS,
  WRAPPERS,
} from "../table.ts";
import { rsyncLocal } from "./operands.ts";

function runsDownloaded(an: Analyzer, arg: Arg | undefined): boolean {
  return arg !== undefined && isDownloaded(an.state, arg.value);
}

/** The first word of a here-document body fed to this command, if any. */
function heredocBody(inv: Invocation): { body: string; dynamic: boolean } | undefined {
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

export const interpreter: Handler = (inv, an) => {
  const args = inv.args;
  const first = args[0]?.value;
  if (args.length > 0 && args.every((a) => ["--version", "-V", "-v", "--help", "-h", "-version"].includes(a.value ?? "")))
    return [finding("read-only", `${inv.name} prints its version`)];
  if (first === null) return [finding("dynamic-command", `${inv.name} with arguments only known at run time`)];
  if ((inv.name === "python" || inv.name.startsWith("python")) && first === "-m") {
    const mod = args[1]?.value ?? null;
    if (mod === null) return [finding("dynamic-command", "python -m with a module only known at run time")];
    if (mod === "pip") return packageManager("pip")({ ...inv, args: args.slice(2) }, an);
    const cls = PYTHON_MODULES.get(mod);
    return [cls ? finding(reasonOf(inv.name, cls), `python -m ${mod}`) : finding("inline-code", `python -m ${mod} runs a module`)];
  }
  if ((inv.name === "node" || inv.name === "nodejs") && args.some((a) => a.value === "--test"))
    return [finding("build-test", "node --test runs the test suite")];
  if ((inv.name === "node" || inv.name === "nodejs") && args.some((a) => a.value === "--check" || a.value === "-c"))
    return [finding("read-only", "node --check only parses")];
  const inline = args.findIndex((a) => a.value !== null && (INLINE_CODE_OPTIONS.has(a.value.split("=")[0]!) || inlineCodeBundle(a.value)));
  if (inline >= 0) {
    const opt = args[inline]!.value!;
    const code = opt.includes("=") ? opt.slice(opt.indexOf("=") + 1) : args[inline + 1]?.value;
    if (code === null) return [finding("dynamic-command", `${inv.name} runs inline code only known at run time`)];
    // `perl -pi -e CODE FILES`, `ruby -i -pe`: the files after the code are rewritten in place.
    const inPlace =
      (inv.name === "perl" || inv.name === "ruby") && args.some((a) => a.value !== null && /^-[a-zA-Z]*i/.test(a.value) && !a.value.startsWith("--"));
    const rewritten = inPlace
      ? operands(args.slice(opt.includes("=") ? inline + 1 : inline + 2)).map((f) => judgeWrite(an.env, an.state, f, `${inv.name} -i rewrites`))
      : [];
    return [finding("inline-code", `${inv.name} runs inline code`), ...codeHazards(inv.name, code), ...rewritten];
  }
  const file = operands(args, ["-W", "-X", "-r", "--require", "--import", "--loader", "-I"]).at(0);
  if (file && file.value !== "-") {
    if (file.value === null) return [finding("remote-code", `${inv.name} runs a program only known at run time (${file.text})`)];
    // Pi's own command line run from its package's files is `pi`.
    if ([...PI_CLI.packageNames].some((p) => file.value!.includes(`${p}/`)))
      return [
        finding("inline-code", `${inv.name} runs the program ${file.value}`),
        ...an.argv([staticArg("pi"), ...args.slice(args.indexOf(file) + 1)], inv.source, inv.pipedInput),
      ];
    if (runsDownloaded(an, file)) return [finding("remote-code", `${inv.name} runs ${file.value}, downloaded by this command`)];
    return [finding("inline-code", `${inv.name} runs the program ${file.value}`)];
  }
  if (inv.pipedInput) return [finding("remote-code", `pipes data into ${inv.name}, which runs it as code`)];
  const body = heredocBody(inv);
  if (body) return [finding("inline-code", `${inv.name} runs code from a here-document`), ...codeHazards(inv.name, body.body)];
  return [finding("inline-code", `${inv.name} runs code from standard input`)];
};

/** Bundled short options that end in an inline-code letter take the code next: `perl -ne`, `node -pe`, `python3 -Bc`. */
function inlineCodeBundle(v: string): boolean {
  return /^-[A-Za-z]{2,}$/.test(v) && INLINE_CODE_OPTIONS.has(`-${v.at(-1)}`);
}

/**
 * Inline code is read only for what no sandbox makes harmless: naming identity secrets, deleting
 * files, or starting other programs (whose command lines the gate cannot see).
 */
function codeHazards(interpreter: string, code: string | null | undefined): Finding[] {
  if (!code) return [];
  // Naming the files that load or configure auto mode and writing, moving or removing files: self-disabling.
  if (INLINE_CODE_SELF_DISABLING.names.some((r) => r.test(code)) && INLINE_CODE_SELF_DISABLING.writes.some((r) => r.test(code)))
    return [finding("self-protection", `${interpreter} inline code writes or removes files and names auto mode's own files or the settings that load it`)];
  const hit = [...INLINE_CODE_HAZARDS, ...(INTERPRETER_HAZARDS.get(interpreter) ?? [])].find((h) => h.re.test(code));
  if (!hit) return [];
  const what = {
    "identity-secret": "names identity secrets",
    destructive: "deletes files",
    "dynamic-command": "starts other programs",
    "protected-path": "names auto mode's own files",
    persistence: "names a file that runs code at login, on a schedule or in git",
  }[hit.reason];
  return [finding(hit.reason, `${interpreter} inline code ${what}`)];
}

/**
 * turbo, nx, lerna: they run the project's own tasks; a task whose name by convention serves,
 * publishes or deploys (`turbo run deploy`, `nx run app:deploy`, `nx release publish`,
 * `lerna publish`) reaches outside the workspace.
 */
export const taskRunner: Handler = (inv) => {
  for (const a of inv.args) {
    if (a.value === null) return [finding("dynamic-command", `${inv.name} runs a task only known at run time`)];
    const words = a.value.replace(/^--?[\w-]+=/, "").split(/[:,\s]+/);
    const hit = words.find((w) => SERVING_SCRIPTS.names.has(w));
    if (hit) return [finding("network", `${inv.name} runs ${hit}, which by convention serves, publishes or deploys`)];
  }
  return [finding("build-test", `${inv.name} builds or tests the project`)];
};

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

/**
 * Database shells whose dot-commands run shell commands (`sqlite3 db '.shell rm -rf src'`,
 * `.system`): the command is judged as a script, on top of what the client itself does.
 */
export const sqliteShell: Handler = (inv, an) => {
  const out: Finding[] = [
    finding("network", `${inv.name} reaches outside the workspace (network, other programs or machines)`),
    ...judgeReadOperands(inv, an, false),
  ];
  for (const a of inv.args) {
    if (a.value === null) continue;
    for (const m of a.value.matchAll(/^\s*\.(?:shell|system)\s+(.*)$/gm)) out.push(...an.script(m[1]!, `${inv.name} .shell`));
  }
  return out;
};

/** A tool whose first word selects what it does (npm, cargo, go, pip, ...). */
export function packageManager(tool: string): Handler {
  return (inv, an) => {
    const table = SUBCOMMANDS.get(tool);
    if (!table) return [finding("unknown-command", `${tool}`)];
    // `bun -e CODE`: inline JavaScript, judged as `node -e` is.
    if (tool === "bun" && inv.args.some((a) => a.value !== null && /^(-e|--eval|-p|--print)(=|$)/.test(a.value)))
      return interpreter({ ...inv, name: "node" }, an);
    const valueOpts = [
      "-C",
      "--prefix",
      "--dir",
      "--cwd",
      "-w",
      "--workspace",
      "--filter",
      "-F",
      "--manifest-path",
      "--project",
      "-p",
      "--package",
      "--directory",
    ];
    let sub: Arg | undefined;
    for (let i = 0; i < inv.args.length; i++) {
      const v = inv.args[i]!.value;
      if (v === null) return [finding("dynamic-command", `${tool} with a subcommand only known at run time`)];
      if (table.byName.has(v)) {
        sub = inv.args[i];
        break;
      }
      if (v.startsWith("-")) {
        if (valueOpts.includes(v)) i++;
        continue;
      }
      sub = inv.args[i];
      break;
    }
    if (!sub) {
      if (table.empty) return [finding(reasonOf(tool, table.empty), `${tool} with no subcommand`)];
      const flag = inv.args[0]?.value;
      if (flag && table.byName.has(flag)) sub = inv.args[0];
      else return [finding(reasonOf(tool, table.fallback), `${tool}`)];
    }
    const name = sub!.value!;
    const rest = inv.args.slice(inv.args.indexOf(sub!) + 1);
    // `bun -e CODE`, `deno eval CODE`: inline JavaScript, judged as `node -e` is.
    if (tool === "deno" && name === "eval") {
      const code = operands(rest, []).at(0);
      return interpreter({ ...inv, name: "node", args: code ? [staticArg("-e"), code] : [] }, an);
    }
    if (
      (tool === "npm" && (name === "exec" || name === "x")) ||
      (tool === "pnpm" && (name === "exec" || name === "dlx")) ||
      (tool === "yarn" && name === "dlx") ||
      (tool === "bun" && name === "x")
    )
      return npx({ ...inv, args: rest }, an);
    const runner = RUN_SUBCOMMANDS.get(tool);
    if (runner?.subcommands.includes(name)) {
      const cmd = operands(rest, runner.valueOptions);
      const at = cmd.length > 0 ? rest.indexOf(cmd[0]!) : -1;
      // Options after the command name belong to the command, not to the runner.
      if (at < 0) return [finding("build-test", `${tool} ${name} with no command`)];
      return an.argv(rest.slice(at), inv.source, inv.pipedInput);
    }
    if (tool === "npm" && (name === "config" || name === "c") && ["get", "list", "ls"].includes(rest[0]?.value ?? ""))
      return [finding("read-only", "npm reads its configuration")];
    if (CONTAINER_HOST_ACCESS.tools.includes(tool) && CONTAINER_HOST_ACCESS.subcommands.includes(name)) {
      const access = containerHostAccess(rest, an, `${tool} ${name}`);
      if (access) return [access];
    }
    const phrase = longestPhrase(table.byName, name, rest);
    const script = name === "run" || name === "run-script" ? rest[0]?.value : name;
    if (SERVING_SCRIPTS.runners.has(tool) && script && SERVING_SCRIPTS.names.has(script.split(":")[0]!))
      return [finding("network", `${tool} runs the script ${script}, which by convention serves or deploys`)];
    const words = [name, ...rest.slice(0, 2).map((a) => a.value ?? "")];
    const revealing =
      SECRET_OPTIONS.get(`${tool} ${words.slice(0, 2).join(" ")}`) ?? SECRET_OPTIONS.get(`${tool} ${words.join(" ")}`) ?? SECRET_OPTIONS.get(`${tool} ${name}`);
    if (revealing && rest.some((a) => a.value !== null && revealing.some((o) => a.value === o || a.value!.startsWith(`${o}=`))))
      return [finding("identity-secret", `${tool} ${words.slice(0, 2).join(" ")} prints a credential`)];
    // `yarn X`, `pnpm X`, `bun run X` run the package script X, or else the installed command X:
    // a command the gate knows (`yarn rimraf ~`, `pnpm pi remove x`) is judged as that command too.
    const asCommand =
      BIN_RUNNERS.has(tool) && script && (name === "run" || !table.byName.has(name)) && knownCommand(script)
        ? an.argv([staticArg(script), ...(name === "run" ? rest.slice(1) : rest)], inv.source, inv.pipedInput)
        : [];
    const cls = table.byName.get(phrase) ?? table.fallback;
    if (cls === "contain" && NETWORK_TOOLS.has(tool)) an.state.network ??= tool;
    const reason = reasonOf(tool, cls);
    const after = { ...inv, name: tool, args: rest };
    // A network tool's file operands may be uploads (`aws s3 cp FILE s3://`, `gh gist create FILE`).
    const uploads = NETWORK_TOOLS.has(tool) ? judgeReadOperands(after, an, false) : [];
    return [finding(reason, `${tool} ${phrase}`), ...outputFindings(after, an), ...uploads, ...asCommand];
  };
}

/** Package managers whose unknown subcommand or `run X` may run an installed command X. */
const BIN_RUNNERS: ReadonlySet<string> = new Set(["yarn", "pnpm", "bun"]);

function knownCommand(name: string): boolean {
  return PROGRAMS.has(name);
}

/**
 * A container runtime's daemon runs outside the OS sandbox: host namespaces, devices, added
 * capabilities, or a bind mount of anything outside the writable roots give the container the host.
 * Returns the finding for what does so, if anything: a mount the gate denies writing to keeps that
 * denial (auto mode's own files, a critical directory); the rest is privilege, reviewed. Stops at
 * the image name (what follows is the container's command).
 */
function containerHostAccess(args: readonly Arg[], an: Analyzer, what: string): Finding | undefined {
  const spec = CONTAINER_HOST_ACCESS;
  const privilege = (how: string) => finding("privilege", `${what} ${how}`);
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (v === null) return privilege("with an option only known at run time");
    if (!v.startsWith("-")) break;
    const [opt, attached] = v.startsWith("--")
      ? [v.split("=")[0]!, v.includes("=") ? v.slice(v.indexOf("=") + 1) : undefined]
      : [v.slice(0, 2), v.length > 2 ? v.slice(2) : undefined];
    if (spec.options.includes(v) || spec.options.includes(opt)) return privilege(`with ${v}, which reaches the host`);
    if (!spec.mountOptions.includes(opt)) continue;
    const value = attached ?? args[++i]?.value;
    if (value === null || value === undefined) return privilege("with a mount only known at run time");
    const source = opt === "--mount" ? /(?:^|,)(?:source|src)=([^,]*)/.exec(value)?.[1] : value.split(":")[0];
    // A named volume (no slash) lives in the runtime's own storage.
    if (source === undefined || (!source.includes("/") && !source.startsWith("~") && source !== "." && source !== "..")) continue;
    const mounted = source.startsWith("~") ? an.env.places.home + source.slice(1) : source;
    const readOnly = opt === "--mount" ? /(?:^|,)(readonly|ro)(=true|=1)?(?:,|$)/.test(value) : /^ro$|(^|,)ro(,|$)/.test(value.split(":")[2] ?? "");
    const self = readOnly ? undefined : judgeDirWrite(an, staticArg(mounted), "mounts");
    if (self?.cls === "deny") return { ...self, detail: `${what} ${self.detail}` };
    const where = locate(an.state, mounted);
    const inside = where?.every((p) => isWithin(an.env.places.workspace, p.real) || isWithin(an.env.places.tmpRoot, p.real));
    if (!inside) return privilege(`mounts ${source}, outside the writable roots`);
  }
  return undefined;
}

/** `gh auth token`, `gcloud auth print-access-token`: tables may name a subcommand of a subcommand. */
function longestPhrase(table: ReadonlyMap<string, unknown>, name: string, rest: readonly Arg[]): string {
  let best = name;
  let phrase = name;
  for (const w of rest.slice(0, 3)) {
    if (w.value === null || w.value.startsWith("-")) break;
    phrase += ` ${w.value}`;
    if (table.has(phrase)) best = phrase;
  }
  return best;
}

/**
 * Pi's command line. Pi loads auto mode through its settings' package lists: `pi remove`/`uninstall`
 * take an entry out (whichever source it names may be the one that loads auto mode) and `pi config`
 * switches resources off, so they are denied as self-disabling, as is an agent started without
 * extensions. Printing a provider's credential is a secret read.
 */
const piCli: Handler = (inv) => {
  const off = inv.args.find((a) => a.value !== null && PI_CLI.disablingOptions.has(a.value));
  if (off) return [finding("self-protection", `${inv.name} ${off.value} starts an agent with auto mode off`)];
  const table = SUBCOMMANDS.get("pi")!;
  let at = -1;
  for (let i = 0; i < inv.args.length; i++) {
    const v = inv.args[i]!.value;
    if (v === null) return [finding("dynamic-command", `${inv.name} with an argument only known at run time`)];
    if (v === "--") break;
    if (table.byName.has(v) || !v.startsWith("-")) {
      at = i;
      break;
    }
    if (PI_CLI.valueOptions.has(v)) i++;
  }
  const sub = at >= 0 ? inv.args[at]!.value! : undefined;
  const cls = sub === undefined ? (table.empty ?? table.fallback) : (table.byName.get(sub) ?? table.fallback);
  if (cls === "deny") return [finding("self-protection", `${inv.name} ${sub} removes or disables Pi packages, the one that loads auto mode among them`)];
  const rest = inv.args.slice(at + 1).map((a) => a.value);
  if (
    sub !== undefined &&
    PI_CLI.secretSubcommands.some(([s, ...words]) => s === sub && words.every((w, i) => (w.startsWith("-") ? rest.includes(w) : rest[i] === w)))
  )
    return [finding("identity-secret", `${inv.name} ${sub} ${rest[0] ?? ""} prints a provider credential`)];
  const reason = reasonOf(inv.name, cls);
  if (cls === "contain") return [finding("network", `${inv.name} runs an agent that reaches the model provider`)];
  return [finding(reason, `${inv.name} ${sub ?? ""}`.trim())];
};

/** npx runs a local dev tool, or downloads and runs a package. */
export const npx: Handler = (inv, an) => {
  let downloads = false;
  let pkg: string | null | undefined;
  for (let i = 0; i < inv.args.length; i++) {
    const v = inv.args[i]!.value;
    if (v === null) return [finding("dynamic-command", "npx runs a package only known at run time")];
    if (v === "-p" || v === "--package" || v.startsWith("--package=")) {
      downloads = true;
      if (!v.includes("=")) i++;
      continue;
    }
    if (v === "-y" || v === "--yes") {
      downloads = true;
      continue;
    }
    if (v === "-c" || v === "--call") {
      const script = inv.args[i + 1];
      if (!script || script.value === null) return [finding("dynamic-command", "npx --call runs a shell command only known at run time")];
      return [finding("inline-code", "npx --call runs a shell command"), ...an.script(script.value, "npx --call")];
    }
    if (v.startsWith("-")) continue;
    pkg = v;
    break;
  }
  if (!pkg) return [finding("network", "npx with no package")];
  const bare = pkg.replace(/@[^@/]*$/, "");
  const local = !downloads && !/@[^/]/.test(pkg.slice(1)) && NPX_LOCAL_TOOLS.has(bare);
  if (local && SERVING_SCRIPTS.taskRunners.has(bare))
    return taskRunner({ ...inv, name: bare, args: inv.args.slice(inv.args.findIndex((a) => a.value === pkg) + 1) }, an);
  // A local tool that runs another command (cross-env, shx) or removes files (rimraf) is judged as that.
  if (local && (WRAPPERS.has(bare) || COMMAND_ALIASES.has(bare))) {
    const at = inv.args.findIndex((a) => a.value === pkg);
    return an.argv([staticArg(bare), ...inv.args.slice(at + 1)], inv.source, inv.pipedInput);
  }
  if (local) return [finding("build-test", `npx ${pkg} runs a local dev tool`)];
  // Whatever the package, its command runs with the words after it: judged as that command too
  // (`npx -y rimraf ~` is `rimraf ~`, `npx @earendil-works/pi-coding-agent remove X` is `pi remove X`).
  const bin = PI_CLI.packageNames.has(bare) ? "pi" : bare.replace(/^@[^/]+\//, "");
  const at = inv.args.findIndex((a) => a.value === pkg);
  const as = bin === "" ? [] : an.argv([staticArg(bin), ...inv.args.slice(at + 1)], inv.source, inv.pipedInput);
  return [finding("network", `npx ${pkg} may download and run a package`), ...as];
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

function remoteFileName(url: string): string {
  try {
    return basename(new URL(url).pathname) || "index.html";
  } catch {
    return "index.html";
  }
}

/** curl, wget and friends: network, plus the files they write and upload. */
export const transfer: Handler = (inv, an) => {
  const out: Finding[] = [finding("network", `${inv.name} uses the network`)];
  an.state.network ??= inv.name;
  const outputs =
    inv.name === "wget"
      ? optionValues(inv.args, ["-O", "-P", "-o", "-a"], ["--output-document", "--directory-prefix", "--output-file", "--append-output"])
      : optionValues(
          inv.args,
          ["-o", "-c", "-D", "-K"],
          ["--output", "--output-dir", "--cookie-jar", "--dump-header", "--config", "--trace", "--trace-ascii", "--stderr", "--etag-save", "--hsts"],
        );
  for (const o of outputs) {
    if (o.value === "-" || o.value === "/dev/null") continue;
    out.push(judgeWrite(an.env, an.state, o, `${inv.name} writes`));
    markDownloaded(an.state, o.value);
  }
  // What the command's output is redirected to is a download too, whatever wrappers it runs under
  // (`timeout 60 curl URL > x.sh`, `env curl`, `xargs curl > x.sh`): the handler sees the program
  // the wrappers run, and its source the command whose redirections take the output.
  for (const r of inv.source.redirs) if (redirectWrites(r)) markDownloaded(an.state, r.target!.value);
  // curl -O, and wget without -O, save under the URL's own file name.
  const remoteName = inv.name === "curl" ? hasFlag(inv.args, "O", ["--remote-name", "--remote-name-all"]) : outputs.length === 0;
  if (remoteName) {
    out.push(finding("workspace-write", `${inv.name} saves into the current directory`));
    for (const a of inv.args) if (a.value !== null && /^(https?|ftp):\/\//.test(a.value)) markDownloaded(an.state, remoteFileName(a.value));
  }
  const uploads =
    inv.name === "wget"
      ? optionValues(inv.args, [], ["--post-file", "--body-file"])
      : [
          ...optionValues(
            inv.args,
            ["-d", "-F", "-T"],
            ["--data", "--data-binary", "--data-raw", "--data-urlencode", "--form", "--upload-file", "--json", "--data-ascii"],
          ).map((a) => {
            const v = a.value;
            if (v === null) return a;
            const at = v.indexOf("@");
            const lt = v.indexOf("=<");
            return at >= 0 ? { ...a, value: v.slice(at + 1) } : lt >= 0 ? { ...a, value: v.slice(lt + 2) } : undefined;
          }),
          ...optionValues(inv.args, ["-T"], ["--upload-file"]),
        ];
  for (const u of uploads) {
    if (!u) continue;
    if (u.value === "-") {
      an.state.network = `${inv.name} (uploading standard input)`;
      continue;
    }
    const r = u.value === null ? undefined : judgeRead(an.env, an.state, u, false);
    if (r) out.push(r);
    if (u.value !== null && isSecretishFile(u.value)) out.push(finding("secret-egress", `${inv.name} uploads ${u.value}`));
  }
  return out;
};

/** HTTPie-style request items that send a file: `@file`, `field@file`, `field=@file`, `field:=@file`. */
const REQUEST_ITEM_FILE = /^(?:[^=:@]*:?=)?@(.+)$|^[^=:@/]+@(.+)$/;

const httpie: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  const out: Finding[] = [finding("network", `${inv.name} uses the network`)];
  for (const a of inv.args) {
    const m = a.value === null ? null : REQUEST_ITEM_FILE.exec(a.value);
    const file = m?.[1] ?? m?.[2];
    if (!file) continue;
    const upload = staticArg(file);
    const r = judgeRead(an.env, an.state, upload, false);
    if (r) out.push(r);
    if (isSecretishFile(file)) out.push(finding("secret-egress", `${inv.name} uploads ${file}`));
  }
  return out;
};

const rsync: Handler = (inv, an) => {
  const ops = operands(inv.args, ["-e", "--rsh", "--exclude", "--include", "--filter", "-f"]);
  if (ops.some((a) => a.value === null || /^[^/]*:/.test(a.value))) {
    an.state.network ??= "rsync";
    return [
      finding("network", "rsync copies to or from a remote host"),
      ...ops.slice(0, -1).flatMap((a) => [judgeRead(an.env, an.state, a, true)].filter((f) => f !== undefined)),
    ];
  }
  return rsyncLocal(inv, an);
};

/** nc and friends: network; with -e/-c they hand a program's input and output to the other end. */
const netcat: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  if (hasFlag(inv.args, "ec", ["--exec", "--sh-exec", "--lua-exec"])) return [finding("remote-code", `${inv.name} -e gives the other end a program to drive`)];
  return [
    finding("network", `${inv.name} opens network connections`),
    ...operands(inv.args, ["-p", "-s", "-w", "-i", "-q", "-x", "-X"]).flatMap((a) => [judgeRead(an.env, an.state, a, false)].filter((f) => f !== undefined)),
  ];
};

/** socat addresses: EXEC/SYSTEM run programs for the peer, FILE/OPEN read or write local files. */
const socat: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  const out: Finding[] = [finding("network", "socat relays data between addresses")];
  for (const a of inv.args) {
    if (a.value === null) return [...out, finding("dynamic-command", "socat with an address only known at run time")];
    if (/^(exec|system)[:,]/i.test(a.value)) out.push(finding("remote-code", "socat runs a program for the other end"));
    const file = /^(?:file|open|gopen|create|pipe):([^,]+)/i.exec(a.value)?.[1];
    if (file) {
      const r = judgeRead(an.env, an.state, staticArg(file), false);
      if (r) out.push(r);
      out.push(judgeWrite(an.env, an.state, staticArg(file), "socat may write"));
    }
  }
  return out;
};

/** make: a build, except targets that by convention serve, deploy or install outside the workspace. */
const make: Handler = (inv, an) => {
  const dirs = optionValues(inv.args, ["-C", "-f"], ["--directory", "--file", "--makefile"]);
  const fetched = dirs.find((d) => isDownloaded(an.state, d.value));
  if (fetched) return [finding("remote-code", `${inv.name} runs the build of ${fetched.value}, downloaded by this command`)];
  // Only the workspace's own build is the project's declared entry point; another one is code the gate never saw.
  const ws = an.env.places.workspace;
  const foreign = dirs.find((d) => d.value === null || (locate(an.state, d.value) ?? [undefined]).some((p) => p === undefined || !isWithin(ws, p.real)));
  if (foreign) return [finding("inline-code", `${inv.name} runs the build in ${foreign.value ?? foreign.text}, outside the workspace`)];
  const targets = operands(inv.args, ["-C", "-f", "-j", "-l", "-o", "-W", "--directory", "--file", "--jobs"]).filter((a) => !a.value?.includes("="));
  if (targets.some((t) => t.value === null)) return [finding("inline-code", `${inv.name} with a target only known at run time`)];
  const outward = targets.find((t) => SERVING_SCRIPTS.makeTargets.has(t.value!));
  if (outward) return [finding("network", `${inv.name} ${outward.value} by convention serves, deploys or installs`)];
  return [finding("build-test", `${inv.name} builds the project`)];
};

/** hyperfine: each operand, and each --prepare/--setup/--cleanup/--conclude value, is a shell command it runs. */
const hyperfine: Handler = (inv, an) => {
  const scriptOpts = ["-p", "--prepare", "-s", "--setup", "-c", "--cleanup", "--conclude", "--reference"];
  const valueOpts = [
    "-w",
    "--warmup",
    "-m",
    "--min-runs",
    "-M",
    "--max-runs",
    "-r",
    "--runs",
    "-P",
    "--parameter-scan",
    "-D",
    "--parameter-step-size",
    "-L",
    "--parameter-list",
    "--style",
    "--sort",
    "-u",
    "--time-unit",
    "--export-asciidoc",
    "--export-csv",
    "--export-json",
    "--export-markdown",
    "--export-orgmode",
    "--output",
    "-n",
    "--command-name",
    "-i",
    "--ignore-failure",
    "--input",
  ];
  const out: Finding[] = [finding("build-test", `${inv.name} times commands`)];
  const scripts: Arg[] = [...optionValues(inv.args, ["-p", "-s", "-c"], ["--prepare", "--setup", "--cleanup", "--conclude", "--reference"])];
  for (const v of optionValues(inv.args, ["-S"], ["--shell"]))
    if (v.value !== "none" && v.value !== "sh" && v.value !== "bash")
      out.push(finding("inline-code", `${inv.name} runs its commands with the shell ${v.value ?? v.text}`));
  scripts.push(
    ...operands(
      inv.args,
      [...scriptOpts, ...valueOpts, "-S", "--shell"].filter((o) => o !== "-i" && o !== "--ignore-failure"),
    ),
  );
  for (const s of scripts)
    out.push(...(s.value === null ? [finding("dynamic-command", `${inv.name} runs a command only known at run time`)] : an.script(s.value, inv.name)));
  return out;
};

/** `%1`, and `$!` (the job this script last started in the background): the shell's own children. */
const OWN_JOB = /^("?)(\$!|\$\{!\})\1$/;
const ownJob = (a: Arg) => (a.value !== null ? a.value.startsWith("%") : OWN_JOB.test(a.text));

const kill: Handler = (inv) => {
  const ops = operands(inv.args, ["-s", "-n", "--signal"]);
  if (inv.args.some((a) => a.value === "-l" || a.value === "-L") || (ops.length > 0 && ops.every(ownJob)))
    return [finding("read-only", `${inv.name} lists signals or signals the shell's own jobs`)];
  return [finding("foreign-process", `${inv.name} signals processes that may not belong to this project`)];
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

/** An Ex command that is `:!CMD` (or a `:%!CMD` filter): CMD is a shell command line. */
const EX_SHELL = /^\s*:*\s*[%.$\d,]*\s*!(.*)$/s;
/** Ex commands that run other code: `:w !cmd`, `:r !cmd`, system(), terminals, embedded languages. */
const EX_RUNS_CODE =
  /\b(w|write|r|read|wq|x)\s+!|\bsystem(list)?\s*\(|\bterm(inal)?\b|^\s*:*\s*(py3?|python3?|pyx|lua|perl|ruby|luado|pydo|py3do|rubydo|perldo|call|exe(cute)?|so(urce)?)\b/;

/** emacs: Lisp given with --eval, --load, --funcall or --script can do anything; the gate does not read Lisp. */
const emacs: Handler = (inv) => {
  const code = inv.args.find((a) => a.value === null || /^(--?eval|--?load|-l|--?funcall|-f|--?script|-batch-byte-compile|--?execute|-x)(=|$)/.test(a.value));
  if (code) return [finding("dynamic-command", `${inv.name} runs Lisp code (${code.value ?? code.text})`)];
  return [finding("inline-code", `${inv.name} is an editor that can run commands`)];
};

/** vim, nvim, ex: commands given with -c, --cmd or +CMD run before anything is edited. */
const editor: Handler = (inv, an) => {
  const out: Finding[] = [finding("inline-code", `${inv.name} is an editor that can run commands`)];
  const commands = [
    ...optionValues(inv.args, [], ["-c", "--cmd"]),
    ...inv.args.filter((a) => a.value?.startsWith("+")).map((a) => staticArg(a.value!.slice(1))),
  ];
  for (const c of commands) {
    if (c.value === null) return [...out, finding("dynamic-command", `${inv.name} runs an editor command only known at run time`)];
    const shell = EX_SHELL.exec(c.value);
    if (shell) out.push(...an.script(shell[1]!, `${inv.name} :!`));
    else if (EX_RUNS_CODE.test(c.value)) out.push(finding("dynamic-command", `${inv.name} command ${c.value} runs other code`));
  }
  return out;
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

/** kubectl and oc: the network, and `get`/`edit` of a cluster's secrets prints credentials. */
const kubectl: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  const words = operands(inv.args, [
    "-n",
    "--namespace",
    "--context",
    "--cluster",
    "--user",
    "-s",
    "--server",
    "--kubeconfig",
    "-l",
    "--selector",
    "-o",
    "--output",
  ]);
  const verb = words.findIndex((w) => w.value === "get" || w.value === "edit");
  const secret = verb >= 0 && words.slice(verb + 1).some((w) => w.value === null || w.value.split(",").some((r) => CLUSTER_SECRET_RESOURCE.test(r)));
  if (secret) return [finding("identity-secret", `${inv.name} ${words[verb]!.value} may print the cluster's secrets`)];
  // `config view` redacts credentials unless asked for them raw (or flattened with their data).
  const configView = words[0]?.value === "config" && words[1]?.value === "view";
  if (configView && hasFlag(inv.args, "", ["--raw", "--flatten"]))
    return [finding("identity-secret", `${inv.name} config view prints the kubeconfig's credentials`)];
  return [finding("network", `${inv.name} reaches outside the workspace (network, other programs or machines)`)];
};

const crontab: Handler = (inv) =>
  inv.args.length === 1 && inv.args[0]!.value === "-l"
    ? [finding("read-only", "crontab -l lists jobs")]
    : [finding("persistence", "crontab installs or removes scheduled jobs")];

/** This family's code handlers, by the name commands.json gives them; each made for one program. */
export const EXEC_HANDLERS: HandlerRegistry = {
  shell: () => shell,
  interpreter: () => interpreter,
  // pip3 judges by pip's table, and says pip.
  "subcommand-table": (tool) => packageManager(SUBCOMMANDS.get(tool)?.tool ?? tool),
  npx: () => npx,
  transfer: () => transfer,
  rsync: () => rsync,
  httpie: () => httpie,
  netcat: () => netcat,
  socat: () => socat,
  "task-runner": () => taskRunner,
  parallel: () => parallel,
  sqlite: () => sqliteShell,
  make: () => make,
  hyperfine: () => hyperfine,
  pi: () => piCli,
  kill: () => kill,
  source: () => source,
  trap: () => trap,
  crontab: () => crontab,
  kubectl: () => kubectl,
  vim: () => editor,
  emacs: () => emacs,
};
