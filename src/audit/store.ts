// The local audit: daily counts of what the gate decided, on the user's disk, in node:sqlite.
//
// Two promises shape it. It holds nothing a template (templates.ts) would not show: aggregates by
// day and shape, with project locations only as an HMAC under a key that never leaves its file.
// And it never changes a decision: every failure (a directory it cannot make, a locked, truncated
// or foreign database, a full disk) turns the store off for the process with one warning, and a
// database it cannot read is left exactly as it was, since it may be the user's only record.

import { createHmac, randomBytes } from "node:crypto";
import { accessSync, chmodSync, closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync as DatabaseSyncType } from "node:sqlite";
import { createRequire } from "node:module";
import { SURFACE_CLASSES, type SurfaceClass } from "./templates.ts";
import {
  DEFAULT_AUDIT_RETENTION_DAYS as DEFAULT_RETENTION_DAYS,
  MAX_AUDIT_RETENTION_DAYS as MAX_RETENTION_DAYS,
  MIN_AUDIT_RETENTION_DAYS as MIN_RETENTION_DAYS,
} from "../policy/config/audit-settings.ts";
import { STATE_DIR_NAME } from "../state/locations.ts";

export { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, MIN_RETENTION_DAYS };
export const SCHEMA_VERSION = 2;
export const DATABASE_FILE = "audit.sqlite";
export const KEY_FILE = "audit.key";
/** The audit's folder under auto mode's state folder in Pi's agent dir. */
export const AUDIT_DIR_NAME = "audit";
/** A bound on the database's size (64 MiB of 4 KiB pages): daily counts never need it; a runaway never fills the disk. */
export const DEFAULT_MAX_PAGES = 16_384;

export function auditDir(agentDir: string): string {
  return join(agentDir, STATE_DIR_NAME, AUDIT_DIR_NAME);
}
const KEY_BYTES = 32;
// Writes happen off the decision path; a lock held longer than this is a failure, not a wait.
const BUSY_TIMEOUT_MS = 250;
const FLUSH_DELAY_MS = 1000;

export const OUTCOMES = ["ran", "denied", "held", "approved", "break-glass"] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface AuditEvent {
  /** When the decision was made (ms since the epoch); the store keeps only its UTC day. */
  readonly at: number;
  readonly tool: string;
  /** A template from templates.ts, never a raw command or path. */
  readonly template: string;
  readonly surface: SurfaceClass;
  readonly route: string;
  readonly reason: string;
  readonly outcome: Outcome;
  readonly reviewerTokens?: number;
  readonly reviewMs?: number;
  /** The project's location: stored only as its HMAC. */
  readonly project?: string;
}

export interface DailyRow {
  readonly day: string;
  readonly project: string;
  readonly tool: string;
  readonly template: string;
  readonly surface: SurfaceClass;
  readonly route: string;
  readonly reason: string;
  readonly outcome: Outcome;
  readonly count: number;
  readonly reviewerTokens: number;
  readonly reviewMs: number;
  /** The schema version the row was first written under: rows from before a migration suggest no rules. */
  readonly since: number;
}

export interface AuditStoreOptions {
  /** Auto mode's audit folder (made 0700 if missing). */
  readonly dir: string;
  readonly retentionDays?: number;
  /** Called at most once per store: the reason it turned itself off. */
  readonly onWarning: (message: string) => void;
  readonly now?: () => number;
  /**
   * The most pages the database may grow to (PRAGMA max_page_count on this connection); past it a
   * write fails as SQLITE_FULL, which is what a full disk returns. Default DEFAULT_MAX_PAGES.
   */
  readonly maxPages?: number;
}

// Names, routes and reason codes come from the gate, but a tool name comes from the model: only a
// name that could be a tool's is kept, so no text of the call rides in through it.
const TOKEN = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$/;
const token = (s: string): string => (TOKEN.test(s) ? s : "other");
const count = (n: number | undefined): number => (typeof n === "number" && Number.isFinite(n) && n > 0 ? Math.round(n) : 0);
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const V2_TABLE = `CREATE TABLE daily (
  day TEXT NOT NULL,
  project TEXT NOT NULL,
  tool TEXT NOT NULL,
  template TEXT NOT NULL,
  surface TEXT NOT NULL,
  route TEXT NOT NULL,
  reason TEXT NOT NULL,
  outcome TEXT NOT NULL,
  count INTEGER NOT NULL,
  reviewer_tokens INTEGER NOT NULL,
  review_ms INTEGER NOT NULL,
  since INTEGER NOT NULL,
  PRIMARY KEY (day, project, tool, template, surface, route, reason, outcome, since)
) WITHOUT ROWID`;

/** The first schema, kept for its migration (and the test's fixture): no project, no surface. */
export const V1_SCHEMA = `CREATE TABLE daily (
  day TEXT NOT NULL,
  tool TEXT NOT NULL,
  template TEXT NOT NULL,
  route TEXT NOT NULL,
  reason TEXT NOT NULL,
  outcome TEXT NOT NULL,
  count INTEGER NOT NULL,
  reviewer_tokens INTEGER NOT NULL,
  review_ms INTEGER NOT NULL,
  PRIMARY KEY (day, tool, template, route, reason, outcome)
) WITHOUT ROWID`;

type Sqlite = typeof import("node:sqlite");
let sqliteModule: Sqlite | null | undefined;
/** node:sqlite loaded on first use: a Node without it turns the audit off instead of failing the extension's load. */
function sqlite(): Sqlite | null {
  if (sqliteModule === undefined) {
    try {
      sqliteModule = createRequire(import.meta.url)("node:sqlite") as Sqlite;
    } catch {
      sqliteModule = null;
    }
  }
  return sqliteModule;
}

function describe(e: unknown): string {
  // The message of a file system or SQLite error names the file, which is the user's own; nothing else.
  return e instanceof Error ? e.message.split("\n")[0]!.slice(0, 200) : "unknown error";
}

export class AuditStore {
  private db: DatabaseSyncType | undefined;
  private key: Buffer | undefined;
  private warned = false;
  private readonly pending = new Map<string, DailyRow>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onWarning: (message: string) => void;
  private readonly now: () => number;
  private readonly retentionDays: number;
  private readonly maxPages: number;
  readonly dir: string;

  private constructor(opts: AuditStoreOptions) {
    this.dir = opts.dir;
    this.onWarning = opts.onWarning;
    this.now = opts.now ?? Date.now;
    const r = opts.retentionDays ?? DEFAULT_RETENTION_DAYS;
    this.retentionDays = Number.isInteger(r) ? Math.min(MAX_RETENTION_DAYS, Math.max(MIN_RETENTION_DAYS, r)) : DEFAULT_RETENTION_DAYS;
    this.maxPages = Number.isInteger(opts.maxPages) && opts.maxPages! > 0 ? opts.maxPages! : DEFAULT_MAX_PAGES;
  }

  /** Opens (creating, migrating and pruning) the store; on any failure a disabled store and one warning. */
  static open(opts: AuditStoreOptions): AuditStore {
    const store = new AuditStore(opts);
    try {
      store.init();
    } catch (e) {
      store.disable(`could not open the audit store: ${describe(e)}`);
    }
    return store;
  }

  get enabled(): boolean {
    return this.db !== undefined;
  }

  get databasePath(): string {
    return join(this.dir, DATABASE_FILE);
  }

  /** An HMAC of a request id or a project location: stable for this key, meaningless without it. */
  pseudonym(value: string): string | undefined {
    if (!this.key) return undefined;
    return createHmac("sha256", this.key).update(value).digest("hex").slice(0, 32);
  }

  /** Counts one decision; written at the next flush(). Never throws. */
  record(e: AuditEvent): void {
    if (!this.db) return;
    try {
      const surface = (SURFACE_CLASSES as readonly string[]).includes(e.surface) ? e.surface : "unknown";
      const outcome = (OUTCOMES as readonly string[]).includes(e.outcome) ? e.outcome : undefined;
      if (!outcome) return;
      const row: DailyRow = {
        day: dayOf(e.at),
        project: e.project === undefined ? "" : (this.pseudonym(e.project) ?? ""),
        tool: token(e.tool),
        // The template is the caller's redaction; its length is bounded so a bad caller cannot fill the disk.
        template: typeof e.template === "string" ? e.template.slice(0, 512) : "*",
        surface,
        route: token(e.route),
        reason: token(e.reason),
        outcome,
        count: 1,
        reviewerTokens: count(e.reviewerTokens),
        reviewMs: count(e.reviewMs),
        since: SCHEMA_VERSION,
      };
      const k = JSON.stringify([row.day, row.project, row.tool, row.template, row.surface, row.route, row.reason, row.outcome]);
      const prev = this.pending.get(k);
      this.pending.set(
        k,
        prev ? { ...prev, count: prev.count + 1, reviewerTokens: prev.reviewerTokens + row.reviewerTokens, reviewMs: prev.reviewMs + row.reviewMs } : row,
      );
      // The write waits for a quiet moment: the decision that caused it must not pay for the disk.
      if (!this.timer) {
        this.timer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
        this.timer.unref();
      }
    } catch (err) {
      this.disable(`could not record an audit entry: ${describe(err)}`);
    }
  }

  /** Writes what record() gathered, in one transaction. Never throws. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const db = this.db;
    if (!db || this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending.clear();
    try {
      const upsert = db.prepare(
        `INSERT INTO daily (day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens, review_ms, since)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT DO UPDATE SET count = count + excluded.count, reviewer_tokens = reviewer_tokens + excluded.reviewer_tokens,
           review_ms = review_ms + excluded.review_ms`,
      );
      this.transaction(db, () => {
        for (const r of rows)
          upsert.run(r.day, r.project, r.tool, r.template, r.surface, r.route, r.reason, r.outcome, r.count, r.reviewerTokens, r.reviewMs, r.since);
      });
    } catch (e) {
      this.disable(`could not write the audit store: ${describe(e)}`);
    }
  }

  /** The stored rows from `sinceDay` (YYYY-MM-DD) on, oldest first; empty when disabled. */
  rows(sinceDay = "0000-00-00"): DailyRow[] {
    const db = this.db;
    if (!db) return [];
    try {
      this.flush();
      const out = db
        .prepare(
          `SELECT day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens AS reviewerTokens, review_ms AS reviewMs, since
           FROM daily WHERE day >= ? ORDER BY day, tool, template, outcome`,
        )
        .all(sinceDay);
      return out as unknown as DailyRow[];
    } catch (e) {
      this.disable(`could not read the audit store: ${describe(e)}`);
      return [];
    }
  }

  /** Drops the days older than the retention. Never throws. */
  prune(): void {
    const db = this.db;
    if (!db) return;
    try {
      db.prepare("DELETE FROM daily WHERE day < ?").run(this.cutoff());
    } catch (e) {
      this.disable(`could not prune the audit store: ${describe(e)}`);
    }
  }

  /** Drops one project's days older than `days` (a project's shorter retention). Never throws. */
  pruneProject(project: string, days: number): void {
    const db = this.db;
    const id = this.pseudonym(project);
    if (!db || id === undefined || !Number.isInteger(days) || days < MIN_RETENTION_DAYS || days >= this.retentionDays) return;
    try {
      this.flush();
      db.prepare("DELETE FROM daily WHERE project = ? AND day < ?").run(id, this.cutoff(days));
    } catch (e) {
      this.disable(`could not prune the audit store: ${describe(e)}`);
    }
  }

  close(): void {
    this.flush();
    const db = this.db;
    this.db = undefined;
    this.key = undefined;
    try {
      db?.close();
    } catch {
      // Closing is the last thing the store does: nothing is left to protect.
    }
  }

  private cutoff(days = this.retentionDays): string {
    return dayOf(this.now() - (days - 1) * 86_400_000);
  }

  private disable(message: string): void {
    const db = this.db;
    this.db = undefined;
    this.key = undefined;
    this.pending.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    try {
      db?.close();
    } catch {
      // Already failing: the warning below says so.
    }
    if (this.warned) return;
    this.warned = true;
    try {
      this.onWarning(`audit off for this session: ${message}`);
    } catch {
      // A warning sink that throws must not reach the decision either.
    }
  }

  private transaction(db: DatabaseSyncType, body: () => void): void {
    db.exec("BEGIN IMMEDIATE");
    try {
      body();
      db.exec("COMMIT");
    } catch (e) {
      try {
        db.exec("ROLLBACK");
      } catch {
        // The original failure is the one to report.
      }
      throw e;
    }
  }

  private init(): void {
    const mod = sqlite();
    if (!mod) throw new Error("node:sqlite is not available in this Node");
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // A folder made earlier with a wider mode is narrowed: the key below must not be readable through it.
    if ((statSync(this.dir).mode & 0o077) !== 0) chmodSync(this.dir, 0o700);
    const dbPath = this.databasePath;
    const hadDatabase = existsSync(dbPath);
    this.key = this.loadKey(hadDatabase);
    if (!hadDatabase) closeSync(openSync(dbPath, "wx", 0o600));
    else if ((statSync(dbPath).mode & 0o077) !== 0) chmodSync(dbPath, 0o600);
    // A database or folder it may not write is not opened: SQLite would still add its WAL and SHM files beside it.
    if (hadDatabase) {
      try {
        accessSync(dbPath, constants.R_OK | constants.W_OK);
        accessSync(this.dir, constants.W_OK);
      } catch (e) {
        throw new Error(`the audit database is read-only (${describe(e)})`);
      }
    }
    const db = new mod.DatabaseSync(dbPath, { timeout: BUSY_TIMEOUT_MS });
    try {
      // Reading the schema first: a foreign or corrupt file fails here, before anything is written to it.
      const version = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
      db.prepare("SELECT count(*) FROM sqlite_master").get();
      if (version > SCHEMA_VERSION) throw new Error(`the audit database has schema ${version}, newer than this version's ${SCHEMA_VERSION}`);
      db.exec("PRAGMA journal_mode = WAL");
      db.exec(`PRAGMA max_page_count = ${this.maxPages}`);
      this.migrate(db, version);
      this.db = db;
      this.prune();
    } catch (e) {
      try {
        db.close();
      } catch {
        // Reported below.
      }
      throw e;
    }
  }

  private migrate(db: DatabaseSyncType, version: number): void {
    if (version === SCHEMA_VERSION) return;
    this.transaction(db, () => {
      if (version === 0) {
        const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
        // Schema 0 with tables is a file some other program made: not ours to change.
        if (tables.n > 0) throw new Error("the audit database holds tables this version did not create");
        db.exec(V2_TABLE);
      } else if (version === 1) {
        db.exec("ALTER TABLE daily RENAME TO daily_v1");
        db.exec(V2_TABLE);
        db.exec(
          `INSERT INTO daily (day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens, review_ms, since)
           SELECT day, '', tool, template, 'unknown', route, reason, outcome, count, reviewer_tokens, review_ms, 1 FROM daily_v1`,
        );
        db.exec("DROP TABLE daily_v1");
      } else {
        throw new Error(`unknown audit schema ${version}`);
      }
      db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    });
  }

  /** The owner-only key: made with the database, required once a database exists (a new key would orphan its pseudonyms). */
  private loadKey(hadDatabase: boolean): Buffer {
    const path = join(this.dir, KEY_FILE);
    if (!existsSync(path)) {
      if (hadDatabase) throw new Error("the audit key is missing while the database exists");
      const fd = openSync(path, "wx", 0o600);
      try {
        const key = randomBytes(KEY_BYTES);
        writeSync(fd, key);
        return key;
      } finally {
        closeSync(fd);
      }
    }
    const fd = openSync(path, "r");
    try {
      const st = fstatSync(fd);
      if ((st.mode & 0o077) !== 0) throw new Error("the audit key is readable by others");
      const key = readFileSync(fd);
      if (key.length !== KEY_BYTES) throw new Error("the audit key has the wrong length");
      return key;
    } finally {
      closeSync(fd);
    }
  }
}
