// Secret redaction for anything that leaves the gate: audit entries, status text, and (later)
// reviewer input. Patterns are data-like and deliberately broad: a false redaction costs a
// little context, a missed one leaks a credential (P11).

import { isSecretName } from "./secret-names.ts";

const REPLACEMENT = "[REDACTED]";

const PATTERNS: readonly RegExp[] = [
  // PEM private keys, whole block.
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  // JSON Web Tokens.
  /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\b/g,
  // Authorization headers and bearer tokens.
  /\b(authorization\s*[:=]\s*)(bearer|basic|token)?\s*[^\s'"]+/gi,
  /\bbearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  // Well-known key shapes: OpenAI/Anthropic, GitHub, Slack, AWS, Google, Stripe, npm.
  /\b(sk|rk|pk)-(ant-|proj-|live_|test_)?[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\b(AKIA|ASIA)[A-Z0-9]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bnpm_[A-Za-z0-9]{30,}/g,
  // user:password@ in URLs.
  /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:)[^@\s/]+@/gi,
  // Basic auth on the command line: curl -u user:password, --user user:password.
  /((?:^|\s)(?:-u|--user)(?:\s+|=)["']?[^\s:'"]+:)[^\s'"]+/g,
];

/**
 * Values that follow a secret's name (secret-names.ts): `NAME=value` and `NAME: value` (env, .env,
 * YAML), `"api_key": "..."` in JSON or a dict literal, and `--token value` on a command line.
 */
const NAMED: readonly RegExp[] = [
  /\b([A-Za-z_][A-Za-z0-9_]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s'"]+)/g,
  /(["'])([A-Za-z0-9_-]+)\1(\s*:\s*)("[^"]*"|'[^']*')/g,
  /((?:^|\s)--?)([A-Za-z0-9][A-Za-z0-9-]*)(\s+)("[^"]*"|'[^']*'|[^\s'"<>|&;-][^\s'"]*)/g,
];

function redactNamed(text: string): string {
  let out = text.replace(NAMED[0]!, (m, name: string, sep: string) => (isSecretName(name) ? `${name}${sep}${REPLACEMENT}` : m));
  out = out.replace(NAMED[1]!, (m, q: string, name: string, sep: string) => (isSecretName(name) ? `${q}${name}${q}${sep}${REPLACEMENT}` : m));
  return out.replace(NAMED[2]!, (m, dashes: string, name: string, sep: string) => (isSecretName(name) ? `${dashes}${name}${sep}${REPLACEMENT}` : m));
}

export function redact(text: string): string {
  let out = text;
  for (const re of PATTERNS) {
    out = out.replace(re, (match: string, ...groups: unknown[]) => {
      const prefix = typeof groups[0] === "string" && match.startsWith(groups[0]) && groups.length > 2 ? groups[0] : "";
      return prefix + REPLACEMENT + (match.endsWith("@") && prefix ? "@" : "");
    });
  }
  // Last: the shapes above know where a header's or a URL's secret ends.
  return redactNamed(out);
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
