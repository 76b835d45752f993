// The gate's decisions into the local audit (store.ts), off the decision path.
//
// The decision path pays for one in-memory push: what the gate decided, the call's input as the
// model gave it, the working directory and the time. Everything else (reading the audit's
// configuration, opening the store, turning a command into its template and a path into its
// class, writing) happens at a flush: on an unref'd timer, when the buffer fills, and at session
// shutdown. Nothing here throws into the caller, and no failure reaches a decision: the store turns
// itself off with one warning (store.ts), and a recorder without a store drops what it gathered.
//
// The store is shared by every copy of auto mode in the process (one per audit folder, on
// globalThis like the sandbox controller): a store that failed stays off for the process, so its
// warning is given once, also across /reload.
//
// What becomes of a call (the store's outcomes):
//   ran         admitted (allowed, or run in the sandbox) by the policy or a reviewer
//   approved    admitted on the user's one-shot approval of an earlier denial
//   break-glass admitted by the user breaking the glass on a critical denial
//   denied      denied, by any layer
//   held        a sandboxed command's effects held back (kept for the user, or denied by the reviewer)
// A review of a call adds its reviewer tokens and time to the call's decision. A review of a staged
// command's held effects, made after the call was decided, is a decision of its own (reason
// held-effects): `ran` when its effects were applied, `held` when not.
// Only bash has a template; other tools have the template "" (nothing but the tool's name).
//
// A decision's surface is the strictest class (sensitive > external > home > temp > workspace) of
// the paths the gate judged: a file tool's lexical and real path; for a shell command, the paths its
// analysis judged as paths (judge.ts judgedCommandPaths: what it reads, lists, writes, removes,
// runs, enters with cd or redirects to), not the rule subject's candidates, which take every word
// for one (`git status` names no path). A path only read, listed, run or entered is sensitive when
// it is an identity secret, else it is where it lies (`cat /etc/passwd` is external); one written or
// removed takes the write's class (a persistence file is sensitive). The gate hands over its subject
// and judge context by reference (JudgedCall); the shell analysis is run again and the classes are
// computed at the flush, off the decision path, and no path is ever stored. Without judged paths a
// `path` input gives the class; with none, unknown.
//
// A classifier review's conditions (ReviewFacts.classifier) are counted at the flush too: each
// condition's band, probability bucket and thresholds, whether it decided and intent cleared it.
//
// Other extensions' decisions come in through the same recorder (permissionDecision: one store
// owner, one warning, the session's places for a path's class), at the same flush. Pi-free.

import type { CallRecord, JudgedCall } from "../grants/admit-call.ts";
import { judgedCommandPaths } from "../policy/judge.ts";
import { loadPolicyConfig } from "../policy/config/load.ts";
import type { AuditSettings } from "../policy/config/audit-settings.ts";
import { buildPlaces, isIdentitySecret, isWithin, type Places } from "../policy/places.ts";
import { defaultTmpRootPath, selfPaths } from "../state/locations.ts";
import { permissionDecisionEvent } from "./permission-system.ts";
import { AuditStore, type AuditEvent, type AuditStoreOptions, auditDir, type ConditionBand, type Outcome } from "./store.ts";
import { bashTemplate, type SurfaceClass, surfaceClass, UNREADABLE_TEMPLATE } from "./templates.ts";

/** After the first buffered decision, the flush waits this long (the timer does not keep Node alive). */
export const FLUSH_DELAY_MS = 1000;
/** A buffer this full is flushed at the next turn of the event loop, not on the call that filled it. */
export const MAX_BUFFERED = 256;
/** Calls whose input is remembered for their decision (a call the gate never records falls out). */
const MAX_NOTED = 512;

/** What the recorder reads of a classifier's judgement (review/types.ts ClassifierJudgement fits it). */
export interface ClassifierFacts {
  readonly conditions: ReadonlyArray<{
    readonly id: string;
    readonly severity: string;
    readonly probability: number | null;
    readonly satisfiedAt: number;
    readonly rejectedAt: number;
    readonly band: ConditionBand;
  }>;
  readonly decidedBy: string | null;
  readonly clearedByIntent: boolean;
}

/** What the recorder reads of a review record (tools/review-call.ts ReviewRecord fits it). */
export interface ReviewFacts {
  readonly toolCallId: string;
  readonly admitted: boolean;
  readonly usage: { readonly totalTokens: number };
  readonly durationMs: number;
  /** Who judged: a classifier's conditions are counted under provider/model. */
  readonly reviewer?: { readonly provider: string; readonly model: string } | undefined;
  /** The classifier engine's conditions (absent or null for the chat engine). */
  readonly classifier?: ClassifierFacts | null;
}

export interface RecorderOptions {
  readonly agentDir: () => string;
  readonly home: string;
  /** Told once per process and audit folder why the audit turned off. */
  readonly warn: (message: string) => void;
  readonly now?: () => number;
}

export interface AuditRecorder {
  /** A call reached the gate with this input (remembered for its decision's template and surface). */
  noteCall(toolCallId: string, tool: string, input: unknown): void;
  /** The gate decided a call; `judged` is what it judged the call's paths with (classified at the flush). */
  decision(r: CallRecord, cwd: string, judged?: JudgedCall): void;
  /** A reviewer judged a call (before its decision) or a staged command's held effects (after it). */
  review(r: ReviewFacts, cwd: string): void;
  /** A sandboxed command's effects were held back for the user. */
  held(toolCallId: string, command: string, cwd: string): void;
  /**
   * Another extension's decision, as @gotgenes/pi-permission-system broadcasts it (permission-system.ts
   * reads it), in the session's project: redacted and classified at the flush, like the gate's.
   */
  permissionDecision(raw: unknown, cwd: string, at?: number): void;
  /** Writes what was gathered now (session shutdown). Never throws. */
  flush(): void;
}

interface Noted {
  readonly tool: string;
  readonly input: unknown;
  decided: boolean;
  /** A held outcome was counted for it already (a reviewer's denial of its held effects). */
  held: boolean;
  tokens: number;
  reviewMs: number;
  /** What the gate judged its paths with, for a later review of its held effects. */
  judged?: JudgedCall;
}

type Pending =
  | {
      readonly kind: "decision";
      readonly r: CallRecord;
      readonly noted: Noted | undefined;
      readonly judged: JudgedCall | undefined;
      readonly cwd: string;
      readonly at: number;
    }
  | { readonly kind: "conditions"; readonly classifier: string; readonly facts: ClassifierFacts; readonly cwd: string; readonly at: number }
  | {
      readonly kind: "permission-system";
      readonly payload: { readonly surface: unknown; readonly value: unknown; readonly result: unknown; readonly resolution: unknown };
      readonly cwd: string;
      readonly at: number;
    }
  | {
      readonly kind: "held";
      readonly tool: string;
      readonly input: unknown;
      readonly route: string;
      readonly outcome: Outcome;
      readonly tokens: number;
      readonly reviewMs: number;
      readonly judged: JudgedCall | undefined;
      readonly cwd: string;
      readonly at: number;
    };

interface Shared {
  store: AuditStore | undefined;
  /** Where the store's one warning goes: the recorder that last flushed into it. */
  sink: (message: string) => void;
  /** Projects whose shorter retention was applied in this process. */
  readonly pruned: Set<string>;
}

const SLOT = Symbol.for("pi-auto-mode.audit-stores");

function registry(): Map<string, Shared> {
  const g = globalThis as { [SLOT]?: Map<string, Shared> };
  g[SLOT] ??= new Map();
  return g[SLOT];
}

function sharedFor(dir: string): Shared {
  const reg = registry();
  let s = reg.get(dir);
  if (!s) {
    s = { store: undefined, sink: () => {}, pruned: new Set() };
    reg.set(dir, s);
  }
  return s;
}

/**
 * The process's store for an audit folder, opened on first use. Tests open it first to choose its
 * options (a tiny maxPages is a full disk); the extension then writes into that one.
 */
export function sharedAuditStore(dir: string, opts: Omit<AuditStoreOptions, "dir" | "onWarning"> = {}): AuditStore {
  const s = sharedFor(dir);
  s.store ??= AuditStore.open({ ...opts, dir, onWarning: (m) => s.sink(m) });
  return s.store;
}

/** Forgets the process's stores (tests that reuse a folder). */
export function resetSharedAuditStores(): void {
  for (const s of registry().values()) s.store?.close();
  registry().clear();
}

const SURFACE_TOOLS = new Set(["read", "write", "edit", "ls", "grep", "find"]);

function field(input: unknown, key: string): string | undefined {
  if (typeof input !== "object" || input === null) return undefined;
  const v = (input as Record<string, unknown>)[key];
  return typeof v === "string" ? v : undefined;
}

/** The template of a call: bash's command as its template, any other tool's as "" (its name says it). */
function templateOf(tool: string, input: unknown): string {
  if (tool !== "bash") return "";
  const command = field(input, "command");
  return command === undefined ? UNREADABLE_TEMPLATE : bashTemplate(command);
}

/** Strictest first: the class a call with several paths gets. */
const STRICTNESS: readonly SurfaceClass[] = ["sensitive", "external", "home", "temp", "workspace"];

/** The strictest class of the paths the gate judged, or undefined when it judged none. */
function judgedSurface(tool: string, input: unknown, judged: JudgedCall | undefined, tempRoot: () => string): SurfaceClass | undefined {
  if (!judged) return undefined;
  // The gate judged against this session's folder in the temp root; the audit's "temp" is the whole
  // root (another session's folder there is temp too, as the recorder's own places say).
  const judgedPlaces = judged.context.places;
  const root = tempRoot();
  const places = isWithin(root, judgedPlaces.tmpRoot) && root !== judgedPlaces.tmpRoot ? { ...judgedPlaces, tmpRoot: root } : judgedPlaces;
  let best = STRICTNESS.length;
  const count = (cls: SurfaceClass) => {
    const i = STRICTNESS.indexOf(cls);
    if (i !== -1 && i < best) best = i;
  };
  if (tool === "bash") {
    // What the analysis judged as paths, judged again here: the gate's own analysis notes none.
    const command = field(input, "command");
    if (command === undefined) return undefined;
    const paths = judgedCommandPaths(command, judged.context);
    if (paths.size === 0) return undefined;
    for (const [p, role] of paths) {
      count(role === "write" ? surfaceClass(p, places) : lookedAtSurface(p, places));
      if (best === 0) break;
    }
  } else {
    const paths = judged.subject?.paths ?? [];
    if (paths.length === 0) return undefined;
    for (const p of paths) {
      count(surfaceClass(p, places));
      if (best === 0) break;
    }
  }
  return STRICTNESS[best] ?? "unknown";
}

/**
 * The class of an absolute path a command reads, lists, runs or enters, without changing it: an
 * identity secret is sensitive, anything else is where it lies (reading a persistence file such
 * as /etc/passwd, or the workspace's .git, changes nothing).
 */
function lookedAtSurface(p: string, places: Places): SurfaceClass {
  if (p.includes("\0")) return "unknown";
  if (isIdentitySecret(places, p, p)) return "sensitive";
  if (isWithin(places.workspace, p) || isWithin(places.workspaceLexical, p)) return "workspace";
  if (isWithin(places.tmpRoot, p)) return "temp";
  if (isWithin(places.home, p) || isWithin(places.homeReal, p)) return "home";
  return "external";
}

const CLASSIFIER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:@/-]{0,127}$/;

function outcomeOf(r: CallRecord): Outcome {
  if (r.outcome === "denied") return "denied";
  if (r.approvedBy === "user") return "approved";
  if (r.approvedBy === "break-glass") return "break-glass";
  return "ran";
}

export function createAuditRecorder(opts: RecorderOptions): AuditRecorder {
  const now = opts.now ?? Date.now;
  // Two generations instead of evicting one by one: a full one becomes the old one, the old one goes.
  let noted = new Map<string, Noted>();
  let older = new Map<string, Noted>();
  let buffer: Pending[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const places = new Map<string, Places>();
  let bugTold = false;

  // The flush waiting (and how soon): a push only ever makes it sooner, once.
  let soon = false;
  const schedule = (now: boolean) => {
    if (timer && (soon || !now)) return;
    if (timer) clearTimeout(timer);
    soon = now;
    timer = setTimeout(flush, now ? 0 : FLUSH_DELAY_MS);
    timer.unref();
  };
  const push = (p: Pending) => {
    buffer.push(p);
    schedule(buffer.length >= MAX_BUFFERED);
  };

  function placesOf(cwd: string, tmpRoot: string | undefined, agentDir: string): Places {
    const key = `${cwd}\0${tmpRoot ?? ""}\0${agentDir}`;
    let p = places.get(key);
    if (!p) {
      if (places.size >= 16) places.clear();
      p = buildPlaces({ workspace: cwd, tmpRoot: tmpRoot ?? defaultTmpRootPath(), home: opts.home, agentDir, selfPaths: selfPaths(agentDir) });
      places.set(key, p);
    }
    return p;
  }

  function surfaceOf(tool: string, input: unknown, place: () => Places): SurfaceClass {
    const path = SURFACE_TOOLS.has(tool) ? field(input, "path") : undefined;
    return path === undefined ? "unknown" : surfaceClass(path, place());
  }

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    soon = false;
    if (buffer.length === 0) return;
    const items = buffer;
    buffer = [];
    try {
      const agentDir = opts.agentDir();
      const shared = sharedFor(auditDir(agentDir));
      shared.sink = opts.warn;
      // Read per working directory: a project may turn the audit off, and a configuration at fault
      // says nothing the audit may rely on (the user may have turned it off in the broken file).
      const settings = new Map<string, { audit: AuditSettings; tmpRoot: string | undefined } | undefined>();
      const settingsOf = (cwd: string) => {
        if (!settings.has(cwd)) {
          const c = loadPolicyConfig({ agentDir, cwd, home: opts.home });
          settings.set(cwd, c.ok && c.config.audit.enabled ? { audit: c.config.audit, tmpRoot: c.config.tmpRoot } : undefined);
        }
        return settings.get(cwd);
      };
      let store: AuditStore | undefined;
      for (const item of items) {
        const s = settingsOf(item.cwd);
        if (!s) continue;
        store ??= sharedAuditStore(auditDir(agentDir), { retentionDays: s.audit.retentionDays, now });
        if (!store.enabled) return;
        if (s.audit.workspaceRetentionDays < s.audit.retentionDays && !shared.pruned.has(item.cwd)) {
          shared.pruned.add(item.cwd);
          store.pruneProject(item.cwd, s.audit.workspaceRetentionDays);
        }
        const place = () => placesOf(item.cwd, s.tmpRoot, agentDir);
        let e: AuditEvent | undefined;
        if (item.kind === "conditions") {
          const f = item.facts;
          for (const c of f.conditions)
            store.recordCondition({
              at: item.at,
              classifier: item.classifier,
              condition: c.id,
              satisfiedAt: c.satisfiedAt,
              rejectedAt: c.rejectedAt,
              band: c.band,
              probability: c.probability,
              decided: f.decidedBy === c.id,
              cleared: f.clearedByIntent && c.severity === "soft" && c.band === "rejected",
              project: item.cwd,
            });
          continue;
        }
        if (item.kind === "permission-system") {
          e = permissionDecisionEvent(item.payload, { now: item.at, project: item.cwd, places: place() });
          if (e) store.record(e);
          continue;
        }
        if (item.kind === "decision") {
          const tool = item.noted?.tool ?? item.r.tool;
          const input = item.noted?.input;
          e = {
            at: item.at,
            tool: item.r.tool,
            template: templateOf(tool, input),
            surface: judgedSurface(tool, input, item.judged, () => place().tmpRoot) ?? surfaceOf(tool, input, place),
            route: item.r.route,
            reason: item.r.reason,
            outcome: outcomeOf(item.r),
            reviewerTokens: item.noted?.tokens,
            reviewMs: item.noted?.reviewMs,
            project: item.cwd,
          };
        } else {
          e = {
            at: item.at,
            tool: item.tool,
            template: templateOf(item.tool, item.input),
            surface: judgedSurface(item.tool, item.input, item.judged, () => place().tmpRoot) ?? "unknown",
            route: item.route,
            reason: "held-effects",
            outcome: item.outcome,
            reviewerTokens: item.tokens,
            reviewMs: item.reviewMs,
            project: item.cwd,
          };
        }
        store.record(e);
      }
      store?.flush();
    } catch (e) {
      // A bug here (a template that throws, a path that cannot be read) costs this batch, never a decision.
      if (bugTold) return;
      bugTold = true;
      try {
        opts.warn(`audit: a batch of ${items.length} decisions was not recorded: ${e instanceof Error ? e.message.split("\n")[0] : "unknown error"}`);
      } catch {
        // Nowhere left to say it.
      }
    }
  }

  const note = (id: string): Noted | undefined => noted.get(id) ?? older.get(id);

  return {
    noteCall(toolCallId, tool, input) {
      if (noted.size >= MAX_NOTED) {
        older = noted;
        noted = new Map();
      }
      noted.set(toolCallId, { tool, input, decided: false, held: false, tokens: 0, reviewMs: 0 });
    },
    decision(r, cwd, judged) {
      const n = note(r.toolCallId);
      if (n) {
        n.decided = true;
        n.judged = judged;
      }
      push({ kind: "decision", r, noted: n, judged, cwd, at: now() });
    },
    review(r, cwd) {
      const n = note(r.toolCallId);
      const c = r.classifier;
      if (c && Array.isArray(c.conditions) && c.conditions.length > 0) {
        const name = r.reviewer ? `${r.reviewer.provider}/${r.reviewer.model}` : "";
        push({ kind: "conditions", classifier: CLASSIFIER_NAME.test(name) ? name : "other", facts: c, cwd, at: now() });
      }
      const tokens = typeof r.usage?.totalTokens === "number" ? r.usage.totalTokens : 0;
      const ms = typeof r.durationMs === "number" ? r.durationMs : 0;
      if (n && !n.decided) {
        // Before the decision: its cost joins the call's decision.
        n.tokens += tokens;
        n.reviewMs += ms;
        return;
      }
      // After it: the review of the call's held effects, a decision of its own.
      if (n && !r.admitted) n.held = true;
      push({
        kind: "held",
        tool: n?.tool ?? "bash",
        input: n?.input,
        route: "review",
        outcome: r.admitted ? "ran" : "held",
        tokens,
        reviewMs: ms,
        judged: n?.judged,
        cwd,
        at: now(),
      });
    },
    held(toolCallId, command, cwd) {
      const n = note(toolCallId);
      // A reviewer's denial of these effects counted them held already.
      if (n?.held) return;
      if (n) n.held = true;
      push({ kind: "held", tool: "bash", input: { command }, route: "sandbox", outcome: "held", tokens: 0, reviewMs: 0, judged: n?.judged, cwd, at: now() });
    },
    permissionDecision(raw, cwd, at) {
      if (typeof raw !== "object" || raw === null) return;
      // Its four fields, as they are now: the sender may reuse its object after the broadcast.
      const { surface, value, result, resolution } = raw as Record<string, unknown>;
      push({ kind: "permission-system", payload: { surface, value, result, resolution }, cwd, at: typeof at === "number" ? at : now() });
    },
    flush,
  };
}
