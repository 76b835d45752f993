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
import { isPlainName, SURFACE_CLASSES, type SurfaceClass } from "./templates.ts";
import {
  DEFAULT_AUDIT_RETENTION_DAYS as DEFAULT_RETENTION_DAYS,
  MAX_AUDIT_RETENTION_DAYS as MAX_RETENTION_DAYS,
  MIN_AUDIT_RETENTION_DAYS as MIN_RETENTION_DAYS,
} from "../policy/config/audit-settings.ts";
import { STATE_DIR_NAME } from "../state/locations.ts";

export { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, MIN_RETENTION_DAYS };
export const SCHEMA_VERSION = 3;
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

/** A condition's band as the classifier engine recorded it (review/types.ts ConditionRecord). */
export const CONDITION_BANDS = ["satisfied", "uncertain", "rejected", "missing"] as const;
export type ConditionBand = (typeof CONDITION_BANDS)[number];
/** Probabilities are kept in twentieths (bucket b is [b/20, (b+1)/20), 1.0 in the last); no answer is bucket -1. */
export const PROBABILITY_BUCKETS = 20;
export const NO_ANSWER_BUCKET = -1;

/** One condition of one classifier review: ids, numbers and a band, never the call or the answer's text. */
export interface ConditionEvent {
  readonly at: number;
  /** The classifier as provider/model: a model id, not a secret. */
  readonly classifier: string;
  readonly condition: string;
  /** The thresholds in effect: at or above `satisfiedAt` it holds, at or below `rejectedAt` it is violated. */
  readonly satisfiedAt: number;
  readonly rejectedAt: number;
  readonly band: ConditionBand;
  /** The probability answered; null when there was none (the band is then missing). */
  readonly probability: number | null;
  /** This condition decided the review (ClassifierJudgement.decidedBy). */
  readonly decided: boolean;
  /** Its rejection was cleared by the user's own request. */
  readonly cleared: boolean;
  readonly project?: string;
}

export interface ConditionRow {
  readonly day: string;
  readonly project: string;
  readonly classifier: string;
  readonly condition: string;
  readonly satisfiedAt: number;
  readonly rejectedAt: number;
  readonly band: ConditionBand;
  /** 0..19 (twentieths of the probability), or -1 for no answer. */
  readonly bucket: number;
  readonly reviews: number;
  readonly decided: number;
  readonly cleared: number;
  readonly since: number;
}

/** The bucket of a probability: twentieths, 1.0 in the last one; -1 for none or one outside [0, 1]. */
export function probabilityBucket(p: number | null): number {
  if (typeof p !== "number" || !Number.isFinite(p) || p < 0 || p > 1) return NO_ANSWER_BUCKET;
  // The nudge keeps a probability on a bucket's edge in it (0.15 * 20 is 2.9999999999999996).
  return Math.min(PROBABILITY_BUCKETS - 1, Math.floor(p * PROBABILITY_BUCKETS + 1e-9));
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

// Names, routes and reason codes come from the gate, but a tool name comes from the model and an
// observed extension's reason from that extension: only a plain name (templates.ts isPlainName, the
// bare words' rule) is kept, so no text of the call, token or host rides in through one.
const token = (s: string): string => (isPlainName(s) ? s : "other");
const count = (n: number | undefined): number => (typeof n === "number" && Number.isFinite(n) && n > 0 ? Math.round(n) : 0);
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
// A classifier is provider/model: a model id may carry a slash, an @ or a colon (llama.cpp, Cloudflare), nothing else.
const CLASSIFIER = /^[A-Za-z0-9_][A-Za-z0-9_.:@/-]{0,127}$/;
/** A threshold as stored: a number from 0 to 1 to four places, or undefined. */
const threshold = (n: unknown): number | undefined =>
  typeof n === "number" && Number.isFinite(n) && n >= 0 && n <= 1 ? Math.round(n * 10_000) / 10_000 : undefined;

/** The classifier conditions' daily counts (schema 3). */
const CONDITIONS_TABLE = `CREATE TABLE classifier_daily (
  day TEXT NOT NULL,
  project TEXT NOT NULL,
  classifier TEXT NOT NULL,
  condition TEXT NOT NULL,
  satisfied_at REAL NOT NULL,
  rejected_at REAL NOT NULL,
  band TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  reviews INTEGER NOT NULL,
  decided INTEGER NOT NULL,
  cleared INTEGER NOT NULL,
  since INTEGER NOT NULL,
  PRIMARY KEY (day, project, classifier, condition, satisfied_at, rejected_at, band, bucket, since)
) WITHOUT ROWID`;

/** The second schema's table, kept for its migration (and the tests' fixture); schema 3 keeps it and adds classifier_daily. */
export const V2_SCHEMA = `CREATE TABLE daily (
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
const V2_TABLE = V2_SCHEMA;

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

const CONDITION_SELECT = `SELECT day, project, classifier, condition, satisfied_at AS satisfiedAt, rejected_at AS rejectedAt, band, bucket, reviews, decided, cleared, since
  FROM classifier_daily WHERE day >= ?`;

export class AuditStore {
  private db: DatabaseSyncType | undefined;
  private key: Buffer | undefined;
  private warned = false;
  private readonly pending = new Map<string, DailyRow>();
  private readonly pendingConditions = new Map<string, ConditionRow>();
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
      this.gather(this.pending, [row.day, row.project, row.tool, row.template, row.surface, row.route, row.reason, row.outcome], row, (prev) => ({
        ...prev,
        count: prev.count + 1,
        reviewerTokens: prev.reviewerTokens + row.reviewerTokens,
        reviewMs: prev.reviewMs + row.reviewMs,
      }));
    } catch (err) {
      this.disable(`could not record an audit entry: ${describe(err)}`);
    }
  }

  /** Counts one classifier condition of one review; written at the next flush(). Never throws. */
  recordCondition(e: ConditionEvent): void {
    if (!this.db) return;
    try {
      const satisfiedAt = threshold(e.satisfiedAt);
      const rejectedAt = threshold(e.rejectedAt);
      if (satisfiedAt === undefined || rejectedAt === undefined) return;
      if (!(CONDITION_BANDS as readonly string[]).includes(e.band)) return;
      const bucket = e.band === "missing" ? NO_ANSWER_BUCKET : probabilityBucket(e.probability);
      const row: ConditionRow = {
        day: dayOf(e.at),
        project: e.project === undefined ? "" : (this.pseudonym(e.project) ?? ""),
        classifier: typeof e.classifier === "string" && CLASSIFIER.test(e.classifier) ? e.classifier : "other",
        condition: token(e.condition),
        satisfiedAt,
        rejectedAt,
        // A band the probability cannot have (an answer without a probability) is missing.
        band: bucket === NO_ANSWER_BUCKET ? "missing" : e.band,
        bucket,
        reviews: 1,
        decided: e.decided === true ? 1 : 0,
        cleared: e.cleared === true ? 1 : 0,
        since: SCHEMA_VERSION,
      };
      this.gather(
        this.pendingConditions,
        [row.day, row.project, row.classifier, row.condition, row.satisfiedAt, row.rejectedAt, row.band, row.bucket],
        row,
        (prev) => ({ ...prev, reviews: prev.reviews + 1, decided: prev.decided + row.decided, cleared: prev.cleared + row.cleared }),
      );
    } catch (err) {
      this.disable(`could not record an audit entry: ${describe(err)}`);
    }
  }

  /** Adds `row` to what the next flush writes: a new row under `key`, or `add` of it to the row already there. */
  private gather<R>(pending: Map<string, R>, key: readonly unknown[], row: R, add: (prev: R) => R): void {
    const k = JSON.stringify(key);
    const prev = pending.get(k);
    pending.set(k, prev ? add(prev) : row);
    this.schedule();
  }

  // The write waits for a quiet moment: the decision that caused it must not pay for the disk.
  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
    this.timer.unref();
  }

  /** Writes what record() gathered, in one transaction. Never throws. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const db = this.db;
    if (!db || this.pending.size + this.pendingConditions.size === 0) return;
    const rows = [...this.pending.values()];
    const conditions = [...this.pendingConditions.values()];
    this.pending.clear();
    this.pendingConditions.clear();
    try {
      const upsert = db.prepare(
        `INSERT INTO daily (day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens, review_ms, since)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT DO UPDATE SET count = count + excluded.count, reviewer_tokens = reviewer_tokens + excluded.reviewer_tokens,
           review_ms = review_ms + excluded.review_ms`,
      );
      const upsertCondition = db.prepare(
        `INSERT INTO classifier_daily (day, project, classifier, condition, satisfied_at, rejected_at, band, bucket, reviews, decided, cleared, since)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, decided = decided + excluded.decided, cleared = cleared + excluded.cleared`,
      );
      this.transaction(db, () => {
        for (const r of rows)
          upsert.run(r.day, r.project, r.tool, r.template, r.surface, r.route, r.reason, r.outcome, r.count, r.reviewerTokens, r.reviewMs, r.since);
        for (const c of conditions)
          upsertCondition.run(
            c.day,
            c.project,
            c.classifier,
            c.condition,
            c.satisfiedAt,
            c.rejectedAt,
            c.band,
            c.bucket,
            c.reviews,
            c.decided,
            c.cleared,
            c.since,
          );
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

  /** The classifier conditions' rows from `sinceDay` on, oldest first; empty when disabled. */
  conditionRows(sinceDay = "0000-00-00"): ConditionRow[] {
    const db = this.db;
    if (!db) return [];
    try {
      this.flush();
      return db.prepare(`${CONDITION_SELECT} ORDER BY day, classifier, condition, bucket`).all(sinceDay) as unknown as ConditionRow[];
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
      const cutoff = this.cutoff();
      db.prepare("DELETE FROM daily WHERE day < ?").run(cutoff);
      db.prepare("DELETE FROM classifier_daily WHERE day < ?").run(cutoff);
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
      const cutoff = this.cutoff(days);
      db.prepare("DELETE FROM daily WHERE project = ? AND day < ?").run(id, cutoff);
      db.prepare("DELETE FROM classifier_daily WHERE project = ? AND day < ?").run(id, cutoff);
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
    this.pendingConditions.clear();
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

  /** Every step from `version` to the current schema in one transaction: all of them, or none. */
  private migrate(db: DatabaseSyncType, version: number): void {
    if (version === SCHEMA_VERSION) return;
    this.transaction(db, () => {
      if (version === 0) {
        const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
        // Schema 0 with tables is a file some other program made: not ours to change.
        if (tables.n > 0) throw new Error("the audit database holds tables this version did not create");
        db.exec(V2_TABLE);
        db.exec(CONDITIONS_TABLE);
      } else if (version === 1 || version === 2) {
        if (version === 1) this.migrateV1(db);
        // 2 -> 3: the classifier conditions' counts; the decisions' rows stay as they are (since 1 or 2).
        db.exec(CONDITIONS_TABLE);
      } else {
        throw new Error(`unknown audit schema ${version}`);
      }
      db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    });
  }

  /** 1 -> 2: a project and a surface for every row (none and unknown for the old ones). */
  private migrateV1(db: DatabaseSyncType): void {
    db.exec("ALTER TABLE daily RENAME TO daily_v1");
    db.exec(V2_TABLE);
    db.exec(
      `INSERT INTO daily (day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens, review_ms, since)
       SELECT day, '', tool, template, 'unknown', route, reason, outcome, count, reviewer_tokens, review_ms, 1 FROM daily_v1`,
    );
    db.exec("DROP TABLE daily_v1");
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
