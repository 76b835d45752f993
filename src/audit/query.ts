// Reading the audit store without changing it: for the report (/perm-audit and `pi-auto-mode audit`).
//
// AuditStore.open() creates, migrates and prunes: right for the recorder, wrong for a report, which
// must leave a database it cannot read exactly as it found it (it may be the user's only record).
// This opens the file read-only, reads schema 1, 2 or 3 as they are (a v1 row reads as pre-migration
// data: no project, surface unknown, `since` 1; a v1 or v2 store has no classifier conditions' counts,
// which schema 3 added), and computes the current project's pseudonym
// with the store's key, read and never written. Pi-free.

import { createHmac } from "node:crypto";
import { closeSync, existsSync, fstatSync, openSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { DatabaseSync as DatabaseSyncType } from "node:sqlite";
import { type ConditionRow, DATABASE_FILE, type DailyRow, KEY_FILE, SCHEMA_VERSION } from "./store.ts";
import { bashTemplate, isPlainName, STAR } from "./templates.ts";

/**
 * A row as today's redaction would have stored it. A database an earlier version wrote (any schema)
 * kept what its rules let through (`echo hunter2`, a token as a tool name); the report and its
 * suggestions show nothing today's rules hide. A template today's rules made reads the same
 * (bashTemplate of a template is itself, but for a starred assignment's name or a heredoc, which
 * read as less), so current rows are unchanged.
 */
export function redactedNow(r: DailyRow): DailyRow {
  const name = (s: unknown): string => (typeof s === "string" && isPlainName(s) ? s : "other");
  const t = typeof r.template === "string" ? r.template : STAR;
  const template = t === "" || t === STAR ? t : r.tool === "bash" ? bashTemplate(t) : isPlainName(t) ? t : STAR;
  return { ...r, tool: name(r.tool), route: name(r.route), reason: name(r.reason), template };
}

/** The audit's folder in Pi's agent dir, where the recorder writes (store.ts auditDir). */
export { auditDir } from "./store.ts";

export type AuditRead =
  | { readonly kind: "missing"; readonly path: string }
  | { readonly kind: "error"; readonly path: string; readonly message: string }
  | { readonly kind: "ok"; readonly path: string; readonly reader: AuditReader };

export interface AuditReader {
  /** The rows from `sinceDay` (YYYY-MM-DD) on, oldest first. Throws on a read error. */
  rows(sinceDay: string): DailyRow[];
  /** The classifier conditions' rows from `sinceDay` on (none before schema 3). Throws on a read error. */
  conditionRows(sinceDay: string): ConditionRow[];
  /** A project location as the store keeps it (its HMAC); undefined without a usable key. */
  pseudonym(location: string): string | undefined;
  close(): void;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message.split("\n")[0]!.slice(0, 200) : "unknown error";
}

/** The same HMAC as AuditStore.pseudonym. */
export function pseudonymWith(key: Buffer, location: string): string {
  return createHmac("sha256", key).update(location).digest("hex").slice(0, 32);
}

function readKey(dir: string): Buffer | undefined {
  const path = join(dir, KEY_FILE);
  if (!existsSync(path)) return undefined;
  const fd = openSync(path, "r");
  try {
    if ((fstatSync(fd).mode & 0o077) !== 0) return undefined;
    const key = readFileSync(fd);
    return key.length === 32 ? key : undefined;
  } finally {
    closeSync(fd);
  }
}

const V2_SELECT = `SELECT day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens AS reviewerTokens, review_ms AS reviewMs, since
  FROM daily WHERE day >= ? ORDER BY day, tool, template, outcome`;
const CONDITION_SELECT = `SELECT day, project, classifier, condition, satisfied_at AS satisfiedAt, rejected_at AS rejectedAt, band, bucket, reviews, decided, cleared, since
  FROM classifier_daily WHERE day >= ? ORDER BY day, classifier, condition, bucket`;
const V1_SELECT = `SELECT day, '' AS project, tool, template, 'unknown' AS surface, route, reason, outcome, count, reviewer_tokens AS reviewerTokens, review_ms AS reviewMs, 1 AS since
  FROM daily WHERE day >= ? ORDER BY day, tool, template, outcome`;

/** Opens the audit in `dir` read-only. Never creates, migrates, prunes or repairs anything. */
export function openAuditReader(dir: string): AuditRead {
  const path = join(dir, DATABASE_FILE);
  if (!existsSync(path)) return { kind: "missing", path };
  let db: DatabaseSyncType | undefined;
  try {
    const { DatabaseSync } = createRequire(import.meta.url)("node:sqlite") as typeof import("node:sqlite");
    // Without a write-ahead log beside it every row is in the file itself: opened immutable, SQLite
    // makes no -wal or -shm file beside it either. With one (a session is writing), read through it.
    const url = pathToFileURL(path);
    if (!existsSync(`${path}-wal`)) url.searchParams.set("immutable", "1");
    db = new DatabaseSync(url, { readOnly: true });
    const version = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
    if (version === 0 && tables.length === 0) {
      db.close();
      return { kind: "missing", path };
    }
    // Schemas 1 and 2 as they were written, and this version's own (read here, not at load: store.ts may still be loading).
    if (version !== 1 && version !== 2 && version !== SCHEMA_VERSION)
      throw new Error(`the audit database has schema ${version}; this version reads 1 to ${SCHEMA_VERSION}`);
    if (!tables.some((t) => t.name === "daily")) throw new Error("the audit database has no daily table");
    if (version >= 3 && !tables.some((t) => t.name === "classifier_daily")) throw new Error("the audit database has no classifier_daily table");
    const select = db.prepare(version === 1 ? V1_SELECT : V2_SELECT);
    const conditions = version >= 3 ? db.prepare(CONDITION_SELECT) : undefined;
    // Read one row now: a truncated or garbage file fails here rather than in the middle of a report.
    select.all("9999-99-99");
    conditions?.all("9999-99-99");
    const key = readKey(dir);
    const open = db;
    return {
      kind: "ok",
      path,
      reader: {
        rows: (sinceDay) => (select.all(sinceDay) as unknown as DailyRow[]).map(redactedNow),
        conditionRows: (sinceDay) => (conditions ? (conditions.all(sinceDay) as unknown as ConditionRow[]) : []),
        pseudonym: (location) => (key ? pseudonymWith(key, location) : undefined),
        close: () => open.close(),
      },
    };
  } catch (e) {
    try {
      db?.close();
    } catch {
      // The first failure is the one reported.
    }
    return { kind: "error", path, message: describe(e) };
  }
}
