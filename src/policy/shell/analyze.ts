// A whole bash command, judged part by part: every simple command (after peeling wrappers),
// every redirection, and what flows between them (pipes into shells, secrets into the network,
// downloads that are then run). The command takes the strictest class of its parts.

import { basename, dirname, resolve } from "node:path";
import { isHarmlessDevice } from "../places.ts";
import { judgeRead, judgeWrite, locate, newScriptState, type ScriptState, type ShellEnv } from "./env.ts";
import { finding, strictest, type Finding } from "./finding.ts";
import { FILE_HANDLERS, judgeReadOperands } from "./handlers/files.ts";
import { EXEC_HANDLERS, npx, xargs } from "./handlers/exec.ts";
import { git } from "./handlers/git.ts";
import { staticArg, type Analyzer, type Invocation } from "./invocation.ts";
import { extractCommands, type Arg, type Redir, type SimpleCommand } from "./parse.ts";
import { CODE_LOADING_ENV, DENY_PREFIXES, NAMES_ONLY_READERS, SECRET_SOURCES, SIMPLE, WRAPPERS } from "./table.ts";

const MAX_SCRIPT_DEPTH = 8;
const MAX_WRAPPERS = 16;
const SYSTEM_BIN = new Set(["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin", "/run/current-system/sw/bin"]);
const RECURSIVE_READERS = new Set(["rg", "ag", "ack", "pt", "ugrep"]);
const WRITE_OPS = new Set([">", ">>", ">|", "&>", "&>>", "<>"]);

export interface ShellAnalysis {
  readonly verdict: Finding;
  readonly findings: readonly Finding[];
}

export function analyzeShell(src: string, env: ShellEnv): ShellAnalysis {
  const findings = analyzeScript(src, env, undefined, 0);
  const verdict = strictest(findings) ?? finding("read", "read-only", "does nothing");
  return { verdict, findings };
}

function analyzeScript(src: string, env: ShellEnv, outer: ScriptState | undefined, depth: number): Finding[] {
  if (depth > MAX_SCRIPT_DEPTH) return [finding("review", "dynamic-command", "nested shell scripts deeper than the gate reads")];
  const ex = extractCommands(src, { home: env.home });
  if (!ex.ok) return [finding("review", "shell-unparseable", `the command cannot be read statically: ${ex.reason}`)];
  const state = outer ?? newScriptState(env);
  for (const f of ex.functions) state.functions.add(f.name);
  const out: Finding[] = [];

  // A function that calls itself through a pipe or in the background multiplies without bound.
  for (const fn of ex.functions) {
    const selfCalls = ex.commands.filter((c) => c.inFunction === fn.name && c.argv[0]?.value === fn.name);
    if (selfCalls.some((c) => c.background || c.pipeline >= 0)) out.push(finding("deny", "hard-deny", `fork bomb: function ${fn.name} spawns copies of itself`));
  }

  const an: Analyzer = {
    env,
    state,
    depth,
    script: (inner, what) => {
      const nested = analyzeScript(inner, env, state, depth + 1);
      return nested.length > 0 ? nested : [finding("read", "read-only", `${what} does nothing`)];
    },
    argv: (args, source, piped) => argvFindings(args, source, piped, an, undefined),
  };

  for (const cmd of ex.commands) {
    out.push(...assignmentFindings(cmd));
    out.push(...redirectFindings(cmd.redirs, an, cmd));
    const fed = xargsFeed(cmd, ex.commands);
    out.push(...argvFindings(cmd.argv, cmd, cmd.stage > 0, an, fed));
    trackDirectory(cmd, state);
  }
  out.push(...redirectFindings(ex.compoundRedirs, an, undefined));

  if (state.secretSource !== undefined && state.network !== undefined)
    out.push(finding("review", "secret-egress", `sends data from ${state.secretSource} over the network (${state.network})`));
  return out;
}

function assignmentFindings(cmd: SimpleCommand): Finding[] {
  const names = [
    ...cmd.assigns.map((a) => a.name),
    ...(["export", "declare", "typeset", "local", "readonly"].includes(cmd.argv[0]?.value ?? "")
      ? cmd.argv.slice(1).flatMap((a) => (a.value === null ? ["<dynamic>"] : a.value.includes("=") ? [a.value.split("=")[0]!] : []))
      : []),
  ];
  return names
    .filter((n) => n === "<dynamic>" || CODE_LOADING_ENV.has(n))
    .map((n) => finding("contain", "inline-code", `sets ${n}, which changes what code later commands run`));
}

function redirectFindings(redirs: readonly Redir[], an: Analyzer, cmd: SimpleCommand | undefined): Finding[] {
  const out: Finding[] = [];
  const network = cmd !== undefined && ["curl", "wget"].includes(basename(cmd.argv[0]?.value ?? ""));
  for (const r of redirs) {
    if (r.heredoc || !r.target) continue;
    const t = r.target;
    if (WRITE_OPS.has(r.op) || (r.op === ">&" && t.value !== null && !/^\d+-?$|^-$/.test(t.value))) {
      if (t.value !== null && isHarmlessDevice(t.value)) continue;
      out.push(judgeWrite(an.env, an.state, t, "redirection writes"));
      if (network && t.value) for (const p of locate(an.state, t.value) ?? []) an.state.downloads.add(p.real);
    } else if (r.op === "<" || r.op === "<>") {
      const f = judgeRead(an.env, an.state, t, false);
      if (f) out.push(f);
    }
  }
  return out;
}

/** `echo a b | xargs cmd` feeds known words; any other producer feeds unknown ones. */
function xargsFeed(cmd: SimpleCommand, all: readonly SimpleCommand[]): Arg[] | undefined {
  if (cmd.stage === 0 || cmd.pipeline < 0) return undefined;
  const producer = all.find((c) => c.pipeline === cmd.pipeline && c.stage === cmd.stage - 1);
  const name = producer?.argv[0]?.value;
  if (!producer || (name !== "echo" && name !== "printf") || producer.argv.some((a) => a.value === null)) return undefined;
  const words = producer.argv.slice(1).filter((a) => !/^-[neE]+$/.test(a.value ?? ""));
  if (name === "printf" && words.some((w) => w.value?.includes("%"))) return undefined;
  return words.flatMap((w) => (w.value ?? "").replace(/\\n/g, " ").split(/\s+/).filter(Boolean).map(staticArg));
}

function trackDirectory(cmd: SimpleCommand, state: ScriptState): void {
  const name = cmd.argv[0]?.value;
  if (name !== "cd" && name !== "pushd" && name !== "popd") return;
  const target = cmd.argv.slice(1).find((a) => a.value === null || !a.value.startsWith("-"));
  if (name === "popd" || !target || target.value === null || target.value === "-") {
    state.cwds = [...state.cwds, null];
    return;
  }
  const next = state.cwds.map((c) => (c === null ? null : resolve(c, target.value!)));
  // Subshells and `||` make the change conditional, so the old directories stay possible.
  state.cwds = [...new Set([...state.cwds, ...next])];
}

function commandName(value: string): string {
  if (!value.includes("/")) return value;
  return SYSTEM_BIN.has(dirname(value)) ? basename(value) : value;
}

function argvFindings(argv: readonly Arg[], source: SimpleCommand, pipedInput: boolean, an: Analyzer, fed: Arg[] | undefined): Finding[] {
  const out: Finding[] = [];
  let args = argv;
  for (let hops = 0; ; hops++) {
    if (hops > MAX_WRAPPERS) return [...out, finding("review", "dynamic-command", "too many nested command wrappers")];
    if (args.length === 0) return out.length > 0 ? out : [finding("read", "read-only", "no command")];
    const head = args[0]!;
    if (head.value === null) return [...out, finding("review", "dynamic-command", `the command name ${head.text} is only known at run time`)];
    const name = commandName(head.value);
    if (an.state.functions.has(name)) return [...out, finding("read", "read-only", `calls the function ${name} defined in this command`)];
    if (name === "busybox" && args.length > 1) {
      args = args.slice(1);
      continue;
    }
    const wrapper = WRAPPERS.get(name);
    if (!wrapper) break;
    if (wrapper.raise) out.push(finding(wrapper.raise, wrapper.reason === "privilege" ? "privilege" : "dynamic-command", `${name} runs a command with other privileges`));
    let i = 1;
    let positionals = wrapper.positionals ?? 0;
    for (; i < args.length; i++) {
      const v = args[i]!.value;
      if (v === null) return [...out, finding("review", "dynamic-command", `${name} with an argument only known at run time`)];
      if (v === "--") {
        i++;
        break;
      }
      if (wrapper.lookupOptions?.includes(v)) return [...out, finding("read", "read-only", `${name} ${v} looks a command up`)];
      if (v.startsWith("-") && v !== "-") {
        if (wrapper.valueOptions.includes(v)) i++;
        if (name === "sudo" && (v === "-s" || v === "-i" || v === "--shell" || v === "--login"))
          return [...out, finding("review", "privilege", "sudo opens a root shell")];
        continue;
      }
      if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(v)) {
        const varName = v.slice(0, v.indexOf("="));
        if (CODE_LOADING_ENV.has(varName)) out.push(finding("contain", "inline-code", `${name} sets ${varName}, which changes what code runs`));
        continue;
      }
      if (positionals > 0) {
        positionals--;
        continue;
      }
      break;
    }
    const rest = args.slice(i);
    if (rest.length === 0) {
      if (name === "env" || name === "printenv") an.state.secretSource ??= "the environment";
      return [...out, finding(name === "sudo" || name === "doas" ? "review" : "read", name === "sudo" ? "privilege" : "read-only", `${name} with no command`)];
    }
    if (wrapper.scriptArgs) {
      if (rest.some((a) => a.value === null)) return [...out, finding("review", "dynamic-command", `${name} runs a command only known at run time`)];
      return [...out, ...an.script(rest.map((a) => a.value).join(" "), name)];
    }
    args = rest;
  }
  const head = args[0]!;
  const name = commandName(head.value!);
  const inv: Invocation = { name, args: args.slice(1), source, pipedInput };
  return [...out, ...dispatch(inv, an, fed)];
}

function dispatch(inv: Invocation, an: Analyzer, fed: Arg[] | undefined): Finding[] {
  const { name } = inv;
  if (name.includes("/")) return pathProgram(inv, an);
  if (name === "git") return git(inv, an);
  if (name === "xargs") return xargs(fed)(inv, an);
  if (name === "eval") return [finding("review", "dynamic-command", "eval runs a string as code")];
  const handler = FILE_HANDLERS.get(name) ?? EXEC_HANDLERS.get(name);
  if (handler) return handler(inv, an);
  if (DENY_PREFIXES.some((p) => name.startsWith(p))) return [finding("deny", "hard-deny", `${name} formats a file system`)];
  const cls = SIMPLE.get(name);
  if (cls === undefined) return [finding("contain", "unknown-command", `${name} is not a command the gate knows`)];
  if (SECRET_SOURCES.has(name) && inv.args.length === 0) an.state.secretSource ??= "the environment";
  if (SECRET_SOURCES.has(name) && name === "export" && inv.args.some((a) => a.value === "-p")) an.state.secretSource ??= "the environment";
  const reasonFor = { read: "read-only", build: "build-test", contain: "network", review: "privilege", deny: "hard-deny" } as const;
  const reason = cls === "review" ? reviewReason(name) : reasonFor[cls as keyof typeof reasonFor] ?? "read-only";
  if (cls === "contain") an.state.network ??= isNetworkTool(name) ? name : an.state.network;
  const base = finding(cls, reason, describe(name, cls));
  if (NAMES_ONLY_READERS.has(name) || cls === "deny" || cls === "review") return [base];
  const recursive = RECURSIVE_READERS.has(name) || (/grep$/.test(name) && inv.args.some((a) => /^-[a-zA-Z]*[rR]|^--recursive|^--dereference-recursive/.test(a.value ?? "")));
  return [base, ...judgeReadOperands(inv, an, recursive)];
}

function reviewReason(name: string): "foreign-process" | "persistence" | "privilege" | "dynamic-command" | "destructive" {
  if (["kill", "pkill", "killall", "skill", "xkill"].includes(name)) return "foreign-process";
  if (["at", "batch", "launchctl", "systemctl", "service", "update-rc.d", "chkconfig", "rc-update", "loginctl", "defaults", "chsh"].includes(name)) return "persistence";
  if (["eval", "alias"].includes(name)) return "dynamic-command";
  if (["shred", "srm", "wipe", "unlink"].includes(name)) return "destructive";
  return "privilege";
}

const NETWORK_TOOLS = new Set(["curl", "wget", "http", "https", "xh", "aria2c", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "lftp", "rsync", "rclone", "s3cmd", "aws", "gcloud", "gsutil", "az", "gh", "kubectl", "openssl", "mail", "sendmail", "websocat", "wscat", "grpcurl"]);
function isNetworkTool(name: string): boolean {
  return NETWORK_TOOLS.has(name);
}

function describe(name: string, cls: string): string {
  switch (cls) {
    case "read":
      return `${name} only reads`;
    case "build":
      return `${name} builds or tests the project`;
    case "contain":
      return `${name} reaches outside the workspace (network, other programs or machines)`;
    case "review":
      return `${name} changes the system, other processes or credentials`;
    case "deny":
      return `${name} destroys disks or file systems`;
    default:
      return name;
  }
}

/** A program named by path: a project script, a downloaded file, or a local dev tool. */
function pathProgram(inv: Invocation, an: Analyzer): Finding[] {
  const located = locate(an.state, inv.name) ?? [];
  if (located.some((p) => an.state.downloads.has(p.real))) return [finding("review", "remote-code", `runs ${inv.name}, downloaded by this command`)];
  const bin = /(^|\/)node_modules\/\.bin\/([^/]+)$/.exec(inv.name);
  if (bin) return npx({ ...inv, args: [staticArg(bin[2]!), ...inv.args] }, an);
  const known = SIMPLE.get(inv.name);
  if (known === "build") return [finding("build", "build-test", `${inv.name} builds the project`)];
  return [finding("contain", "inline-code", `runs the program ${inv.name}`)];
}
