// `pi-auto-mode doctor`: what the gate would run with on this machine, and whether it is healthy.

import { existsSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Backend } from "../policy/types.ts";
import { parseArgs, type CommandSpec } from "./args.ts";
import { defaultTmpRootPath } from "../state/locations.ts";
import { installLine, installTrust, WRITABLE_COPY_ENV } from "../policy/install-trust.ts";
import { EXIT, type Io } from "./io.ts";
import { sandboxDoctor, type SandboxDoctor } from "./sandbox.ts";
import type { NetworkOrigins } from "../policy/network/entries.ts";
import type { NetworkSpec } from "../policy/network/types.ts";

export const DOCTOR_HELP = `Usage:
  pi-auto-mode doctor [--json]

Report the Node and Pi versions, Pi's agent dir ($PI_CODING_AGENT_DIR or ~/.pi/agent),
the health of the auto-mode configuration (user file in the agent dir, project file
.pi/auto-mode.json under the current directory), the health of auto mode's global state
(auto-mode/ in the agent dir), the temporary writable root, the backend that runs shell
commands and why, where sandboxed commands may connect (sandbox.network: the allow and
deny entries and where each came from), and whether a reviewer model is configured.

Options:
  --json       print one JSON object on the last line
  -h, --help   show this help

Exit status: 0 when healthy, 1 when the configuration is invalid (the gate then denies
every call until it is fixed), the global state is damaged (calls that need review or
the sandbox are denied until /perm-repair), or the OS sandbox is unavailable (then every
shell command is denied; the probe's reason and what is missing are printed).
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

export interface DoctorReport {
  readonly ok: boolean;
  readonly node: { readonly version: string; readonly required: string };
  readonly pi: {
    readonly status: "installed" | "not installed";
    readonly version: string | null;
    readonly path: string | null;
    readonly supported: string;
    readonly compatible: boolean | null;
  };
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
  /** The effective sandbox.network settings and where each part came from; null when the configuration is at fault. */
  readonly network: { readonly spec: NetworkSpec; readonly origins: NetworkOrigins } | null;
  readonly backend: { readonly name: Backend; readonly why: string };
  /** The capability probe behind the backend, what is missing, and the sandbox's limits. */
  readonly sandbox: Omit<SandboxDoctor, "name" | "why">;
  readonly reviewer: { readonly configured: boolean; readonly why: string };
  /** This copy of auto mode: where it lives, and whether the agent could have changed it (install-trust.ts). */
  readonly install: { readonly root: string; readonly trust: "trusted" | "development copy" | "not trusted"; readonly line: string };
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
  const state = await stateReport(agentDir);
  const pi = findPi();
  const supported = pkg.peerDependencies?.[PI_PACKAGE] ?? "*";
  const sandbox = await sandboxDoctor();
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  const trust = installTrust(
    real(fileURLToPath(new URL("../..", import.meta.url)).replace(/\/+$/, "")),
    { workspace: real(io.cwd), tmpRoot: real(tmpRoot) },
    io.env,
  );
  const install: DoctorReport["install"] = {
    root: trust.root,
    trust: trust.kind === "trusted" ? "trusted" : trust.optedIn ? "development copy" : "not trusted",
    line: installLine(trust),
  };
  return {
    ok: config.status !== "fault" && sandbox.name !== "unavailable" && install.trust !== "not trusted",
    node: { version: process.versions.node, required: pkg.engines?.node ?? "" },
    pi: pi
      ? { status: "installed", version: pi.version, path: pi.path, supported, compatible: satisfiesMinorRange(pi.version, supported) }
      : { status: "not installed", version: null, path: null, supported, compatible: null },
    agentDir: { path: agentDir, source: io.env.PI_CODING_AGENT_DIR ? "PI_CODING_AGENT_DIR" : "default" },
    config,
    state,
    tmpRoot,
    network: loaded.ok ? { spec: loaded.config.network, origins: loaded.config.networkOrigins } : null,
    backend: { name: sandbox.name, why: sandbox.why },
    sandbox: { probe: sandbox.probe, missing: sandbox.missing, facts: sandbox.facts },
    reviewer: await (await import("./review.ts")).reviewerStatus(agentDir),
    install,
  };
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
    ["agent dir", `${r.agentDir.path} (${r.agentDir.source === "default" ? "default; set PI_CODING_AGENT_DIR to change it" : "from PI_CODING_AGENT_DIR"})`],
    ["config", `${r.config.status}: ${r.config.status === "fault" ? `${r.config.path}: ${r.config.message}` : r.config.message}`],
    ["", `user file ${r.config.userPath}`],
    ["", `project file ${r.config.projectPath}`],
    ["state", `${r.state.status}: ${r.state.message}`],
    ["", r.state.path],
    ["tmp root", r.tmpRoot],
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
  const problems = [
    ...(r.config.status === "fault" ? ["PROBLEM: the configuration is invalid; auto mode denies every call until it is fixed."] : []),
    ...(r.state.status === "fault"
      ? ["PROBLEM: auto mode's global state is damaged; calls that need review or the sandbox are denied until it is repaired."]
      : []),
    ...(r.backend.name === "unavailable" ? ["PROBLEM: the OS sandbox is unavailable; auto mode denies every shell command until it is fixed."] : []),
    ...(r.install.trust === "not trusted"
      ? [
          `PROBLEM: this copy of auto mode is inside a folder the agent can write here, so in this folder it lets only plain reads run. Install it elsewhere, or start Pi with ${WRITABLE_COPY_ENV}=1 to develop it.`,
        ]
      : []),
  ];
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
