// P14 at the command edge: /perm-denials, /perm-approve and /perm-break-glass as the user runs
// them (a fake Pi that records what the commands do), and break glass turned off by the user's or
// the project's configuration (a project can turn it off, never on).

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import {
  APPROVAL_MESSAGE_TYPE,
  DENIALS_ENTRY_TYPE,
  type DenialsEntry,
  GRANT_ENTRY_TYPE,
  type GrantEntry,
  registerOverrideCommands,
} from "../../src/commands/overrides.ts";
import type { CommandOrigin } from "../../src/commands/authority.ts";
import { createOverrides, type Overrides } from "../../src/grants/overrides.ts";
import { loadPolicyConfig } from "../../src/policy/config/load.ts";
import type { RequestHash } from "../../src/request/canonical.ts";

type Handler = (args: string, ctx: ExtensionCommandContext) => Promise<void>;

function fakePi() {
  const commands = new Map<string, Handler>();
  const entries: Array<{ type: string; data: unknown }> = [];
  const messages: Array<{ customType: string; content: unknown; triggerTurn: boolean | undefined }> = [];
  const pi = {
    registerCommand: (name: string, spec: { handler: Handler }) => commands.set(name, spec.handler),
    registerEntryRenderer: () => {},
    appendEntry: (type: string, data: unknown) => entries.push({ type, data }),
    sendMessage: (m: { customType: string; content: unknown }, o?: { triggerTurn?: boolean }) =>
      messages.push({ customType: m.customType, content: m.content, triggerTurn: o?.triggerTurn }),
  } as unknown as ExtensionAPI;
  return { pi, commands, entries, messages };
}

interface Ui {
  notes: string[];
  confirm: boolean;
  /** What the user types; a function of the shown title. */
  typed: (title: string) => string | undefined;
}

function ctxWith(ui: Ui | undefined): ExtensionCommandContext {
  return {
    cwd: "/work",
    hasUI: ui !== undefined,
    ui: ui && {
      notify: (text: string) => ui.notes.push(text),
      select: async (_t: string, options: string[]) => options[0],
      confirm: async () => ui.confirm,
      input: async (title: string) => ui.typed(title),
    },
  } as unknown as ExtensionCommandContext;
}

function critical(overrides: Overrides): void {
  overrides.rememberCritical({
    sessionId: "s",
    tool: "bash",
    target: "bash rm -rf ~/project",
    reason: "reviewer-denied",
    risk: "critical",
    escalation: false,
    hash: "ab".repeat(32) as RequestHash,
    toolCallId: "call-9",
    input: { command: "rm -rf ~/project" },
    action: ["Tool: bash", "command (1 line, 9 characters):", "  1 │ kill -0 1"],
    rationale: "deletes the user's project",
    cwd: "/work",
  });
}

function setup(off?: string, origin: CommandOrigin = "typed") {
  const overrides = createOverrides();
  const f = fakePi();
  registerOverrideCommands(f.pi, { overrides, sessionId: () => "s", breakGlassOff: () => off, origin: () => origin });
  return { overrides, ...f };
}

function denied(overrides: Overrides): void {
  overrides.remember({
    sessionId: "s",
    tool: "bash",
    target: "bash kill -0 1",
    reason: "no-reviewer",
    risk: undefined,
    escalation: false,
    hash: "cd".repeat(32) as RequestHash,
    toolCallId: "call-3",
    input: { command: "kill -0 1" },
    action: ["Tool: bash", "command (1 line, 9 characters):", "  1 │ kill -0 1"],
  });
}

describe("issue 23: only a typed command approves", () => {
  test("another extension's /perm-approve and /perm-break-glass are refused, and say why, without a dialog", async () => {
    for (const cmd of ["perm-approve", "perm-break-glass"]) {
      const s = setup(undefined, "extension");
      denied(s.overrides);
      critical(s.overrides);
      const ui: Ui = { notes: [], confirm: true, typed: (title) => /Type (BREAK-GLASS [A-Z0-9]{6})/.exec(title)?.[1] };
      await s.commands.get(cmd)!("1", ctxWith(ui));
      assert.deepEqual(s.entries, [], cmd);
      assert.match(ui.notes.join("\n"), /only on what you type yourself.*another extension/, cmd);
    }
  });

  test("where auto mode cannot tell, only the user's answer in Pi's dialog approves; without a UI nothing does", async () => {
    const no = setup(undefined, "unknown");
    denied(no.overrides);
    const declined: Ui = { notes: [], confirm: false, typed: () => undefined };
    await no.commands.get("perm-approve")!("1", ctxWith(declined));
    assert.deepEqual(no.entries, []);
    assert.match(declined.notes.join("\n"), /could not tell that you typed/);
    const headless = setup(undefined, "unknown");
    denied(headless.overrides);
    const out = await stdoutOf(() => headless.commands.get("perm-approve")!("1", ctxWith(undefined)));
    assert.deepEqual(headless.entries, []);
    assert.match(out, /could not tell that you typed/);
    const yes = setup(undefined, "unknown");
    denied(yes.overrides);
    await yes.commands.get("perm-approve")!("1", ctxWith({ notes: [], confirm: true, typed: () => undefined }));
    assert.equal((yes.entries[0]?.data as GrantEntry | undefined)?.kind, "human-approval", "the user answered in the dialog");
  });

  test("the list is open to every source", async () => {
    const s = setup(undefined, "extension");
    denied(s.overrides);
    const out = await stdoutOf(() => s.commands.get("perm-approve")!("", ctxWith(undefined)));
    assert.match(out, /1\. bash kill -0 1/);
  });
});

async function stdoutOf(f: () => Promise<void>): Promise<string> {
  const out: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((c: string | Uint8Array) => (out.push(String(c)), true)) as typeof process.stdout.write;
  try {
    await f();
  } finally {
    process.stdout.write = write;
  }
  return out.join("");
}

describe("P14: /perm-break-glass", () => {
  test("the exact phrase breaks the glass: a grant entry, and a message that starts a turn", async () => {
    const s = setup();
    critical(s.overrides);
    const ui: Ui = { notes: [], confirm: true, typed: (title) => /Type (BREAK-GLASS [A-Z0-9]{6})/.exec(title)?.[1] };
    await s.commands.get("perm-break-glass")!("", ctxWith(ui));
    assert.equal(s.entries.length, 1, ui.notes.join("\n"));
    assert.equal(s.entries[0]!.type, GRANT_ENTRY_TYPE);
    assert.equal((s.entries[0]!.data as GrantEntry).kind, "break-glass");
    assert.equal(s.messages[0]?.customType, APPROVAL_MESSAGE_TYPE);
    assert.equal(s.messages[0]?.triggerTurn, true);
    assert.match(String(s.messages[0]?.content), /call-9/);
  });

  test("a wrong phrase, a declined confirmation, no UI, or break glass turned off: nothing is granted", async () => {
    for (const [what, ui, off] of [
      ["wrong phrase", { notes: [], confirm: true, typed: () => "BREAK-GLASS AAAAAA" }, undefined],
      ["declined", { notes: [], confirm: false, typed: () => undefined }, undefined],
      ["no UI", undefined, undefined],
      ["off", { notes: [], confirm: true, typed: (t: string) => /Type (BREAK-GLASS \w+)/.exec(t)?.[1] }, "the user's auto-mode.json sets breakGlass to false"],
    ] as const) {
      const s = setup(off);
      critical(s.overrides);
      await s.commands.get("perm-break-glass")!("", ctxWith(ui as Ui | undefined));
      assert.deepEqual(s.entries, [], what);
      assert.deepEqual(s.messages, [], what);
    }
  });

  test("a denial that was not critical is not offered", async () => {
    const s = setup();
    s.overrides.remember({
      sessionId: "s",
      tool: "bash",
      target: "bash make deploy",
      reason: "reviewer-denied",
      risk: "high",
      escalation: false,
      hash: "cd".repeat(32) as RequestHash,
      toolCallId: "call-1",
      input: {},
      action: ["Tool: bash", "command (1 line, 9 characters):", "  1 │ kill -0 1"],
    });
    const ui: Ui = { notes: [], confirm: true, typed: (t) => /Type (BREAK-GLASS \w+)/.exec(t)?.[1] };
    await s.commands.get("perm-break-glass")!("", ctxWith(ui));
    assert.deepEqual(s.entries, []);
    assert.match(ui.notes.join("\n"), /No critical denial/);
  });
});

describe("P14: /perm-denials and /perm-approve", () => {
  test("the list, then an approval by number", async () => {
    const s = setup();
    s.overrides.remember({
      sessionId: "s",
      tool: "bash",
      target: "bash make deploy",
      reason: "no-reviewer",
      risk: undefined,
      escalation: false,
      hash: "ef".repeat(32) as RequestHash,
      toolCallId: "call-2",
      input: {},
      action: ["Tool: bash", "command (1 line, 9 characters):", "  1 │ kill -0 1"],
    });
    const ui: Ui = { notes: [], confirm: true, typed: () => undefined };
    await s.commands.get("perm-denials")!("", ctxWith(ui));
    assert.equal(s.entries[0]?.type, DENIALS_ENTRY_TYPE, "with a UI: a custom entry in the session, never sent to the model");
    assert.match((s.entries[0]!.data as DenialsEntry).lines[0]!, /1\. bash make deploy — no reviewer is configured/);
    s.entries.length = 0;
    await s.commands.get("perm-approve")!("x", ctxWith(ui));
    assert.equal(s.entries.length, 0, "not a number");
    await s.commands.get("perm-approve")!("1", ctxWith(ui));
    assert.equal((s.entries[0]!.data as GrantEntry).kind, "human-approval");
    await s.commands.get("perm-approve")!("1", ctxWith(ui));
    assert.equal(s.entries.length, 1, "approved once");
    assert.match(ui.notes.at(-1)!, /already approved/);
  });
});

describe("P14: break glass in the configuration", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "pam-bg-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const load = (user: object | undefined, project: object | undefined, name: string) => {
    const agentDir = join(dir, name, "agent");
    const cwd = join(dir, name, "ws");
    mkdirSync(join(cwd, ".pi"), { recursive: true });
    mkdirSync(agentDir, { recursive: true });
    if (user) writeFileSync(join(agentDir, "auto-mode.json"), JSON.stringify({ version: 1, ...user }));
    if (project) writeFileSync(join(cwd, ".pi", "auto-mode.json"), JSON.stringify({ version: 1, ...project }));
    return loadPolicyConfig({ agentDir, cwd, home: dir });
  };
  test("on unless the user or the project turns it off; a project cannot turn it on", () => {
    const on = load(undefined, undefined, "none");
    assert.ok(on.ok && on.config.breakGlass);
    const userOff = load({ breakGlass: false }, undefined, "user-off");
    assert.ok(userOff.ok && !userOff.config.breakGlass);
    const projectOff = load(undefined, { breakGlass: false }, "project-off");
    assert.ok(projectOff.ok && !projectOff.config.breakGlass);
    const projectOn = load({ breakGlass: false }, { breakGlass: true }, "project-on");
    assert.equal(projectOn.ok, false, "a project's breakGlass: true is refused");
  });
});
