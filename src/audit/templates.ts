// What the audit may keep of a request: a bash command as a template and a path as a class.
//
// The audit lives on the user's disk for months and feeds rule suggestions, so it keeps only the
// shape a rule could match (`git status --short`, `npm test -- --token *`) and never a word that
// could carry a path, a URL, a credential or a value the user typed. The test is one-sided: a word
// stays only when it is short, plain and matches nothing the redaction knows; everything else is
// `*`. A template that says too little costs a suggestion; one that says too much leaks.

import { resolve } from "node:path";
import { extractCommands, type Arg, type SimpleCommand } from "../policy/shell/parse.ts";
import { classifyWrite, isIdentitySecret, isWithin, type Places } from "../policy/places.ts";
import { redact } from "../request/redact.ts";
import { isSecretName } from "../request/secret-names.ts";

export const STAR = "*";

/** The template of a command the parser cannot read: nothing of it is trusted to be a plain word. */
export const UNREADABLE_TEMPLATE = STAR;

// Long enough for subcommands and package names, short enough that an identifier-like token does not pass.
const MAX_WORD = 32;
const PLAIN = /^[A-Za-z0-9][A-Za-z0-9_+-]*$/;
// A cluster of short options (`-la`, `-xzf`, `-euxo`): at five letters and more a word after one
// dash is as likely an option with its value glued on (`-psecret`, `-mfix`), so only the few single-
// dash options the suggestions must see (suggest.ts RUNNING_OPTIONS, find's actions) stay.
const SHORT_OPTIONS = /^-[A-Za-z]{1,4}$/;
const SINGLE_DASH_WORDS: ReadonlySet<string> = new Set(["-exec", "-execdir", "-okdir", "-delete", "-print", "-iname", "-maxdepth", "-mindepth", "-prune"]);
const LONG_OPTION = /^--([A-Za-z0-9][A-Za-z0-9-]*)$/;
const LONG_OPTION_WITH_VALUE = /^(--([A-Za-z0-9][A-Za-z0-9-]*))=/;
const ASSIGNMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The rule for a bare word, made of segments split at `-`, `_` and `+`: a segment is letters in a
 * word's case shape (`status`, `HEAD`, `Debug`, `assembleDebug`, not `wJalrXUtn`) of at most 16,
 * a number of at most three digits (`chmod 755`, `sleep 30`), or a letter-digit mix of at most four
 * characters (`s3`, `ec2`, `e2e`, `k8s`, `utf8`); the word has at most three digits in all. So a
 * password with a digit (`hunter2`, `Passw0rd1`), a number (a PIN, a card, a phone, an id), a hex or
 * base64 token and a random string are `*`. A program name (the first word) may mix more
 * (`python3`, `sha256sum`): it names something installed, not a value the user typed.
 */
const MAX_SEGMENT = 16;
const CASE_SHAPE = /^(?:[a-z]+|[A-Z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]{2,})*)$/;
const PROGRAM_MIX = /^[A-Za-z]+[0-9]{1,3}[A-Za-z]*$/;

function isPlainSegment(seg: string, program: boolean): boolean {
  if (seg.length === 0) return true;
  if (/^[0-9]+$/.test(seg)) return seg.length <= 3;
  if (/^[A-Za-z]+$/.test(seg)) return seg.length <= MAX_SEGMENT && CASE_SHAPE.test(seg);
  return program ? seg.length <= 12 && PROGRAM_MIX.test(seg) : seg.length <= 4;
}

/** Whether a word is one a rule could name, by its shape alone (see above). */
function hasPlainShape(w: string, program = false): boolean {
  if (w.length === 0 || w.length > MAX_WORD || !PLAIN.test(w)) return false;
  if ((w.match(/[0-9]/g)?.length ?? 0) > 3) return false;
  return w.split(/[-_+]/).every((seg) => isPlainSegment(seg, program));
}

/** Whether a word may stay as it is: a subcommand, a script name, a package name. */
function isSafeWord(w: string, program = false): boolean {
  if (!hasPlainShape(w, program)) return false;
  if (isSecretName(w) && /\d/.test(w)) return false;
  return redact(w) === w;
}

/** An option's name without its dashes, under the bare words' rule. */
function isSafeOptionName(name: string): boolean {
  return isSafeWord(name) && redact(`--${name}`) === `--${name}`;
}

/**
 * A name another extension or the model gave (a tool, an MCP tool `server:tool`, a skill, a
 * resolution code): kept only when each part between colons is a plain word by the same rule, so
 * no token, host or address rides in through it.
 */
export function isPlainName(s: string): boolean {
  if (typeof s !== "string" || s.length === 0 || s.length > 64) return false;
  const parts = s.split(":");
  return parts.length <= 3 && parts.every((p) => isSafeWord(p));
}

/** One argument word, given whether the word before it was an option that may take a value. */
function argTemplate(a: Arg, afterOption: boolean): { word: string; option: boolean } {
  const t = a.text;
  // Quotes, expansions, globs, escapes: only the source text is compared, and any of them makes it not plain.
  if (t === "--") return { word: t, option: false };
  if (SHORT_OPTIONS.test(t) || SINGLE_DASH_WORDS.has(t)) return { word: t, option: true };
  const long = LONG_OPTION.exec(t);
  if (long) return isSafeOptionName(long[1]!) ? { word: t, option: true } : { word: STAR, option: false };
  const withValue = LONG_OPTION_WITH_VALUE.exec(t);
  if (withValue) return { word: isSafeOptionName(withValue[2]!) ? `${withValue[1]}=${STAR}` : STAR, option: false };
  // `--token abc`, `-m fix`: whether an option takes the next word is the program's business, so any may.
  if (afterOption) return { word: STAR, option: false };
  return { word: isSafeWord(t) ? t : STAR, option: false };
}

function simpleTemplate(c: SimpleCommand): string {
  const out: string[] = [];
  // A variable's name is the user's to choose: it stays under the bare words' rule (`GITHUB_TOKEN`), not any identifier.
  for (const a of c.assigns) out.push(`${ASSIGNMENT_NAME.test(a.name) && isSafeWord(a.name) ? a.name : STAR}=${STAR}`);
  let afterOption = false;
  c.argv.forEach((a, i) => {
    if (i === 0) {
      // A program run by path (`./scripts/x`, `/usr/bin/env`) names a location: only a bare name stays.
      out.push(isSafeWord(a.text, true) ? a.text : STAR);
      return;
    }
    const { word, option } = argTemplate(a, afterOption);
    out.push(word);
    afterOption = option;
  });
  for (const r of c.redirs) out.push(`${typeof r.fd === "number" ? r.fd : ""}${/^[<>&|]+$/.test(r.op) ? r.op : ">"}${STAR}`);
  return out.join(" ");
}

/** The separator bash reads before command `c` given the one before it. */
function joiner(prev: SimpleCommand, c: SimpleCommand): string {
  if (c.pipeline === prev.pipeline && c.stage > prev.stage) return " | ";
  if (c.link && prev.link && c.link.chain === prev.link.chain && c.link.index > 0) return c.link.andFrom < c.link.index ? " && " : " || ";
  return prev.background ? " & " : " ; ";
}

/**
 * The template of a bash command: each simple command with its assignments' values, option values,
 * paths, URLs, quoted and expanded words as `*`, joined by the operators that joined them.
 * Commands inside substitutions are left out: the word they stand in is `*` already.
 */
export function bashTemplate(command: string): string {
  let ex: ReturnType<typeof extractCommands>;
  try {
    // A fixed home: `~` must not expand into the user's home folder, which the template never names anyway.
    ex = extractCommands(command, { home: "/nonexistent-home" });
  } catch {
    return UNREADABLE_TEMPLATE;
  }
  if (!ex.ok) return UNREADABLE_TEMPLATE;
  const top = ex.commands.filter((c) => !c.inSubstitution && c.inFunction === undefined);
  if (top.length === 0) return UNREADABLE_TEMPLATE;
  let out = simpleTemplate(top[0]!);
  for (let i = 1; i < top.length; i++) out += joiner(top[i - 1]!, top[i]!) + simpleTemplate(top[i]!);
  if (top.at(-1)!.background) out += " &";
  if (ex.truncated) out += " ; *";
  return out;
}

export type SurfaceClass = "workspace" | "temp" | "home" | "external" | "sensitive" | "unknown";
export const SURFACE_CLASSES: readonly SurfaceClass[] = ["workspace", "temp", "home", "external", "sensitive", "unknown"];

/**
 * The class of a path a tool touches. Lexical only (no file system): the audit runs after the
 * decision and must not look at the disk again; the gate already did, with the real spelling.
 */
export function surfaceClass(path: string | undefined, places: Places): SurfaceClass {
  if (typeof path !== "string" || path.length === 0 || path.includes("\0") || /[$`]/.test(path)) return "unknown";
  const lexical = resolve(places.workspaceLexical, path.startsWith("~/") || path === "~" ? places.home + path.slice(1) : path);
  // The workspace's own symlinked spelling (macOS /tmp -> /private/tmp) is mapped, other links are not followed.
  const p = isWithin(places.workspaceLexical, lexical) ? places.workspace + lexical.slice(places.workspaceLexical.length) : lexical;
  try {
    if (isIdentitySecret(places, lexical, p)) return "sensitive";
    const target = classifyWrite(places, lexical, p, { fileLinks: () => 1 });
    switch (target.kind) {
      case "self":
      case "protected":
      case "persistence":
      case "raw-device":
      case "hardlinked":
        return "sensitive";
      case "inside":
        return target.root === "workspace" ? "workspace" : "temp";
      case "harmless-device":
        return "external";
      case "outside":
        return isWithin(places.home, p) || isWithin(places.homeReal, p) ? "home" : "external";
    }
  } catch {
    return "unknown";
  }
}
