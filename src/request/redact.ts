// Secret redaction for everything that leaves the gate (P11): the reviewer's and the classifier's
// input, audit entries and tables, status and widget text, denial texts. One redactor, two kinds of
// knowledge:
//   formats   the shapes of known secrets, kept as data with their sources and examples
//             (data/secret-formats.json, secret-formats.ts): a token is hidden by its shape,
//             wherever it stands;
//   context   where a secret stands whatever it looks like, which no format can know: the value
//             of an assignment, key or option that names a secret (secret-names.ts), the value of
//             an option that takes a password (secretOptions: sshpass -p, mysql -pPASS, docker
//             login -p), any operand after a secret's name in a `config set` (aws configure set
//             aws_secret_access_key VALUE), the userinfo of a URL, and the value of any assignment
//             that looks like a key (long, mixed letters and digits, random), whatever its name.
// Every rule marks ranges of the original text; the ranges are merged and each becomes
// [REDACTED] once, so rules never see each other's output. Patterns are compiled once; a format
// runs only on a text holding one of its keywords. Deliberately broad: a false redaction costs a
// little context, a missed one leaks a credential.

import { SECRET_FORMATS, type SecretOption } from "./secret-formats.ts";
import { isSecretName } from "./secret-names.ts";

const REPLACEMENT = "[REDACTED]";

/** Start and end offsets, in pairs. */
type Ranges = number[];

function collectFormat(re: RegExp, hasGroup: boolean, text: string, out: Ranges): void {
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const span = hasGroup ? m.indices?.groups?.secret : m.indices?.[0];
    if (span && span[1] > span[0]) out.push(span[0], span[1]);
    if (m[0].length === 0) re.lastIndex++;
  }
}

// ---- options that take a secret (data: secretOptions) ----

const VALUE = `'[^'\\n]*'|"[^"\\n]*"|[^\\s'";|&]+`;
/** The rest of one simple command: up to a newline or a command separator. */
const SAME_COMMAND = "[^\\n;|&]*?";

function literal(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

interface OptionRule {
  readonly keywords: readonly string[];
  readonly re: RegExp;
  /** Positional: the operand after a secret's name is the secret (checked in code). */
  readonly positional: boolean;
}

function optionRules(entries: readonly SecretOption[]): OptionRule[] {
  const out: OptionRule[] = [];
  for (const e of entries) {
    const keywords = [...new Set(e.programs.map((p) => p.split(" ")[0]!.toLowerCase()))];
    const program = `(?:^|[\\s;|&(\`'"/])(?:${e.programs.map((p) => p.split(" ").map(literal).join("\\s+")).join("|")})(?=[\\s'"])`;
    const short = e.options.filter((o) => /^-[A-Za-z0-9]$/.test(o) || o.endsWith(":"));
    const all = e.options.map(literal).join("|");
    for (const form of e.forms) {
      if (form === "positional-after-secret-name") {
        out.push({ keywords, re: new RegExp(`${program}(?<rest>[^\\n;|&]*)`, "gd"), positional: true });
        continue;
      }
      const opts = form === "glued" ? short.map(literal).join("|") : all;
      if (opts === "") continue;
      const tail =
        form === "separate"
          ? `[ \\t]+(?<secret>${VALUE})`
          : form === "equals"
            ? `=(?<secret>${VALUE})`
            : `(?<secret>'[^'\\n]*'|"[^"\\n]*"|[^\\s'";|&=-][^\\s'";|&]*)`;
      out.push({ keywords, re: new RegExp(`${program}${SAME_COMMAND}\\s(?:${opts})${tail}`, "gd"), positional: false });
    }
  }
  return out;
}

/** After a secret's name among a command's operands: the next operand (not an option). */
function collectPositional(m: RegExpExecArray, out: Ranges): void {
  const span = m.indices?.groups?.rest;
  const rest = m.groups?.rest;
  if (!span || rest === undefined) return;
  const words = [...rest.matchAll(/'[^']*'|"[^"]*"|[^\s'"]+/g)];
  for (let i = 0; i + 1 < words.length; i++) {
    const name = words[i]![0];
    const next = words[i + 1]!;
    if (name.startsWith("-") || next[0].startsWith("-")) continue;
    if (isSecretName(name.replace(/^['"]|['"]$/g, ""))) out.push(span[0] + next.index, span[0] + next.index + next[0].length);
  }
}

// ---- values a name calls secret (secret-names.ts) ----

/**
 * `NAME=value` and `NAME: value` (env, .env, YAML), `"api_key": "..."` in JSON or a dict literal,
 * and `--token value` on a command line. Group 1 is the name, group `secret` the value.
 */
const NAMED: readonly RegExp[] = [
  /\b([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(?<secret>"[^"]*"|'[^']*'|[^\s'"]+)/dg,
  /(["'])([A-Za-z0-9_-]+)\1\s*:\s*(?<secret>"[^"]*"|'[^']*')/dg,
  /(?:^|\s)--?([A-Za-z0-9][A-Za-z0-9-]*)\s+(?<secret>"[^"]*"|'[^']*'|[^\s'"<>|&;-][^\s'"]*)/dg,
];
const NAME_GROUP = [1, 2, 1] as const;

function collectNamed(text: string, out: Ranges): void {
  NAMED.forEach((re, i) => {
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const name = m[NAME_GROUP[i]!]!;
      const span = m.indices?.groups?.secret;
      if (span && isSecretName(name)) out.push(span[0], span[1]);
    }
  });
}

// ---- a value that looks like a key, whatever its name ----

/** Shannon entropy in bits per character. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** Words in a case shape (`status`, `HEAD`, `BuildOutputFolder`): an identifier, not a key. */
const CASE_WORDS = /^(?:[a-z]+|[A-Z]+|[a-z]*(?:[A-Z][a-z]+)+[A-Z]?)$/;

/**
 * Whether a value looks like a key: a run of 16 or more letters and digits that mixes both with
 * the spread of a random string (gitleaks' generic rule asks 3.5 bits a character of longer
 * values; 3 for a run of 16 keeps short keys), or a run of 24 or more mixed-case letters that is
 * not words in a case shape.
 */
export function looksLikeKey(v: string): boolean {
  if (v.length < 16) return false;
  for (const m of v.matchAll(/[A-Za-z0-9]{16,}/g)) {
    const r = m[0];
    if (/[0-9]/.test(r) && /[A-Za-z]/.test(r) && !/^[0-9]+[A-Za-z]{0,2}$/.test(r) && entropy(r) >= 3) return true;
    if (r.length >= 24 && /[a-z]/.test(r) && /[A-Z]/.test(r) && !CASE_WORDS.test(r) && entropy(r) >= 3.5) return true;
  }
  return false;
}

/** After `=`, `:` or `=>` (an assignment, a key, an option's value, a query parameter). */
const ASSIGNED = /(?:=>?|:)[ \t]*["']?(?<secret>[A-Za-z0-9+/=_.~-]{16,})/dg;

function collectKeyLike(text: string, out: Ranges): void {
  ASSIGNED.lastIndex = 0;
  for (let m = ASSIGNED.exec(text); m !== null; m = ASSIGNED.exec(text)) {
    const v = m.groups!.secret!;
    const span = m.indices!.groups!.secret!;
    // A URL after its scheme's colon is the userinfo rule's, not a value.
    if (v.startsWith("//")) continue;
    if (looksLikeKey(v)) out.push(span[0], span[1]);
  }
}

// ---- URL userinfo ----

/** `scheme://userinfo@host`, also JSON-escaped (`https:\/\/`) and scheme-relative; the last `@` of the authority ends the userinfo. */
const USERINFO = /(?:\/\/|\\\/\\\/)(?<info>[^\s/?#'"<>\\]*)@/dg;
/** A user name that names nobody's secret: lower-case letters, digits (few), dot, dash, underscore. */
const PLAIN_USER = /^[a-z][a-z0-9._-]{0,31}$/;

function plainUser(u: string): boolean {
  return PLAIN_USER.test(u) && (u.match(/[0-9]/g)?.length ?? 0) <= 4 && !looksLikeKey(u);
}

function collectUserinfo(text: string, out: Ranges): void {
  USERINFO.lastIndex = 0;
  for (let m = USERINFO.exec(text); m !== null; m = USERINFO.exec(text)) {
    const info = m.groups!.info!;
    const [start, end] = m.indices!.groups!.info!;
    if (info.length === 0) continue;
    const colon = info.indexOf(":");
    if (colon < 0) {
      if (!plainUser(info)) out.push(start, end);
      continue;
    }
    if (colon + 1 < info.length) out.push(start + colon + 1, end);
    if (colon > 0 && !plainUser(info.slice(0, colon))) out.push(start, start + colon);
  }
}

// ---- the redactor ----

const FORMATS = SECRET_FORMATS.formats;
const OPTIONS = optionRules(SECRET_FORMATS.options);

/** One pass for the common case, a text that holds no keyword at all: then no format or option rule runs. */
function anyOf(keywords: Iterable<string>): RegExp {
  return new RegExp([...new Set(keywords)].map(literal).join("|"));
}
const ANY_FORMAT = anyOf(FORMATS.flatMap((f) => f.keywords));
const ANY_OPTION = anyOf(OPTIONS.flatMap((o) => o.keywords));

function hasAny(lower: string, keywords: readonly string[]): boolean {
  for (const k of keywords) if (lower.includes(k)) return true;
  return false;
}

/** Where the secrets in `text` are: merged, sorted [start, end) pairs. */
export function secretRanges(text: string): Ranges {
  const found: Ranges = [];
  const lower = text.toLowerCase();
  if (ANY_FORMAT.test(lower)) for (const f of FORMATS) if (hasAny(lower, f.keywords)) collectFormat(f.re, f.hasSecretGroup, text, found);
  if (ANY_OPTION.test(lower))
    for (const o of OPTIONS) {
      if (!hasAny(lower, o.keywords)) continue;
      o.re.lastIndex = 0;
      for (let m = o.re.exec(text); m !== null; m = o.re.exec(text)) {
        if (o.positional) collectPositional(m, found);
        else {
          const span = m.indices?.groups?.secret;
          if (span) found.push(span[0], span[1]);
        }
      }
    }
  const assigns = text.includes("=") || text.includes(":");
  if (assigns || text.includes("-")) collectNamed(text, found);
  if (assigns) collectKeyLike(text, found);
  if (text.includes("@")) collectUserinfo(text, found);
  return merge(found);
}

function merge(r: Ranges): Ranges {
  if (r.length === 0) return r;
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < r.length; i += 2) pairs.push([r[i]!, r[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: Ranges = [pairs[0]![0], pairs[0]![1]];
  for (const [s, e] of pairs.slice(1)) {
    if (s <= out[out.length - 1]!) out[out.length - 1] = Math.max(out[out.length - 1]!, e);
    else out.push(s, e);
  }
  return out;
}

export function redact(text: string): string {
  if (text.length === 0) return text;
  const r = secretRanges(text);
  if (r.length === 0) return text;
  let out = "";
  let at = 0;
  for (let i = 0; i < r.length; i += 2) {
    out += text.slice(at, r[i]) + REPLACEMENT;
    at = r[i + 1]!;
  }
  return out + text.slice(at);
}

/** Redact every string inside a JSON-like value. */
export function redactValue(value: unknown): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = isSecretName(k) && typeof v === "string" ? REPLACEMENT : redactValue(v);
    return out;
  }
  return value;
}
