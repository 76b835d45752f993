// /perm-audit [--days N] [--top N] [--min-count N] [--scope current|all]: the audit report
// (src/audit/report.ts) in the session, as a custom entry (pi.appendEntry): Pi keeps it in the
// session file and draws it with the renderer below, and never puts it in the model's context
// (docs/extensions.md: custom entries do not participate in LLM context; custom messages do).
// The store is read read-only, like `pi-auto-mode audit`.

import { join } from "node:path";
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { AuditRecorder } from "../audit/recorder.ts";
import type { ReportOptions } from "../audit/report.ts";
import { USER_CONFIG_FILE } from "../policy/config/files.ts";

const USAGE = "[--days N] [--top N] [--min-count N] [--scope current|all]";

export const AUDIT_ENTRY_TYPE = "pi-auto-mode/audit-report";

export interface AuditEntry {
  readonly lines: readonly string[];
  readonly at: number;
}

export interface AuditCommandDeps {
  readonly agentDir: () => string;
  /** The current session's working directory: the project an observed broadcast belongs to. */
  readonly cwd: () => string;
  /** Writes what the recorder gathered, so the report includes this session's latest decisions. */
  readonly flush?: () => void;
  /**
   * The session's audit recorder (made on first use), where observed broadcasts go: the store has
   * one owner, and its one warning reaches the session like the gate's own.
   */
  readonly recorder?: () => Promise<AuditRecorder | undefined>;
  readonly now?: () => number;
}

function say(ctx: ExtensionCommandContext, text: string, level: "info" | "warning" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stdout.write(`${text}\n`);
}

/**
 * /perm-audit with its entry renderer, and the listener for @gotgenes/pi-permission-system's
 * `permissions:decision` broadcasts, handed to the session's audit recorder (recorder.ts
 * permissionDecision), which reads them at its flush (src/audit/permission-system.ts): a Pi
 * without that package never pays for it.
 */
export function registerAudit(pi: ExtensionAPI, deps: AuditCommandDeps): void {
  pi.events.on("permissions:decision", (raw) => {
    if (typeof raw !== "object" || raw === null || !deps.recorder) return;
    const at = (deps.now ?? Date.now)();
    const cwd = deps.cwd();
    // Its fields as broadcast: the sender may reuse its object once the recorder is loaded.
    const { surface, value, result, resolution } = raw as Record<string, unknown>;
    // Observing never affects the decision that was broadcast, nor this extension.
    void deps
      .recorder()
      .then((rec) => rec?.permissionDecision({ surface, value, result, resolution }, cwd, at))
      .catch(() => {});
  });

  pi.registerEntryRenderer<AuditEntry>(AUDIT_ENTRY_TYPE, (entry) => {
    const lines = entry.data?.lines ?? [];
    return { render: (width: number) => lines.map((l) => (l.length > width ? `${l.slice(0, Math.max(0, width - 1))}…` : l)), invalidate() {} };
  });

  pi.registerCommand("perm-audit", {
    description: `Auto mode's audit: decisions, reviewer cost, friction and rule suggestions: /perm-audit ${USAGE}`,
    handler: async (args, ctx) => {
      // Loaded when the command runs: the report and the shell parser are not Pi's start-up's to pay.
      const [{ auditDir, openAuditReader }, { buildReport, parseReportWords, ReportOptionError, renderReport, windowStart }] = await Promise.all([
        import("../audit/query.ts"),
        import("../audit/report.ts"),
      ]);
      let options: ReportOptions;
      try {
        options = parseReportWords(args.trim() === "" ? [] : args.trim().split(/\s+/));
      } catch (e) {
        if (!(e instanceof ReportOptionError)) throw e;
        say(ctx, `/perm-audit: ${e.message}. Usage: /perm-audit ${USAGE}`, "error");
        return;
      }
      try {
        deps.flush?.();
      } catch {
        // The report reads what is stored; a failed flush is the recorder's to report.
      }
      const agentDir = deps.agentDir();
      const read = openAuditReader(auditDir(agentDir));
      if (read.kind === "missing") {
        say(ctx, "No audit data yet: auto mode records its decisions once it has gated a tool call (and the audit is enabled).");
        return;
      }
      if (read.kind === "error") {
        say(ctx, `The audit store ${read.path} cannot be read: ${read.message}. It was left as it is.`, "error");
        return;
      }
      let text: string;
      try {
        const now = (deps.now ?? Date.now)();
        const since = windowStart(options.days, now);
        const rows = read.reader.rows(since);
        const report = buildReport(rows, options, { now, currentProject: read.reader.pseudonym(ctx.cwd), conditions: read.reader.conditionRows(since) });
        text = renderReport(report, { userConfigPath: join(agentDir, USER_CONFIG_FILE) });
      } catch (e) {
        say(ctx, `The audit store ${read.path} cannot be read: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}. It was left as it is.`, "error");
        return;
      } finally {
        read.reader.close();
      }
      const lines = text.trimEnd().split("\n");
      // A custom entry: in the session for the user, never in the model's context.
      pi.appendEntry<AuditEntry>(AUDIT_ENTRY_TYPE, { lines, at: Date.now() });
      if (!ctx.hasUI) process.stdout.write(text);
    },
  });
}
