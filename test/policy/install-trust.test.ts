// P3/P5: the copy of auto mode that runs must be one the agent cannot have changed. A copy inside
// the workspace or the temporary root gates only plain reads (unless the user develops it, opted
// in through Pi's environment), and an installed copy's own files are protected like its state.

import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { guardedByInstall, installLine, installTrust, WRITABLE_COPY_ENV } from "../../src/policy/install-trust.ts";
import { decision, type Decision } from "../../src/policy/types.ts";
import { makeRoot, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";
import { recordingUi } from "../helpers/ui.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/+$/, "");
const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = () => fauxAssistantMessage([fauxText("done")]);
const decisions = (h: PiHarness): DecisionRecord[] =>
  h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));

/** A copy of this package's sources at `dir` (its dependencies through a link), as a project or an install would hold one. */
function copyPackage(dir: string): string {
  mkdirSync(dir, { recursive: true });
  cpSync(join(REPO, "src"), join(dir, "src"), { recursive: true });
  cpSync(join(REPO, "package.json"), join(dir, "package.json"));
  symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
  return join(dir, "src", "extension.ts");
}

describe("which copies are trusted (install-trust.ts)", () => {
  const places = { workspace: "/w/proj", tmpRoot: "/tmp/pi-auto-mode-1" };
  test("inside the workspace, holding it, or inside the temporary root: writable; elsewhere: trusted", () => {
    assert.equal(installTrust("/w/proj/.pi/npm/node_modules/pi-auto-mode", places, {}).kind, "writable");
    assert.equal(installTrust("/w/proj", places, {}).kind, "writable");
    assert.equal(installTrust("/w", places, {}).kind, "writable", "a copy holding the workspace: the agent writes part of it");
    assert.equal(installTrust("/tmp/pi-auto-mode-1/x", places, {}).kind, "writable");
    assert.equal(installTrust("/w/proj-other/pi-auto-mode", places, {}).kind, "trusted", "a sibling folder with a common prefix is not inside");
    assert.equal(installTrust("/home/u/.pi/agent/npm/node_modules/pi-auto-mode", places, {}).kind, "trusted");
  });
  test("a writable copy lets plain reads and denials through and denies everything else, unless opted in", () => {
    const writable = installTrust("/w/proj/vendor/am", places, {});
    const opted = installTrust("/w/proj/vendor/am", places, { [WRITABLE_COPY_ENV]: "1" });
    const notOne = installTrust("/w/proj/vendor/am", places, { [WRITABLE_COPY_ENV]: "true" });
    const cases: Array<[Decision, boolean]> = [
      [decision("allow", "read-only", "reads"), true],
      [decision("deny", "hard-deny", "no"), true],
      [decision("allow", "workspace-write", "writes"), false],
      [decision("sandbox", "sandboxed", "runs"), false],
      [decision("review", "network", "asks"), false],
      [decision("allow", "user-allow-rule", "rule"), false],
    ];
    for (const [d, kept] of cases) {
      const g = guardedByInstall(writable, d);
      assert.equal(g === d, kept, `${d.route}/${d.reason}`);
      if (!kept) assert.deepEqual([g.route, g.reason], ["deny", "untrusted-install"]);
      assert.equal(guardedByInstall(opted, d), d, "opted in: judged as usual");
      assert.equal(guardedByInstall(notOne, d) === d, kept, "only the exact value 1 opts in");
    }
    assert.match(installLine(writable), /not trusted/);
    assert.match(installLine(opted), /development copy/);
  });
});

describe("through a real AgentSession", () => {
  const pi = reviewOnlySessions();

  test("a copy of auto mode inside the workspace: plain reads run (file tools and read-only shell), writes and other shell are denied (never reviewed), and nothing is written", async () => {
    const made = makeRoot();
    const entry = copyPackage(join(made.cwd, "vendor", "pi-auto-mode"));
    writeFileSync(join(made.cwd, "notes.txt"), "hello\n");
    const rec = recordingUi();
    const h = await pi({
      root: made.root,
      cwd: made.cwd,
      extensionEntry: entry,
      mode: "tui",
      uiContext: rec.ui,
      responses: [
        call("read", { path: "notes.txt" }),
        call("write", { path: "new.txt", content: "x" }),
        call("bash", { command: "ls" }),
        call("bash", { command: "echo x > made.txt" }),
        call("edit", { path: "notes.txt", edits: [{ oldText: "hello", newText: "bye" }] }),
        done(),
      ],
    });
    await h.session.prompt("go");
    const d = decisions(h);
    assert.deepEqual(
      d.map((x) => [x.tool, x.outcome, x.reason]),
      [
        ["read", "allowed", "read-only"],
        ["write", "denied", "untrusted-install"],
        ["bash", "allowed", "read-only"],
        ["bash", "denied", "untrusted-install"],
        ["edit", "denied", "untrusted-install"],
      ],
    );
    assert.equal(existsSync(join(made.cwd, "new.txt")), false);
    assert.equal(existsSync(join(made.cwd, "made.txt")), false);
    assert.equal(readFileSync(join(made.cwd, "notes.txt"), "utf8"), "hello\n");
    assert.match(toolResults(h.session)[1]!.text, new RegExp(`${WRITABLE_COPY_ENV}=1`), "the denial says how to develop this copy");
    assert.ok(
      rec.statuses().some((t) => /not trusted, only plain reads run/.test(t)),
      `the status says why: ${rec.statuses().join(" | ")}`,
    );
    assert.ok(
      rec.notes.some((n) => n.level === "warning" && /not trusted/.test(n.text)),
      "and the user is warned once at the start",
    );
  });

  test(`opted in with ${WRITABLE_COPY_ENV}=1 in Pi's environment: the copy gates as usual, and its own files are the agent's to edit`, async () => {
    const made = makeRoot();
    const entry = copyPackage(join(made.cwd, "vendor", "pi-auto-mode"));
    process.env[WRITABLE_COPY_ENV] = "1";
    let h: PiHarness;
    try {
      h = await pi({
        root: made.root,
        cwd: made.cwd,
        extensionEntry: entry,
        responses: [call("write", { path: "new.txt", content: "x" }), call("write", { path: "vendor/pi-auto-mode/src/note.ts", content: "//" }), done()],
      });
    } finally {
      delete process.env[WRITABLE_COPY_ENV];
    }
    await h.session.prompt("go");
    assert.deepEqual(
      decisions(h).map((x) => [x.tool, x.outcome]),
      [
        ["write", "allowed"],
        ["write", "allowed"],
      ],
    );
    assert.equal(readFileSync(join(made.cwd, "new.txt"), "utf8"), "x");
  });

  test("an installed copy outside the workspace: its own files are self-protected, from the file tools and from the shell", async () => {
    const made = makeRoot();
    const installed = join(made.root, "installed", "pi-auto-mode");
    const entry = copyPackage(installed);
    const target = join(installed, "src", "policy", "judge.ts");
    const before = readFileSync(target, "utf8");
    const h = await pi({
      root: made.root,
      cwd: made.cwd,
      extensionEntry: entry,
      responses: [
        call("write", { path: "ok.txt", content: "x" }),
        call("write", { path: target, content: "export {}" }),
        call("edit", { path: target, edits: [{ oldText: "deny", newText: "allow" }] }),
        call("bash", { command: `echo 'export {}' > ${target}` }),
        call("bash", { command: `rm -rf ${installed}` }),
        done(),
      ],
    });
    await h.session.prompt("go");
    assert.deepEqual(
      decisions(h).map((x) => [x.tool, x.outcome, x.reason]),
      [
        ["write", "allowed", "workspace-write"],
        ["write", "denied", "self-protection"],
        ["edit", "denied", "self-protection"],
        ["bash", "denied", "self-protection"],
        ["bash", "denied", "self-protection"],
      ],
    );
    assert.equal(readFileSync(target, "utf8"), before);
  });
});
