// The real `pi` TUI in a real terminal (tmux), with scripted models (test/fixtures/
// tui-scripted-model.ts): the test types prompts and slash commands as a user would and asserts
// the text of the captured screens, never the extension's internals. Each test runs its own Pi
// with a private HOME and agent dir. Covered: the footer's states (no reviewer, the reviewer
// named, Unrestricted and Off highlighted, one prefix), the check widget during a review
// (elapsed time, Esc cancels) and after it (allowed, denied, cancelled), a hard deny's display
// and its widget, the widget cleared by a new session, /perm's status view and picker,
// `/perm auto` without a reviewer, and `/perm-enabled off` keeping the hard-deny floor.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import { piCliEnv } from "../helpers/pi-cli-env.ts";
import { aboveEditor, colourBefore, footerLine, startTerminal, tmuxUnavailable, type Terminal } from "../helpers/tmux.ts";

const repo = realpathSync(fileURLToPath(new URL("../..", import.meta.url)));
const piBin = join(repo, "node_modules", ".bin", "pi");
const models = join(repo, "test", "fixtures", "tui-scripted-model.ts");
const extension = join(repo, "src", "extension.ts");

function unavailable(): string | undefined {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major < 22 || (major === 22 && minor < 19))
    return `Pi 1.6 needs Node >= 22.19; this test runs on Node ${process.versions.node} (use node_modules/.bin/node)`;
  if (!existsSync(piBin)) return `the pi command line is not installed at ${piBin} (run npm install)`;
  return tmuxUnavailable();
}

const why = unavailable();
// The footer says "Auto" only where the OS sandbox works: probed once, as the extension would.
let sandboxWhy: string | undefined;
before(async () => {
  if (why) return;
  resetSharedController();
  const s = await sharedController().ready();
  if (s.backend !== "sandboxed") sandboxWhy = `the sandbox probe failed here (${s.backend}: ${s.reason})`;
  resetSharedController();
});

interface Session {
  readonly term: Terminal;
  readonly home: string;
  readonly ws: string;
  /** The reviewer gives its verdict once this exists (the fixture removes it). */
  release(): void;
}

const open: Array<{ term: Terminal; root: string }> = [];
after(async () => {
  for (const o of open) {
    await o.term.close();
    rmSync(o.root, { recursive: true, force: true });
  }
});

/** A fresh Pi in tmux: its own home, agent dir and workspace (with a .git/hooks to protect). */
async function startPi(): Promise<Session> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-tui-")));
  const home = join(root, "home");
  const agentDir = join(home, ".pi", "agent");
  const ws = join(root, "ws");
  const control = join(root, "control");
  for (const d of [agentDir, join(ws, ".git", "hooks"), control]) mkdirSync(d, { recursive: true });
  writeFileSync(join(home, "canary"), "alive");
  const env = {
    ...piCliEnv(home, agentDir),
    PI_TUI_TEST_CONTROL: control,
    // Colors as a common terminal has them, so a highlight is visible in the captured escapes.
    TERM: "xterm-256color",
    COLORTERM: undefined,
    NO_COLOR: undefined,
    TMUX: undefined,
  };
  const term = await startTerminal({
    root,
    cwd: ws,
    env,
    argv: [piBin, "--no-session", "--model", "scripted/m1", "-e", extension, "-e", models],
  });
  open.push({ term, root });
  await term.waitFor((s) => footerLine(s).includes("auto-mode:"), "the footer's auto-mode status", 30_000);
  return { term, home, ws, release: () => writeFileSync(join(control, "release"), "") };
}

const call = (tool: string, input: unknown) => `call ${tool} ${JSON.stringify(input)}`;
const widget = (s: string) => aboveEditor(s).join("\n");
const prefixes = (s: string) => footerLine(s).split("auto-mode:").length - 1;

describe("the real pi TUI in tmux", { concurrency: false }, () => {
  if (why) console.log(`# e2e/tui-tmux.test.ts skipped: ${why}`);
  const skip = () => why ?? sandboxWhy;

  test("the footer and the check widget through reviews: running, allowed, denied, replaced, cleared", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term, ws, release } = await startPi();

    let s = await term.waitFor((x) => /auto-mode: Auto\b/.test(footerLine(x)) && /no reviewer/.test(footerLine(x)), "Auto without a reviewer");
    assert.equal(prefixes(s), 1, footerLine(s));

    await term.submit("/perm-auto-model judge/judge-1");
    s = await term.waitFor((x) => footerLine(x).includes("auto-mode: Auto · reviewer judge/judge-1"), "the footer naming the reviewer");
    assert.doesNotMatch(footerLine(s), /no reviewer/);

    // A write under .git goes to the reviewer, which holds its verdict until released.
    await term.submit(call("write", { path: ".git/hooks/pre-commit", content: "#!/bin/sh\necho hook\n" }));
    s = await term.waitFor((x) => /reviewer judge\/judge-1 · [1-9]\d* s · Esc cancels/.test(widget(x)), "the running review, a second in");
    assert.match(widget(s), /^auto mode · reviewing write \.git\/hooks\/pre-commit$/m);
    assert.match(widget(s), /route review \(/);
    assert.equal(prefixes(s), 1, `the footer carries no review: ${footerLine(s)}`);
    assert.doesNotMatch(footerLine(s), /reviewing/);
    assert.equal(existsSync(join(ws, ".git", "hooks", "pre-commit")), false, "nothing written while the review runs");

    release();
    s = await term.waitFor((x) => /allowed by the reviewer: write \.git\/hooks\/pre-commit/.test(widget(x)), "the review's outcome in place");
    const allowed = widget(s);
    assert.match(allowed, /low risk · reviewer judge\/judge-1 · \d+ tokens · \d+\.\d s/);
    assert.match(allowed, /The user asked for exactly this hook\./);
    assert.doesNotMatch(allowed, /reviewing|Esc cancels/, "the running line was replaced");
    await term.waitFor(/TOOL write OK/, "the model to see the write's result");
    assert.equal(readFileSync(join(ws, ".git", "hooks", "pre-commit"), "utf8"), "#!/bin/sh\necho hook\n");
    assert.doesNotMatch(footerLine(s), /allowed|tokens/, "no result in the footer");

    // A new prompt clears the last run's check; the next review replaces it.
    await term.submit(call("write", { path: ".git/hooks/post-commit", content: "deny-me\n" }));
    s = await term.waitFor((x) => /reviewing write \.git\/hooks\/post-commit/.test(widget(x)), "the second review running");
    assert.doesNotMatch(widget(s), /pre-commit/);
    release();
    s = await term.waitFor((x) => /denied by the reviewer: write \.git\/hooks\/post-commit/.test(widget(x)), "the denial in place");
    assert.match(widget(s), /high risk · reviewer judge\/judge-1/);
    assert.match(widget(s), /Nothing in the transcript asks for this\./);
    await term.waitFor(/TOOL write ERR/, "the model to see the denial");
    assert.equal(existsSync(join(ws, ".git", "hooks", "post-commit")), false);

    // A new session starts with no check shown.
    await term.submit("/new");
    s = await term.waitFor((x) => !/denied by the reviewer/.test(widget(x)) && footerLine(x).includes("auto-mode:"), "the widget cleared by /new");
    assert.equal(prefixes(s), 1);
  });

  test("Esc cancels a running review: the widget says it was not reviewed, nothing is written", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term, ws } = await startPi();
    await term.submit("/perm-auto-model judge/judge-1");
    await term.waitFor((x) => footerLine(x).includes("reviewer judge/judge-1"), "the reviewer saved");
    await term.submit(call("write", { path: ".git/hooks/pre-push", content: "x\n" }));
    await term.waitFor((x) => /Esc cancels/.test(widget(x)), "the running review");
    await term.keys("Escape");
    const s = await term.waitFor((x) => /denied, not reviewed \(aborted\): write \.git\/hooks\/pre-push/.test(widget(x)), "the cancelled review's outcome");
    assert.doesNotMatch(widget(s), /risk/, "a cancelled review is no risk judgement");
    assert.equal(existsSync(join(ws, ".git", "hooks", "pre-push")), false);
  });

  test("a hard deny: shown as auto mode's block in the transcript and the widget; the home survives", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term, home } = await startPi();
    await term.submit(call("bash", { command: "rm -rf ~" }));
    const s = await term.waitFor((x) => /^blocked by auto mode: bash rm -rf ~$/m.test(widget(x)), "the hard deny in the widget");
    assert.match(widget(s), /route deny \(hard-deny\) · a hard deny: never allowed, no override/);
    assert.match(widget(s), new RegExp(`rm recursively wipes ${home.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    const after = await term.waitFor(/TOOL bash ERR/, "the model to see the denial");
    // The transcript draws the tool result under auto mode's head, in colour, with the one next step.
    const flat = after.replace(/\n /g, " ");
    assert.match(flat, /Blocked by auto mode — never allowed, and nothing overrides it/);
    assert.match(flat, /Next: Nothing: no approval, rule or mode lets this run\./);
    assert.doesNotMatch(flat, /ask the user to run it/);
    const raw = await term.screenWithEscapes();
    assert.ok(colourBefore(raw, "Blocked by auto mode —"), "the head is coloured, not plain output");
    assert.ok(colourBefore(raw, "blocked by auto mode: bash"), "the widget's head is coloured");
    assert.equal(readFileSync(join(home, "canary"), "utf8"), "alive");
    assert.equal(prefixes(s), 1);
  });

  test("the footer highlights Unrestricted and Off, and says Auto again after /perm auto", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term } = await startPi();
    await term.submit("/perm-auto-model judge/judge-1");
    await term.waitFor((x) => footerLine(x).includes("reviewer judge/judge-1"), "the reviewer saved");

    await term.submit("/perm unrestricted");
    let s = await term.waitFor((x) => /auto-mode: Unrestricted/.test(footerLine(x)), "Unrestricted in the footer");
    assert.doesNotMatch(footerLine(s), /reviewer/, "no reviewer is named where none is asked");
    let raw = await term.screenWithEscapes();
    const warning = colourBefore(raw, "Unrestricted", "auto-mode: ");
    assert.ok(warning, "Unrestricted is coloured");

    await term.submit("/perm auto");
    s = await term.waitFor((x) => /auto-mode: Auto · reviewer judge\/judge-1/.test(footerLine(x)), "Auto again");
    raw = await term.screenWithEscapes();
    assert.equal(colourBefore(raw, "Auto · reviewer", "auto-mode: "), undefined, "Auto is not highlighted");

    await term.submit("/perm-enabled off");
    s = await term.waitFor((x) => /auto-mode: Off/.test(footerLine(x)), "Off in the footer");
    raw = await term.screenWithEscapes();
    const error = colourBefore(raw, "Off", "auto-mode: ");
    assert.ok(error, "Off is coloured");
    assert.notEqual(error, warning, "Off and Unrestricted are told apart");
    assert.equal(prefixes(s), 1);

    // Global: the next test's Pi has its own agent dir, but this one is put back for the record.
    await term.submit("/perm-enabled on");
    await term.waitFor((x) => /auto-mode: Auto\b/.test(footerLine(x)), "Auto after /perm-enabled on");
  });

  test("/perm shows one status view, then a picker that says what each choice means", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term, ws } = await startPi();
    await term.submit("/perm");
    let s = await term.waitFor(/Permission mode for this runtime/, "the picker");
    const flat = s.replace(/\n /g, " ");
    // The status view: mode and why, where shell commands run, reviewer, network, roots, rules, denials.
    assert.match(s, /^ Auto mode: Auto · no reviewer$/m);
    assert.match(flat, /why: every call is judged/);
    assert.match(flat, /Shell commands: in the OS sandbox, staged/);
    assert.match(flat, /Reviewer: none: calls that need review are denied/);
    assert.match(flat, /Network for sandboxed commands: registry\.npmjs\.org/);
    assert.ok(flat.includes(`Writable roots: ${ws} (the workspace)`), flat);
    assert.match(flat, /Rules: none/);
    assert.match(flat, /Recent denials you may override: none/);
    // The picker: each choice with its meaning, the current one marked.
    assert.match(flat, /→ auto \(current\): every call is judged/);
    assert.match(flat, /\(no reviewer set: calls that need review are denied\)/);
    assert.match(flat, /unrestricted: calls run without auto mode's checks, except the hard denies, in this runtime only/);

    await term.keys("Down", "Enter");
    s = await term.waitFor((x) => /auto-mode: Unrestricted/.test(footerLine(x)), "Unrestricted picked");
    await term.submit("/perm");
    s = await term.waitFor(/→ auto: every call is judged/, "the picker again, on auto");
    assert.match(s.replace(/\n /g, " "), /unrestricted \(current\):/);
    assert.match(s, /^ Auto mode: Unrestricted$/m);
    await term.keys("Enter");
    await term.waitFor((x) => /auto-mode: Auto · no reviewer/.test(footerLine(x)), "Auto picked back");
  });

  test("/perm auto without a reviewer: back from Unrestricted, said what it means, no error", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term } = await startPi();
    await term.submit("/perm unrestricted");
    await term.waitFor((x) => /auto-mode: Unrestricted/.test(footerLine(x)), "Unrestricted");
    await term.submit("/perm auto");
    let s = await term.waitFor((x) => /auto-mode: Auto · no reviewer/.test(footerLine(x)), "Auto without a reviewer");
    let flat = s.replace(/\n /g, " ");
    assert.match(flat, /This runtime is now in auto mode/);
    assert.match(flat, /No reviewer model is set, so the deterministic layers and the sandbox decide alone: calls that need review are denied/);
    assert.doesNotMatch(flat, /Error:/);
    // Choosing the mode it is in is no error either.
    await term.submit("/perm auto");
    s = await term.waitFor(/This runtime is already in auto mode/, "already in auto");
    flat = s.replace(/\n /g, " ");
    assert.doesNotMatch(flat, /Error:/);
    // And Auto without a reviewer gates: a review route is denied with its reason, a hard deny still is.
    await term.submit(call("write", { path: ".git/hooks/pre-commit", content: "x\n" }));
    s = await term.waitFor((x) => /denied, needs review: write \.git\/hooks\/pre-commit/.test(widget(x)), "the review route denied");
    await term.waitFor(/TOOL write ERR/, "the model to see the denial");
  });

  test("/perm-enabled off: the footer says Off, and rm -rf ~ is still denied", { skip: why }, async (t) => {
    if (skip()) return t.skip(skip());
    const { term, home, ws } = await startPi();
    await term.submit("/perm-enabled off");
    let s = await term.waitFor((x) => /auto-mode: Off/.test(footerLine(x)), "Off");
    assert.match(s.replace(/\n /g, " "), /except the hard denies .* which stay denied/);
    await term.submit(call("bash", { command: "rm -rf ~" }));
    s = await term.waitFor((x) => /^blocked by auto mode: bash rm -rf ~$/m.test(widget(x)), "the hard deny under Off");
    await term.waitFor(/TOOL bash ERR/, "the model to see the denial");
    assert.equal(readFileSync(join(home, "canary"), "utf8"), "alive");
    assert.match(footerLine(s), /auto-mode: Off/);
    // Below the floor the gate stands aside: an ordinary command runs.
    await term.submit(call("bash", { command: "echo off-ran > off.txt" }));
    await term.waitFor(/TOOL bash OK/, "an ordinary command runs while off");
    assert.equal(readFileSync(join(ws, "off.txt"), "utf8"), "off-ran\n");
  });
});
