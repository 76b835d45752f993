// `pi-auto-mode audit`: the audit report from the shell, the same report as /perm-audit. Reads the
// store the extension writes (auto mode's audit folder in Pi's agent dir) read-only: a missing
// store is "no audit data yet", a store it cannot read is an error and is left exactly as it was.

import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs, type CommandSpec } from "./args.ts";
import { CliError, EXIT, type Io } from "./io.ts";

export const AUDIT_HELP = `Usage:
  pi-auto-mode audit [--days N] [--top N] [--min-count N] [--scope current|all] [--json]

What auto mode decided in the last N days, from its local audit (daily counts, redacted:
command templates, path classes, no contents): decisions per day, what was denied and
reviewed most, the reviewer's cost, where friction concentrates, and rule suggestions:
allow rules for auto-mode.json made from shapes approved at least --min-count times (by
you or the reviewer) and never denied, held or failed in the window. A suggestion is
evidence of preference, not proof of safety: read it before copying it.

Options:
  --days N         the window, ending today (UTC): 1 to 3650 (default 7)
  --top N          rows per list and suggestions: 1 to 100 (default 10)
  --min-count N    approvals or reviewer allows a suggestion needs (default 3)
  --scope SCOPE    current: the project in the current directory (default); all: every project
  --json           print the report as one JSON object
  -h, --help       show this help

The store is $PI_CODING_AGENT_DIR/auto-mode/audit (default ~/.pi/agent/auto-mode/audit),
opened read-only. Exit status: 0 the report (or no audit data yet); 1 the store cannot be
read (it is left as it is); 2 bad input.
`;

const SPEC: CommandSpec = {
  flags: { days: "string", top: "string", "min-count": "string", scope: "string", json: "boolean" },
  positionals: [],
  rest: false,
};

export async function runAudit(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs("audit", argv, SPEC);
  if (args.help) {
    io.out(AUDIT_HELP);
    return EXIT.ok;
  }
  const { buildReport, renderReport, reportOptions, ReportOptionError } = await import("../audit/report.ts");
  let options: ReturnType<typeof reportOptions>;
  try {
    options = reportOptions({
      days: args.strings.get("days"),
      top: args.strings.get("top"),
      minCount: args.strings.get("min-count"),
      scope: args.strings.get("scope"),
    });
  } catch (e) {
    if (e instanceof ReportOptionError) throw new CliError(`audit: ${e.message}`);
    throw e;
  }
  const { agentDirFromEnv } = await import("../state/locations.ts");
  const { auditDir, openAuditReader } = await import("../audit/query.ts");
  const { USER_CONFIG_FILE } = await import("../policy/config/files.ts");
  const agentDir = agentDirFromEnv(io.env, homedir());
  const json = args.booleans.has("json");
  const read = openAuditReader(auditDir(agentDir));
  if (read.kind === "missing") {
    if (json) io.out(`${JSON.stringify({ version: 1, data: false, store: read.path })}\n`);
    else io.out(`no audit data yet (${read.path} does not exist)\n`);
    return EXIT.ok;
  }
  if (read.kind === "error") {
    io.err(`pi-auto-mode audit: the audit store ${read.path} cannot be read: ${read.message}. It was left as it is.\n`);
    return EXIT.findings;
  }
  try {
    const { windowStart } = await import("../audit/report.ts");
    const now = Date.now();
    let rows: ReturnType<typeof read.reader.rows>;
    let conditions: ReturnType<typeof read.reader.conditionRows>;
    try {
      rows = read.reader.rows(windowStart(options.days, now));
      conditions = read.reader.conditionRows(windowStart(options.days, now));
    } catch (e) {
      io.err(
        `pi-auto-mode audit: the audit store ${read.path} cannot be read: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}. It was left as it is.\n`,
      );
      return EXIT.findings;
    }
    const report = buildReport(rows, options, { now, currentProject: read.reader.pseudonym(realOr(io.cwd)), conditions });
    if (json) io.out(`${JSON.stringify({ ...report, data: true, store: read.path })}\n`);
    else io.out(renderReport(report, { userConfigPath: join(agentDir, USER_CONFIG_FILE) }));
    return EXIT.ok;
  } finally {
    read.reader.close();
  }
}

function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
