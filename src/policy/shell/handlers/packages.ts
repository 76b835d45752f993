// Package managers and build tools: a tool's subcommand table (npm, cargo, pip, docker, ...), npx,
// task runners, make and hyperfine. Scripts and targets that by convention serve, publish or
// deploy reach outside the workspace; a container given host access is privilege.

import { isWithin } from "../../places.ts";
import { finding, type Finding } from "../finding.ts";
import { operands, optionValues, staticArg, type Analyzer, type Handler, type HandlerRegistry } from "../invocation.ts";
import { isDownloaded, locate } from "../locate.ts";
import type { Arg } from "../parse.ts";
import { judgeReadOperands } from "../reads.ts";
import {
  CONTAINER_HOST_ACCESS,
  COMMAND_ALIASES,
  NETWORK_TOOLS,
  NPX_LOCAL_TOOLS,
  PI_CLI,
  PROGRAMS,
  reasonOf,
  RUN_SUBCOMMANDS,
  SECRET_OPTIONS,
  SERVING_SCRIPTS,
  SUBCOMMANDS,
  WRAPPERS,
} from "../table.ts";
import { judgeDirWrite, outputFindings } from "../writes.ts";
import { interpreter } from "./interpreters.ts";

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

/** A tool whose first word selects what it does (npm, cargo, go, pip, ...). */
export function packageManager(tool: string): Handler {
  return (inv, an) => {
    const table = SUBCOMMANDS.get(tool);
    if (!table) return [finding("unknown-command", `${tool}`)];
    // `bun -e CODE`: inline JavaScript, judged as `node -e` is.
    if (tool === "bun" && inv.args.some((a) => a.value !== null && /^(-e|--eval|-p|--print)(=|$)/.test(a.value)))
      return interpreter({ ...inv, name: "node" }, an);
    // Where the tool installs or writes (`npm install --prefix ~/.pi/agent/npm x`): Pi's installed
    // packages and auto mode's own files are self-protected there as anywhere.
    for (const dir of optionValues(inv.args, ["-C"], ["--prefix", "--dir", "--cwd", "--directory", "--modules-folder", "--global-folder"])) {
      const f = judgeDirWrite(an, dir, `${tool} writes into`);
      if (f.reason === "self-protection") return [f];
    }
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

/** This family's code handlers, by the name commands.json gives them. */
export const PACKAGE_HANDLERS: HandlerRegistry = {
  // pip3 judges by pip's table, and says pip.
  "subcommand-table": (tool) => packageManager(SUBCOMMANDS.get(tool)?.tool ?? tool),
  npx: () => npx,
  "task-runner": () => taskRunner,
  make: () => make,
  hyperfine: () => hyperfine,
};
