// @gotgenes/pi-permission-system in the same Pi: its `permissions:decision` broadcasts (one per
// gate resolution, on pi.events) counted in the audit, and fragments of its own config offered to
// its users. Its payload (20.x, src/permission-events.ts): { surface, value, result: "allow" |
// "deny", resolution, origin, agentName, matchedPattern }. Read defensively: it carries no version.
//
// The value is a command, a path or a name, so it is redacted the audit's way before it goes
// anywhere: a bash command becomes its template, a path only its surface class, a name stays only
// when it is a plain name (templates.ts isPlainName). Its matched pattern, agent and origin are not kept. Pi-free:
// commands/audit.ts subscribes and hands each payload to the session's audit recorder
// (recorder.ts permissionDecision), which calls permissionDecisionEvent at its flush.

import type { Places } from "../policy/places.ts";
import { type AuditEvent, type DailyRow, type Outcome, SCHEMA_VERSION } from "./store.ts";
import { bashTemplate, isPlainName, STAR, surfaceClass, type SurfaceClass } from "./templates.ts";
import { bashHeldBack, HELD_BACK_WORDS, type HeldBackReason, isRefusal, PERMISSION_SYSTEM_ROUTE } from "./suggest.ts";

export const PERMISSIONS_DECISION_CHANNEL = "permissions:decision";
export const PERMISSION_SYSTEM_PACKAGE = "@gotgenes/pi-permission-system";

/** Where its config lives (its docs/configuration.md): a project's file and the user's. */
export const PERMISSION_SYSTEM_PROJECT_CONFIG = ".pi/extensions/pi-permission-system/config.json";
export const PERMISSION_SYSTEM_USER_CONFIG = "~/.pi/agent/extensions/pi-permission-system/config.json";

/** Its resolutions: which are a human's approval, which a refusal (the rest are its policy's own allows). */
const APPROVALS: ReadonlySet<string> = new Set(["user_approved", "user_approved_for_session", "session_approved"]);
const REFUSALS: ReadonlySet<string> = new Set(["user_denied", "policy_deny", "confirmation_unavailable"]);
/** Surfaces whose value is a path: only its class is kept. */
const PATH_SURFACES: ReadonlySet<string> = new Set(["read", "write", "edit", "grep", "find", "ls", "path", "external_directory"]);

export interface ObserveContext {
  readonly now: number;
  /** The project's location (the store keeps its HMAC). */
  readonly project?: string;
  /** The places of the session, for a path's surface class; without them the class is unknown. */
  readonly places?: Places;
}

/** One broadcast as an audit event, or undefined when it is not one this version understands. */
export function permissionDecisionEvent(raw: unknown, ctx: ObserveContext): AuditEvent | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const p = raw as Record<string, unknown>;
  const { surface, value, result, resolution } = p;
  if (typeof surface !== "string" || typeof value !== "string" || (result !== "allow" && result !== "deny") || typeof resolution !== "string") return undefined;
  const outcome: Outcome = result === "deny" || REFUSALS.has(resolution) ? "denied" : APPROVALS.has(resolution) ? "approved" : "ran";
  let template: string;
  let cls: SurfaceClass = "unknown";
  if (surface === "bash") template = bashTemplate(value);
  else if (PATH_SURFACES.has(surface) || /[/\\~]/.test(value)) {
    template = STAR;
    cls = ctx.places ? surfaceClass(value, ctx.places) : "unknown";
  } else template = isPlainName(value) ? value : STAR;
  return {
    at: ctx.now,
    tool: isPlainName(surface) ? surface : "other",
    template,
    surface: cls,
    route: PERMISSION_SYSTEM_ROUTE,
    reason: isPlainName(resolution) ? resolution : "other",
    outcome,
    ...(ctx.project !== undefined ? { project: ctx.project } : {}),
  };
}

export interface PermissionSystemSuggestion {
  readonly surface: string;
  readonly pattern: string;
  readonly approvals: number;
}

export interface PermissionSystemSuggestions {
  readonly decisions: number;
  readonly allowed: number;
  readonly denied: number;
  /** The config file the fragment is for: the project's (--scope current) or the user's (--scope all). */
  readonly target: string;
  readonly suggestions: readonly PermissionSystemSuggestion[];
  readonly heldBack: ReadonlyArray<{ readonly surface: string; readonly template: string; readonly reason: HeldBackReason; readonly words: string }>;
  readonly fragment: { readonly permission: Readonly<Record<string, Readonly<Record<string, "allow">>>> } | undefined;
}

/**
 * Its patterns (wildcard-matcher.ts): `*` any text, `?` one character, a trailing ` *` also
 * matching nothing. Used to keep a suggestion from covering a command it refused.
 */
export function permissionPatternMatches(pattern: string, value: string): boolean {
  let body = pattern
    .split("*")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("\\?", "."))
    .join(".*");
  if (body.endsWith(" .*")) body = `${body.slice(0, -3)}( .*)?`;
  return new RegExp(`^${body}$`, "s").test(value);
}

/** Fragments of pi-permission-system's config from its observed rows, under the same rules as auto mode's suggestions. */
export function permissionSystemSuggestions(
  rows: readonly DailyRow[],
  opts: { readonly minCount: number; readonly top: number; readonly scope: "current" | "all" },
): PermissionSystemSuggestions {
  const own = rows.filter((r) => r.route === PERMISSION_SYSTEM_ROUTE);
  const groups = new Map<string, { surface: string; template: string; approvals: number; refused: boolean }>();
  let decisions = 0;
  let denied = 0;
  for (const r of own) {
    decisions += r.count;
    if (r.outcome === "denied") denied += r.count;
    const k = `${r.tool}\0${r.template}`;
    const g = groups.get(k) ?? { surface: r.tool, template: r.template, approvals: 0, refused: false };
    if (isRefusal(r)) g.refused = true;
    else if (r.outcome === "approved" && r.since === SCHEMA_VERSION) g.approvals += r.count;
    groups.set(k, g);
  }
  const refused = own.filter(isRefusal);
  const suggestions: PermissionSystemSuggestion[] = [];
  const heldBack: Array<{ surface: string; template: string; reason: HeldBackReason; words: string }> = [];
  for (const g of groups.values()) {
    if (g.refused || g.approvals < opts.minCount) continue;
    let why: HeldBackReason | undefined;
    if (g.template === STAR || g.surface === "other" || PATH_SURFACES.has(g.surface)) why = "unreadable";
    else if (g.surface === "bash") why = bashHeldBack(g.template);
    else if (/[*?]/.test(g.template)) why = "unreadable";
    if (
      !why &&
      refused.some(
        (r) =>
          r.tool === g.surface && (permissionPatternMatches(g.template, r.template) || permissionPatternMatches(g.template, r.template.replaceAll(STAR, "x"))),
      )
    )
      why = "covers-refused";
    if (why) heldBack.push({ surface: g.surface, template: g.template, reason: why, words: HELD_BACK_WORDS[why] });
    else suggestions.push({ surface: g.surface, pattern: g.template, approvals: g.approvals });
  }
  suggestions.sort((a, b) => b.approvals - a.approvals || a.pattern.localeCompare(b.pattern));
  const top = suggestions.slice(0, opts.top);
  const permission: Record<string, Record<string, "allow">> = {};
  for (const s of top) (permission[s.surface] ??= {})[s.pattern] = "allow";
  return {
    decisions,
    allowed: decisions - denied,
    denied,
    target: opts.scope === "current" ? PERMISSION_SYSTEM_PROJECT_CONFIG : PERMISSION_SYSTEM_USER_CONFIG,
    suggestions: top,
    heldBack: heldBack.slice(0, opts.top),
    fragment: top.length > 0 ? { permission } : undefined,
  };
}
