// A small reader and evaluator for the Seatbelt profiles src/sandbox/macos/profile.ts generates,
// so tests can ask what a profile decides instead of searching its text. Seatbelt itself cannot
// run on these machines. The model follows what Apple's profiles and the sandbox projects that
// read them rely on: `(deny default)` first, then the LAST rule that matches an operation decides;
// an operation ending in `*` covers every operation it prefixes; several filters in one rule match
// when any does. A regex is read as a JavaScript RegExp: the profile only emits the part of POSIX
// extended syntax both share (classes, groups, `|`, `*`, `?`, `^`, `$`, backslash escapes), and
// the reader refuses anything else it meets, so a rule this evaluator cannot read fails the test.

export type Sexp = string | { readonly str: string } | readonly Sexp[];

/** Parse SBPL text into s-expressions: lists, symbols, "strings" (with \\ and \" escapes) and #"raw strings". */
export function parseSbpl(text: string): Sexp[] {
  let i = 0;
  const out: Sexp[] = [];
  const stack: Sexp[][] = [out];
  while (i < text.length) {
    const c = text[i]!;
    if (c === ";") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (/\s/.test(c)) i++;
    else if (c === "(") {
      const list: Sexp[] = [];
      stack.at(-1)!.push(list);
      stack.push(list);
      i++;
    } else if (c === ")") {
      if (stack.length === 1) throw new Error(`unbalanced ) at ${i}`);
      stack.pop();
      i++;
    } else if (c === '"' || (c === "#" && text[i + 1] === '"')) {
      const raw = c === "#";
      i += raw ? 2 : 1;
      let s = "";
      for (;;) {
        if (i >= text.length) throw new Error("unterminated string");
        const d = text[i]!;
        if (d === '"') break;
        if (d === "\\" && !raw) {
          const e = text[i + 1];
          if (e !== "\\" && e !== '"') throw new Error(`unknown string escape \\${e} at ${i}`);
          s += e;
          i += 2;
          continue;
        }
        if (d.charCodeAt(0) < 0x20) throw new Error(`control character in a string at ${i}`);
        s += d;
        i++;
      }
      i++;
      stack.at(-1)!.push({ str: s });
    } else {
      let s = "";
      while (i < text.length && !/[\s()";]/.test(text[i]!)) s += text[i++];
      stack.at(-1)!.push(s);
    }
  }
  if (stack.length !== 1) throw new Error("unbalanced (");
  return out;
}

/** What one operation is asked about. */
export interface Query {
  readonly op: string;
  /** A file path, for file-* operations. */
  readonly path?: string;
  /** The attribute name, for file-*-xattr. */
  readonly xattr?: string;
  /** The service, for mach-lookup. */
  readonly machName?: string;
}

export interface Rule {
  readonly action: "allow" | "deny";
  readonly ops: readonly string[];
  readonly filters: readonly Sexp[];
}

const OPS = /^[a-z][a-z0-9-]*\*?$/;

/** The rules of a profile, in order; `(version 1)` first, refused if anything else is not a rule. */
export function rulesOf(text: string): Rule[] {
  const forms = parseSbpl(text);
  const first = forms[0];
  if (!Array.isArray(first) || first[0] !== "version" || first[1] !== "1") throw new Error("a profile starts with (version 1)");
  return forms.slice(1).map((f) => {
    if (!Array.isArray(f) || (f[0] !== "allow" && f[0] !== "deny")) throw new Error(`not a rule: ${JSON.stringify(f)}`);
    const ops: string[] = [];
    let k = 1;
    for (; k < f.length && typeof f[k] === "string"; k++) {
      const op = f[k] as string;
      if (!OPS.test(op)) throw new Error(`not an operation: ${op}`);
      ops.push(op);
    }
    if (ops.length === 0) throw new Error(`a rule without an operation: ${JSON.stringify(f)}`);
    const filters = f.slice(k);
    for (const x of filters) checkFilter(x);
    return { action: f[0], ops, filters };
  });
}

const str = (x: Sexp | undefined): string => {
  if (x === undefined || typeof x === "string" || Array.isArray(x)) throw new Error(`expected a string, got ${JSON.stringify(x)}`);
  return (x as { str: string }).str;
};

/** A regex the profile emits, as a JavaScript RegExp; refused when it uses syntax outside the shared subset. */
export function sbplRegex(body: string): RegExp {
  // Only these escapes: a backslash before a character that is special in both dialects.
  for (let i = 0; i < body.length; i++)
    if (body[i] === "\\") {
      if (!/[.[\]()*+?{}|^$\\/-]/.test(body[i + 1] ?? "")) throw new Error(`regex escape \\${body[i + 1]} is not in the shared subset: ${body}`);
      i++;
    }
  if (/\(\?|\\[dwsbDWSB]|\{/.test(body)) throw new Error(`regex syntax outside the shared subset: ${body}`);
  return new RegExp(body);
}

function checkFilter(f: Sexp): void {
  if (!Array.isArray(f)) throw new Error(`a filter is a list: ${JSON.stringify(f)}`);
  const [head, ...args] = f;
  switch (head) {
    case "subpath":
    case "literal":
      if (args.length !== 1 || !str(args[0]).startsWith("/")) throw new Error(`${head} takes one absolute path`);
      return;
    case "regex":
      if (args.length !== 1) throw new Error("regex takes one string");
      sbplRegex(str(args[0]));
      return;
    case "xattr":
    case "global-name":
      if (args.length !== 1) throw new Error(`${head} takes one string`);
      str(args[0]);
      return;
    case "target":
      if (args.length !== 1 || args[0] !== "same-sandbox") throw new Error("target same-sandbox only");
      return;
    case "require-all":
    case "require-any":
      if (args.length === 0) throw new Error(`${head} without filters`);
      for (const a of args) checkFilter(a);
      return;
    case "require-not":
      if (args.length !== 1) throw new Error("require-not takes one filter");
      checkFilter(args[0]!);
      return;
    default:
      throw new Error(`unknown filter ${String(head)}`);
  }
}

function matches(f: Sexp, q: Query): boolean {
  const [head, ...args] = f as readonly Sexp[];
  switch (head) {
    case "subpath": {
      const p = str(args[0]);
      return q.path !== undefined && (q.path === p || q.path.startsWith(p.endsWith("/") ? p : `${p}/`));
    }
    case "literal":
      return q.path === str(args[0]);
    case "regex":
      return q.path !== undefined && sbplRegex(str(args[0])).test(q.path);
    case "xattr":
      return q.xattr === str(args[0]);
    case "global-name":
      return q.machName === str(args[0]);
    case "target":
      return true;
    case "require-all":
      return args.every((a) => matches(a, q));
    case "require-any":
      return args.some((a) => matches(a, q));
    case "require-not":
      return !matches(args[0]!, q);
    default:
      throw new Error(`unknown filter ${String(head)}`);
  }
}

const covers = (pattern: string, op: string) => pattern === op || (pattern.endsWith("*") && op.startsWith(pattern.slice(0, -1)));

/** What the profile decides for one operation: the last matching rule, else the default rule. */
export function decide(rules: readonly Rule[], q: Query): "allow" | "deny" {
  let verdict: "allow" | "deny" | undefined;
  let fallback: "allow" | "deny" | undefined;
  for (const r of rules) {
    if (r.ops.includes("default")) {
      fallback = r.action;
      continue;
    }
    if (!r.ops.some((o) => covers(o, q.op))) continue;
    if (r.filters.length === 0 || r.filters.some((f) => matches(f, q))) verdict = r.action;
  }
  const v = verdict ?? fallback;
  if (v === undefined) throw new Error("a profile without (deny default) or (allow default)");
  return v;
}
