// What counts as the name of a secret, defined once (data/secret-names.json): the sandbox drops
// variables by it, the shell analysis calls an expansion sent over the network secret egress by
// it, and redaction hides the values of assignments, keys and options by it.

import data from "./data/secret-names.json" with { type: "json" };

const WORDS: ReadonlySet<string> = new Set(data.words);
const ENDINGS: readonly string[] = data.endings;
const KEEP: ReadonlySet<string> = new Set(data.keep);

/** A name's words: split at non-alphanumerics and lower-to-upper case changes, upper-cased. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toUpperCase()
    .split(/[^A-Z0-9]+/)
    .filter((w) => w.length > 0);
}

/** Whether `name` (a variable, a key, an option without its dashes) names a secret. */
export function isSecretName(name: string): boolean {
  if (KEEP.has(name)) return false;
  for (const w of nameWords(name)) {
    if (WORDS.has(w)) return true;
    for (const e of ENDINGS) if (w.length > e.length && w.endsWith(e)) return true;
  }
  return false;
}

/** The data's own examples that do not hold (a test keeps this empty). */
export function secretNameExampleFailures(): string[] {
  return [
    ...data.examples.secret.filter((n) => !isSecretName(n)).map((n) => `${n} should name a secret`),
    ...data.examples.notSecret.filter((n) => isSecretName(n)).map((n) => `${n} should not name a secret`),
  ];
}
