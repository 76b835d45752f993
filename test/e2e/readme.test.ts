// The README's commands, as a reader in a fresh checkout would type them. A block fenced as
// ```sh runnable is run line by line, as written, in a copy of the checkout that holds only what
// git would (tracked and unignored files, no build, no caches), with a home of its own and no
// network needed: its lines must be quick and loopback-only, which is why `npm install` and
// `npm test` are shown but not marked. The copy's node_modules is this checkout's, standing in for
// the `npm install` a reader runs first. Every other shell block is checked without running it:
// each `pi-auto-mode` command it shows exists, and each file the README links to is there.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { MAIN_HELP } from "../../src/cli/main.ts";
import { STATUS_LABELS } from "../../src/state/effective.ts";
import { type CliRun, collected } from "../helpers/cli.ts";

const REPO = realpathSync(fileURLToPath(new URL("../..", import.meta.url)));
const README = readFileSync(join(REPO, "README.md"), "utf8");

interface Block {
  readonly info: string;
  readonly line: number;
  readonly body: string;
}

/** Fenced code blocks: the info string (`sh runnable`), the line the fence opens on, the text. */
function codeBlocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S.*)?$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    out.push({ info: (open[1] ?? "").trim(), line: start + 1, body: body.join("\n") });
  }
  return out;
}

/** The commands of a shell block: one a line, a trailing backslash joining the next, blank lines and comments skipped. */
function commandsOf(body: string): string[] {
  const out: string[] = [];
  let pending = "";
  for (const raw of body.split("\n")) {
    const line = pending + raw;
    if (line.endsWith("\\")) {
      pending = line.slice(0, -1);
      continue;
    }
    pending = "";
    if (line.trim() === "" || line.trim().startsWith("#")) continue;
    out.push(line);
  }
  return out;
}

const blocks = codeBlocks(README);
const runnable = blocks.filter((b) => b.info === "sh runnable");
const shell = blocks.filter((b) => b.info === "sh" || b.info.startsWith("sh "));

/** This PATH without any node_modules/.bin: what a reader's shell has, before npm adds its own. */
const readerPath = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((d) => d && !d.includes("node_modules"))
  .join(delimiter);
const onReaderPath = (name: string) => readerPath.split(delimiter).some((d) => existsSync(join(d, name)));

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-readme-")));
const checkout = join(root, "pi-auto-mode");
const home = join(root, "home");
after(() => rmSync(root, { recursive: true, force: true }));

before(() => {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: REPO, encoding: "utf8" })
    .split("\0")
    .filter((f) => f !== "");
  for (const f of files) {
    const from = join(REPO, f);
    // A tracked file deleted in the working tree is not part of what a clone of it would hold.
    if (!existsSync(from) && !isLink(from)) continue;
    mkdirSync(dirname(join(checkout, f)), { recursive: true });
    cpSync(from, join(checkout, f), { verbatimSymlinks: true });
  }
  execFileSync("git", ["init", "-q", checkout]);
  symlinkSync(join(REPO, "node_modules"), join(checkout, "node_modules"));
  mkdirSync(home, { recursive: true });
});

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

type Ran = CliRun;

function sh(command: string): Promise<Ran> {
  return collected(
    spawn("sh", ["-c", command], {
      cwd: checkout,
      env: {
        PATH: readerPath,
        HOME: home,
        LANG: "C.UTF-8",
        TMPDIR: process.env.TMPDIR ?? tmpdir(),
        // Pi and npm stay off the network: the lines marked runnable must not need it.
        PI_OFFLINE: "1",
        npm_config_offline: "true",
        npm_config_update_notifier: "false",
        npm_config_fund: "false",
        npm_config_audit: "false",
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
}

describe("README", () => {
  test("has runnable blocks, and they hold the contributor demo and the command line", () => {
    assert.ok(runnable.length >= 2, `${runnable.length} blocks marked sh runnable`);
    const all = runnable.flatMap((b) => commandsOf(b.body));
    assert.ok(
      all.some((c) => c.startsWith("npm run demo")),
      "npm run demo",
    );
    for (const c of ["check", "config", "eval"])
      assert.ok(
        all.some((l) => l.startsWith(`npx pi-auto-mode ${c}`)),
        c,
      );
  });

  test("the first screen is the user's path: install into Pi after npm install, a reviewer, the footer; contributors after", () => {
    const sections = README.split(/^## /m);
    assert.match(sections[1]!, /^Install it into your Pi/);
    const install = sections[1]!;
    const npmInstall = install.indexOf("npm install");
    const piInstall = install.indexOf("pi install");
    assert.ok(npmInstall >= 0 && piInstall > npmInstall, "npm install comes before pi install");
    assert.doesNotMatch(install, /pi install npm:/, "no registry install until the package is published");
    assert.match(install, /\/perm-auto-model /);
    for (const label of Object.values(STATUS_LABELS)) assert.ok(install.includes(`| \`${label}\``), `the footer table names ${label}`);
    assert.match(sections[2]!, /^Working on auto mode/);
  });

  for (const block of runnable) {
    for (const command of commandsOf(block.body)) {
      test(`README.md:${block.line}: ${command.replace(/\s+#.*$/, "")}`, {
        skip: !onReaderPath(command.split(" ")[0]!) && `${command.split(" ")[0]} is not on the PATH`,
      }, async () => {
        const r = await sh(command);
        assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
        assert.notEqual(r.stdout.trim(), "", "it printed something");
      });
    }
  }

  test("every pi-auto-mode command the README shows exists", () => {
    const commands = new Set([...MAIN_HELP.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!));
    assert.ok(commands.has("config") && commands.has("doctor"), [...commands].join(", "));
    const shown = shell.flatMap((b) => commandsOf(b.body)).flatMap((c) => [...c.matchAll(/pi-auto-mode(?:\.js)? ([a-z][a-z-]*)/g)].map((m) => m[1]!));
    assert.ok(shown.length > 5, shown.join(", "));
    for (const c of shown) assert.ok(commands.has(c), `pi-auto-mode ${c}`);
  });

  test("every file the README links to or names as a path of this package exists", () => {
    const links = [...README.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    assert.ok(links.includes("docs/eval-format.md") && links.includes("examples/cases.jsonl"), links.join(", "));
    for (const l of links) assert.ok(existsSync(join(REPO, l)), l);
    for (const block of runnable) for (const m of block.body.matchAll(/\s((?:examples|docs|src)\/[\w./-]+)/g)) assert.ok(existsSync(join(REPO, m[1]!)), m[1]);
  });
});
