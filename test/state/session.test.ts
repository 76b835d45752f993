// P2, P12, P16 through real Pi sessions (the faux provider, this package's extension loaded from
// its entry file): only a reload keeps `unrestricted`; new, resumed and forked sessions start in
// auto; `/perm-enabled off` committed by a second process reaches the first at its next tool
// call; damaged global state shows as a fault, denies review and sandbox routes, and the
// commands stay usable to repair it.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { serializeWatermark } from "../../src/state/artifacts.ts";
import { createMemoryGlobalState } from "../../src/state/global.ts";
import { createRuntimeState } from "../../src/state/runtime-state.ts";
import { makeRoot, startPi, toolResults, type PiHarness } from "../helpers/pi-session.ts";
import { decisions, recordingUi, startRuntime, type PiRuntimeHarness } from "../fixtures/state-pi.ts";
import { deployTool } from "../helpers/tools.ts";

const CHILD = fileURLToPath(new URL("../fixtures/state-pi-child.ts", import.meta.url));

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

// Auto mode's footer and decision modes, whichever bash backend this machine's sandbox probe picked.
const AUTO_STATUS = /^auto-mode: Auto( \(review-only\)| \(sandbox unavailable\)[^·]*)?( · no reviewer)?$/;
const AUTO_MODES: ReadonlySet<string | undefined> = new Set(["auto", "auto-review-only", "auto-sandbox-unavailable"]);

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function fresh(): { root: string; cwd: string; agentDir: string } {
  const dirs = makeRoot("pi-auto-mode-state-session-");
  cleanups.push(() => rmSync(dirs.root, { recursive: true, force: true }));
  return dirs;
}

async function pi(opts: Parameters<typeof startPi>[0]): Promise<PiHarness> {
  const h = await startPi(opts);
  cleanups.push(() => h.session.dispose());
  return h;
}

describe("P2: the requested mode across runtime lifecycles, through a real AgentSession", () => {
  test("reload restores unrestricted (and its status line); the restored runtime runs what unrestricted allows", async () => {
    const dirs = fresh();
    const ui = recordingUi();
    const deploy = deployTool();
    const h = await pi({ ...dirs, mode: "rpc", uiContext: ui.ui, extensionFactories: [deploy.factory], tools: ["read", "deploy_service"] });
    assert.match(ui.status() ?? "", AUTO_STATUS);
    await h.session.prompt("/perm unrestricted");
    assert.equal(ui.status(), "auto-mode: Unrestricted");
    await h.session.reload();
    assert.equal(ui.status(), "auto-mode: Unrestricted", "the reloaded runtime shows unrestricted at once");
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy");
    assert.equal(deploy.runs(), 1);
    assert.equal(decisions(h.session).at(-1)?.mode, "unrestricted");
  });

  test("new, resume and fork start in auto, whatever the previous runtime had", async () => {
    const dirs = fresh();
    const deploy = deployTool();
    const rt: PiRuntimeHarness = await startRuntime({ ...dirs, extensionFactories: [deploy.factory], tools: ["read", "deploy_service"] });
    cleanups.push(() => rt.dispose());
    const deployOnce = async (): Promise<{ mode: string | undefined; ran: boolean }> => {
      const before = deploy.runs();
      const decided = decisions(rt.session()).length;
      rt.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
      await rt.session().prompt("deploy the api");
      assert.equal(decisions(rt.session()).length, decided + 1, "the call was decided by the gate");
      const mode = decisions(rt.session()).at(-1)?.mode;
      return { mode: AUTO_MODES.has(mode) ? "auto" : mode, ran: deploy.runs() > before };
    };

    await rt.session().prompt("/perm unrestricted");
    assert.deepEqual(await deployOnce(), { mode: "unrestricted", ran: true });
    const first = rt.session().sessionFile;
    assert.ok(first);

    await rt.runtime.newSession();
    assert.match(rt.ui.status() ?? "", AUTO_STATUS, "new");
    assert.deepEqual(await deployOnce(), { mode: "auto", ran: false }, "new");

    await rt.runtime.switchSession(first);
    assert.match(rt.ui.status() ?? "", AUTO_STATUS, "resume");
    assert.deepEqual(await deployOnce(), { mode: "auto", ran: false }, "resume");

    await rt.session().prompt("/perm unrestricted");
    assert.deepEqual(await deployOnce(), { mode: "unrestricted", ran: true }, "the resumed runtime can be made unrestricted itself");
    const lastUser = [...rt.session().sessionManager.getBranch()].reverse().find((e) => e.type === "message" && e.message.role === "user");
    assert.ok(lastUser);
    await rt.runtime.fork(lastUser.id);
    assert.match(rt.ui.status() ?? "", AUTO_STATUS, "fork");
    assert.deepEqual(await deployOnce(), { mode: "auto", ran: false }, "fork");

    // And a reload of the forked runtime does not bring back what the branch it came from recorded.
    await rt.session().reload();
    assert.deepEqual(await deployOnce(), { mode: "auto", ran: false }, "reload after fork");
  });

  test("the session revision grows on every mode or lifecycle change, and never repeats in another runtime", () => {
    const store = createMemoryGlobalState();
    const a = createRuntimeState(store, () => "review-only");
    const seen = [a.session().revision];
    seen.push(a.setRequested("unrestricted").revision);
    seen.push(a.setRequested("unrestricted").revision, a.bump().revision, a.setRequested("auto").revision);
    const b = createRuntimeState(store, () => "review-only");
    seen.push(b.session().revision, a.bump().revision, b.bump().revision);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `revision ${seen[i]} after ${seen[i - 1]}`);
    assert.equal(a.revisions().session, a.session().revision);
  });

  test("the global revision verdicts bind to is exposed, and is absent while the state is at fault", async () => {
    const store = createMemoryGlobalState();
    const r = createRuntimeState(store, () => "review-only");
    assert.equal(r.revisions().global, 0);
    await store.setEnabled(true);
    assert.equal(r.revisions().global, 1);
    store.inject({ kind: "fault", fault: { code: "unequal-watermarks", detail: "x", floor: 4, survivor: undefined } });
    assert.equal(r.revisions().global, undefined);
    assert.equal(r.effective("ok"), "auto-config-fault");
  });
});

function runChild(
  root: string,
  cwd: string,
  agentDir: string,
  commands: string[],
): Promise<Array<{ command: string; notes: Array<{ text: string }>; status: string }>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, root, cwd, ...commands], {
      env: { ...process.env, PI_CODING_AGENT_DIR: agentDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve(
            out
              .trim()
              .split("\n")
              .map((l) => JSON.parse(l)),
          )
        : reject(new Error(`child exited ${code}: ${err}`)),
    );
  });
}

describe("P12: global state is shared by every Pi process of the user", () => {
  test("/perm-enabled off committed by a second process is seen by the first at its next tool call", async () => {
    const dirs = fresh();
    const ui = recordingUi();
    const deploy = deployTool();
    const h = await pi({ ...dirs, mode: "rpc", uiContext: ui.ui, extensionFactories: [deploy.factory], tools: ["read", "deploy_service"] });
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy");
    assert.equal(deploy.runs(), 0, "gated while on");
    const gated = decisions(h.session).length;

    const said = await runChild(dirs.root, dirs.cwd, dirs.agentDir, ["/perm-enabled off"]);
    assert.match(said[0]!.notes.map((n) => n.text).join("\n"), /Auto mode is off for every Pi/);
    assert.equal(said[0]!.status, "auto-mode: Off");

    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy again");
    assert.equal(deploy.runs(), 1, "the first process saw the other's commit at its next tool call");
    // ... and was told so there, once, not left to find out from the footer (issue 14).
    assert.equal(ui.notes.filter((n) => /turned off in another Pi session/.test(n.text)).length, 1);
    assert.equal(decisions(h.session).length, gated, "nothing is decided while off");
    assert.equal(ui.status(), "auto-mode: Off", "and its status line says so");

    // And back on, from the first process this time.
    await h.session.prompt("/perm-enabled on");
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy once more");
    assert.equal(deploy.runs(), 1);
    assert.equal(decisions(h.session).at(-1)?.outcome, "denied");
  });
});

describe("P12, P16: damaged global state, through a real AgentSession", () => {
  test("commands stay usable in Fault; the status says so; review routes are denied, allowed routes still run; repair restores", async () => {
    const dirs = fresh();
    const stateDir = join(dirs.agentDir, "auto-mode");
    const ui = recordingUi();
    const deploy = deployTool();
    const h = await pi({ ...dirs, mode: "rpc", uiContext: ui.ui, extensionFactories: [deploy.factory], tools: ["read", "deploy_service"] });
    writeFileSync(join(dirs.cwd, "notes.txt"), "hello\n");
    const lastNote = () => ui.notes.at(-1)?.text ?? "";

    await h.session.prompt("/perm-enabled on");
    writeFileSync(join(stateDir, "revision.recovery.json"), serializeWatermark(7));

    h.faux.setResponses([call("read", { path: "notes.txt" }), call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("read, then deploy");
    const [read, dep] = toolResults(h.session);
    assert.equal(read?.isError, false, "an allowed call still runs");
    assert.equal(dep?.isError, true);
    assert.match(dep?.text ?? "", /configuration is at fault/);
    assert.equal(deploy.runs(), 0);
    assert.equal(ui.status(), "auto-mode: Auto (configuration fault)");
    assert.equal(decisions(h.session).at(-1)?.mode, "auto-config-fault");

    await h.session.prompt("/perm unrestricted");
    assert.match(lastNote(), /now unrestricted/);
    assert.equal(ui.status(), "auto-mode: Auto (configuration fault)", "a fault outranks unrestricted");
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy");
    assert.equal(deploy.runs(), 0);

    await h.session.prompt("/perm-enabled");
    assert.match(lastNote(), /damaged: the revision watermarks disagree.*\/perm-repair/s);

    await h.session.prompt("/perm-repair");
    assert.match(lastNote(), /Repaired the damaged global state/);
    assert.match(lastNote(), /revision 8/, "above the surviving watermark 7");
    assert.equal(ui.status(), "auto-mode: Unrestricted");
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy");
    assert.equal(deploy.runs(), 1);

    // Unrepairable: no watermark survives, in the state dir or as the anchor beside it. The
    // command refuses, says what to do, changes nothing.
    rmSync(join(stateDir, "revision.json"));
    rmSync(join(stateDir, "revision.recovery.json"));
    rmSync(join(dirs.agentDir, "auto-mode.anchor"));
    // The state's files (the audit's folder beside them is written by its own timer, not by this command).
    const stateFiles = () =>
      readdirSync(stateDir, { withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => [e.name, readFileSync(join(stateDir, e.name), "utf8")]);
    const before = stateFiles();
    await h.session.prompt("/perm-enabled off");
    assert.match(lastNote(), /cannot be repaired safely.*Quit every running Pi, delete/s);
    assert.equal(ui.notes.at(-1)?.level, "error");
    assert.deepEqual(stateFiles(), before);
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy");
    assert.equal(deploy.runs(), 1, "still gated: a refused 'off' did not turn anything off");
    assert.equal(ui.status(), "auto-mode: Auto (configuration fault)");

    // A repairable fault and /perm-enabled off: repaired and off in one explicit act.
    writeFileSync(join(stateDir, "revision.json"), serializeWatermark(8));
    writeFileSync(join(stateDir, "revision.recovery.json"), serializeWatermark(8));
    writeFileSync(join(stateDir, "state.json"), '{"schema":1,');
    await h.session.prompt("/perm-enabled off");
    assert.match(lastNote(), /Repaired .*Auto mode is off/s);
    h.faux.setResponses([call("deploy_service", { service: "api" }), done()]);
    await h.session.prompt("deploy");
    assert.equal(deploy.runs(), 2);
    assert.equal(ui.status(), "auto-mode: Off");
    assert.deepEqual(ui.dialogs, [], "no dialog opened for any of it");
  });
});
