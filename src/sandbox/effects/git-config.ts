// Files in the workspace that git's configuration makes git run or read as instructions: the hooks
// folder `core.hooksPath` names, included config files, and the programs of filters, diff and merge
// drivers, fsmonitor, pager, editor, credential helpers and `!` aliases. A command that changes one
// of them would run code on the host the next time the user runs git, so such changes are held
// like changes under a protected name. Read without running git; every file is bounded.

import { dirname, isAbsolute, join, resolve } from "node:path";
import { isWithin } from "../../policy/places.ts";
import { readTextBounded } from "./stage-read.ts";

const MAX_CONFIG_BYTES = 1 << 20;
const MAX_INCLUDES = 16;

/** Keys (lower case, with `*` for a subsection) whose value names a program, a hooks folder or a file git reads as config. */
const PROGRAM_KEYS = [
  /^core\.hookspath$/,
  /^include\.path$/,
  /^includeif\..*\.path$/,
  /^core\.fsmonitor$/,
  /^core\.pager$/,
  /^core\.editor$/,
  /^core\.sshcommand$/,
  /^core\.askpass$/,
  /^core\.attributesfile$/,
  /^sequence\.editor$/,
  /^gpg\.(.*\.)?program$/,
  /^credential\.(.*\.)?helper$/,
  /^filter\..*\.(clean|smudge|process)$/,
  /^diff\..*\.(textconv|command)$/,
  /^merge\..*\.driver$/,
  /^alias\..*$/,
  /^pager\..*$/,
  /^interactive\.difffilter$/,
];

interface Entry {
  readonly key: string;
  readonly value: string;
}

/** Parse git's config format: sections, subsections in quotes, key = value with quotes and escapes. */
export function parseGitConfig(text: string): Entry[] {
  const out: Entry[] = [];
  let section = "";
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    // A value continued with a trailing backslash.
    while (/\\\s*$/.test(line) && i + 1 < lines.length) line = line.replace(/\\\s*$/, "") + lines[++i]!;
    const t = line.trim();
    if (t === "" || t.startsWith("#") || t.startsWith(";")) continue;
    const sec = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\](.*)$/.exec(t);
    if (sec) {
      section = sec[2] !== undefined ? `${sec[1]!.toLowerCase()}.${sec[2].replace(/\\(.)/g, "$1")}` : sec[1]!.toLowerCase();
      const rest = sec[3]!.trim();
      if (rest === "" || rest.startsWith("#") || rest.startsWith(";")) continue;
      lines[i] = rest;
      i--;
      continue;
    }
    const kv = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(t);
    if (!kv) continue;
    out.push({ key: `${section}.${kv[1]!.toLowerCase()}`, value: unquote(kv[2] ?? "true") });
  }
  return out;
}

function unquote(raw: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '"') quoted = !quoted;
    else if (c === "\\" && i + 1 < raw.length) {
      const n = raw[++i]!;
      out += n === "n" ? "\n" : n === "t" ? "\t" : n;
    } else if (!quoted && (c === "#" || c === ";")) break;
    else out += c;
  }
  return out.trim();
}

function readBounded(p: string): string | undefined {
  return readTextBounded(p, MAX_CONFIG_BYTES);
}

function expandHome(p: string, home: string): string {
  return p === "~" ? home : p.startsWith("~/") ? join(home, p.slice(2)) : p;
}

/**
 * The paths inside `workspace` that the repository's and the user's git configuration point at.
 * Relative program paths resolve against the work tree (git runs them from there), relative
 * include paths against the including file.
 */
export function gitConfigPaths(opts: { readonly gitDir: string; readonly commonDir: string; readonly workspace: string; readonly home: string }): string[] {
  const files: string[] = [
    join(opts.home, ".gitconfig"),
    join(opts.home, ".config", "git", "config"),
    join(opts.commonDir, "config"),
    join(opts.gitDir, "config.worktree"),
  ];
  const found = new Set<string>();
  const seen = new Set<string>();
  const inWorkspace = (p: string) => isWithin(opts.workspace, p);
  for (let n = 0; n < files.length && seen.size < MAX_INCLUDES + 4; n++) {
    const file = files[n]!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readBounded(file);
    if (text === undefined) continue;
    for (const e of parseGitConfig(text)) {
      if (!PROGRAM_KEYS.some((k) => k.test(e.key))) continue;
      const isInclude = e.key === "include.path" || /^includeif\..*\.path$/.test(e.key);
      if (isInclude) {
        const p = expandHome(e.value, opts.home);
        const abs = isAbsolute(p) ? p : resolve(dirname(file), p);
        files.push(abs);
        if (inWorkspace(abs)) found.add(abs);
        continue;
      }
      if (e.key === "core.hookspath") {
        const p = expandHome(e.value, opts.home);
        const abs = isAbsolute(p) ? p : resolve(opts.workspace, p);
        if (inWorkspace(abs)) found.add(abs);
        continue;
      }
      // A command line: every word that could name a file in the workspace.
      const words = e.value
        .replace(/^!/, "")
        .split(/[\s;&|()<>'"`=]+/)
        .filter((w) => w.length > 0);
      for (const w of words) {
        if (!w.includes("/") && !w.startsWith(".")) continue;
        const p = expandHome(w, opts.home);
        const abs = isAbsolute(p) ? p : resolve(opts.workspace, p);
        if (inWorkspace(abs) && abs !== opts.workspace) found.add(abs);
      }
    }
  }
  return [...found];
}
