// `pi-auto-mode config`: the configuration the gate runs with here, each value with where it came
// from, or (--defaults) what applies without any file. It loads the files through the gate's own
// loader, so a file the gate would refuse is refused here with the same message.

import { homedir } from "node:os";
import { join } from "node:path";
import type { ExplainedConfig, Sourced } from "../policy/config/origins.ts";
import { directoryArg, parseArgs, type CommandSpec } from "./args.ts";
import { CliError, EXIT, type Io } from "./io.ts";

export const CONFIG_HELP = `Usage:
  pi-auto-mode config [--cwd DIR] [--json]
  pi-auto-mode config --defaults [--json]

Print the effective auto-mode configuration: the user file auto-mode.json in Pi's agent
dir ($PI_CODING_AGENT_DIR or ~/.pi/agent) layered with the project file
.pi/auto-mode.json of the working directory, each value marked with where it came from
(default, user or project). With --defaults, the values that apply when neither file
exists.

Options:
  --cwd DIR     the project whose .pi/auto-mode.json is layered (default: the current
                directory)
  --defaults    the built-in defaults only; no file is read
  --json        print one JSON object on the last line: {defaults, files, config}, where
                every value of config is {value, origin}; on a fault {fault: {path,
                message}}
  -h, --help    show this help

Exit status: 0; 1 when a file is invalid (the gate then denies every call until it is
fixed; the file and the problem are printed); 2 on bad input.
`;

const SPEC: CommandSpec = { flags: { cwd: "string", defaults: "boolean", json: "boolean" }, positionals: [], rest: false };

interface FileInfo {
  readonly path: string;
  readonly present: boolean;
}

export interface ConfigReport {
  readonly defaults: boolean;
  /** The two files, null with --defaults. */
  readonly files: { readonly user: FileInfo; readonly project: FileInfo } | null;
  readonly config: ExplainedConfig;
}

export async function runConfig(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs("config", argv, SPEC);
  if (args.help) {
    io.out(CONFIG_HELP);
    return EXIT.ok;
  }
  const defaultsOnly = args.booleans.has("defaults");
  const cwdFlag = args.strings.get("cwd");
  if (defaultsOnly && cwdFlag !== undefined) throw new CliError("config: --defaults reads no file, so --cwd has no meaning");
  const cwd = cwdFlag === undefined ? io.cwd : directoryArg("config", "--cwd", io.cwd, cwdFlag);
  const { EMPTY_CONFIG, loadPolicyConfig, PROJECT_CONFIG_FILE, USER_CONFIG_FILE } = await import("../policy/config/load.ts");
  const { explainConfig, readConfigFiles } = await import("../policy/config/origins.ts");
  const { agentDirFromEnv, defaultTmpRootPath } = await import("../state/locations.ts");
  const { BUDGET_DEFAULT } = await import("../review/budget.ts");
  const { DEFAULT_LIMITS } = await import("../review/engine.ts");
  const defaults = { tmpRoot: defaultTmpRootPath(), maxInputTokens: BUDGET_DEFAULT, deadlineMs: DEFAULT_LIMITS.deadlineMs };
  const json = args.booleans.has("json");
  let report: ConfigReport;
  if (defaultsOnly) report = { defaults: true, files: null, config: explainConfig(EMPTY_CONFIG, { user: undefined, project: undefined }, defaults) };
  else {
    const home = homedir();
    const loc = { agentDir: agentDirFromEnv(io.env, home), cwd, home };
    const loaded = loadPolicyConfig(loc);
    if (!loaded.ok) {
      if (json) io.out(JSON.stringify({ fault: { path: loaded.path, message: loaded.message } }) + "\n");
      else io.out(`configuration fault: ${loaded.path}: ${loaded.message}\nThe gate denies every call until the file is fixed.\n`);
      return EXIT.findings;
    }
    const files = readConfigFiles(loc);
    const userPath = join(loc.agentDir, USER_CONFIG_FILE);
    const projectPath = join(cwd, PROJECT_CONFIG_FILE);
    report = {
      defaults: false,
      files: { user: { path: userPath, present: files.user !== undefined }, project: { path: projectPath, present: files.project !== undefined } },
      config: explainConfig(loaded.config, files, defaults),
    };
  }
  io.out(json ? JSON.stringify(report) + "\n" : humanConfig(report));
  return EXIT.ok;
}

/** One line a value: key, origin, value; a list is one line an entry, or "(none)". */
export function humanConfig(r: ConfigReport): string {
  const rows: Array<[string, string, string]> = [];
  const one = (key: string, s: Sourced<unknown>) => rows.push([key, s.origin, typeof s.value === "string" ? s.value : JSON.stringify(s.value)]);
  const list = (key: string, items: readonly Sourced<unknown>[], show: (s: Sourced<unknown>) => string = (s) => String(s.value)) => {
    if (items.length === 0) rows.push([key, "", "(none)"]);
    items.forEach((s, i) => {
      rows.push([i === 0 ? key : "", s.origin, show(s)]);
    });
  };
  const c = r.config;
  one("tmpRoot", c.tmpRoot);
  one("review.maxInputTokens", c.review.maxInputTokens);
  one("review.deadlineMs", c.review.deadlineMs);
  one("undo.maxCommands", c.undo.maxCommands);
  one("undo.maxBytes", c.undo.maxBytes);
  one("breakGlass", c.breakGlass);
  one("audit.enabled", c.audit.enabled);
  one("audit.retentionDays", c.audit.retentionDays);
  list("protectedPaths", c.protectedPaths, (s) => {
    const p = s as (typeof c.protectedPaths)[number];
    return p.written === p.value ? p.value : `${p.value} (written ${JSON.stringify(p.written)})`;
  });
  list("rules.allow", c.rules.allow, (s) => JSON.stringify(s.value));
  list("rules.review", c.rules.review, (s) => JSON.stringify(s.value));
  list("rules.deny", c.rules.deny, (s) => JSON.stringify(s.value));
  list("sandbox.network.allow", c.sandbox.network.allow);
  if (c.sandbox.network.removed.length > 0)
    list(
      "sandbox.network.remove",
      c.sandbox.network.removed.map((value) => ({ value, origin: "project" as const })),
    );
  list("sandbox.network.deny", c.sandbox.network.deny);
  one("sandbox.network.reviewUnlisted", c.sandbox.network.reviewUnlisted);
  const keyWidth = Math.max(...rows.map(([k]) => k.length));
  const head = r.files
    ? [
        `user file     ${r.files.user.path}${r.files.user.present ? "" : " (none)"}`,
        `project file  ${r.files.project.path}${r.files.project.present ? "" : " (none)"}`,
      ]
    : ["built-in defaults (no file read)"];
  return (
    [
      ...head,
      "",
      ...rows.map(([k, o, v]) => `${k.padEnd(keyWidth)}  ${o.padEnd(7)}  ${v}`.trimEnd()),
      "",
      "Built in, whatever the files say: the hard denies, the protected names (.git, .pi, AGENTS.md, ...) and auto mode's own files.",
    ].join("\n") + "\n"
  );
}
