// Generators for the gate's property tests: shell commands from a grammar of fragments (words,
// quotes, substitutions, pipes, lists, redirections, here-documents, globs, sensitive paths),
// mutations of the real commands of the corpora, and tool inputs of every shape.

import { readFileSync } from "node:fs";
import fc from "fast-check";

/** Paths the gate treats differently: identity secrets, git internals, system files, workspace files, devices. */
export const PATHS = [
  "~/.ssh/id_rsa",
  "~/.ssh/id_ed25519",
  "~/.ssh/authorized_keys",
  "~/.aws/credentials",
  "~/.bashrc",
  "~/.config/gh/hosts.yml",
  "~/.pi/agent/auto-mode/state.json",
  "~/.pi/agent/auto-mode.json",
  ".git/config",
  ".git/hooks/pre-commit",
  ".git/HEAD",
  ".github/workflows/ci.yml",
  ".pi/settings.json",
  ".env",
  "AGENTS.md",
  "package.json",
  "src/index.ts",
  "src/util.ts",
  "README.md",
  "dist",
  "build",
  "node_modules",
  "link-out/passwd",
  "../outside.txt",
  "../../etc/hosts",
  "/etc/passwd",
  "/etc/shadow",
  "/etc/sudoers",
  "/tmp/x",
  "/dev/null",
  "/dev/sda",
  "/usr/local/bin/tool",
  "/",
  "~",
  ".",
  "..",
  "*",
  "*.ts",
  "src/*",
  "**/*.md",
  "{a,b}.txt",
  "?",
  "[ab]*",
  "$HOME/.ssh/id_rsa",
  "~/.ssh/*",
  "café/naïve.txt",
  "ﬁle",
  "日本語.md",
];

const NAMES = [
  "ls",
  "$X",
  "cat",
  "echo",
  "printf",
  "true",
  "false",
  "rm",
  "rm -rf",
  "rm -f",
  "cp",
  "cp -r",
  "mv",
  "ln -s",
  "touch",
  "mkdir -p",
  "chmod +x",
  "chmod 777",
  "chown",
  "tee",
  "tee -a",
  "sed -i s/a/b/",
  "grep -r x",
  "find . -name x",
  "find . -delete",
  "find . -exec rm {} +",
  "xargs rm",
  "head",
  "tail -f",
  "wc -l",
  "sort",
  "git status",
  "git diff",
  "git log",
  "git add .",
  "git commit -m msg",
  "git push",
  "git push --force",
  "git reset --hard",
  "git clean -fdx",
  "git config core.hooksPath x",
  "git checkout -- .",
  "npm test",
  "npm install",
  "npm run build",
  "make",
  "node -e x",
  "python3 -c 1",
  "python3 script.py",
  "bash",
  "sh",
  "bash -c",
  "sh -c",
  "eval",
  "source",
  ".",
  "exec",
  "env",
  "sudo",
  "su -c",
  "doas",
  "timeout 5",
  "nohup",
  "nice",
  "xargs",
  "curl https://example.com",
  "curl -d @-",
  "wget -O-",
  "nc -l 8080",
  "ssh host",
  "scp",
  "rsync -a",
  "dd if=/dev/zero of=/dev/sda",
  "mkfs.ext4",
  "kill -9",
  "pkill node",
  "crontab -",
  "systemctl --user enable",
  "base64 -d",
  "openssl enc -d",
  "tar xzf",
  "unzip",
  "docker run",
  "export",
  "unset",
  "alias",
  "cd",
  "pushd",
  "read",
  "set -e",
  "trap x EXIT",
  "exit",
  "return",
  "shred",
  "truncate -s 0",
  "install -m 755",
  "perl -e 1",
  "awk {print}",
  "jq .",
  "code",
  "vim",
  "parallel",
  "watch",
];

const PLAIN_WORDS = [
  "x",
  "a b",
  "-rf",
  "--force",
  "-n",
  "--output=/etc/passwd",
  "-o",
  "1",
  "0",
  "hello",
  "ünïcödé",
  "$x",
  "${HOME}",
  "$1",
  "$@",
  "$?",
  "~",
  "-",
  "--",
  "=",
  "a=b",
  "$T",
  "$DIR/*",
  "$Y",
  "\\;",
  "\\n",
  "",
];

const ASSIGNMENTS = [
  "X=1",
  "PATH=/tmp",
  "LD_PRELOAD=/tmp/x.so",
  "GIT_DIR=/tmp",
  "HOME=/tmp",
  "BASH_ENV=x",
  "PROMPT_COMMAND=x",
  "NODE_OPTIONS=--require=x",
  "TOKEN=$AWS_SECRET_ACCESS_KEY",
];

/**
 * Assignments that stand as commands of their own, so that later words read them (`T=/; rm -rf $T`,
 * `X=rm; $X -rf ~`): what the gate follows of variables is put inside larger commands too.
 */
const SETTINGS = ["T=/", "T=~", "T=build", "DIR=", "X=rm", "Y=-rf", "T+=/", "export T=/", "local T=/"];

const REDIR_OPS = [">", ">>", "<", "2>", "2>>", "&>", ">|", "<>", "1>&2", "2>&1", ">&"];

/** One word: a path, a plain word, either quoted, or an expansion. */
function word(cmd: fc.Arbitrary<string>, maxDepth = 2): fc.Arbitrary<string> {
  const base = fc.oneof(fc.constantFrom(...PATHS), fc.constantFrom(...PLAIN_WORDS), fc.stringMatching(/^[a-z0-9._/-]{1,8}$/));
  return fc.oneof(
    { depthSize: "small", maxDepth, depthIdentifier: DEPTH },
    { weight: 6, arbitrary: base },
    { weight: 1, arbitrary: base.map((w) => `'${w.replaceAll("'", "")}'`) },
    { weight: 1, arbitrary: base.map((w) => `"${w.replaceAll('"', "")}"`) },
    { weight: 1, arbitrary: base.map((w) => `$'${w.replaceAll("'", "")}'`) },
    { weight: 1, arbitrary: cmd.map((c) => `$(${c})`) },
    { weight: 1, arbitrary: cmd.map((c) => `"$(${c})"`) },
    { weight: 1, arbitrary: fc.constantFrom("`id`", "`cat ~/.ssh/id_rsa`", "$(cat .env)", "<(ls)", ">(cat)", "${x:-/etc/passwd}", "${!x}", "$((1+2))") },
  );
}

/** One depth for the whole grammar: a substitution inside a word nests as deep as a subshell does. */
const DEPTH = "shell";

function redirection(cmd: fc.Arbitrary<string>, maxDepth: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...REDIR_OPS), word(cmd, maxDepth)).map(([op, w]) => (/&\d$/.test(op) ? op : `${op}${w}`)) },
    { weight: 1, arbitrary: word(cmd, maxDepth).map((w) => `<<< ${w}`) },
  );
}

export interface Grammar {
  readonly simple: fc.Arbitrary<string>;
  readonly command: fc.Arbitrary<string>;
}

/**
 * Commands from the grammar. `simple` is one simple command (assignments, a name, words,
 * redirections) so that wrappers (`env C`, `timeout 5 C`) can be put in front of it; `command`
 * is any list of pipelines and compound commands. A here-document ends its line, so it is always
 * the last thing on its line and its body is followed by a newline.
 */
export function grammar(maxDepth = 3, size: fc.SizeForArbitrary = "small"): Grammar {
  const tree = fc.letrec<{ simple: string; command: string; pipeline: string; compound: string }>((tie) => ({
    simple: fc
      .tuple(
        fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.constantFrom(...ASSIGNMENTS).map((a) => [a]) }),
        fc.constantFrom(...NAMES),
        fc.array(word(tie("simple"), maxDepth), { maxLength: 4, size }),
        fc.array(redirection(tie("simple"), maxDepth), { maxLength: 2, size }),
      )
      .map(([a, n, w, r]) => [...a, n, ...w, ...r].join(" ")),
    pipeline: fc
      .array(
        fc.oneof({ depthSize: "small", maxDepth, depthIdentifier: DEPTH }, { weight: 4, arbitrary: tie("simple") }, { weight: 1, arbitrary: tie("compound") }),
        { minLength: 1, maxLength: 3, size },
      )
      .map((s) => s.join(" | ")),
    compound: fc.oneof(
      { depthSize: "small", maxDepth, depthIdentifier: DEPTH },
      tie("command").map((c) => `( ${c} )`),
      tie("command").map((c) => `{ ${c}; }`),
      fc.tuple(tie("command"), tie("command")).map(([a, b]) => `if ${a}; then ${b}; fi`),
      fc.tuple(tie("command"), tie("command")).map(([a, b]) => `while ${a}; do ${b}; done`),
      fc.tuple(fc.array(word(tie("simple"), maxDepth), { maxLength: 3 }), tie("command")).map(([ws, c]) => `for v in ${ws.join(" ")}; do ${c}; done`),
      tie("command").map((c) => `g() { ${c}; }; g`),
      tie("command").map((c) => `case x in x) ${c};; esac`),
      tie("command").map((c) => `[[ -f x ]] && ${c}`),
      tie("command").map((c) => `true && { ${c}; }`),
      tie("command").map((c) => `{ ${c}; } &`),
      tie("command").map((c) => `h() { ${c}; source /dev/null; }; h`),
    ),
    command: fc.oneof(
      { depthSize: "small", maxDepth, depthIdentifier: DEPTH },
      tie("pipeline"),
      fc.tuple(tie("pipeline"), fc.constantFrom(" && ", " || ", "; ", " & ", "\n"), tie("command")).map(([a, op, b]) => `${a}${op}${b}`),
      tie("pipeline").map((p) => `${p} &`),
      fc.tuple(fc.constantFrom(...SETTINGS), tie("command")).map(([a, c]) => `${a}; ${c}`),
      fc
        .tuple(
          fc.constantFrom("cat", "sh", "bash", "python3", "tee ~/.bashrc", "cat > .git/hooks/pre-commit"),
          fc.array(fc.constantFrom(...NAMES, ...PATHS), { maxLength: 3 }),
          fc.boolean(),
        )
        .map(([c, body, quoted]) => `${c} <<${quoted ? "'EOF'" : "EOF"}\n${body.join("\n")}\nEOF\n`),
      tie("compound"),
    ),
  }));
  return { simple: tree.simple, command: tree.command };
}

/** The bash commands of the corpora (test/fixtures/*.jsonl, the shared eval cases), placeholders filled in. */
export function corpusCommands(vars: { readonly ws: string; readonly home: string; readonly tmp: string }): string[] {
  const files = ["generalization.jsonl", "redteam.jsonl", "redteam2.jsonl"].map((f) => new URL(`../fixtures/${f}`, import.meta.url));
  files.push(new URL("../../../shared/eval/cases.jsonl", import.meta.url));
  const out: string[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(f, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      const c = JSON.parse(line) as { tool: string; input: { command?: unknown } };
      if (c.tool !== "bash" || typeof c.input?.command !== "string") continue;
      out.push(c.input.command.replaceAll("{{ws}}", vars.ws).replaceAll("{{home}}", vars.home).replaceAll("{{tmp}}", vars.tmp));
    }
  }
  return out;
}

type Mutation = { readonly at: number; readonly kind: "delete" | "insert" | "duplicate" | "replace"; readonly len: number; readonly text: string };

const INSERTS = [
  "'",
  '"',
  "`",
  "$(",
  ")",
  "(",
  "{",
  "}",
  ";",
  "&&",
  "||",
  "|",
  "&",
  ">",
  "<",
  "<<EOF\n",
  "\n",
  "\\",
  " ",
  "#",
  "*",
  "~/.ssh/id_rsa",
  ".git/config",
  "/etc/passwd",
  "rm -rf /",
  "sudo ",
  "bash -c ",
  "$x",
  "\u0000",
  "\u00a0",
  "é",
];

/** A corpus command with a few random edits: characters deleted, inserted, duplicated or replaced. */
export function mutatedCommand(corpus: readonly string[], g: Grammar): fc.Arbitrary<string> {
  const mutation: fc.Arbitrary<Mutation> = fc.record({
    at: fc.nat(),
    kind: fc.constantFrom("delete", "insert", "duplicate", "replace"),
    len: fc.integer({ min: 1, max: 12 }),
    text: fc.oneof(fc.constantFrom(...INSERTS), g.simple, fc.string({ maxLength: 4 })),
  });
  return fc.tuple(fc.constantFrom(...corpus), fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([cmd, ms]) => {
    let s = cmd;
    for (const m of ms) {
      const at = s.length === 0 ? 0 : m.at % (s.length + 1);
      if (m.kind === "delete") s = s.slice(0, at) + s.slice(at + m.len);
      else if (m.kind === "insert") s = s.slice(0, at) + m.text + s.slice(at);
      else if (m.kind === "duplicate") s = s.slice(0, at + m.len) + s.slice(at, at + m.len) + s.slice(at + m.len);
      else s = s.slice(0, at) + m.text + s.slice(at + m.len);
    }
    return s;
  });
}

const TOOLS = [
  "read",
  "write",
  "edit",
  "bash",
  "grep",
  "find",
  "ls",
  "powershell",
  "codemode",
  "tool_search",
  "mcp__github__create_issue",
  "mcp__x__y",
  "web_fetch",
  "Bash",
  "READ",
  "",
  "__proto__",
  "constructor",
  "toString",
];

/** A value for one field: usually the type the tool expects, sometimes anything JSON can hold. */
function field(right: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 5, arbitrary: right },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, null, "", 0, -1, 1e308, [], {}) },
  );
}

/** Tool inputs of every shape: the fields a tool takes, with right and wrong types, extra fields, or any JSON at all. */
export function toolCall(g: Grammar): fc.Arbitrary<{ tool: string; input: unknown }> {
  const path = fc.oneof(
    fc.constantFrom(...PATHS),
    fc.string({ maxLength: 12 }),
    fc.constantFrom("@src/index.ts", "file:///etc/passwd", "file:///tmp/%00x", "~/", "a\u00a0b", "./../..", "x\u0000y"),
  );
  const edits = fc.oneof(
    fc.array(fc.record({ oldText: field(fc.string({ maxLength: 6 })), newText: field(fc.string({ maxLength: 6 })) }), { maxLength: 3 }),
    fc.constant('[{"oldText":"a","newText":"b"}]'),
    fc.record({ oldText: fc.string({ maxLength: 4 }), newText: fc.string({ maxLength: 4 }) }),
  );
  const shaped = fc.record(
    {
      path: field(path),
      content: field(fc.string({ maxLength: 20 })),
      edits: field(edits),
      oldText: field(fc.string({ maxLength: 4 })),
      newText: field(fc.string({ maxLength: 4 })),
      command: field(g.command),
      timeout: field(fc.integer()),
      pattern: field(fc.string({ maxLength: 8 })),
      glob: field(fc.constantFrom("*.ts", "**", "../*")),
      offset: field(fc.integer()),
      limit: field(fc.integer()),
      extra: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  );
  const input = fc.oneof(
    { weight: 6, arbitrary: shaped },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    {
      weight: 1,
      arbitrary: fc.anything({
        maxDepth: 2,
        withBigInt: true,
        withDate: true,
        withMap: true,
        withSet: true,
        withTypedArray: true,
        withSparseArray: true,
        withNullPrototype: true,
        withBoxedValues: true,
      }),
    },
  );
  return fc.record({ tool: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...TOOLS) }, { weight: 1, arbitrary: fc.string({ maxLength: 10 }) }), input });
}
