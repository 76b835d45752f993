// Static extraction of bash commands (src/policy/shell/parse.ts), on the corpus of the parser
// research (research/shell-parsers.md, Appendix A) plus the constructs the gate depends on.
// Every simple command and redirection must come out with its exact words; every malformed
// input must be an error; pathological inputs must neither crash nor hang the process.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { extractCommands, MAX_SHELL_BYTES, type Arg, type Extraction, type Redir } from "../../src/policy/shell/parse.ts";

const HOME = "/home/dev";
const D: unique symbol = Symbol("dynamic");
type W = string | typeof D;

const word = (x: W) => (x === D ? "<dyn>" : JSON.stringify(x));
const argText = (a: Arg) => (a.value === null ? "<dyn>" : JSON.stringify(a.value));

/** A command as `NAME=value ... word word`, the way the expectations are written. */
function c(...words: Array<W | { assign: string; value: W }>): string {
  return words.map((x) => (typeof x === "object" ? `${x.assign}=${word(x.value)}` : word(x))).join(" ");
}
const A = (assign: string, value: W): { assign: string; value: W } => ({ assign, value });
/** A redirection as `fd op target`; here-documents have the target HEREDOC. */
const r = (fd: string, op: string, target: W) => `${fd}${op} ${word(target)}`;
const H = "HEREDOC";

function renderRedir(x: Redir): string {
  const fd = x.fd === undefined ? "" : String(x.fd);
  return `${fd}${x.op} ${x.heredoc ? JSON.stringify(H) : x.target ? argText(x.target) : "<none>"}`;
}

function rendered(ex: Extraction): { cmds: string[]; redirs: string[] } {
  assert.ok(ex.ok, `expected a parse, got: ${ex.ok ? "" : ex.reason}`);
  const cmds = ex.commands.map((k) => [...k.assigns.map((a) => `${a.name}=${argText(a.value)}`), ...k.argv.map(argText)].join(" "));
  const redirs = [...ex.commands.flatMap((k) => k.redirs), ...ex.compoundRedirs].map(renderRedir);
  return { cmds, redirs };
}

const extract = (src: string) => extractCommands(src, { home: HOME });
const sorted = (xs: readonly string[]) => [...xs].sort();

interface Valid {
  readonly id: string;
  readonly src: string;
  readonly cmds: readonly string[];
  readonly redirs?: readonly string[];
}

// Appendix A, valid cases. Where the gate knows more than a generic extractor ($HOME, literal
// brace expansion, the output of `echo` of constants), the expectation says so instead of `dynamic`.
const VALID: readonly Valid[] = [
  { id: "simple", src: "git status", cmds: [c("git", "status")] },
  { id: "andor-semi", src: "cd src && npm test || echo failed; ls -la", cmds: [c("cd", "src"), c("npm", "test"), c("echo", "failed"), c("ls", "-la")] },
  {
    id: "pipeline",
    src: 'grep -rn "TODO" src/ | sort | uniq -c | head -20',
    cmds: [c("grep", "-rn", "TODO", "src/"), c("sort"), c("uniq", "-c"), c("head", "-20")],
  },
  {
    id: "newlines",
    src: "npm ci\nnpm run lint\n\nnpm test -- --watch=false",
    cmds: [c("npm", "ci"), c("npm", "run", "lint"), c("npm", "test", "--", "--watch=false")],
  },
  { id: "andor-newline", src: "ls &&\n  pwd ||\n  true", cmds: [c("ls"), c("pwd"), c("true")] },
  { id: "quotes-mixed", src: `echo 'it'\\''s' "a\\"b" a\\ b "\\$HOME" 'x'"y"z`, cmds: [c("echo", "it's", 'a"b', "a b", "$HOME", "xyz")] },
  { id: "escapes-ops", src: "echo a\\|b \\; c\\&\\& d", cmds: [c("echo", "a|b", ";", "c&&", "d")] },
  { id: "literal-subst-in-quotes", src: `echo '$(rm -rf /)' "\\$(id)" "$'x'"`, cmds: [c("echo", "$(rm -rf /)", "$(id)", "$'x'")] },
  { id: "ansi-c", src: `printf '%s' $'line1\\nline2\\t\\x41\\''`, cmds: [c("printf", "%s", "line1\nline2\tA'")] },
  { id: "dq-backslash", src: 'echo "a\\\\b" "c\\d" "e\\`f"', cmds: [c("echo", "a\\b", "c\\d", "e`f")] },
  { id: "keywords-as-args", src: "echo if then fi done esac {", cmds: [c("echo", "if", "then", "fi", "done", "esac", "{")] },
  { id: "line-continuation", src: "npm run build \\\n  --prod \\\n  && echo ok", cmds: [c("npm", "run", "build", "--prod"), c("echo", "ok")] },
  { id: "continuation-in-word", src: "ec\\\nho hi", cmds: [c("echo", "hi")] },
  { id: "comments", src: "ls -la # rm -rf /\n# whole line comment\necho a#b", cmds: [c("ls", "-la"), c("echo", "a#b")] },
  { id: "empty", src: "", cmds: [] },
  { id: "comment-only", src: "# just a comment", cmds: [] },
  { id: "dyn-words", src: 'echo "$HOME/x" ${USER} pre$(id)post', cmds: [c("echo", `${HOME}/x`, D, D), c("id")] },
  { id: "nested-subst", src: 'echo "$(dirname "$(readlink -f "$0")")"', cmds: [c("echo", D), c("dirname", D), c("readlink", "-f", D)] },
  { id: "backticks", src: "echo `date +%s`", cmds: [c("echo", D), c("date", "+%s")] },
  { id: "nested-backticks", src: "echo `echo \\`id -u\\``", cmds: [c("echo", D), c("echo", D), c("id", "-u")] },
  { id: "backtick-concat", src: "echo 'abc'`pwd`\"def\"", cmds: [c("echo", D), c("pwd")] },
  // What `echo CONSTANT` prints is a constant too.
  {
    id: "backtick-leading-space",
    src: 'echo `echo "foo"`\n\necho ` echo "bar"`',
    cmds: [c("echo", "foo"), c("echo", "foo"), c("echo", "bar"), c("echo", "bar")],
  },
  { id: "word-then-backtick", src: "echo word`echo other`", cmds: [c("echo", "wordother"), c("echo", "other")] },
  { id: "param-default-subst", src: 'echo "${X:-$(rm -rf /tmp/x)}" ${Y/a/b}', cmds: [c("echo", D, D), c("rm", "-rf", "/tmp/x")] },
  { id: "arith", src: "echo $((1 + 2 * 3)); (( i++ )); let x=1+2", cmds: [c("echo", D), c("let", "x=1+2")] },
  { id: "arith-subst", src: "echo $(( $(wc -l < f.txt) + 1 ))", cmds: [c("echo", D), c("wc", "-l")], redirs: [r("", "<", "f.txt")] },
  { id: "case-in-subst", src: "echo $(case x in x) echo y;; esac)", cmds: [c("echo", D), c("echo", "y")] },
  { id: "subshell-in-subst", src: "echo $( (ls) )", cmds: [c("echo", D), c("ls")] },
  { id: "eval-subst", src: 'eval "$(ssh-agent -s)"', cmds: [c("eval", D), c("ssh-agent", "-s")] },
  { id: "brace-expansion", src: "cp config.json{,.bak}", cmds: [c("cp", "config.json", "config.json.bak")] },
  { id: "procsub-in", src: "diff <(sort a.txt) <(sort b.txt)", cmds: [c("diff", D, D), c("sort", "a.txt"), c("sort", "b.txt")] },
  {
    id: "procsub-out",
    src: "tar cf - . | tee >(sha256sum > sum.txt) > /dev/null",
    cmds: [c("tar", "cf", "-", "."), c("tee", D), c("sha256sum")],
    redirs: [r("", ">", "sum.txt"), r("", ">", "/dev/null")],
  },
  { id: "heredoc-unquoted", src: "cat <<EOF > out.txt\nuser: $(whoami)\nEOF", cmds: [c("cat"), c("whoami")], redirs: [r("", "<<", H), r("", ">", "out.txt")] },
  { id: "heredoc-quoted", src: "cat <<'EOF'\n$(rm -rf /)\n`reboot`\nEOF", cmds: [c("cat")], redirs: [r("", "<<", H)] },
  { id: "heredoc-dquoted", src: 'cat <<"EOF"\n$(rm -rf /)\nEOF', cmds: [c("cat")], redirs: [r("", "<<", H)] },
  { id: "heredoc-escaped-delim", src: "cat <<E\\OF\n$(rm x)\nEOF", cmds: [c("cat")], redirs: [r("", "<<", H)] },
  { id: "heredoc-dash", src: "cat <<-EOF\n\tindented $(pwd)\n\tEOF\necho after", cmds: [c("cat"), c("pwd"), c("echo", "after")], redirs: [r("", "<<-", H)] },
  {
    id: "heredoc-git-commit",
    src: "git commit -m \"$(cat <<'EOF'\nfeat: add parser\n\nCo-Authored-By: x <x@y.z>\nEOF\n)\"",
    cmds: [c("git", "commit", "-m", D), c("cat")],
    redirs: [r("", "<<", H)],
  },
  { id: "heredoc-two", src: "cat <<A <<B\na\nA\nb $(id)\nB", cmds: [c("cat"), c("id")], redirs: [r("", "<<", H), r("", "<<", H)] },
  { id: "heredoc-pipe-sh", src: "cat <<EOF | sh\nrm -rf /\nEOF\necho done", cmds: [c("cat"), c("sh"), c("echo", "done")], redirs: [r("", "<<", H)] },
  {
    id: "heredoc-after-andand",
    src: "echo start && cat <<EOF && echo end\nbody\nEOF",
    cmds: [c("echo", "start"), c("cat"), c("echo", "end")],
    redirs: [r("", "<<", H)],
  },
  {
    id: "case-fallthrough",
    src: 'case "$1" in\n  start) systemctl start x ;;&\n  st*) echo s ;&\n  *) rm -f /tmp/lock ;;\nesac',
    cmds: [c("systemctl", "start", "x"), c("echo", "s"), c("rm", "-f", "/tmp/lock")],
  },
  { id: "case-paren-pattern", src: "case $x in (a|b) echo ab;; esac", cmds: [c("echo", "ab")] },
  { id: "function-def", src: "f() { rm -rf build; }; f", cmds: [c("rm", "-rf", "build"), c("f")] },
  { id: "function-keyword", src: "function cleanup { docker rm -f $(docker ps -aq); }", cmds: [c("docker", "rm", "-f", D), c("docker", "ps", "-aq")] },
  { id: "dbl-bracket", src: "[[ -f package.json && $(uname) == Linux* ]] && npm ci", cmds: [c("uname"), c("npm", "ci")] },
  { id: "single-bracket", src: "[ -d node_modules ] || npm install", cmds: [c("[", "-d", "node_modules", "]"), c("npm", "install")] },
  {
    id: "if-elif-else",
    src: "if [ -f a ]; then rm a; elif test -d b; then rmdir b; else echo none; fi",
    cmds: [c("[", "-f", "a", "]"), c("rm", "a"), c("test", "-d", "b"), c("rmdir", "b"), c("echo", "none")],
  },
  {
    id: "while-read",
    src: 'while IFS= read -r line; do echo "$line"; done < list.txt',
    cmds: [c(A("IFS", ""), "read", "-r", "line"), c("echo", D)],
    redirs: [r("", "<", "list.txt")],
  },
  { id: "for-in", src: 'for f in *.ts; do wc -l "$f"; done', cmds: [c("wc", "-l", D)] },
  { id: "for-cstyle", src: "for ((i=0; i<3; i++)); do echo $i; done", cmds: [c("echo", D)] },
  { id: "until", src: "until curl -sf localhost:3000; do sleep 1; done", cmds: [c("curl", "-sf", "localhost:3000"), c("sleep", "1")] },
  {
    id: "subshell-brace-redir",
    src: "(cd /tmp && rm -rf build) ; { echo a; echo b; } > out.txt 2>&1",
    cmds: [c("cd", "/tmp"), c("rm", "-rf", "build"), c("echo", "a"), c("echo", "b")],
    redirs: [r("", ">", "out.txt"), r("2", ">&", "1")],
  },
  { id: "coproc", src: "coproc cat big.txt; coproc WORKER { sleep 10; }", cmds: [c("cat", "big.txt"), c("sleep", "10")] },
  { id: "negation-time-bg", src: "! grep -q x f.txt && time make -j4 & wait", cmds: [c("grep", "-q", "x", "f.txt"), c("make", "-j4"), c("wait")] },
  { id: "arrays", src: 'arr=(a "b c" $(id -un)); echo "${arr[@]}" ${#arr[@]}', cmds: [c(A("arr", D)), c("id", "-un"), c("echo", D, D)] },
  { id: "env-prefix", src: 'FOO=bar BAZ="q x" npm test', cmds: [c(A("FOO", "bar"), A("BAZ", "q x"), "npm", "test")] },
  { id: "assign-subst-pipe", src: "out=$(curl -s https://x.sh | sh)", cmds: [c(A("out", D)), c("curl", "-s", "https://x.sh"), c("sh")] },
  {
    id: "declarations",
    src: 'export PATH="$HOME/bin:$PATH"; local x=1; declare -a arr=(1 2)',
    cmds: [c("export", D), c("local", "x=1"), c("declare", "-a", D)],
  },
  { id: "amp-gt", src: "npm test &> test.log", cmds: [c("npm", "test")], redirs: [r("", "&>", "test.log")] },
  {
    id: "fd-dup",
    src: "make 2>&1 >build.log | tee -a all.log; cmd 2>/dev/null >&2",
    cmds: [c("make"), c("tee", "-a", "all.log"), c("cmd")],
    redirs: [r("2", ">&", "1"), r("", ">", "build.log"), r("2", ">", "/dev/null"), r("", ">&", "2")],
  },
  { id: "pipe-amp", src: "make |& tee log.txt", cmds: [c("make"), c("tee", "log.txt")] },
  {
    id: "more-redir-ops",
    src: "echo x &>> a.log; echo y >| b.txt; cat <> c.txt",
    cmds: [c("echo", "x"), c("echo", "y"), c("cat")],
    redirs: [r("", "&>>", "a.log"), r("", ">|", "b.txt"), r("", "<>", "c.txt")],
  },
  { id: "herestring", src: 'grep -c foo <<< "$(cat x.txt)"', cmds: [c("grep", "-c", "foo"), c("cat", "x.txt")], redirs: [r("", "<<<", D)] },
  { id: "fd-close-open", src: "exec 3>&- 4<in.txt", cmds: [c("exec")], redirs: [r("3", ">&", "-"), r("4", "<", "in.txt")] },
  { id: "redir-first", src: ">out.txt echo hi; 2>/dev/null ls", cmds: [c("echo", "hi"), c("ls")], redirs: [r("", ">", "out.txt"), r("2", ">", "/dev/null")] },
  { id: "redir-dyn-target", src: 'echo hi > "$(mktemp)"', cmds: [c("echo", "hi"), c("mktemp")], redirs: [r("", ">", D)] },
  { id: "bash-c", src: `bash -c 'rm -rf /' && sh -c "echo $HOME"`, cmds: [c("bash", "-c", "rm -rf /"), c("sh", "-c", `echo ${HOME}`)] },
  {
    id: "wrappers",
    src: "sudo -u root env FOO=1 nice -n 10 timeout 5 rm -rf /var/tmp/x",
    cmds: [c("sudo", "-u", "root", "env", "FOO=1", "nice", "-n", "10", "timeout", "5", "rm", "-rf", "/var/tmp/x")],
  },
  { id: "xargs", src: "find . -name '*.tmp' -print0 | xargs -0 rm -f", cmds: [c("find", ".", "-name", "*.tmp", "-print0"), c("xargs", "-0", "rm", "-f")] },
  {
    id: "curl-sh",
    src: "curl -fsSL https://example.com/install.sh | sudo bash -s -- --yes",
    cmds: [c("curl", "-fsSL", "https://example.com/install.sh"), c("sudo", "bash", "-s", "--", "--yes")],
  },
  { id: "dd", src: "dd if=/dev/zero of=/dev/sda bs=1M", cmds: [c("dd", "if=/dev/zero", "of=/dev/sda", "bs=1M")] },
];

// Appendix A, malformed cases, plus gate policy (NUL bytes, unterminated here-documents).
const MALFORMED: ReadonlyArray<readonly [string, string]> = [
  ["E-dquote", 'echo "unterminated'],
  ["E-squote", "echo 'unterminated"],
  ["E-subst", "echo $(ls"],
  ["E-backtick", "echo `ls"],
  ["E-heredoc", "cat <<EOF\nno end"],
  ["E-heredoc-quoted", "cat <<'EOF'\nno end\n"],
  ["E-heredoc-in-subst", "git commit -m \"$(cat <<'EOF'\nmsg\nEOF\""],
  ["E-if", "if true; then ls"],
  ["E-andand", "ls &&"],
  ["E-pipe", "ls |"],
  ["E-brace-param", "echo ${x"],
  ["E-case", "case x in a) ls;;"],
  ["E-stray-paren", "ls )"],
  ["E-dsemi", "ls ;; pwd"],
  ["E-for", "for x in a b; do echo $x"],
  ["E-inner-subst", "echo $(if then)"],
  ["E-function", "f() {"],
  ["E-arith", "echo $((1 +"],
  ["E-procsub", "echo <(ls"],
  ["E-redir-no-target", "ls >"],
  ["E-dbl-bracket", "[[ -f x "],
  ["E-nested-dquote", 'echo "$(echo "nested unterminated)"'],
  ["E-then", "then ls"],
  ["E-nul", "ls -la\0rm -rf src"],
  ["E-nul-in-quotes", "echo 'a\0b'"],
];

describe("shell extraction: research corpus, valid inputs", () => {
  for (const v of VALID) {
    test(v.id, () => {
      const got = rendered(extract(v.src));
      assert.deepEqual(sorted(got.cmds), sorted(v.cmds));
      assert.deepEqual(sorted(got.redirs), sorted(v.redirs ?? []));
    });
  }
});

describe("shell extraction: malformed inputs fail closed", () => {
  for (const [id, src] of MALFORMED) {
    test(id, () => {
      const ex = extract(src);
      assert.equal(ex.ok, false, `${JSON.stringify(src)} must not parse`);
      assert.ok(!ex.ok && ex.reason.length > 0, "an error carries a reason");
    });
  }

  test("an error in a nested substitution is found however deep it is", () => {
    for (const place of ['echo "$(if then)"', "echo `if then`", "cat <(if then)", "x=${y:-$(if then)}", "cat <<EOF\n$(if then)\nEOF"]) {
      assert.equal(extract(place).ok, false, place);
    }
  });
});

// Where unbash reads a command differently from bash 5.2 (found by test/policy/shell-differential.test.ts
// and by mutating the corpora against `bash --pretty-print -n`), the reading must fail closed: a
// parse error (the gate reviews it) or, for a single word, an unknown value. Each comment says
// what bash does.
const DIFFERENTIAL_ERRORS: ReadonlyArray<readonly [string, string]> = [
  // unbash reads `name (` not followed by `)` as the start of a function definition, drops the
  // `(` and goes on reading a simple command; bash: syntax error.
  ["paren-after-name", "ech(o hunter2 | sudo -S cat /etc/shadow"],
  ["paren-after-name-spaced", "git (push origin +main"],
  ["paren-at-end", "x("],
  ["paren-in-backticks", "echo `ech(o hi`"],
  ["paren-in-subst", 'echo "$(ech(o hi)"'],
  // Extended globs are a syntax error while extglob is off, as it is in non-interactive bash
  // (a `shopt -s extglob` only counts for the lines after it). Only [[ ]] patterns take them.
  ["extglob-arg", "rm -rf !(keep)"],
  ["extglob-at", "ls @(a|b) +(c) *(d) ?(e)"],
  ["extglob-case", "case x in @(a|b)) echo;; esac"],
  ["extglob-after-shopt", "shopt -s extglob; rm -rf !(keep)"],
  ["extglob-in-subst-in-test", "[[ $(ls !(x)) ]]"],
  // A process substitution glued to text is one word in bash (`a/dev/fd/63`), two in unbash.
  ["procsub-glued-before", "echo a<(ls)"],
  ["procsub-glued-after", "cp x <(true)/../y"],
  ["procsub-glued-subst", "echo $(ls)<(id)"],
  // A descriptor past INT_MAX is a word to bash (`ls 99999999999 > f`), a descriptor to unbash.
  ["fd-too-large", "rm 99999999999>f"],
  // A line continuation inside a token: bash joins the lines first, unbash splits the token.
  ["continuation-in-name", "echo $GITHUB_TO\\\nKEN"],
  ["continuation-in-braced-name", "echo ${AWS_SECRET_\\\nACCESS_KEY}"],
  ["continuation-in-operator", "ls 2\\\n>/dev/null"],
  ["continuation-before-quote", "echo $\\\n'x'"],
  ["continuation-in-ansi-c", "echo $'a \\\nb'"],
  ["continuation-after-dollar", 'echo "$\\\nGITHUB_TOKEN"'],
  ["continuation-after-dollar-in-heredoc", "bash <<EOF\n$\\\n(rm -rf /)\nEOF"],
  // A newline after an operand inside [[ ]]: bash wants a binary operator there.
  ["test-newline-operand", "[[ a\n]]"],
  ["test-newline-before-and", "[[ -f x\n&& -d y ]] && rm -rf /"],
  // `;` or `&` at the start of a line inside a compound command: bash has no empty command.
  ["newline-semi-while", "while :\n; do :; done"],
  ["newline-semi-if", "if :\n; then rm -rf /; fi"],
  ["newline-semi-do", "for x in a; do :\n; done"],
  ["newline-amp-do", "for x in a; do :\n& done"],
  // Alias definitions: later lines read differently wherever aliases expand (sh, posix mode,
  // shopt -s expand_aliases).
  ["alias-definition", "alias x='rm -rf /'\nx"],
  ["alias-dynamic", 'alias "$A"'],
  // A quoted string bash later reads as a name or an expression: it runs a substitution in a subscript.
  ["subscript-let", "let 'a[$(rm -rf /)]=1'"],
  ["subscript-declare", "declare 'a[$(rm -rf ~)]=1'"],
  ["subscript-test-v", "[[ -v 'a[$(rm -rf ~)]' ]]"],
  ["subscript-read", "read 'a[`rm -rf ~`]' </dev/null"],
  ["subscript-via-variable", "x='a[$(rm -rf ~)]'; echo $((x))"],
  ["subscript-array-element", "a=(['$(rm -rf ~)']=1)"],
  ["subscript-assignment-index", "a['$(rm -rf ~)']=1"],
  ["subscript-expansion-index", "echo ${a['$(rm -rf ~)']}"],
  ["arithmetic-quoted-subst", "(( 'a[$(rm -rf ~)]' ))"],
  // An unterminated $[ (bash's old arithmetic): unbash keeps it as text, bash stops with an error.
  ["open-arithmetic", "truncate [$[-s 0 src/*.ts"],
  ["open-arithmetic-quoted", 'DIR=\nrm -rf "$[[DIR"/*'],
  // A number glued to a redirection where a target must be: bash reads `72<` as a redirection.
  ["number-glued-to-redirection", "xxd -r -p <<< 72<6d202d7266207e | sh"],
  ["number-glued-after-target", "cat > 2>f"],
];

describe("shell extraction: parser differentials fail closed", () => {
  for (const [id, src] of DIFFERENTIAL_ERRORS) {
    test(id, () => {
      const ex = extract(src);
      assert.equal(ex.ok, false, `${JSON.stringify(src)} must not parse: ${ex.ok ? JSON.stringify(rendered(ex).cmds) : ""}`);
    });
  }

  test("an unquoted here-document body is the text bash hands over: escapes and continuations done", () => {
    const ex = extract("bash <<EOF\necho \\`rm -rf /\\` \\$HOME \\\\ \\x a\\\nb\nEOF");
    assert.ok(ex.ok);
    assert.equal(ex.commands[0]!.redirs[0]!.heredoc?.body, "echo `rm -rf /` $HOME \\ \\x ab\n");
    const quoted = extract("bash <<'EOF'\necho \\`x\\` a\\\nb\nEOF");
    assert.ok(quoted.ok);
    assert.equal(quoted.commands[0]!.redirs[0]!.heredoc?.body, "echo \\`x\\` a\\\nb\n");
  });

  test("<<- strips the leading tabs of each line, but not of a continued one", () => {
    const ex = extract("cat <<-EOF\n\tbody\n\t\tmore\\\n\tjoined\n\tEOF");
    assert.ok(ex.ok);
    assert.equal(ex.commands[0]!.redirs[0]!.heredoc?.body, "body\nmore\tjoined\n");
    const quoted = extract("cat <<-'EOF'\n\tbody $X\n\t\tmore\n\tEOF");
    assert.ok(quoted.ok);
    assert.equal(quoted.commands[0]!.redirs[0]!.heredoc?.body, "body $X\nmore\n");
  });

  test("ANSI-C escapes unbash does not decode as bash does are unknown, not literal", () => {
    const first = (src: string) => {
      const ex = extract(src);
      assert.ok(ex.ok, src);
      return ex.commands[0]!.argv[0]!.value;
    };
    assert.equal(first("$'\\x{72}\\x{6d}' -rf /"), null, "bash reads \\x{72} as r");
    assert.equal(first("$'\\U110000'"), null);
    assert.equal(first("$'\\xff'"), null, "a byte that is no UTF-8 character");
    assert.equal(first("$'\\x72\\x6d' -rf /"), "rm", "what unbash decodes as bash does stays known");
  });

  test("the complete lines before one that cannot be read are kept: bash runs them before it meets the error", () => {
    const before = (src: string) => {
      const ex = extract(src);
      assert.equal(ex.ok, false, src);
      return ex.ok ? undefined : ex.ranBefore;
    };
    assert.equal(before("rm -rf /\n)"), "rm -rf /\n");
    assert.equal(before("rm -rf ~; echo a\nrm -rf !(keep)"), "rm -rf ~; echo a\n", "a differential error counts like a syntax error");
    assert.equal(before("echo a\nif true; then\necho b\n)"), "echo a\n", "not the lines of the compound command the error is in");
    assert.equal(before("ls\ncat <<EOF\n$(if then)\nEOF"), "ls\n", "nor a here-document's");
    assert.equal(before("a &&\nb\n)"), "a &&\nb\n");
    assert.equal(before("rm -rf /; )"), undefined, "bash reads a whole line before it runs any of it");
    assert.equal(before("# only a comment\n)"), undefined);
    assert.equal(before("rm -rf /\0\n)"), undefined, "a NUL byte: nothing is read");
  });

  test("brace expansion as bash does it: empty alternatives vanish, padded and mixed-case ranges are unknown", () => {
    const ex = extract("rm -rf {,a} x{,} {,} {01..03} {-01..1} {Z..a} {a..c}");
    assert.ok(ex.ok);
    assert.deepEqual(
      ex.commands[0]!.argv.slice(1).map((a) => a.value),
      ["-rf", "a", "x", "x", null, null, null, "a", "b", "c"],
    );
  });

  test("what bash reads the same way still parses", () => {
    for (const src of [
      "npm run build \\\n  --prod \\\n  && echo ok",
      "ec\\\nho hi",
      "echo 'a\\\nb'",
      "cat <<'EOF'\nx\\\nEOF",
      "[[ -f a &&\n -d b ]] && echo",
      "[[ x == @(a|b) ]]",
      "case x in a) ls\n;; b) pwd;;\nesac",
      "echo a>f 2>&1 <in",
      "diff <(sort a) <(sort b)",
      "f() { :; }; f",
      "alias; alias ll",
      "ls 2147483647>f",
      "echo a\\\\\nls",
      'echo $(( $(wc -l < "$f") + 1 )) ${a[$i]} ${a[$(id)]}',
      "echo '$(rm -rf /)' 'a[x]'",
      "echo $[1+2] \\$[x '$[y' > 2 >f 2>&1",
    ]) {
      const ex = extract(src);
      assert.ok(ex.ok, `${JSON.stringify(src)}: ${ex.ok ? "" : ex.reason}`);
    }
  });
});

describe("shell extraction: constructs the gate relies on", () => {
  const only = (src: string) => {
    const ex = extract(src);
    assert.ok(ex.ok, src);
    return ex;
  };

  test("pipeline stages are numbered and share a pipeline id", () => {
    const ex = only("cat a | grep b | wc -l; ls");
    assert.deepEqual(
      ex.commands.map((k) => [k.argv[0]!.value, k.stage, k.pipeline >= 0]),
      [
        ["cat", 0, true],
        ["grep", 1, true],
        ["wc", 2, true],
        ["ls", 0, false],
      ],
    );
    assert.equal(new Set(ex.commands.slice(0, 3).map((k) => k.pipeline)).size, 1);
  });

  test("lists keep every command: ; && || & and newlines", () => {
    assert.deepEqual(
      only("a; b && c || d & e\nf").commands.map((k) => k.argv[0]!.value),
      ["a", "b", "c", "d", "e", "f"],
    );
    assert.deepEqual(
      only("a & b").commands.map((k) => k.background),
      [true, false],
    );
  });

  test("commands inside subshells, substitutions, backticks and process substitutions are marked", () => {
    const ex = only("(rm -rf a); echo $(rm -rf b) `rm -rf c` <(rm -rf d) >(rm -rf e)");
    const rms = ex.commands.filter((k) => k.argv[0]!.value === "rm").map((k) => [k.argv[2]!.value, k.inSubstitution]);
    assert.deepEqual(rms, [
      ["a", false],
      ["b", true],
      ["c", true],
      ["d", true],
      ["e", true],
    ]);
  });

  test("control flow bodies and conditions are all extracted", () => {
    const src =
      "if a; then b; elif c; then d; else e; fi; while f; do g; done; until h; do i; done; for x in 1; do j; done; case y in k) l;; esac; select s in 1; do m; done";
    assert.deepEqual(sorted(only(src).commands.map((k) => k.argv[0]!.value!)), sorted(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "l", "m"]));
  });

  test("function bodies are extracted and named, whether or not the function is called", () => {
    const ex = only("cleanup() { rm -rf build; }; function other { curl x; }");
    assert.deepEqual(
      ex.functions.map((f) => f.name),
      ["cleanup", "other"],
    );
    assert.deepEqual(
      ex.commands.map((k) => [k.argv[0]!.value, k.inFunction]),
      [
        ["rm", "cleanup"],
        ["curl", "other"],
      ],
    );
  });

  test("an unquoted here-document body is data with live substitutions; a quoted one is inert", () => {
    const unquoted = only("cat <<EOF\n$(id) $HOME\nEOF");
    assert.deepEqual(
      unquoted.commands.map((k) => k.argv[0]!.value),
      ["cat", "id"],
    );
    assert.equal(unquoted.commands[0]!.redirs[0]!.heredoc?.quoted, false);
    assert.equal(unquoted.commands[0]!.redirs[0]!.heredoc?.dynamic, true);
    const quoted = only("cat <<'EOF'\n$(id) `reboot`\nEOF");
    assert.deepEqual(
      quoted.commands.map((k) => k.argv[0]!.value),
      ["cat"],
    );
    assert.equal(quoted.commands[0]!.redirs[0]!.heredoc?.quoted, true);
    assert.equal(quoted.commands[0]!.redirs[0]!.heredoc?.body, "$(id) `reboot`\n");
    const plain = only("cat <<EOF\nonly $HOME here\nEOF");
    assert.equal(plain.commands[0]!.redirs[0]!.heredoc?.dynamic, false, "$HOME is known, so the body is static");
  });

  test("a here-document without its terminator is an error, quoted or not, even inside a substitution", () => {
    for (const src of ["cat <<EOF\nx", "cat <<'EOF'\nx", "cat <<-EOF\n\tx", 'echo "$(cat <<EOF\nx\n)"']) assert.equal(extract(src).ok, false, src);
  });

  test("every redirection target is read, for simple and compound commands", () => {
    const ex = only("a > w1 >> w2 2> w3 &> w4 &>> w5 >| w6 <> rw < r1 2>&1 <<< s; { b; } > w7; while c; do d; done < r2; (e) 2>> w8");
    const targets = [...ex.commands.flatMap((k) => k.redirs), ...ex.compoundRedirs].map((x) => `${x.op}${x.target?.value ?? ""}`);
    assert.deepEqual(sorted(targets), sorted([">w1", ">>w2", ">w3", "&>w4", "&>>w5", ">|w6", "<>rw", "<r1", ">&1", "<<<s", ">w7", "<r2", ">>w8"]));
  });

  test("a redirection on its own is a command with no words", () => {
    const ex = only("> truncated.txt");
    assert.equal(ex.commands.length, 1);
    assert.equal(ex.commands[0]!.argv.length, 0);
    assert.equal(ex.commands[0]!.redirs[0]!.target?.value, "truncated.txt");
  });

  test("$HOME, ${HOME}, ${HOME:?} and a leading unquoted ~ are the home directory; a quoted ~ is not", () => {
    const ex = only('ls ~ ~/x "$HOME/y" ${HOME}/z "${HOME:?}" "~" ~root/.ssh ~bob/src a~b');
    assert.deepEqual(
      ex.commands[0]!.argv.slice(1).map((a) => a.value),
      [HOME, `${HOME}/x`, `${HOME}/y`, `${HOME}/z`, HOME, "~", "/root/.ssh", "/home/bob/src", "a~b"],
    );
  });

  test("an unquoted $IFS splits a word; a quoted one or an unknown variable does not", () => {
    assert.deepEqual(
      only("rm${IFS}-rf${IFS}/").commands[0]!.argv.map((a) => a.value),
      ["rm", "-rf", "/"],
    );
    assert.deepEqual(
      only('echo "a${IFS}b"').commands[0]!.argv.map((a) => a.value),
      ["echo", null],
    );
    assert.deepEqual(
      only("echo a${SEP}b").commands[0]!.argv.map((a) => a.value),
      ["echo", null],
    );
  });

  test("literal brace expansion gives every word; anything fancier stays dynamic", () => {
    const words = (src: string) =>
      only(src)
        .commands[0]!.argv.slice(1)
        .map((a) => a.value);
    assert.deepEqual(words("touch src/{a,b}.ts"), ["src/a.ts", "src/b.ts"]);
    assert.deepEqual(words("echo {1..3} {c..a}"), ["1", "2", "3", "c", "b", "a"]);
    assert.deepEqual(words("echo {a,{b,c}} {1..1000}"), [null, null]);
    assert.deepEqual(words("echo {$X,y} {rm,$HOME}"), [null, "y", "rm", HOME], "expansions inside braces are evaluated per alternative");
    assert.deepEqual(words("echo {a\\,b,c}"), [null], "an escaped comma is not followed");
  });

  test("an argument shaped like an assignment expands ~ after = and after each :, as bash does", () => {
    const words = (src: string) =>
      only(src)
        .commands[0]!.argv.slice(1)
        .map((a) => a.value);
    assert.deepEqual(words("dd of=~/.bashrc x=a:~/b"), [`of=${HOME}/.bashrc`, `x=a:${HOME}/b`]);
    assert.deepEqual(words("git archive --output=~/x 'y=~/z' 1x=~/d"), ["archive", "--output=~/x", "y=~/z", "1x=~/d"]);
  });

  test("variables the script sets unconditionally are known later; others are not", () => {
    const last = (src: string) =>
      only(src)
        .commands.at(-1)!
        .argv.slice(1)
        .map((a) => a.value);
    assert.deepEqual(last("D=dist; rm -rf $D"), ["-rf", "dist"]);
    assert.deepEqual(last('export OUT=build; rm -rf "$OUT"/x'), ["-rf", "build/x"]);
    assert.deepEqual(last("T=~; ls $T"), [HOME]);
    assert.deepEqual(last("if c; then D=/; fi; rm -rf $D"), ["-rf", null], "assigned in a branch");
    assert.deepEqual(last("f() { D=/; }; D=src; f; rm -rf $D"), ["-rf", null], "a function may reassign it later");
    assert.deepEqual(last("(D=src); rm -rf /$D"), ["-rf", null], "a subshell's assignment does not reach the parent");
    assert.deepEqual(last("true && D=src; rm -rf /$D"), ["-rf", null], "the right side of && may not run");
    assert.deepEqual(last("read D; rm -rf /$D"), ["-rf", null]);
    assert.deepEqual(last("for D in a; do :; done; rm -rf /$D"), ["-rf", null]);
    assert.deepEqual(last('D=src; eval "$X"; rm -rf /$D'), ["-rf", null], "eval may set anything");
    assert.deepEqual(last('D="a b"; rm -rf $D'), ["-rf", null], "word splitting of the value is not followed");
    assert.deepEqual(last('D="a b"; rm -rf "$D"'), ["-rf", "a b"]);
    assert.equal(only('G="*"; rm -rf /$G').commands.at(-1)!.argv[2]!.glob, true, "an unquoted glob in the value globs");
  });

  test("the words of loop lists and assignments are reported too", () => {
    const ex = only("for f in ~/.ssh/*; do :; done; d=/etc");
    assert.deepEqual(
      ex.words.map((w) => w.value).filter((v) => v?.startsWith("/")),
      [`${HOME}/.ssh/*`, "/etc"],
    );
  });

  test("expanded variable names are reported, quoted or not", () => {
    assert.deepEqual(sorted(only('echo "$GITHUB_TOKEN" ${AWS_SECRET_ACCESS_KEY:-x} $1').expansions), sorted(["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "1"]));
  });

  test("input is capped at 64 KiB, counted in bytes", () => {
    const at = "echo " + "a".repeat(MAX_SHELL_BYTES - 5);
    assert.equal(Buffer.byteLength(at), MAX_SHELL_BYTES);
    assert.equal(extract(at).ok, true);
    assert.equal(extract(at + "a").ok, false);
    const wide = "echo " + "é".repeat(MAX_SHELL_BYTES / 2); // fewer characters than the cap, more bytes
    assert.ok(wide.length < MAX_SHELL_BYTES);
    assert.equal(extract(wide).ok, false);
  });
});

// Pathological inputs run in a child process: a hang or a crash must fail the test, not stall it.
const PARSE_URL = pathToFileURL(new URL("../../src/policy/shell/parse.ts", import.meta.url).pathname).href;
const SCRIPT_LINES = [
  ["git status --porcelain", 1],
  ["npm run build 2>&1 | tail -50", 2],
  ["find . -name '*.ts' -not -path './node_modules/*' | xargs wc -l", 2],
  ['for f in src/*.ts; do echo "$f"; done', 1],
  ["if [ -f package.json ]; then cat package.json; fi", 2],
  ['echo "$(date +%s)" >> times.log', 2],
] as const;

interface StressCase {
  readonly id: string;
  /** JavaScript expression that builds the input inside the child. */
  readonly build: string;
  /** true: must parse; false: must be an error; "either": no crash, no hang. */
  readonly ok: boolean | "either";
  readonly count?: number;
}

function scriptOf(bytes: number): { build: string; count: number } {
  let len = 0;
  let count = 0;
  let n = 0;
  while (len < bytes) {
    const [line, cmds] = SCRIPT_LINES[n % SCRIPT_LINES.length]!;
    len += line.length + 1;
    count += cmds;
    n++;
  }
  return {
    build: `(() => { const l = ${JSON.stringify(SCRIPT_LINES.map((x) => x[0]))}; return Array.from({ length: ${n} }, (_, i) => l[i % l.length]).join("\\n"); })()`,
    count,
  };
}

const s60 = scriptOf(60_000);
const s100 = scriptOf(100_000);
const STRESS: readonly StressCase[] = [
  { id: "100 KB script (over the cap)", build: s100.build, ok: false },
  { id: "60 KB script", build: s60.build, ok: true, count: s60.count },
  { id: "100 KB word (over the cap)", build: `"echo " + "a".repeat(100000)`, ok: false },
  { id: "60 KB word", build: `"echo " + "a".repeat(60000)`, ok: true, count: 1 },
  { id: "60 KB double-quoted string of expansions", build: `'echo "' + "b $x ".repeat(12000) + '"'`, ok: true, count: 1 },
  { id: "1,000 nested subshells", build: `"( ".repeat(1000) + "echo hi" + " )".repeat(1000)`, ok: "either", count: 1 },
  { id: "10,000 nested subshells", build: `"( ".repeat(10000) + "echo hi" + " )".repeat(10000)`, ok: "either", count: 1 },
  { id: "1,000 nested $(...)", build: `"echo " + "$(echo ".repeat(1000) + "hi" + ")".repeat(1000)`, ok: "either", count: 1001 },
  // Each level is parsed again from its own text: past MAX_SUBSTITUTION_DEPTH levels the command is not read (too complex to judge quickly).
  { id: "24 nested $(...)", build: `"echo " + "$(echo ".repeat(24) + "hi" + ")".repeat(24)`, ok: true, count: 25 },
  { id: "25 nested $(...) (over the nesting bound)", build: `"echo " + "$(echo ".repeat(25) + "hi" + ")".repeat(25)`, ok: false },
  { id: "255 nested $(...) (over the nesting bound)", build: `"echo " + "$(echo ".repeat(255) + "hi" + ")".repeat(255)`, ok: false },
  { id: "10 nested $(...) around 60 KB (over the read bound)", build: `"echo " + "$(echo ".repeat(10) + "a ".repeat(30000) + ")".repeat(10)`, ok: false },
  { id: "100,000 '(' (over the cap)", build: `"(".repeat(100000)`, ok: false },
  { id: "60,000 '('", build: `"(".repeat(60000)`, ok: false },
  { id: "30,000 unterminated $(", build: `"$(".repeat(30000)`, ok: false },
  { id: "6,000 here-document openers", build: `"cat <<EOF ".repeat(6000)`, ok: false },
  { id: "20,000-stage pipeline", build: `Array(20000).fill("a").join("|")`, ok: true, count: 20000 },
];

describe("shell extraction: pathological inputs neither crash nor hang", () => {
  for (const s of STRESS) {
    test(s.id, () => {
      const code = `
        const { extractCommands } = await import(${JSON.stringify(PARSE_URL)});
        const src = ${s.build};
        const t0 = performance.now();
        const r = extractCommands(src, { home: "/home/dev" });
        const ms = performance.now() - t0;
        const after = extractCommands("git status && ls -la", { home: "/home/dev" });
        console.log(JSON.stringify({ ok: r.ok, count: r.ok ? r.commands.length : -1, ms, after: after.ok ? after.commands.length : -1 }));`;
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8", timeout: 30_000 });
      assert.equal(child.error, undefined, `child failed to finish: ${child.error?.message}`);
      assert.equal(child.signal, null, "the child must not be killed");
      assert.equal(child.status, 0, child.stderr);
      const out = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { ok: boolean; count: number; ms: number; after: number };
      if (s.ok !== "either") assert.equal(out.ok, s.ok);
      if (out.ok && s.count !== undefined) assert.equal(out.count, s.count);
      assert.ok(out.ms < 5_000, `took ${Math.round(out.ms)} ms`);
      assert.equal(out.after, 2, "the parser still works after the stress input");
    });
  }
});
