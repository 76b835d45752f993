// The secret formats redaction knows (data/secret-formats.json), checked and compiled once at load.
// The data says where each format came from (gitleaks, Nosey Parker) and carries its examples; a
// malformed entry throws here, at import, so a bad edit of the data can never leave a format
// silently unapplied.

import data from "./data/secret-formats.json" with { type: "json" };

/** One part of a format's shape: literal alternatives, or characters of a class. */
export type ShapePart = readonly string[] | { readonly chars: string; readonly min: number; readonly max: number };

export interface SecretFormat {
  readonly id: string;
  readonly from: string;
  /** Lower-case; the rule runs only on a text that contains one. */
  readonly keywords: readonly string[];
  /** Compiled with g and d: the secret is the group named secret, or the whole match. */
  readonly re: RegExp;
  readonly hasSecretGroup: boolean;
  readonly shape: readonly ShapePart[] | undefined;
  readonly examples: readonly { readonly text: string; readonly secret: string }[];
  readonly notSecret: readonly string[];
}

export type OptionForm = "separate" | "glued" | "equals" | "positional-after-secret-name";

export interface SecretOption {
  /** Each a program, or a program and its subcommand words. */
  readonly programs: readonly string[];
  readonly options: readonly string[];
  readonly forms: readonly OptionForm[];
}

export interface SecretFormatData {
  readonly formats: readonly SecretFormat[];
  readonly options: readonly SecretOption[];
}

const FORMAT_KEYS = new Set(["id", "from", "keywords", "pattern", "flags", "shape", "examples", "notSecret"]);
const OPTION_KEYS = new Set(["programs", "options", "forms"]);
const FORMS: ReadonlySet<string> = new Set<OptionForm>(["separate", "glued", "equals", "positional-after-secret-name"]);

/** A word boundary before a token, where a JSON escape (\n, \t, \r) also counts as one. */
const BOUNDARY = "(?:(?<![A-Za-z0-9_])|(?<=\\\\[nrt]))";

function fail(where: string, what: string): never {
  throw new Error(`secret-formats.json: ${where}: ${what}`);
}

function strings(v: unknown, where: string, what: string, nonEmpty = true): string[] {
  if (!Array.isArray(v) || (nonEmpty && v.length === 0) || v.some((x) => typeof x !== "string" || x.length === 0))
    fail(where, `${what} must be a list of non-empty strings`);
  return v as string[];
}

function shapeOf(v: unknown, where: string): ShapePart[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length === 0) fail(where, "shape must be a non-empty list of parts");
  return v.map((p, i): ShapePart => {
    if (Array.isArray(p)) return strings(p, where, `shape part ${i}`);
    const o = p as { chars?: unknown; min?: unknown; max?: unknown };
    if (typeof o !== "object" || o === null || typeof o.chars !== "string" || o.chars.length === 0) fail(where, `shape part ${i} needs chars`);
    if (!Number.isInteger(o.min) || !Number.isInteger(o.max) || (o.min as number) < 1 || (o.max as number) < (o.min as number))
      fail(where, `shape part ${i} needs 1 <= min <= max`);
    return { chars: o.chars, min: o.min as number, max: o.max as number };
  });
}

function formatOf(v: unknown, index: number, ids: Set<string>): SecretFormat {
  const o = v as Record<string, unknown>;
  if (typeof o !== "object" || o === null || Array.isArray(o)) fail(`format ${index}`, "must be an object");
  const where = typeof o.id === "string" ? o.id : `format ${index}`;
  for (const k of Object.keys(o)) if (!FORMAT_KEYS.has(k)) fail(where, `unknown field ${k}`);
  if (typeof o.id !== "string" || !/^[a-z0-9-]+$/.test(o.id)) fail(where, "id must be lower-case words joined by -");
  if (ids.has(o.id)) fail(where, "id is used twice");
  ids.add(o.id);
  if (typeof o.from !== "string" || o.from.trim() === "") fail(where, "from must say where the format came from");
  const keywords = strings(o.keywords, where, "keywords");
  if (keywords.some((k) => k !== k.toLowerCase())) fail(where, "keywords must be lower-case");
  if (typeof o.pattern !== "string" || o.pattern.length === 0) fail(where, "pattern must be a non-empty string");
  const flags = o.flags ?? "";
  if (typeof flags !== "string" || !/^[imsu]*$/.test(flags)) fail(where, "flags may hold only i, m, s and u");
  let re: RegExp;
  try {
    re = new RegExp(o.pattern.replaceAll("{B}", BOUNDARY), `${flags}gd`);
  } catch (e) {
    fail(where, `pattern does not compile: ${(e as Error).message}`);
  }
  // A pattern that matches the empty string would redact nothing and loop; a format must match text.
  if (re.test("")) fail(where, "pattern matches the empty string");
  re.lastIndex = 0;
  const examples = o.examples;
  if (!Array.isArray(examples) || examples.length === 0) fail(where, "needs at least one example");
  const ex = examples.map((e: unknown, i) => {
    const x = e as { text?: unknown; secret?: unknown };
    if (
      typeof x !== "object" ||
      x === null ||
      typeof x.text !== "string" ||
      typeof x.secret !== "string" ||
      x.secret.length === 0 ||
      !x.text.includes(x.secret)
    )
      fail(where, `example ${i} needs a text that holds its secret`);
    return { text: x.text, secret: x.secret };
  });
  return {
    id: o.id,
    from: o.from,
    keywords,
    re,
    hasSecretGroup: o.pattern.includes("(?<secret>"),
    shape: shapeOf(o.shape, where),
    examples: ex,
    notSecret: o.notSecret === undefined ? [] : strings(o.notSecret, where, "notSecret"),
  };
}

function optionOf(v: unknown, index: number): SecretOption {
  const o = v as Record<string, unknown>;
  const where = `secretOptions ${index}`;
  if (typeof o !== "object" || o === null || Array.isArray(o)) fail(where, "must be an object");
  for (const k of Object.keys(o)) if (!OPTION_KEYS.has(k)) fail(where, `unknown field ${k}`);
  const programs = strings(o.programs, where, "programs");
  const forms = strings(o.forms, where, "forms");
  for (const f of forms) if (!FORMS.has(f)) fail(where, `unknown form ${f}`);
  const options = strings(o.options, where, "options", !forms.every((f) => f === "positional-after-secret-name"));
  return { programs, options, forms: forms as OptionForm[] };
}

/** Checks and compiles the data; throws on the first problem, naming the entry. */
export function loadSecretFormats(raw: unknown): SecretFormatData {
  const d = raw as { formats?: unknown; secretOptions?: unknown; sources?: unknown };
  if (typeof d !== "object" || d === null) fail("top", "must be an object");
  if (!Array.isArray(d.sources) || d.sources.length === 0) fail("top", "sources must name the rule sets the formats came from");
  if (!Array.isArray(d.formats) || d.formats.length === 0) fail("top", "formats must be a non-empty list");
  if (!Array.isArray(d.secretOptions)) fail("top", "secretOptions must be a list");
  const ids = new Set<string>();
  return { formats: d.formats.map((f, i) => formatOf(f, i, ids)), options: d.secretOptions.map(optionOf) };
}

export const SECRET_FORMATS: SecretFormatData = loadSecretFormats(data);
