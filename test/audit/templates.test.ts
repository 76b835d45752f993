// What the audit keeps of a command and a path: templates.ts.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { bashTemplate, surfaceClass, UNREADABLE_TEMPLATE } from "../../src/audit/templates.ts";
import { buildPlaces } from "../../src/policy/places.ts";
import { checkProperty, fuzzRuns } from "../helpers/fuzz.ts";

const CASES: ReadonlyArray<readonly [string, string]> = [
  ["git status --short", "git status --short"],
  ["npm test -- --token abc", "npm test -- --token *"],
  ["A=b cmd", "A=* cmd"],
  ["GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 gh pr list", "GITHUB_TOKEN=* gh pr list"],
  ["curl https://user:hunter2@example.com/path?q=1", "curl *"],
  ["cat ./src/a.ts | grep -n needle > out.txt", "cat * | grep -n * >*"],
  ['echo "hello world" && ls -la /etc || true', "echo * && ls -la * || true"],
  ["git commit -m 'fix the thing'", "git commit -m *"],
  ["FOO=$(cat /etc/passwd) make build", "FOO=* make build"],
  ["npm --prefix=/srv/app run build &", "npm --prefix=* run build &"],
  ["echo sk-ant-abcdefghijklmnopqrstu", "echo *"],
  ["./scripts/deploy.sh prod", "* prod"],
  ["cat ~/.ssh/id_rsa", "cat *"],
  ["echo $HOME", "echo *"],
  ["docker run abc123def456ghi789", "docker run *"],
  ["if then fi (((", UNREADABLE_TEMPLATE],
  ["", UNREADABLE_TEMPLATE],
];

test("commands become templates: option values, paths, URLs, assignments, quoted and expanded words are *", () => {
  for (const [command, template] of CASES) assert.equal(bashTemplate(command), template, command);
});

// A bare word stays only when it is a plain word a rule could name: segments (split at - _ +) of
// letters in a word's case shape, numbers of at most three digits, short letter-digit mixes.
// Everything that looks like a value (a password with a digit, a long number, a glued option
// value, a random mixed-case string, a hex id) is `*`.
const VALUE_WORDS: ReadonlyArray<readonly [string, string]> = [
  ["echo hunter2", "echo *"],
  ["echo Passw0rd1", "echo *"],
  ["echo x7Gk9pQ2", "echo *"],
  ["echo Hunter2Hunter2", "echo *"],
  ["echo 1234567890123456789", "echo *"],
  ["echo 4111111111111111", "echo *"],
  ["echo 555-123-4567", "echo *"],
  ["echo JIRA-1234-alice", "echo *"],
  ["echo 0x1234abcd", "echo *"],
  ["echo correcthorsebatterystaple", "echo *"],
  ["aws configure set aws_secret_access_key wJalrXUtnFEMI", "aws configure set aws_secret_access_key *"],
  ["htpasswd -b file alice hunter2", "htpasswd -b * alice *"],
  ["mysql -psecret db", "mysql * db"],
  ["mysql -pHunter -u root", "mysql * -u *"],
  ["echo --pAssw0rd", "echo *"],
  ["ls -- -secretword", "ls -- *"],
  ["sk_live_abcdefghijklmnopqr=1 cmd", "*=* cmd"],
  ["ghp_abcdefghijklmnopqrstuvwxyz0123=1 cmd", "*=* cmd"],
];

// What a rule names keeps its words.
const RULE_WORDS: ReadonlyArray<readonly [string, string]> = [
  ["git status", "git status"],
  ["npm run build", "npm run build"],
  ["npm test -- --watch", "npm test -- --watch"],
  ["git push origin main", "git push origin main"],
  ["aws s3 ls", "aws s3 ls"],
  ["aws ec2 describe-instances", "aws ec2 describe-instances"],
  ["chmod 755 run.sh", "chmod 755 *"],
  ["sleep 30", "sleep 30"],
  ["tar -xzf a.tgz", "tar -xzf *"],
  ["find . -name x -exec rm {} ;", "find * -name * -exec * *"],
  ["find . -type f -execdir ls", "find * -type * -execdir *"],
  ["python3 -m pytest", "python3 -m *"],
  ["sha256sum -c sums", "sha256sum -c *"],
  ["ls -la", "ls -la"],
  ["npm run e2e", "npm run e2e"],
  ["docker compose up -d", "docker compose up -d"],
  ["kubectl get pods", "kubectl get pods"],
  ["./gradlew assembleDebug", "* assembleDebug"],
  ["git log --oneline HEAD", "git log --oneline *"],
  ["GITHUB_TOKEN=x gh pr list", "GITHUB_TOKEN=* gh pr list"],
  ["PGPASSWORD=x psql -c q", "PGPASSWORD=* psql -c *"],
  ["npm install --save-dev typescript", "npm install --save-dev *"],
  ["cargo build --release", "cargo build --release"],
  ["make k8s", "make k8s"],
];

test("a bare word that carries a value is *: passwords with digits, numbers, glued option values, random strings", () => {
  for (const [command, template] of VALUE_WORDS) assert.equal(bashTemplate(command), template, command);
});

test("the words a rule names stay: subcommands, package and script names, options, small numbers", () => {
  for (const [command, template] of RULE_WORDS) assert.equal(bashTemplate(command), template, command);
});

test("a command too odd for the parser becomes the fully starred template", () => {
  for (const c of ["echo 'unterminated", "cat <<EOF\nbody", "a && && b", "\u0000"]) assert.equal(bashTemplate(c), UNREADABLE_TEMPLATE, JSON.stringify(c));
});

// Every generated secret and path segment carries this prefix and nothing else does, so finding it
// anywhere in a template is a leak (short segments would collide with kept words otherwise).
const MARK = "Qz";
const marker = fc.stringMatching(/^[a-z0-9]{6,14}$/).map((s) => MARK + s);
const longMarker = fc.stringMatching(/^[A-Za-z0-9]{20,30}$/).map((s) => MARK + s);

interface Piece {
  readonly text: string;
  readonly secrets: readonly string[];
}
const plain = (text: string): Piece => ({ text, secrets: [] });

const safeWord = fc.constantFrom("status", "test", "run", "build", "--short", "-v", "--", "list", "install").map(plain);
const optionValue = fc
  .tuple(fc.constantFrom("--token", "--out", "-o", "--name", "-m", "--password"), marker)
  .map(([o, m]) => ({ text: `${o} ${m}`, secrets: [m] }));
const optionEquals = fc.tuple(fc.constantFrom("--token", "--dir", "--api-key"), marker).map(([o, m]) => ({ text: `${o}=${m}`, secrets: [m] }));
const path = fc
  .tuple(fc.constantFrom("/", "./", "~/", "../", "src/", "/tmp/"), fc.array(marker, { minLength: 1, maxLength: 3 }), fc.constantFrom("", ".ts", ".json"))
  .map(([root, segs, ext]) => ({ text: root + segs.join("/") + ext, secrets: segs }));
const url = fc
  .tuple(marker, marker, marker)
  .map(([user, pass, seg]) => ({ text: `https://${user}:${pass}@example.com/${seg}?k=${seg}`, secrets: [user, pass, seg] }));
const quoted = fc.tuple(marker, fc.boolean()).map(([m, dq]) => ({ text: dq ? `"${m} and more"` : `'${m}'`, secrets: [m] }));
const shaped = fc
  .tuple(fc.constantFrom("sk-ant-", "ghp_", "github_pat_", "npm_", "xoxb-"), longMarker)
  .map(([p, m]) => ({ text: p + m + "0123456789abcdef", secrets: [m] }));
const substitution = path.map((p) => ({ text: `"$(cat ${p.text})"`, secrets: p.secrets }));
const arg = fc.oneof(safeWord, safeWord, optionValue, optionEquals, path, url, quoted, shaped, substitution);
const assignment = fc
  .tuple(
    fc.constantFrom("TOKEN", "A", "PGPASSWORD", "HOME_DIR"),
    fc.oneof(
      marker.map((m) => ({ text: m, secrets: [m] })),
      path,
      quoted,
    ),
  )
  .map(([n, v]) => ({ text: `${n}=${v.text}`, secrets: v.secrets }));
const simple = fc
  .tuple(fc.array(assignment, { maxLength: 2 }), fc.constantFrom("git", "npm", "curl", "cat", "make", "node"), fc.array(arg, { maxLength: 6 }), fc.option(path))
  .map(([as, prog, args, redir]) => ({
    text: [...as.map((a) => a.text), prog, ...args.map((a) => a.text), ...(redir ? [`> ${redir.text}`] : [])].join(" "),
    secrets: [...as, ...args, ...(redir ? [redir] : [])].flatMap((p) => p.secrets),
  }));
const command = fc.tuple(simple, fc.array(fc.tuple(fc.constantFrom(" | ", " && ", " || ", " ; "), simple), { maxLength: 3 })).map(([first, rest]) => ({
  text: first.text + rest.map(([op, c]) => op + c.text).join(""),
  secrets: [...first.secrets, ...rest.flatMap(([, c]) => c.secrets)],
}));

test("property: no template holds any part of a generated secret, option value, URL or path", async (t) => {
  let runs = 0;
  let unreadable = 0;
  await checkProperty(
    t,
    fc.property(command, (c) => {
      const template = bashTemplate(c.text);
      runs++;
      if (template === UNREADABLE_TEMPLATE) unreadable++;
      assert.ok(!template.includes(MARK), `${JSON.stringify(c.text)} -> ${JSON.stringify(template)}`);
      for (const s of c.secrets) assert.ok(!template.includes(s.slice(MARK.length)), `${s} in ${template}`);
    }),
    { runs: fuzzRuns(300) },
  );
  // The property says nothing if the generated commands do not parse and all become `*`.
  t.diagnostic(`${unreadable} of ${runs} generated commands were unreadable`);
  assert.ok(unreadable * 10 < runs, `${unreadable} of ${runs} unreadable`);
});

// Secrets as bare words: what no option or quote announces. A value is a word with a digit and a
// letter at five characters or more, a number of four digits or more, an option with a glued value.
const mixedSecret = fc
  .tuple(fc.stringMatching(/^[A-Za-z0-9]{4,40}$/), fc.integer({ min: 0, max: 9 }), fc.constantFrom("a", "Z", "q"))
  .map(([s, d, l]) => `${l}${s}${d}`);
const bareSecret = fc.oneof(
  mixedSecret.map((s) => ({ text: s, secret: s })),
  fc.stringMatching(/^[0-9]{4,24}$/).map((s) => ({ text: s, secret: s })),
  fc.stringMatching(/^[0-9a-f]{12,40}$/).map((s) => ({ text: `${s}0`, secret: `${s}0` })),
  fc.tuple(fc.constantFrom("-p", "-P", "-k"), fc.stringMatching(/^[a-z]{5,12}$/)).map(([o, s]) => ({ text: o + s, secret: s })),
  mixedSecret.map((s) => ({ text: `--${s}`, secret: s })),
  fc.tuple(mixedSecret, fc.constantFrom("-", "_", "+")).map(([s, sep]) => ({ text: `ok${sep}${s}`, secret: s })),
  mixedSecret.map((s) => ({ text: `${s}=1`, secret: s, assignment: true })),
);
const bareCommand = fc
  .tuple(
    fc.constantFrom("echo", "git", "mysql", "gh", "docker", "ssh", "htpasswd", "export"),
    fc.array(fc.constantFrom("status", "login", "--", "-u", "root", "run", "list"), { maxLength: 3 }),
    bareSecret,
    fc.array(fc.constantFrom("db", "main", "--short", "-v"), { maxLength: 2 }),
  )
  .map(([prog, before, s, after]) => ({
    text: "assignment" in s ? `${s.text} ${prog} ${[...before, ...after].join(" ")}` : [prog, ...before, s.text, ...after].join(" "),
    secret: s.secret,
  }));

test("property: a secret as a bare word, a glued option value or an assignment's name is never in the template", async (t) => {
  await checkProperty(
    t,
    fc.property(bareCommand, (c) => {
      const template = bashTemplate(c.text);
      assert.ok(!template.includes(c.secret), `${JSON.stringify(c.text)} -> ${JSON.stringify(template)}`);
    }),
    { runs: fuzzRuns(500) },
  );
});

test("paths become classes: workspace, temp, home, external, sensitive, unknown", () => {
  const root = mkdtempSync(join(tmpdir(), "audit-templates-"));
  try {
    const home = join(root, "home");
    const places = buildPlaces({
      workspace: join(home, "ws"),
      tmpRoot: join(root, "tmp"),
      home,
      agentDir: join(home, ".pi", "agent"),
      selfPaths: [join(home, ".pi", "agent", "auto-mode.json")],
    });
    const expect: ReadonlyArray<readonly [string | undefined, string]> = [
      ["src/index.ts", "workspace"],
      [join(home, "ws", "README.md"), "workspace"],
      [join(root, "tmp", "scratch"), "temp"],
      ["~/notes.txt", "home"],
      [join(home, "other", "x"), "home"],
      ["/etc/hosts", "external"],
      ["../../outside", "external"],
      ["~/.ssh/id_rsa", "sensitive"],
      [".git/config", "sensitive"],
      [join(home, ".pi", "agent", "auto-mode.json"), "sensitive"],
      ["/dev/sda", "sensitive"],
      ["/proc/self/environ", "sensitive"],
      ["$HOME/x", "unknown"],
      ["", "unknown"],
      [undefined, "unknown"],
    ];
    for (const [p, cls] of expect) assert.equal(surfaceClass(p, places), cls, String(p));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
