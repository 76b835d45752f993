// Secret redaction for anything that leaves the gate: audit entries, status text, and (later)
// reviewer input. Patterns are data-like and deliberately broad: a false redaction costs a
// little context, a missed one leaks a credential (P11).

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
  // NAME_KEY=..., NAME_TOKEN=..., NAME_SECRET=..., PASSWORD=... assignments (env, .env, CLI flags).
  /\b([A-Za-z0-9_]*(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)[A-Za-z0-9_]*\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s'"]+)/gi,
  // user:password@ in URLs.
  /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:)[^@\s/]+@/gi,
  // "api_key": "..." and 'token': '...' inside text that holds JSON or a dict literal.
  /((["'])[A-Za-z0-9_-]*(?:key|token|secret|password|passwd|credentials?)[A-Za-z0-9_-]*\2\s*:\s*)("[^"]*"|'[^']*')/gi,
  // Credential flags whose value follows after a space: --token X, --api-key X, --password X.
  /((?:^|\s)--?[A-Za-z0-9-]*(?:token|password|passwd|secret|api-?key|access-?key|authorization)[A-Za-z0-9-]*\s+)("[^"]*"|'[^']*'|[^\s'"<>|&;-][^\s'"]*)/gi,
  // Basic auth on the command line: curl -u user:password, --user user:password.
  /((?:^|\s)(?:-u|--user)(?:\s+|=)["']?[^\s:'"]+:)[^\s'"]+/g,
];

export function redact(text: string): string {
  let out = text;
  for (const re of PATTERNS) {
    out = out.replace(re, (match: string, ...groups: unknown[]) => {
      const prefix = typeof groups[0] === "string" && match.startsWith(groups[0]) && groups.length > 2 ? groups[0] : "";
      return prefix + REPLACEMENT + (match.endsWith("@") && prefix ? "@" : "");
    });
  }
  return out;
}

/** Redact every string inside a JSON-like value. */
export function redactValue(value: unknown): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = /(key|token|secret|password|authorization)/i.test(k) && typeof v === "string" ? REPLACEMENT : redactValue(v);
    return out;
  }
  return value;
}
