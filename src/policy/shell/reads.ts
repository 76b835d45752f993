// Judging a read of a path: identity secrets need review, and a credential file read is a
// secret the script may send on. Also whether a word of the script names a secret at all.

import { basename, isAbsolute, resolve } from "node:path";
import pathData from "../data/paths.json" with { type: "json" };
import { containsIdentitySecret, isHarmlessDevice, isIdentitySecret, memo } from "../places.ts";
import type { ShellEnv } from "./env.ts";
import { finding, type Finding } from "./finding.ts";
import type { Analyzer, Invocation } from "./invocation.ts";
import { expandGlob, globToRegExp, locate, noteJudged, noteNamed } from "./locate.ts";
import type { Arg } from "./parse.ts";
import { spend, type ScriptState } from "./script-state.ts";

const SECRET_FILE_PATTERNS = pathData.secretFilePatterns.map((p) => new RegExp(p, "i"));

/** A file whose contents are credentials even inside the workspace (.env, keys). */
export function isSecretishFile(p: string): boolean {
  return secretishName(basename(p));
}
const secretishName = memo((name: string) => SECRET_FILE_PATTERNS.some((r) => r.test(name)));

/** The finding for reading a path argument: identity secrets need review. */
export function judgeRead(env: ShellEnv, state: ScriptState, arg: Arg, recursive: boolean, markSecretish = true): Finding | undefined {
  // `/proc/$$/environ`, `/proc/self/task/*/environ`: some process's environment, whichever it is.
  if (arg.value === null ? /\/proc\/\S*\/environ\b/.test(arg.text) : arg.glob && /^\/proc\/.*\/environ$/.test(arg.value))
    return finding("identity-secret", `reads ${arg.text}, a process environment that holds credentials`);
  if (arg.value === null) {
    // A run-time path is built from the script's own words: if one names a secret, so may the path.
    const named = namesSecret(env, state);
    return named === undefined ? undefined : finding("identity-secret", `reads a path only known at run time (${arg.text}) in a command that names ${named}`);
  }
  if (arg.value === "" || arg.value === "-") return undefined;
  // `< /dev/null`, `cat /dev/stdin`: as for writes, a device named as such is no file to look up
  // (and /dev/stdin or /dev/fd/N would resolve through the gate's own descriptors, not the command's).
  if (!arg.glob && isHarmlessDevice(arg.value)) return undefined;
  if (arg.glob && globMayNameSecret(env, state, arg.value, recursive))
    return finding("identity-secret", `reads ${arg.value}, a pattern that matches identity secrets`);
  // A glob reads its matches, each where it leads (a match may be a link to a secret); the
  // pattern's directory stands for matches that do not exist yet and is read by no one.
  const located = arg.glob ? expandGlob(state, arg.value, false) : locate(state, arg.value);
  if (state.judged) {
    noteJudged(state, located, "read");
    if (arg.glob) noteNamed(state, arg.value, "read");
  }
  if (!located) return undefined;
  for (const p of located) {
    if (isIdentitySecret(env.places, p.lexical, p.real)) return finding("identity-secret", `reads ${arg.value}, an identity secret`);
    if (recursive && containsIdentitySecret(env.places, p.lexical, p.real))
      return finding("identity-secret", `reads everything under ${arg.value}, which holds identity secrets`);
    if (markSecretish && isSecretishFile(p.real)) state.secretSource ??= arg.value;
  }
  return undefined;
}

/** The first word of the script that names an identity secret or a directory holding one, if any. */
export function namesSecret(env: ShellEnv, state: ScriptState): string | undefined {
  const memo = state.secretWord;
  // The cwds hold during one pass, so a value met again (the same path in several commands) has its answer.
  const checked = new Set<string>();
  for (; memo.checked < state.words.length && memo.found === undefined; memo.checked++) {
    const w = state.words[memo.checked]!;
    if (w.value === null) continue;
    // `env HOME=/x cmd`, `make KEY=~/.ssh/k`: an assignment given as an argument names its value as
    // a prefix assignment does (the parser lists a prefix assignment's value as a word of its own).
    const assigned = w.value.includes("=") ? ASSIGNMENT.exec(w.value) : null;
    for (const v of assigned ? [w.value, assigned[1]!] : [w.value]) {
      // Only words that look like paths: a bare word is a path only after a `cd`, which is read statically.
      if (v === "" || !(v.includes("/") || v.startsWith("."))) continue;
      const key = w.glob ? `\0${v}` : v;
      if (checked.has(key)) continue;
      checked.add(key);
      if (w.glob ? globMayNameSecret(env, state, v, true) : holdsSecret(env, state, v)) {
        memo.found = v;
        break;
      }
    }
  }
  return memo.found;
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=(.*)$/s;

/** A URL: a path only as a relative name no one gives a file. */
export const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Code and text (quotes, brackets, separators): no listed secret's name has these, and a link so
 * named to a secret was a read of the secret when it was made, so such a word is not looked up.
 * Its text may still lie under a secret (`$HOME/.ssh/id_rsa (copy)`): see secretByText.
 */
export const TEXT_LIKE = /[()[\]{};|<>'"`\n]/;

/**
 * Whether a static path is, lies under or holds an identity secret by its text alone, resolved
 * from each possible cwd without a look-up (undefined when a cwd is unknown).
 */
export function secretByText(env: ShellEnv, state: ScriptState, value: string, holds: boolean): boolean | undefined {
  const { places } = env;
  for (const cwd of isAbsolute(value) ? ["/"] : state.cwds) {
    if (cwd === null) return undefined;
    const lexical = resolve(cwd, value);
    if (isIdentitySecret(places, lexical, lexical) || (holds && containsIdentitySecret(places, lexical, lexical))) return true;
  }
  return false;
}

function holdsSecret(env: ShellEnv, state: ScriptState, value: string): boolean {
  if (URL_LIKE.test(value)) return false;
  if (TEXT_LIKE.test(value)) return secretByText(env, state, value, true) === true;
  return (locate(state, value) ?? []).some((p) => isIdentitySecret(env.places, p.lexical, p.real) || containsIdentitySecret(env.places, p.lexical, p.real));
}

/**
 * Whether a glob may match an identity secret, compared component by component with every listed
 * secret (the glob's directory part may be a pattern too: `~/.s?h/id_*`). A shorter pattern
 * names a directory above a secret, which only a recursive reader reaches.
 */
export function globMayNameSecret(env: ShellEnv, state: ScriptState, pattern: string, recursive: boolean): boolean {
  const secrets = secretParts(env.places.identitySecrets);
  for (const cwd of isAbsolute(pattern) ? ["/"] : state.cwds) {
    if (cwd === null) return false;
    spend(state, 2, "matching globs with identity secrets");
    const parts = resolve(cwd, pattern).split("/").filter(Boolean).map(globToRegExp);
    for (const s of secrets) {
      const n = Math.min(parts.length, s.length);
      let match = true;
      for (let i = 0; i < n && match; i++) match = parts[i]!.test(s[i]!);
      if (match && (parts.length >= s.length || recursive)) return true;
    }
  }
  return false;
}

const secretPartsCache = new WeakMap<readonly string[], readonly (readonly string[])[]>();
function secretParts(list: readonly string[]): readonly (readonly string[])[] {
  let parts = secretPartsCache.get(list);
  if (!parts) secretPartsCache.set(list, (parts = list.map((secret) => secret.split("/").filter(Boolean))));
  return parts;
}

/** The reads of a command's arguments that are not options (`recursive`: it reads whole directories). */
export function judgeReadOperands(inv: Invocation, an: Analyzer, recursive: boolean): Finding[] {
  const out: Finding[] = [];
  for (const a of inv.args) {
    if (a.value?.startsWith("-")) continue;
    const r = judgeRead(an.env, an.state, a, recursive);
    if (r) out.push(r);
  }
  return out;
}
