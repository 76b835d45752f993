// The audit report: what the gate decided in a window of days, what it cost, where the friction
// is, and which narrow rules would remove some of it. Built from the store's daily rows (one
// shape of data for /perm-audit and `pi-auto-mode audit --json`), then drawn as text. Pi-free.

import {
  CONDITION_BANDS,
  type ConditionBand,
  type ConditionRow,
  MAX_RETENTION_DAYS,
  OUTCOMES,
  PROBABILITY_BUCKETS,
  probabilityBucket,
  SCHEMA_VERSION,
  type DailyRow,
  type Outcome,
} from "./store.ts";
import { HELD_BACK_WORDS, PERMISSION_SYSTEM_ROUTE, SUGGESTION_CAVEAT, suggestRules, type HeldBack, type RuleSuggestion } from "./suggest.ts";
import { permissionSystemSuggestions, type PermissionSystemSuggestions } from "./permission-system.ts";

export const REPORT_VERSION = 1;
export const SCOPES = ["current", "all"] as const;
export type Scope = (typeof SCOPES)[number];

export interface ReportOptions {
  readonly days: number;
  readonly top: number;
  readonly minCount: number;
  readonly scope: Scope;
}

export const DEFAULT_REPORT_OPTIONS: ReportOptions = { days: 7, top: 10, minCount: 3, scope: "current" };
const MAX_TOP = 100;

export const REPORT_USAGE = "[--days N] [--top N] [--min-count N] [--scope current|all]";

/** A bad option value: the message says which and what it takes. */
export class ReportOptionError extends Error {}

function whole(flag: string, value: string, min: number, max: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new ReportOptionError(`--${flag} takes a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`);
  return n;
}

/** The options from their values as given (undefined: the default). Throws ReportOptionError. */
export function reportOptions(values: { days?: string; top?: string; minCount?: string; scope?: string }): ReportOptions {
  const d = DEFAULT_REPORT_OPTIONS;
  const scope = values.scope ?? d.scope;
  if (!(SCOPES as readonly string[]).includes(scope)) throw new ReportOptionError(`--scope takes current or all, not ${JSON.stringify(scope)}`);
  return {
    days: values.days === undefined ? d.days : whole("days", values.days, 1, MAX_RETENTION_DAYS),
    top: values.top === undefined ? d.top : whole("top", values.top, 1, MAX_TOP),
    minCount: values.minCount === undefined ? d.minCount : whole("min-count", values.minCount, 1, 1_000_000),
    scope: scope as Scope,
  };
}

const FLAG_NAMES: Readonly<Record<string, "days" | "top" | "minCount" | "scope">> = { days: "days", top: "top", "min-count": "minCount", scope: "scope" };

/** The options of a command line typed after /perm-audit: `--days 30`, `--scope=all`. Throws ReportOptionError. */
export function parseReportWords(words: readonly string[]): ReportOptions {
  const values: Record<string, string> = {};
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith("--")) throw new ReportOptionError(`unexpected argument ${JSON.stringify(w)}`);
    const eq = w.indexOf("=");
    const flag = eq === -1 ? w.slice(2) : w.slice(2, eq);
    const name = FLAG_NAMES[flag];
    if (!name) throw new ReportOptionError(`unknown option --${flag}`);
    if (name in values) throw new ReportOptionError(`--${flag} given twice`);
    const value = eq === -1 ? words[++i] : w.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith("--"))) throw new ReportOptionError(`--${flag} needs a value`);
    values[name] = value;
  }
  return reportOptions(values);
}

export interface Count {
  readonly key: string;
  readonly tool: string;
  readonly template: string;
  readonly reason: string;
  readonly count: number;
}

export interface FrictionEntry {
  readonly key: string;
  readonly decisions: number;
  readonly reviews: number;
  readonly denials: number;
  readonly held: number;
}

/** One classifier condition over the window: how its reviews fell, for tuning its thresholds. */
export interface ConditionSummary {
  /** provider/model */
  readonly classifier: string;
  readonly condition: string;
  readonly reviews: number;
  readonly bands: Readonly<Record<ConditionBand, number>>;
  /** Reviews per twentieth of the probability: index b counts [b/20, (b+1)/20), the last one includes 1. No answer: bands.missing. */
  readonly histogram: readonly number[];
  /** The thresholds in effect, most reviews first: at or above satisfiedAt it held, at or below rejectedAt it was violated. */
  readonly thresholds: ReadonlyArray<{ readonly satisfiedAt: number; readonly rejectedAt: number; readonly reviews: number }>;
  /** Reviews this condition decided (ClassifierJudgement.decidedBy). */
  readonly decided: number;
  /** Reviews in which its rejection was cleared by the user's own request. */
  readonly clearedByIntent: number;
}

export interface AuditReport {
  readonly version: typeof REPORT_VERSION;
  readonly window: { readonly days: number; readonly from: string; readonly to: string };
  readonly scope: Scope;
  readonly options: ReportOptions;
  readonly totals: { readonly decisions: number } & Readonly<Record<Outcome, number>>;
  readonly perDay: ReadonlyArray<{ readonly day: string; readonly total: number } & Readonly<Record<Outcome, number>>>;
  readonly deniedMost: readonly Count[];
  readonly reviewedMost: readonly Count[];
  readonly reviewer: { readonly reviews: number; readonly tokens: number; readonly ms: number; readonly tokensPerReview: number; readonly msPerReview: number };
  readonly friction: { readonly templates: readonly FrictionEntry[]; readonly surfaces: readonly FrictionEntry[] };
  readonly suggestions: readonly RuleSuggestion[];
  readonly heldBack: readonly HeldBack[];
  readonly fragment: unknown;
  readonly caveat: string;
  /** Decisions observed from @gotgenes/pi-permission-system, when any were. */
  readonly permissionSystem: PermissionSystemSuggestions | undefined;
  /** Rows from before the last migration in the window: counted, never suggested from. */
  readonly preMigrationRows: number;
  /** Each classifier condition judged in the window and scope, by classifier then condition. */
  readonly classifier: readonly ConditionSummary[];
}

const DAY_MS = 86_400_000;
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The first day of an N-day window ending today (UTC, as the store's days are). */
export function windowStart(days: number, now: number): string {
  return dayOf(now - (days - 1) * DAY_MS);
}

function emptyOutcomes(): Record<Outcome, number> {
  return Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
}

/** How a shape reads: a bash template after its tool, any other tool by its name (its template is ""). */
const shape = (tool: string, template: string): string => (template === "" ? tool : `${tool}: ${template}`);

function topCounts(rows: readonly DailyRow[], top: number): Count[] {
  const m = new Map<string, Count>();
  for (const r of rows) {
    const key = `${r.tool}\0${r.template}\0${r.reason}`;
    const prev = m.get(key);
    m.set(key, {
      key: `${shape(r.tool, r.template)} (${r.reason})`,
      tool: r.tool,
      template: r.template,
      reason: r.reason,
      count: (prev?.count ?? 0) + r.count,
    });
  }
  return [...m.values()].sort((a, b) => b.count - a.count || a.key.localeCompare(b.key)).slice(0, top);
}

function friction(rows: readonly DailyRow[], keyOf: (r: DailyRow) => string, top: number): FrictionEntry[] {
  const m = new Map<string, { decisions: number; reviews: number; denials: number; held: number }>();
  for (const r of rows) {
    const k = keyOf(r);
    const e = m.get(k) ?? { decisions: 0, reviews: 0, denials: 0, held: 0 };
    e.decisions += r.count;
    if (r.route === "review") e.reviews += r.count;
    if (r.outcome === "denied") e.denials += r.count;
    if (r.outcome === "held") e.held += r.count;
    m.set(k, e);
  }
  return [...m.entries()]
    .map(([key, e]) => ({ key, ...e }))
    .filter((e) => e.reviews + e.denials + e.held > 0)
    .sort((a, b) => b.reviews + b.denials + b.held - (a.reviews + a.denials + a.held) || a.key.localeCompare(b.key))
    .slice(0, top);
}

export interface ReportContext {
  readonly now: number;
  /** The current project's pseudonym (AuditStore.pseudonym of its location), for --scope current. */
  readonly currentProject: string | undefined;
  /** The classifier conditions' rows (AuditReader.conditionRows); none from a store before schema 3. */
  readonly conditions?: readonly ConditionRow[];
}

function conditionSummaries(rows: readonly ConditionRow[]): ConditionSummary[] {
  const m = new Map<
    string,
    {
      s: ConditionSummary & { bands: Record<ConditionBand, number>; histogram: number[] };
      t: Map<string, { satisfiedAt: number; rejectedAt: number; reviews: number }>;
    }
  >();
  for (const r of rows) {
    const k = `${r.classifier}\0${r.condition}`;
    let e = m.get(k);
    if (!e) {
      const bands = Object.fromEntries(CONDITION_BANDS.map((b) => [b, 0])) as Record<ConditionBand, number>;
      e = {
        s: {
          classifier: r.classifier,
          condition: r.condition,
          reviews: 0,
          bands,
          histogram: new Array<number>(PROBABILITY_BUCKETS).fill(0),
          thresholds: [],
          decided: 0,
          clearedByIntent: 0,
        },
        t: new Map(),
      };
      m.set(k, e);
    }
    const s = e.s as { -readonly [K in keyof typeof e.s]: (typeof e.s)[K] };
    s.reviews += r.reviews;
    s.decided += r.decided;
    s.clearedByIntent += r.cleared;
    if ((CONDITION_BANDS as readonly string[]).includes(r.band)) s.bands[r.band] += r.reviews;
    if (Number.isInteger(r.bucket) && r.bucket >= 0 && r.bucket < PROBABILITY_BUCKETS) s.histogram[r.bucket]! += r.reviews;
    const tk = `${r.satisfiedAt}/${r.rejectedAt}`;
    const t = e.t.get(tk) ?? { satisfiedAt: r.satisfiedAt, rejectedAt: r.rejectedAt, reviews: 0 };
    t.reviews += r.reviews;
    e.t.set(tk, t);
  }
  return [...m.values()]
    .map(({ s, t }) => ({ ...s, thresholds: [...t.values()].sort((a, b) => b.reviews - a.reviews || b.satisfiedAt - a.satisfiedAt) }))
    .sort((a, b) => a.classifier.localeCompare(b.classifier) || b.reviews - a.reviews || a.condition.localeCompare(b.condition));
}

/** The report for the rows of a window (rows older than the window are ignored). */
export function buildReport(allRows: readonly DailyRow[], options: ReportOptions, ctx: ReportContext): AuditReport {
  const from = windowStart(options.days, ctx.now);
  const to = dayOf(ctx.now);
  const inWindow = allRows.filter((r) => r.day >= from && r.day <= to);
  // Without a pseudonym (no key) the current project matches nothing: never every project by mistake.
  const scoped = options.scope === "all" ? inWindow : inWindow.filter((r) => ctx.currentProject !== undefined && r.project === ctx.currentProject);
  const rows = scoped.filter((r) => r.route !== PERMISSION_SYSTEM_ROUTE);
  const totals = { decisions: 0, ...emptyOutcomes() };
  const days = new Map<string, { day: string; total: number } & Record<Outcome, number>>();
  for (let t = Date.parse(`${from}T00:00:00Z`); dayOf(t) <= to; t += DAY_MS) days.set(dayOf(t), { day: dayOf(t), total: 0, ...emptyOutcomes() });
  let reviews = 0;
  let tokens = 0;
  let ms = 0;
  for (const r of rows) {
    totals.decisions += r.count;
    totals[r.outcome] += r.count;
    const d = days.get(r.day);
    if (d) {
      d.total += r.count;
      d[r.outcome] += r.count;
    }
    if (r.route === "review" || r.reviewerTokens > 0 || r.reviewMs > 0) reviews += r.count;
    tokens += r.reviewerTokens;
    ms += r.reviewMs;
  }
  const s = suggestRules(rows, { minCount: options.minCount, top: options.top });
  const conditions = (ctx.conditions ?? []).filter(
    (r) => r.day >= from && r.day <= to && (options.scope === "all" || (ctx.currentProject !== undefined && r.project === ctx.currentProject)),
  );
  const ps = scoped.filter((r) => r.route === PERMISSION_SYSTEM_ROUTE);
  return {
    version: REPORT_VERSION,
    window: { days: options.days, from, to },
    scope: options.scope,
    options,
    totals,
    perDay: [...days.values()],
    deniedMost: topCounts(
      rows.filter((r) => r.outcome === "denied"),
      options.top,
    ),
    reviewedMost: topCounts(
      rows.filter((r) => r.route === "review"),
      options.top,
    ),
    reviewer: {
      reviews,
      tokens,
      ms,
      tokensPerReview: reviews > 0 ? Math.round(tokens / reviews) : 0,
      msPerReview: reviews > 0 ? Math.round(ms / reviews) : 0,
    },
    friction: {
      templates: friction(rows, (r) => shape(r.tool, r.template), options.top),
      surfaces: friction(rows, (r) => `${r.tool} on ${r.surface}`, options.top),
    },
    suggestions: s.suggestions,
    heldBack: s.heldBack,
    fragment: s.fragment,
    caveat: SUGGESTION_CAVEAT,
    permissionSystem: ps.length > 0 ? permissionSystemSuggestions(ps, options) : undefined,
    preMigrationRows: rows.filter((r) => r.since !== SCHEMA_VERSION).length,
    classifier: conditionSummaries(conditions),
  };
}

const BAR_WIDTH = 30;

function bar(n: number, max: number): string {
  if (n === 0 || max === 0) return "";
  return "█".repeat(Math.max(1, Math.round((n / max) * BAR_WIDTH)));
}

function seconds(ms: number): string {
  return ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}

const LEVELS = "▁▂▃▄▅▆▇█";

/** A condition's probabilities as one line of twenty columns (0 at the left, 1 at the right), · where none fell. */
export function histogramLine(histogram: readonly number[]): string {
  const max = Math.max(0, ...histogram);
  return histogram.map((n) => (n === 0 || max === 0 ? "·" : LEVELS[Math.max(0, Math.ceil((n / max) * LEVELS.length) - 1)])).join("");
}

/** The line under a histogram: R under the bucket of the rejected threshold, S under the satisfied one's. */
export function thresholdLine(t: { readonly satisfiedAt: number; readonly rejectedAt: number }): string {
  const at = (p: number) => Math.max(0, probabilityBucket(p));
  const line = new Array<string>(PROBABILITY_BUCKETS).fill(" ");
  line[at(t.rejectedAt)] = "R";
  line[at(t.satisfiedAt)] = line[at(t.satisfiedAt)] === "R" ? "|" : "S";
  return line.join("").trimEnd();
}

function renderConditions(out: string[], conditions: readonly ConditionSummary[]): void {
  if (conditions.length === 0) return;
  out.push("", "Classifier conditions (reviews by band; probabilities in twentieths from 0 to 1; R: rejected at or below, S: satisfied at or above):");
  let classifier: string | undefined;
  for (const c of conditions) {
    if (c.classifier !== classifier) {
      classifier = c.classifier;
      out.push(`  ${c.classifier}:`);
    }
    const b = c.bands;
    out.push(
      `    ${c.condition}: ${c.reviews} review${c.reviews === 1 ? "" : "s"}: ${b.satisfied} satisfied, ${b.uncertain} uncertain, ${b.rejected} rejected, ${b.missing} no answer; decided ${c.decided}, cleared by your request ${c.clearedByIntent}`,
    );
    out.push(`      0 ${histogramLine(c.histogram)} 1`);
    const main = c.thresholds[0];
    if (main) out.push(`        ${thresholdLine(main)}`);
    const others = c.thresholds.slice(1);
    out.push(
      `      thresholds ${c.thresholds.map((t) => `satisfied ${t.satisfiedAt}, rejected ${t.rejectedAt} (${t.reviews} review${t.reviews === 1 ? "" : "s"})`).join("; ")}` +
        (others.length > 0 ? " (marked: the first)" : ""),
    );
  }
}

/** Where the suggested rules go: the user's file (a project's file has no allow rules, P15). */
export interface RenderContext {
  readonly userConfigPath: string;
}

/** The report as text: headings, a chart of decisions per day, tables, and the copyable fragments. */
export function renderReport(r: AuditReport, ctx: RenderContext): string {
  const out: string[] = [];
  const scope = r.scope === "current" ? "this project" : "all projects";
  out.push(`Auto mode audit: ${r.window.from} to ${r.window.to} (${r.window.days} day${r.window.days === 1 ? "" : "s"}, ${scope})`);
  const t = r.totals;
  out.push(
    `${t.decisions} decision${t.decisions === 1 ? "" : "s"}: ${t.ran} ran, ${t.denied} denied, ${t.held} held, ${t.approved} approved by you, ${t["break-glass"]} break glass`,
  );
  if (t.decisions === 0) out.push("No decisions recorded in this window.");
  if (t.decisions > 0) {
    out.push("", "Decisions per day (█ = all, the figures: ran/denied/held/approved):");
    const max = Math.max(...r.perDay.map((d) => d.total));
    for (const d of r.perDay)
      out.push(
        `  ${d.day}  ${String(d.total).padStart(5)}  ${bar(d.total, max).padEnd(BAR_WIDTH)}  ${d.ran}/${d.denied}/${d.held}/${d.approved + d["break-glass"]}`,
      );
  }
  const list = (title: string, items: readonly Count[]) => {
    if (items.length === 0) return;
    out.push("", title);
    for (const c of items) out.push(`  ${String(c.count).padStart(5)}  ${c.key}`);
  };
  list("Denied most (tool: template (reason)):", r.deniedMost);
  list("Reviewed most (tool: template (reason)):", r.reviewedMost);
  const rv = r.reviewer;
  out.push(
    "",
    `Reviewer cost: ${rv.reviews} review${rv.reviews === 1 ? "" : "s"}, ${rv.tokens} tokens, ${seconds(rv.ms)}` +
      (rv.reviews > 0 ? ` (${rv.tokensPerReview} tokens and ${seconds(rv.msPerReview)} per review)` : ""),
  );
  const frictionList = (title: string, items: readonly FrictionEntry[]) => {
    if (items.length === 0) return;
    out.push("", title);
    for (const f of items) out.push(`  ${f.key}: ${f.reviews} reviewed, ${f.denials} denied, ${f.held} held of ${f.decisions}`);
  };
  frictionList("Friction by template:", r.friction.templates);
  frictionList("Friction by tool and surface:", r.friction.surfaces);
  out.push("", `Rule suggestions (at least ${r.options.minCount} approvals or reviewer allows, no denial, held change or failure in the window):`);
  if (r.suggestions.length === 0) out.push("  none");
  else {
    for (const s of r.suggestions)
      out.push(
        `  ${s.tool === "bash" ? s.template : `tool ${s.template}`}: ${s.evidence.approvals} approved by you, ${s.evidence.reviewerAllows} allowed by the reviewer`,
      );
    out.push(`  Merge into ${ctx.userConfigPath} (allow rules live only in your user file, and apply in every project):`);
    out.push(
      ...JSON.stringify(r.fragment, null, 2)
        .split("\n")
        .map((l) => `    ${l}`),
    );
  }
  out.push(`  ${r.caveat}`);
  if (r.heldBack.length > 0) {
    out.push("", "Not suggested:");
    for (const h of r.heldBack) out.push(`  ${h.tool === "bash" ? h.template : `tool ${h.template}`} (${h.evidence}): ${HELD_BACK_WORDS[h.reason]}`);
  }
  renderConditions(out, r.classifier);
  if (r.preMigrationRows > 0) out.push("", `${r.preMigrationRows} row(s) from before the last schema migration are counted above but never suggest a rule.`);
  const ps = r.permissionSystem;
  if (ps) {
    out.push("", `pi-permission-system: ${ps.decisions} decision${ps.decisions === 1 ? "" : "s"} observed (${ps.allowed} allowed, ${ps.denied} denied)`);
    if (ps.suggestions.length === 0) out.push("  no suggestions");
    else {
      out.push(`  Merge into ${ps.target} (the permission map uses the last match: put these after broader "ask" entries):`);
      out.push(
        ...JSON.stringify(ps.fragment, null, 2)
          .split("\n")
          .map((l) => `    ${l}`),
      );
    }
  }
  return `${out.join("\n")}\n`;
}
