// `pi-auto-mode doctor`: what the gate would run with on this machine, and whether it is healthy.

import type { ClassifierSettings } from "../review/classifier/conditions.ts";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Backend } from "../policy/types.ts";
import { parseArgs, type CommandSpec } from "./args.ts";
import { defaultTmpRootPath } from "../state/locations.ts";
import { TempSession } from "../state/temp-root.ts";
import { installLine, installTrust, WRITABLE_COPY_ENV } from "../policy/install-trust.ts";
import { EXIT, type Io } from "./io.ts";
import { sandboxDoctor, type SandboxDoctor } from "./sandbox.ts";
import { resolveHostTool } from "../sandbox/linux/host-tools.ts";
import type { NetworkOrigins } from "../policy/network/entries.ts";
import type { NetworkSpec } from "../policy/network/types.ts";

export const DOCTOR_HELP = `Usage:
  pi-auto-mode doctor [--json]

Report the Node and Pi versions, Pi's agent dir ($PI_CODING_AGENT_DIR or ~/.pi/agent),
whether Pi has this extension installed and enabled (its settings.json), the health of
the auto-mode configuration (user file in the agent dir, project file
.pi/auto-mode.json under the current directory), the health of auto mode's global state
(auto-mode/ in the agent dir), the temporary writable root, the backend that runs shell
commands and why, where sandboxed commands may connect (sandbox.network: the allow and
deny entries and where each came from), and the configured reviewer model, checked
against Pi's model registry and credentials without calling the network. Each problem
is printed with its fix.

Options:
  --json       print one JSON object on the last line (problems: [{level, what, fix}])
  -h, --help   show this help

Exit status: 0 when nothing is wrong (notes, such as no reviewer yet, do not fail);
1 when a problem is reported: the configuration is invalid (the gate then denies every
call until it is fixed), the global state is damaged (calls that need review or the
sandbox are denied until /perm-repair), the OS sandbox is unavailable (every shell
command is denied), Pi does not load this extension (not installed, disabled, or two
copies), this copy is inside the folder it would gate, or the configured reviewer is
not usable (unknown model, unsupported thinking level, no credentials).
`;

const SPEC: CommandSpec = { flags: { json: "boolean" }, positionals: [], rest: false };

const PI_PACKAGE = "@earendil-works/pi-coding-agent";

interface PackageJson {
  readonly name?: string;
  readonly version?: string;
  readonly engines?: { readonly node?: string };
  readonly peerDependencies?: Readonly<Record<string, string>>;
}

/** This package's own package.json: two levels up from src/cli/ and from dist/cli/ alike. */
export function ownPackage(): PackageJson {
  return JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as PackageJson;
}

export interface PiInstall {
  readonly version: string;
  readonly path: string;
}

/** Pi as this package resolves it (the peer dependency), or undefined when it is not installed. */
export function findPi(): PiInstall | undefined {
  let entry: string;
  try {
    // package.json is not in Pi's "exports", so resolve the entry point and walk up to it.
    entry = fileURLToPath(import.meta.resolve(PI_PACKAGE));
  } catch {
    return undefined;
  }
  for (let dir = dirname(entry); ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, "utf8")) as PackageJson;
        if (pkg.name === PI_PACKAGE && typeof pkg.version === "string") return { version: pkg.version, path: dir };
      } catch {
        // An unreadable package.json on the way up: keep walking.
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** True when `version` satisfies a range of the form "1.6.x" (the only form the peer range uses). */
export function satisfiesMinorRange(version: string, range: string): boolean {
  const m = /^(\d+)\.(\d+)\.x$/.exec(range.trim());
  if (!m) return true;
  const [major, minor] = version.split(".");
  return major === m[1] && minor === m[2];
}

/** A copy of auto mode Pi's settings name (settings.json `packages` or `extensions`). */
export interface InstalledCopy {
  /** The package root the extension resolves to. */
  readonly root: string;
  /** The entry as the settings file has it (`../pi-auto-mode`, `npm:pi-auto-mode`, a file). */
  readonly source: string;
  readonly scope: "user" | "project" | "temporary";
  readonly enabled: boolean;
  /** The copy this command runs from. */
  readonly thisCopy: boolean;
}

export interface PiRegistration {
  /** enabled: Pi loads a copy of auto mode; disabled: it is installed with its extension filtered out. */
  readonly status: "enabled" | "disabled" | "not installed" | "unknown";
  /** The user-level settings file `pi install` writes. */
  readonly settingsPath: string;
  readonly copies: readonly InstalledCopy[];
  readonly message: string;
}

export interface ReviewerReport {
  readonly configured: boolean;
  /** The stored reviewer is known to Pi, supports its thinking level and has credentials; null when none is stored. */
  readonly valid: boolean | null;
  readonly model: string | null;
  readonly why: string;
  /** Which engine judges: the chat reviewer or the classifier engine (absent when none is stored). */
  readonly engine?: "chat" | "classifier";
}

/** What doctor found wrong and what to do about it. A problem fails the run (exit 1); a note does not. */
export interface DoctorProblem {
  readonly level: "problem" | "note";
  readonly what: string;
  readonly fix: string;
}

/** Facts about the machine that decide a fix's wording. */
export interface MachineFacts {
  /** /proc/sys/kernel/apparmor_restrict_unprivileged_userns, undefined where the file does not exist. */
  readonly apparmorRestrictUserns: string | undefined;
  readonly root: boolean;
  readonly bwrap: string;
}

export interface DoctorReport {
  readonly ok: boolean;
  readonly problems: readonly DoctorProblem[];
  readonly node: { readonly version: string; readonly required: string };
  readonly pi: {
    readonly status: "installed" | "not installed";
    readonly version: string | null;
    readonly path: string | null;
    readonly supported: string;
    readonly compatible: boolean | null;
  };
  /** Whether Pi (as its settings say) loads this extension. */
  readonly extension: PiRegistration;
  readonly agentDir: { readonly path: string; readonly source: "PI_CODING_AGENT_DIR" | "default" };
  readonly config: {
    readonly status: "ok" | "missing" | "fault";
    /** The faulty file on a fault, otherwise the user config file. */
    readonly path: string;
    readonly userPath: string;
    readonly projectPath: string;
    readonly files: readonly string[];
    readonly message: string;
  };
  /** The durable global state (the enabled flag, the reviewer), read as the gate reads it. */
  readonly state: { readonly status: "ok" | "missing" | "fault"; readonly path: string; readonly revision: number | null; readonly message: string };
  readonly tmpRoot: string;
  /**
   * Whether that root can be used (state/temp-root.ts): a private folder of the user's, or one
   * taken by someone else (the default one is then replaced by a fresh private root per session;
   * a configured one is refused, and every call is denied).
   */
  readonly tmpRootCheck?: { readonly status: "ok" | "replaced" | "refused"; readonly message: string };
  /** The effective sandbox.network settings and where each part came from; null when the configuration is at fault. */
  readonly network: { readonly spec: NetworkSpec; readonly origins: NetworkOrigins; readonly dataFault?: string } | null;
  readonly backend: { readonly name: Backend; readonly why: string };
  /** The capability probe behind the backend, what is missing, and the sandbox's limits. */
  readonly sandbox: Omit<SandboxDoctor, "name" | "why">;
  readonly machine: MachineFacts;
  readonly reviewer: ReviewerReport;
  /** This copy of auto mode: where it lives, and whether the agent could have changed it (install-trust.ts). */
  readonly install: { readonly root: string; readonly trust: "trusted" | "development copy" | "not trusted"; readonly line: string };
}

const realOr = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
};

/** This copy's package root: two levels up from src/cli/ and from dist/cli/ alike. */
export function ownRoot(): string {
  return realOr(fileURLToPath(new URL("../..", import.meta.url)).replace(/\/+$/, ""));
}

/** The name in a folder's package.json, undefined when it has none or it cannot be read. */
function packageNameAt(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson).name;
  } catch {
    return undefined;
  }
}

/** The package a file belongs to: the nearest folder above it with a package.json. */
function packageOf(file: string): { readonly root: string; readonly name: string | undefined } | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return { root: realOr(dir), name: packageNameAt(dir) };
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Where Pi's settings put this extension, resolved by Pi's own package manager (so a relative
 * local path, a filter that leaves the extension out, or `pi config` turning it off read as Pi
 * reads them). Nothing is installed or fetched: a configured npm or git package that is not on
 * disk yet is skipped, as in offline mode.
 */
export async function piRegistration(agentDir: string, cwd: string, root: string, name: string): Promise<PiRegistration> {
  const settingsPath = join(agentDir, "settings.json");
  let pi: typeof import("@earendil-works/pi-coding-agent");
  try {
    pi = await import("@earendil-works/pi-coding-agent");
  } catch (e) {
    return { status: "unknown", settingsPath, copies: [], message: `Pi cannot be loaded to read its settings: ${(e as Error).message}` };
  }
  const settings = pi.SettingsManager.create(cwd, agentDir, { projectTrusted: true });
  const errors = settings.drainErrors();
  if (errors.length > 0)
    return {
      status: "unknown",
      settingsPath,
      copies: [],
      message: `Pi's settings cannot be read: ${errors.map((e) => `${e.path ?? e.scope}: ${e.error.message}`).join("; ")}`,
    };
  const manager = new pi.DefaultPackageManager({ cwd, agentDir, settingsManager: settings, commandOutput: "capture" });
  let resolved: Awaited<ReturnType<typeof manager.resolve>>;
  try {
    resolved = await manager.resolve(async () => "skip");
  } catch (e) {
    return { status: "unknown", settingsPath, copies: [], message: `Pi's package manager failed: ${(e as Error).message}` };
  }
  const copies: InstalledCopy[] = [];
  for (const ext of resolved.extensions) {
    if (ext.metadata.source === "builtin") continue;
    const pkg = ext.metadata.packageRoot ? { root: realOr(ext.metadata.packageRoot), name: packageNameAt(ext.metadata.packageRoot) } : packageOf(ext.path);
    if (!pkg || pkg.name !== name) continue;
    copies.push({ root: pkg.root, source: ext.metadata.source, scope: ext.metadata.scope, enabled: ext.enabled, thisCopy: pkg.root === root });
  }
  const pending = manager
    .listConfiguredPackages()
    .filter((p) => p.installedPath === undefined && p.source.includes(name))
    .map((p) => p.source);
  const enabled = copies.filter((c) => c.enabled);
  const where = (c: InstalledCopy) => `${c.root} (${c.scope === "user" ? "" : `${c.scope} `}settings: ${c.source})`;
  if (enabled.length > 0) {
    const mine = enabled.find((c) => c.thisCopy);
    const others = enabled.filter((c) => !c.thisCopy);
    const message =
      (mine ? `enabled: Pi loads this copy from ${where(mine)}` : `enabled: Pi loads another copy, ${where(others[0]!)}`) +
      (mine && others.length > 0 ? `; and also ${others.map(where).join(", ")}` : "") +
      (enabled.some((c) => c.scope === "project") ? "; a project-level entry loads only in a project you trusted" : "");
    return { status: "enabled", settingsPath, copies, message };
  }
  if (copies.length > 0)
    return { status: "disabled", settingsPath, copies, message: `disabled: ${copies.map(where).join(", ")} is installed, with its extension turned off` };
  return {
    status: "not installed",
    settingsPath,
    copies,
    message:
      pending.length > 0
        ? `not installed yet: ${settingsPath} names ${pending.join(", ")}, which Pi installs at its next start`
        : `not installed: ${settingsPath} names no copy of ${name}`,
  };
}

/**
 * The reviewer stored in the global state, checked the way /perm-auto-model checks a new one,
 * against Pi's shipped catalog and the agent dir's models.json and auth.json: no catalog download,
 * no token refresh, no request.
 */
/** `classifier`: the user's classifier settings, checked against the shipped conditions when a classifier judges. */
export async function reviewerReport(agentDir: string, classifier?: ClassifierSettings): Promise<ReviewerReport> {
  const { processGlobalState } = await import("../state/global.ts");
  const r = await processGlobalState(agentDir).read();
  if (r.kind === "fault")
    return {
      configured: false,
      valid: null,
      model: null,
      why: `unknown: auto mode's global state is damaged (${r.fault.detail}); calls that need review are denied`,
    };
  const s = r.snapshot.reviewer;
  if (!s)
    return {
      configured: false,
      valid: null,
      model: null,
      why: "none: calls that need review are denied (choose one with /perm-auto-model; test it with pi-auto-mode check --review)",
    };
  const model = `${s.provider}/${s.model}`;
  const bad = (why: string): ReviewerReport => ({ configured: true, valid: false, model, why });
  const { getSupportedThinkingLevels } = await import("@earendil-works/pi-ai");
  const { offlineModels } = await import("./review.ts");
  const { runtime, registry } = await offlineModels(agentDir);
  const error = registry.getError();
  if (error) return bad(`${model}: Pi's models.json in ${agentDir} is invalid (${error}), so the reviewer cannot be found`);
  if (s.engine === "classifier") {
    const c = (engine: ReviewerReport) => ({ ...engine, engine: "classifier" as const });
    if (!registry.findOfType("classifier", s.provider, s.model))
      return c(bad(`${model} (classifier engine): Pi knows no such classifier model (its catalog and ${join(agentDir, "models.json")})`));
    if ((await runtime.checkAuth(s.provider)) === undefined)
      return c(bad(`${model} (classifier engine): provider ${s.provider} has no credentials in Pi (auth.json or its API key variable)`));
    // The configuration loader cannot know the conditions (they are the reviewer's data): a
    // threshold for a condition that does not exist is found here, before a review is denied for it.
    const { conditions, settingsProblem } = await import("../review/classifier/conditions.ts");
    const loaded = conditions();
    if (loaded.kind === "fault")
      return c(bad(`${model} (classifier engine): the shipped conditions are at fault (${loaded.problem}), so every classifier review is denied`));
    const problem = settingsProblem(loaded.data, classifier);
    if (problem) return c(bad(`${model} (classifier engine): auto-mode.json ${problem}; classifier reviews are denied until it is fixed`));
    return c({
      configured: true,
      valid: true,
      model,
      why: `${model} (classifier engine: soft and hazard conditions judged by a classifier model): known to Pi, credentials configured; test it with pi-auto-mode check --review`,
    });
  }
  const found = registry.find(s.provider, s.model);
  if (!found)
    return bad(
      `${model} (thinking ${s.thinking}): Pi knows no such model (its catalog and ${join(agentDir, "models.json")}; a provider another extension registers is not seen here)`,
    );
  const levels: readonly string[] = getSupportedThinkingLevels(found);
  if (!levels.includes(s.thinking)) return bad(`${model} does not support thinking level "${s.thinking}" (supported: ${levels.join(", ")})`);
  // checkAuth looks at what is configured without refreshing an OAuth token, so no request leaves.
  if ((await runtime.checkAuth(s.provider)) === undefined)
    return bad(`${model} (thinking ${s.thinking}): provider ${s.provider} has no credentials in Pi (auth.json or its API key variable)`);
  return {
    configured: true,
    valid: true,
    model,
    why: `${model} (thinking ${s.thinking}, chat reviewer engine): known to Pi, credentials configured; test it with pi-auto-mode check --review`,
    engine: "chat",
  };
}

/** The machine facts a fix depends on, read now. */
export function machineFacts(): MachineFacts {
  let restrict: string | undefined;
  try {
    restrict = readFileSync("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "utf8").trim();
  } catch {
    restrict = undefined;
  }
  // The bwrap the sandbox runs (host-tools.ts: the system folders, never the PATH).
  const bwrap = resolveHostTool("bwrap");
  return {
    apparmorRestrictUserns: restrict,
    root: typeof process.geteuid === "function" && process.geteuid() === 0,
    bwrap: bwrap.ok ? bwrap.path : "/usr/bin/bwrap",
  };
}

/** What to do when Ubuntu's AppArmor keeps unprivileged programs out of user namespaces: both ways, with their cost. */
export function apparmorFix(bwrap: string): string {
  return [
    "AppArmor forbids unprivileged user namespaces here (/proc/sys/kernel/apparmor_restrict_unprivileged_userns is 1, as on Ubuntu 23.10 and later), and bubblewrap and the staging's unshare need them. Either:",
    `  (a) give bubblewrap a profile that allows them: write /etc/apparmor.d/bwrap with`,
    `        abi <abi/4.0>,`,
    `        include <tunables/global>`,
    `        profile bwrap ${bwrap} flags=(unconfined) {`,
    `          userns,`,
    `          include if exists <local/bwrap>`,
    `        }`,
    "      then run: sudo apparmor_parser -r /etc/apparmor.d/bwrap (a profile of the same shape for /usr/bin/unshare lets the workspace be staged).",
    "      Risk: any program on this machine can then get a user namespace by starting bubblewrap (or unshare), the kernel surface the restriction closes; other programs stay restricted.",
    "  (b) or lift the restriction: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 (put it in /etc/sysctl.d/ to keep it after a reboot).",
    "      Risk: every unprivileged program may create user namespaces again, as before Ubuntu 23.10, so a kernel bug reachable through them is open to all of them.",
  ].join("\n");
}

type ReportFacts = Omit<DoctorReport, "ok" | "problems">;

/** Every problem and note of a report, each with its fix. Pure: the tests feed it made-up reports. */
export function doctorProblems(r: ReportFacts): DoctorProblem[] {
  const out: DoctorProblem[] = [];
  const problem = (what: string, fix: string) => out.push({ level: "problem", what, fix });
  const note = (what: string, fix: string) => out.push({ level: "note", what, fix });
  const m = r.machine;
  const apparmor = m.apparmorRestrictUserns === "1" && !m.root;
  if (r.pi.status === "not installed")
    problem(`Pi is not installed where this package resolves it (it needs ${PI_PACKAGE} ${r.pi.supported})`, "run npm install in this package's folder");
  else if (r.pi.compatible === false)
    problem(`Pi ${r.pi.version} is not supported (this package needs ${r.pi.supported})`, `install ${PI_PACKAGE} ${r.pi.supported}`);
  const ext = r.extension;
  const root = r.install.root;
  if (ext.status === "not installed")
    problem(
      "Pi does not load auto mode: no copy is installed in Pi",
      `pi install ${root}   (user level, the default; Pi then loads it in place from that folder)`,
    );
  else if (ext.status === "disabled")
    problem(
      "auto mode is installed in Pi but its extension is turned off",
      `run pi config and enable it, or remove the "extensions" filter from its entry in ${ext.copies[0]?.scope === "project" ? "the project's .pi/settings.json" : ext.settingsPath}`,
    );
  else if (ext.status === "unknown" && r.pi.status === "installed")
    problem(`whether Pi loads auto mode is unknown: ${ext.message}`, `fix ${ext.settingsPath} (pi list shows what Pi reads)`);
  else {
    const enabled = ext.copies.filter((c) => c.enabled);
    if (enabled.length > 1)
      problem(
        `Pi loads ${enabled.length} copies of auto mode (${enabled.map((c) => c.root).join(", ")}), each gating on its own`,
        `keep one: pi remove ${enabled.find((c) => !c.thisCopy)?.source ?? enabled[1]!.source}`,
      );
    else if (!enabled[0]?.thisCopy)
      note(
        `Pi loads the copy at ${enabled[0]?.root}, not this one (${root}); this report describes this copy's code`,
        `run that copy's bin/pi-auto-mode.js doctor`,
      );
  }
  if (r.tmpRootCheck?.status === "refused")
    problem(
      `the temporary root cannot be used: ${r.tmpRootCheck.message}; auto mode denies every call until it is fixed`,
      "see the reason: remove what is there, or set tmpRoot",
    );
  else if (r.tmpRootCheck?.status === "replaced")
    note(`the temporary root ${r.tmpRootCheck.message}`, "remove what is at that name (as root if another account made it) to use it again");
  if (r.config.status === "fault")
    problem(
      `the configuration is invalid (${r.config.path}: ${r.config.message.replace(/; every call is denied until it is fixed$/, "")}); auto mode denies every call until it is fixed`,
      `edit ${r.config.path} (the README's Configuration section has the format); pi-auto-mode config shows the effective configuration once it loads`,
    );
  if (r.network?.dataFault)
    problem(
      `auto mode's shipped network data is at fault (${r.network.dataFault}): sandboxed commands have no network`,
      "reinstall pi-auto-mode (this is a bug of the package: please report it)",
    );
  if (r.state.status === "fault")
    problem(
      "auto mode's global state is damaged; calls that need review or the sandbox are denied until it is repaired",
      "run /perm-repair in Pi (or /perm-enabled or /perm-auto-model, which rewrite it)",
    );
  if (r.backend.name === "unavailable") {
    const fixes = [
      ...r.sandbox.missing.map((x) => `install ${x}`),
      ...(r.sandbox.missing.some((x) => /bubblewrap|bwrap/.test(x)) ? ["(Debian, Ubuntu: sudo apt-get install bubblewrap)"] : []),
      ...(apparmor ? [apparmorFix(m.bwrap)] : []),
    ];
    problem(
      `the OS sandbox is unavailable (${r.backend.why.replace(/^unavailable: /, "")}); auto mode denies every shell command until it is fixed`,
      fixes.length > 0 ? fixes.join("\n") : "fix what the probe reports above, then run pi-auto-mode doctor again",
    );
  } else if (r.backend.name === "sandboxed-unstaged" && r.sandbox.probe?.driver === "sandbox-exec")
    note(
      "macOS: commands write the workspace in place (no staging) and have no network at all: the Seatbelt profile denies it, so the sandbox.network allowlist above is not used",
      "nothing to install: a command that needs the network needs an approved escalation (require_escalated)",
    );
  else if (r.backend.name === "sandboxed-unstaged")
    note(
      "the workspace cannot be staged: commands write it in place, their effects are not judged, git writes need review, and commands have no network",
      apparmor
        ? apparmorFix(m.bwrap)
        : "see the backend line above: staging needs an overlay mount in a private mount namespace (unshare, kernel 5.11 or later)",
    );
  else if (r.backend.name === "sandboxed" && r.sandbox.facts.some((f) => f.startsWith("network: none")))
    note(
      "sandboxed commands have no network (see the network fact above)",
      apparmor ? apparmorFix(m.bwrap) : "network in the sandbox needs nsenter (util-linux) and a staged workspace",
    );
  if (r.install.trust === "not trusted")
    problem(
      "this copy of auto mode is inside a folder the agent can write here, so in this folder it lets only plain reads run",
      `install it elsewhere, run doctor from the folder you work in, or start Pi with ${WRITABLE_COPY_ENV}=1 to develop it`,
    );
  if (r.reviewer.valid === false)
    problem(
      `the configured reviewer is not usable: ${r.reviewer.why}; calls that need review are denied`,
      "choose one Pi knows and has credentials for: /perm-auto-model provider/model [thinking] in Pi (or /login first); pi-auto-mode check --review tests it",
    );
  else if (!r.reviewer.configured && r.state.status !== "fault")
    note(
      "no reviewer is configured: calls that need review are denied (the deterministic layers and the sandbox still decide the rest)",
      "/perm-auto-model provider/model [thinking] in Pi, for example /perm-auto-model anthropic/claude-haiku-4-5 low",
    );
  return out;
}

export async function doctorReport(io: Io): Promise<DoctorReport> {
  // Loaded only now: the config loader (typebox) is slow to load, and help should not pay for it.
  const { loadPolicyConfig, PROJECT_CONFIG_FILE, USER_CONFIG_FILE } = await import("../policy/config/load.ts");
  const { agentDirFromEnv } = await import("../state/locations.ts");
  const pkg = ownPackage();
  const home = homedir();
  const agentDir = agentDirFromEnv(io.env, home);
  const userPath = join(agentDir, USER_CONFIG_FILE);
  const projectPath = join(io.cwd, PROJECT_CONFIG_FILE);
  const loaded = loadPolicyConfig({ agentDir, cwd: io.cwd, home });
  const config: DoctorReport["config"] = !loaded.ok
    ? { status: "fault", path: loaded.path, userPath, projectPath, files: [], message: `${loaded.message}; every call is denied until it is fixed` }
    : loaded.config.files.length > 0
      ? { status: "ok", path: userPath, userPath, projectPath, files: loaded.config.files, message: `loaded ${loaded.config.files.join(", ")}` }
      : { status: "missing", path: userPath, userPath, projectPath, files: [], message: "no configuration file; the built-in policy applies" };
  const tmpRoot = (loaded.ok ? loaded.config.tmpRoot : undefined) ?? defaultTmpRootPath();
  const tmpRootCheck = checkTmpRoot(loaded.ok ? loaded.config.tmpRoot : undefined);
  const root = ownRoot();
  const [state, sandbox, extension, reviewer] = await Promise.all([
    stateReport(agentDir),
    sandboxDoctor(),
    piRegistration(agentDir, io.cwd, root, pkg.name ?? "pi-auto-mode"),
    reviewerReport(agentDir, loaded.ok ? loaded.config.reviewer.classifier : undefined),
  ]);
  const pi = findPi();
  const supported = pkg.peerDependencies?.[PI_PACKAGE] ?? "*";
  const trust = installTrust(root, { workspace: realOr(io.cwd), tmpRoot: realOr(tmpRoot) }, io.env);
  const install: DoctorReport["install"] = {
    root: trust.root,
    trust: trust.kind === "trusted" ? "trusted" : trust.optedIn ? "development copy" : "not trusted",
    line: installLine(trust),
  };
  const facts: ReportFacts = {
    node: { version: process.versions.node, required: pkg.engines?.node ?? "" },
    pi: pi
      ? { status: "installed", version: pi.version, path: pi.path, supported, compatible: satisfiesMinorRange(pi.version, supported) }
      : { status: "not installed", version: null, path: null, supported, compatible: null },
    extension,
    agentDir: { path: agentDir, source: io.env.PI_CODING_AGENT_DIR ? "PI_CODING_AGENT_DIR" : "default" },
    config,
    state,
    tmpRoot,
    tmpRootCheck,
    network: loaded.ok ? { spec: loaded.config.network, origins: loaded.config.networkOrigins, ...(await networkDataFault()) } : null,
    backend: { name: sandbox.name, why: sandbox.why },
    sandbox: { probe: sandbox.probe, missing: sandbox.missing, facts: sandbox.facts },
    machine: machineFacts(),
    reviewer,
    install,
  };
  const problems = doctorProblems(facts);
  return { ok: !problems.some((p) => p.level === "problem"), problems, ...facts };
}

/** Whether a session could use the temp root now: it makes its folder there, and removes it again. */
function checkTmpRoot(configured: string | undefined): NonNullable<DoctorReport["tmpRootCheck"]> {
  const temp = new TempSession();
  try {
    const c = temp.folder(configured);
    if (!c.ok) return { status: "refused", message: c.reason };
    return c.note ? { status: "replaced", message: c.note } : { status: "ok", message: `${c.root} is a private folder of yours` };
  } finally {
    temp.close();
  }
}

/**
 * The global state through the same store the gate uses: a state file that is not a regular file
 * (a FIFO, a symlink) is a fault here too, reported, never opened in a way that could block.
 */
async function stateReport(agentDir: string): Promise<DoctorReport["state"]> {
  const { processGlobalState } = await import("../state/global.ts");
  const store = processGlobalState(agentDir);
  const r = await store.read();
  switch (r.kind) {
    case "missing":
      return { status: "missing", path: store.location, revision: null, message: "nothing stored yet: auto mode is on, no reviewer" };
    case "ok":
      return {
        status: "ok",
        path: store.location,
        revision: r.snapshot.revision,
        message: `revision ${r.snapshot.revision}, auto mode ${r.snapshot.enabled ? "on" : "off"}`,
      };
    case "fault":
      return {
        status: "fault",
        path: store.location,
        revision: null,
        message: `${r.fault.detail}; calls that need review or the sandbox are denied until /perm-repair, /perm-enabled or /perm-auto-model rewrites it`,
      };
  }
}

/** The shipped network data's fault, if its check fails (the loader then gives no network). */
async function networkDataFault(): Promise<{ dataFault?: string }> {
  const { networkData } = await import("../policy/network/data.ts");
  const { networkListProblem } = await import("../policy/network/entries.ts");
  try {
    const d = networkData().defaults;
    const problem = networkListProblem(d.allow) ?? networkListProblem(d.deny);
    return problem ? { dataFault: `a default entry is invalid: ${problem}` } : {};
  } catch (e) {
    return { dataFault: (e as Error).message };
  }
}

/** The network lines of doctor's report: the allow list and its source, what the project removed, the denies, unlisted destinations. */
export function networkRows(spec: NetworkSpec, origins: NetworkOrigins): string[] {
  const from = (o: string) => (o === "default" ? "built-in defaults" : o);
  const allowFrom = [...new Set(origins.allow.map(from))].join(", ");
  return [
    spec.allow.length === 0 ? "allow: none (no network in the sandbox)" : `allow (${allowFrom}): ${spec.allow.join(", ")}`,
    ...(origins.removed.length > 0 ? [`removed by the project: ${origins.removed.join(", ")}`] : []),
    spec.deny.length === 0 ? "deny: none" : `deny: ${spec.deny.map((d, i) => `${d} (${from(origins.deny[i] ?? "user")})`).join(", ")}`,
    spec.reviewUnlisted
      ? `unlisted destinations: asked of the reviewer, one connection at a time (reviewUnlisted, ${from(origins.reviewUnlisted)})`
      : `unlisted destinations: refused${origins.reviewUnlisted === "project" ? " (the project turned reviewUnlisted off)" : ""}`,
  ];
}

function human(r: DoctorReport): string {
  const pi =
    r.pi.status === "installed"
      ? `${r.pi.version} at ${r.pi.path}${r.pi.compatible ? "" : ` (not supported: this package needs ${r.pi.supported})`}`
      : `not installed (this package needs ${PI_PACKAGE} ${r.pi.supported})`;
  const rows: Array<[string, string]> = [
    ["node", `${r.node.version} (needs ${r.node.required})`],
    ["pi", pi],
    ["in pi", r.extension.message],
    ["agent dir", `${r.agentDir.path} (${r.agentDir.source === "default" ? "default; set PI_CODING_AGENT_DIR to change it" : "from PI_CODING_AGENT_DIR"})`],
    ["config", `${r.config.status}: ${r.config.status === "fault" ? `${r.config.path}: ${r.config.message}` : r.config.message}`],
    ["", `user file ${r.config.userPath}`],
    ["", `project file ${r.config.projectPath}`],
    ["state", `${r.state.status}: ${r.state.message}`],
    ["", r.state.path],
    ["tmp root", `${r.tmpRoot} (each session makes a private folder in it)`],
    ...(r.tmpRootCheck && r.tmpRootCheck.status !== "ok" ? [["", `${r.tmpRootCheck.status}: ${r.tmpRootCheck.message}`] as [string, string]] : []),
    ...(r.network ? networkRows(r.network.spec, r.network.origins).map((line, i): [string, string] => [i === 0 ? "network" : "", line]) : []),
    ["backend", r.backend.why],
    ...r.sandbox.facts.map((f): [string, string] => ["", f]),
    ...(r.sandbox.probe
      ? [["probe", r.sandbox.probe.ok ? `ok in ${r.sandbox.probe.ms} ms (${r.sandbox.probe.driver})` : `failed: ${r.sandbox.probe.reason}`] as [string, string]]
      : []),
    ...r.sandbox.missing.map((m): [string, string] => ["missing", m]),
    ["reviewer", r.reviewer.why],
    ["install", r.install.line],
  ];
  const indent = (text: string) => text.replace(/\n/g, "\n       ");
  const problems = r.problems.map((p) => `${p.level === "problem" ? "PROBLEM" : "NOTE"}: ${p.what}.\n  fix: ${indent(p.fix)}`);
  return rows.map(([k, v]) => `${k.padEnd(10)} ${v}`).join("\n") + "\n" + (problems.length > 0 ? `\n${problems.join("\n")}\n` : "");
}

export async function runDoctor(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs("doctor", argv, SPEC);
  if (args.help) {
    io.out(DOCTOR_HELP);
    return EXIT.ok;
  }
  const report = await doctorReport(io);
  io.out(args.booleans.has("json") ? JSON.stringify(report) + "\n" : human(report));
  return report.ok ? EXIT.ok : EXIT.findings;
}
