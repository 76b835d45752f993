// The three artifacts of durable global state and how a set of them is classified. Pure: the
// store reads the files, this module decides what they mean.
//
// - config              `state.json`             enabled flag, reviewer, schema version, revision
// - primary watermark   `revision.json`          the highest revision ever allocated
// - recovery watermark  `revision.recovery.json` a second copy of it, published first
//
// A commit publishes recovery watermark, primary watermark, then config. So one damaged config
// plus one damaged watermark still leaves a valid watermark at or above every revision a verdict
// could have been bound to, and a repair can write above it.
//
// Then, last, the anchor (`auto-mode.anchor`, beside the state dir in Pi's agent dir): the
// revision once more, with a digest of the exact config text it was written with.
//
// - Rollback. The three artifacts can be consistent and still old: a backup of the state dir
//   restored, a folder sync that brings back yesterday's copy, a copy taken aside and put back
//   (which could say enabled=false). Nothing inside the dir can tell, since the copy is whole; the
//   anchor says how far revisions already went, and watermarks below it are `rolled-back`.
// - Damage in place. The exact form catches truncation and most edits, but not a flipped bit in a
//   reviewer's name, which is still a name; the digest does (`anchor-mismatch`).
//
// The config must be exactly the anchor's revision and digest. A config ahead of the anchor is a
// fault too, although it has an innocent cause (a crash between the config's rename and the
// anchor's, or a commit by a copy of this extension older than the anchor): accepting a lagging
// anchor would accept any damage that also lowers it. The fault keeps the config as the survivor,
// so a repair keeps the settings; a digest that does not match drops them.
//
// Limits. Whatever rewinds or deletes the anchor too (the whole agent dir restored, a process that
// writes files as the user and knows both names) is not detected by a fresh process: any anchor
// the user's own processes can write they can rewind, and a counter they cannot (a TPM, a server)
// is out of reach for a Pi extension. A missing anchor is therefore no information rather than a
// fault (state written before the anchor existed has none), and a damaged one is a fault only
// while there is state to judge: deleting the state dir, the advice for state that cannot be
// repaired, with the anchor always starts afresh.

import { ANCHOR_FILE } from "./locations.ts";
import { createHash } from "node:crypto";
import { THINKING_LEVELS, type FaultCode, type GlobalSnapshot, type ReviewerChoice, type StateFault, type ThinkingLevel } from "./snapshot.ts";

export const CONFIG_FILE = "state.json";
export const PRIMARY_FILE = "revision.json";
export const RECOVERY_FILE = "revision.recovery.json";
export const LOCK_NAME = "state.lock";
/** Temp files are dot-files ending in this suffix, in the state dir itself (same file system). */
export const TEMP_SUFFIX = ".tmp";

export const STATE_SCHEMA = 1;

export type ArtifactName = "config" | "primary" | "recovery";
export const ARTIFACTS: readonly ArtifactName[] = ["config", "primary", "recovery"];
export const ARTIFACT_FILES: Readonly<Record<ArtifactName, string>> = { config: CONFIG_FILE, primary: PRIMARY_FILE, recovery: RECOVERY_FILE };
/** The order a commit publishes in. */
export const PUBLISH_ORDER: readonly ArtifactName[] = ["recovery", "primary", "config"];

export type ArtifactRead =
  | { readonly kind: "absent" }
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "unreadable"; readonly message: string };

/** The config exactly as stored. Not user-edited: anything but this exact serialization is a fault. */
interface StoredConfig {
  readonly schema: typeof STATE_SCHEMA;
  readonly revision: number;
  readonly enabled: boolean;
  readonly reviewer: ReviewerChoice | null;
}

// Bounds that no legitimate value comes near; they keep a damaged file from being taken as data.
const MAX_FILE_BYTES = 4096;
const MAX_NAME = 256;

export function serializeConfig(s: GlobalSnapshot): string {
  // Fixed key order: the canonical text is compared byte for byte when read back.
  const stored: StoredConfig = {
    schema: STATE_SCHEMA,
    revision: s.revision,
    enabled: s.enabled,
    // The engine only when it is the classifier: a chat reviewer's text stays what older versions wrote.
    reviewer: s.reviewer
      ? {
          provider: s.reviewer.provider,
          model: s.reviewer.model,
          thinking: s.reviewer.thinking,
          ...(s.reviewer.engine === "classifier" ? { engine: "classifier" as const } : {}),
        }
      : null,
  };
  return `${JSON.stringify(stored)}\n`;
}

export function serializeWatermark(revision: number): string {
  return `${JSON.stringify({ watermark: revision })}\n`;
}

/** The digest of the exact config text an anchor vouches for. */
export const configDigest = (configText: string): string => createHash("sha256").update(configText).digest("hex");

export function serializeAnchor(revision: number, configText: string): string {
  return `${JSON.stringify({ anchor: revision, config: configDigest(configText) })}\n`;
}

const isRevision = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isName = (v: unknown): v is string => typeof v === "string" && v.length > 0 && v.length <= MAX_NAME;
const isThinking = (v: unknown): v is ThinkingLevel => typeof v === "string" && (THINKING_LEVELS as readonly string[]).includes(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; problem: string } {
  if (text.length > MAX_FILE_BYTES) return { ok: false, problem: `larger than ${MAX_FILE_BYTES} bytes` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, problem: text.length === 0 ? "empty" : "not valid JSON (truncated or overwritten)" };
  }
}

export type WatermarkParse = { readonly ok: true; readonly revision: number } | { readonly ok: false; readonly problem: string };

export function parseWatermark(text: string): WatermarkParse {
  const json = parseJson(text);
  if (!json.ok) return json;
  const v = json.value;
  if (!isObject(v) || Object.keys(v).length !== 1 || !isRevision(v.watermark)) return { ok: false, problem: "not a watermark" };
  // Byte-exact: a truncated or hand-edited file that still happens to parse is not ours.
  if (serializeWatermark(v.watermark) !== text) return { ok: false, problem: "not in the form this extension writes" };
  return { ok: true, revision: v.watermark };
}

export type AnchorParse = { readonly ok: true; readonly revision: number; readonly digest: string } | { readonly ok: false; readonly problem: string };

export function parseAnchor(text: string): AnchorParse {
  const json = parseJson(text);
  if (!json.ok) return json;
  const v = json.value;
  if (!isObject(v) || Object.keys(v).length !== 2 || !isRevision(v.anchor) || typeof v.config !== "string" || !/^[0-9a-f]{64}$/.test(v.config))
    return { ok: false, problem: "not an anchor" };
  if (`${JSON.stringify({ anchor: v.anchor, config: v.config })}\n` !== text) return { ok: false, problem: "not in the form this extension writes" };
  return { ok: true, revision: v.anchor, digest: v.config };
}

export type ConfigParse =
  | { readonly kind: "ok"; readonly snapshot: GlobalSnapshot }
  | { readonly kind: "unknown-schema"; readonly problem: string }
  | { readonly kind: "malformed"; readonly problem: string };

export function parseConfig(text: string): ConfigParse {
  const json = parseJson(text);
  if (!json.ok) return { kind: "malformed", problem: json.problem };
  const v = json.value;
  if (!isObject(v)) return { kind: "malformed", problem: "not an object" };
  if (v.schema !== STATE_SCHEMA)
    return typeof v.schema === "number" || typeof v.schema === "string"
      ? { kind: "unknown-schema", problem: `schema version ${JSON.stringify(v.schema)}; this version of pi-auto-mode knows ${STATE_SCHEMA}` }
      : { kind: "malformed", problem: "no schema version" };
  const keys = Object.keys(v).sort().join(",");
  if (keys !== "enabled,reviewer,revision,schema") return { kind: "malformed", problem: `unexpected fields (${keys})` };
  if (!isRevision(v.revision)) return { kind: "malformed", problem: "revision is not a non-negative integer" };
  if (typeof v.enabled !== "boolean") return { kind: "malformed", problem: "enabled is not a boolean" };
  let reviewer: ReviewerChoice | undefined;
  if (v.reviewer !== null) {
    const r = v.reviewer;
    const keys = isObject(r) ? Object.keys(r).sort().join(",") : "";
    const classifier = keys === "engine,model,provider,thinking" && isObject(r) && r.engine === "classifier";
    if (!isObject(r) || (keys !== "model,provider,thinking" && !classifier) || !isName(r.provider) || !isName(r.model) || !isThinking(r.thinking))
      return { kind: "malformed", problem: "reviewer is not {provider, model, thinking[, engine]}" };
    reviewer = { provider: r.provider, model: r.model, thinking: r.thinking, ...(classifier ? { engine: "classifier" as const } : {}) };
  }
  const snapshot: GlobalSnapshot = { enabled: v.enabled, reviewer, revision: v.revision };
  if (serializeConfig(snapshot) !== text) return { kind: "malformed", problem: "not in the form this extension writes" };
  return { kind: "ok", snapshot };
}

export type Classification =
  | { readonly kind: "missing" }
  | { readonly kind: "ok"; readonly snapshot: GlobalSnapshot; readonly watermark: number }
  | { readonly kind: "fault"; readonly fault: StateFault };

/**
 * What a set of artifacts means. `seen` is the highest revision this process has already seen
 * (0 for none): stored state below it was rolled back, and a repair must also go above it.
 * `anchor` is the read of the anchor outside the state dir (see the top of this file).
 * Missing only when all three are absent (and no anchor says revisions were handed out); every
 * other imperfection is a fault.
 */
export function classify(reads: Readonly<Record<ArtifactName, ArtifactRead>>, seen = 0, anchor: ArtifactRead = { kind: "absent" }): Classification {
  const present = ARTIFACTS.filter((a) => reads[a].kind !== "absent");
  const anchorMark = anchor.kind === "text" ? parseAnchor(anchor.text) : undefined;
  const anchored = anchorMark?.ok ? anchorMark.revision : undefined;
  if (present.length === 0) {
    if (seen > 0) return fault("rolled-back", `the state files are gone, but this process already saw revision ${seen}`, anchored, undefined);
    if (anchored !== undefined && anchored > 0)
      return fault("rolled-back", `the state files are gone, but ${ANCHOR_FILE} records that revision ${anchored} was reached`, anchored, undefined);
    return { kind: "missing" };
  }

  const config = reads.config.kind === "text" ? parseConfig(reads.config.text) : undefined;
  const marks = { primary: watermarkOf(reads.primary), recovery: watermarkOf(reads.recovery) };
  const parsed = config?.kind === "ok" ? config.snapshot : undefined;
  // A config the anchor disowns keeps no settings through a repair, whatever else is at fault: one
  // older than the anchor's revision was put back from a copy (an old state.json alone, saying
  // off, would otherwise be restored by the next /perm-auto-model), and one at its revision with
  // other bytes was changed in place. Only a config ahead of the anchor is kept (see the top).
  const disowned =
    parsed !== undefined &&
    anchorMark?.ok === true &&
    (parsed.revision < anchorMark.revision ||
      (parsed.revision === anchorMark.revision && configDigest((reads.config as { text: string }).text) !== anchorMark.digest));
  const survivor = disowned ? undefined : parsed;
  const valid = [marks.primary, marks.recovery].flatMap((m) => (m?.ok ? [m.revision] : []));
  const bounds = anchored === undefined ? valid : [...valid, anchored];
  // Without a valid watermark nothing bounds the revisions already handed out (P8 binds verdicts to them).
  const floor = bounds.length === 0 ? undefined : Math.max(...bounds, parsed?.revision ?? 0, seen);
  const f = (code: FaultCode, detail: string): Classification => fault(code, detail, floor, survivor);

  const unreadable = ARTIFACTS.find((a) => reads[a].kind === "unreadable");
  if (unreadable) return f("unreadable", `${ARTIFACT_FILES[unreadable]} cannot be read: ${(reads[unreadable] as { message: string }).message}`);
  if (anchor.kind === "unreadable") return f("unreadable", `${ANCHOR_FILE} (beside the state folder) cannot be read: ${anchor.message}`);
  if (present.length < ARTIFACTS.length) {
    const missing = ARTIFACTS.filter((a) => reads[a].kind === "absent").map((a) => ARTIFACT_FILES[a]);
    return f("partial", `${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} missing`);
  }
  for (const name of ["recovery", "primary"] as const) {
    const m = marks[name];
    if (m && !m.ok) return f("malformed-watermark", `${ARTIFACT_FILES[name]} is damaged: ${m.problem}`);
  }
  if (anchorMark && !anchorMark.ok) return f("malformed-watermark", `${ANCHOR_FILE} (beside the state folder) is damaged: ${anchorMark.problem}`);
  if (config?.kind === "unknown-schema") return f("unknown-schema", `${CONFIG_FILE} has an unknown ${config.problem}`);
  if (config?.kind === "malformed") return f("malformed-config", `${CONFIG_FILE} is damaged: ${config.problem}`);
  const [primary, recovery] = valid as [number, number];
  if (primary !== recovery) return f("unequal-watermarks", `the revision watermarks disagree (${primary} and ${recovery}): a commit stopped between them`);
  const snapshot = parsed!;
  if (primary < snapshot.revision)
    return f("watermark-below-config", `the config claims revision ${snapshot.revision} but the watermarks only reached ${primary}`);
  // The settings of a rolled-back copy are not what the user chose last, so they do not survive a
  // repair: it writes the defaults (on, no reviewer) unless the repairing command sets something.
  if (primary < seen) return fault("rolled-back", `the stored revision ${primary} is below revision ${seen}, which this process already saw`, floor, undefined);
  if (anchorMark?.ok) {
    const a = anchorMark.revision;
    if (primary < a)
      return fault(
        "rolled-back",
        `the stored revision ${primary} is below revision ${a}, which ${ANCHOR_FILE} records: an older copy of the state folder was put back`,
        floor,
        undefined,
      );
    if (snapshot.revision !== a)
      return f(
        "anchor-mismatch",
        `${CONFIG_FILE} is revision ${snapshot.revision} but ${ANCHOR_FILE} records revision ${a}` +
          (snapshot.revision > a ? " (a commit stopped before the anchor, or a copy of pi-auto-mode without the anchor wrote the state)" : ""),
      );
    if (configDigest((reads.config as { text: string }).text) !== anchorMark.digest)
      return fault("anchor-mismatch", `${CONFIG_FILE} is not the config ${ANCHOR_FILE} records for revision ${a}: it was changed in place`, floor, undefined);
  }
  return { kind: "ok", snapshot, watermark: primary };
}

function watermarkOf(r: ArtifactRead): WatermarkParse | undefined {
  return r.kind === "text" ? parseWatermark(r.text) : undefined;
}

function fault(code: FaultCode, detail: string, floor: number | undefined, survivor: GlobalSnapshot | undefined): Classification {
  return { kind: "fault", fault: { code, detail, floor, survivor } };
}
