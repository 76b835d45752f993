// End to end through a real Pi AgentSession (faux provider, this package's extension from its
// entry file) with the real sandbox: the agent's bash runs contained, a write outside the
// workspace fails while the agent keeps working, Pi's own bash behaviour (truncation, timeouts,
// PI_* variables) is kept, an escalation without a reviewer runs zero times, and the status
// line tells the truth for the sandboxed, unavailable and review-only backends (P6, P7, P16).

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionUIContext } from "@earendil-works/pi-coding-agent";
import { DECISION_ENTRY_TYPE, type DecisionRecord } from "../../src/audit/decision-record.ts";
import { createController, resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import { createLinuxDriver } from "../../src/sandbox/linux/driver.ts";
import { startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { recordingUi } from "../helpers/ui.ts";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

function decisions(h: PiHarness): DecisionRecord[] {
  return h.session.sessionManager.getEntries().flatMap((e) => (e.type === "custom" && e.customType === DECISION_ENTRY_TYPE ? [e.data as DecisionRecord] : []));
}

/** A recording UI, with every status text and the notification texts as plain lists. */
function watchUi(): { ui: ExtensionUIContext; statuses: string[]; notes: string[] } {
  const rec = recordingUi();
  return {
    ui: rec.ui,
    get statuses() {
      return rec.statuses();
    },
    get notes() {
      return rec.notes.map((n) => n.text);
    },
  };
}

/** End a session the way Pi's runtime does: session_shutdown first, then dispose. */
async function quit(h: PiHarness): Promise<void> {
  await h.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
  await h.dispose();
}

const harnesses: PiHarness[] = [];
async function pi(opts: Parameters<typeof startPi>[0]): Promise<PiHarness> {
  const h = await startPi(opts);
  harnesses.push(h);
  return h;
}
async function disposeAll(): Promise<void> {
  for (const h of harnesses.splice(0)) await h.dispose();
}

let unavailableReason: string | undefined;
before(async () => {
  resetSharedController();
  const s = await sharedController().ready();
  if (s.backend !== "sandboxed") unavailableReason = s.reason;
});
after(async () => {
  await disposeAll();
  resetSharedController();
});

describe("the sandboxed backend, through a real AgentSession", () => {
  test("a write outside the workspace fails inside the sandbox, and the agent keeps working", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const w = watchUi();
    const { ui } = w;
    const h = await pi({ uiContext: ui, mode: "rpc" });
    const outside = join(h.root, "outside");
    mkdirSync(outside);
    h.faux.setResponses([
      call("bash", { command: `node -e 'require("fs").writeFileSync(process.argv[1], "pwned")' ${join(outside, "x.txt")}` }),
      call("bash", { command: "echo ok > inside.txt && cat inside.txt" }),
      done(),
    ]);
    await h.session.prompt("write the files");
    const results = toolResults(h.session);
    assert.equal(results.length, 2);
    assert.equal(results[0]!.isError, true);
    assert.match(results[0]!.text, /EROFS|read-only file system/i);
    assert.equal(existsSync(join(outside, "x.txt")), false, "judged on the host: nothing outside the workspace");
    assert.equal(results[1]!.isError, false);
    assert.equal(readFileSync(join(h.cwd, "inside.txt"), "utf8"), "ok\n");
    assert.equal(h.session.getLastAssistantText(), "done", "the agent kept going");
    assert.deepEqual(
      decisions(h).map((d) => [d.route, d.outcome, d.mode]),
      [
        ["sandbox", "sandboxed", "auto"],
        ["sandbox", "sandboxed", "auto"],
      ],
    );
    assert.ok(
      w.statuses.some((s) => /auto-mode: Auto\b/.test(s) && !/unavailable|review-only/.test(s)),
      w.statuses.join(" | "),
    );
  });

  test("Pi's bash behaviour is kept: PI_* variables, truncation, timeouts, exit codes", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const h = await pi({
      responses: [
        call("bash", { command: 'echo "$PI_SESSION_ID $PI_AUTO_MODE_SANDBOXED" > sid.txt' }),
        call("bash", { command: "seq 3000" }),
        call("bash", { command: "sleep 5", timeout: 1 }),
        call("bash", { command: "exit 3" }),
        done(),
      ],
    });
    const t0 = Date.now();
    await h.session.prompt("go");
    const results = toolResults(h.session);
    assert.equal(readFileSync(join(h.cwd, "sid.txt"), "utf8"), `${h.session.sessionManager.getSessionId()} 1\n`);
    assert.match(results[1]!.text, /\[Showing lines \d+-3000 of 3000/);
    assert.match(results[2]!.text, /Command timed out after 1 seconds/);
    assert.ok(Date.now() - t0 < 4000, "the timeout killed the sandbox");
    assert.equal(results[3]!.isError, true);
    assert.match(results[3]!.text, /Command exited with code 3/);
  });

  test("an escalation request without a reviewer is denied and runs zero times", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const h = await pi({ responses: [] });
    h.faux.setResponses([
      call("bash", { command: "echo escaped > escaped.txt", sandbox_permissions: "require_escalated", justification: "needs the host" }),
      call("bash", { command: "echo contained > contained.txt" }),
      done(),
    ]);
    await h.session.prompt("go");
    const results = toolResults(h.session);
    assert.equal(results[0]!.isError, true);
    assert.match(results[0]!.text, /needs review, and no reviewer is set\.\nWhy it needs review: asks to run outside the OS sandbox/);
    assert.equal(existsSync(join(h.cwd, "escaped.txt")), false);
    assert.equal(readFileSync(join(h.cwd, "contained.txt"), "utf8"), "contained\n");
  });

  test("the model sees sandbox_permissions and justification in the bash schema", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    const h = await pi({ responses: [] });
    const bash = h.session.getAllTools?.().find((x: { name: string }) => x.name === "bash") as
      | { parameters?: { properties?: Record<string, unknown> } }
      | undefined;
    const props = bash?.parameters?.properties ?? {};
    for (const k of ["command", "timeout", "sandbox_permissions", "justification"]) assert.ok(k in props, k);
  });

  test("when the last session ends, the sandbox is drained and leaves nothing in the workspace", async (t) => {
    if (unavailableReason) return t.skip(`sandbox unavailable: ${unavailableReason}`);
    // The earlier tests' sessions end first: a session loads the sandbox when it is idle, so one
    // still open would attach to the controller made below and be counted as an owner.
    for (const h of harnesses.splice(0)) await quit(h);
    resetSharedController();
    const first = await startPi({ responses: [call("bash", { command: "ls -a > listing.txt" }), done()] });
    const second = await startPi({ root: first.root, cwd: first.cwd, responses: [] });
    await first.session.prompt("list");
    // Staged, a protected name the command creates is held when it ends: no placeholder is needed.
    assert.doesNotMatch(readFileSync(join(first.cwd, "listing.txt"), "utf8"), /^\.pi$/m, "no placeholder stands in the staged workspace");
    const c = sharedController();
    assert.equal(c.owners().length, 2);
    const cwd = first.cwd;
    await first.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
    assert.equal(c.owners().length, 1, "the other session still uses the sandbox");
    await second.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
    assert.deepEqual(c.owners(), []);
    assert.equal(c.activeLeases(), 0);
    assert.deepEqual(
      readdirSync(cwd).filter((n) => n.startsWith(".")),
      [],
      "nothing of the sandbox is left in the workspace",
    );
    assert.equal(c.status().backend, "sandboxed", `a clean drain leaves the sandbox usable (${c.status().reason})`);
    first.session.dispose();
    second.session.dispose();
    await first.dispose();
  });
});

describe("the status line and the gate when the sandbox is unavailable or absent", () => {
  before(() => resetSharedController());
  after(() => resetSharedController());

  test("unavailable on Linux: bash is denied with the reason, the footer says why, never review-only", async () => {
    resetSharedController();
    sharedController(() => createController({ platform: "linux", driver: createLinuxDriver({ bwrapPath: "/nonexistent/bwrap" }) }));
    const w = watchUi();
    const { ui } = w;
    const h = await pi({ uiContext: ui, mode: "rpc", responses: [] });
    writeFileSync(join(h.cwd, "canary"), "alive");
    h.faux.setResponses([call("bash", { command: "rm canary" }), call("read", { path: "canary" }), done()]);
    await h.session.prompt("go");
    const results = toolResults(h.session);
    assert.equal(results[0]!.isError, true);
    assert.equal(existsSync(join(h.cwd, "canary")), true, "the denied command never ran");
    assert.equal(results[1]!.isError, false, "other tools keep working");
    const d = decisions(h)[0]!;
    assert.deepEqual([d.route, d.reason, d.mode], ["deny", "sandbox-unavailable", "auto-sandbox-unavailable"]);
    assert.ok(
      w.statuses.some((s) => s.includes("Auto (sandbox unavailable)") && s.includes("— bubblewrap (bwrap) not installed")),
      w.statuses.join(" | "),
    );
    assert.ok(w.notes.some((n) => /sandbox is unavailable/.test(n)));
    await disposeAll();
  });

  test("no OS sandbox on this platform: review-only, and allowed bash runs unsandboxed once", async () => {
    resetSharedController();
    sharedController(() => createController({ platform: "plan9" }));
    const w = watchUi();
    const { ui } = w;
    const h = await pi({ uiContext: ui, mode: "rpc", responses: [call("bash", { command: "echo hi > hi.txt" }), done()] });
    await h.session.prompt("go");
    assert.equal(readFileSync(join(h.cwd, "hi.txt"), "utf8"), "hi\n");
    assert.equal(decisions(h)[0]!.mode, "auto-review-only");
    assert.ok(
      w.statuses.some((s) => s.includes("Auto (review-only)")),
      w.statuses.join(" | "),
    );
    await disposeAll();
  });
});
