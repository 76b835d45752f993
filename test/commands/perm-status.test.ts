// The /perm status view (issue 14, "one place to look"), line by line for every backend and the
// states that change what it says: off, unrestricted, a damaged global state, an invalid
// configuration, a copy of auto mode the agent can write. Driven with a fake command context.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { type CommandDeps, statusView } from "../../src/commands/perm.ts";
import { loadPolicyConfig, USER_CONFIG_FILE } from "../../src/policy/config/load.ts";
import type { Backend } from "../../src/policy/types.ts";
import { createMemoryGlobalState } from "../../src/state/global.ts";
import { createRuntimeState } from "../../src/state/runtime-state.ts";
import { JUDGE } from "../helpers/review-fixtures.ts";

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function dirs(user?: unknown) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pam-perm-status-")));
  made.push(root);
  const ws = join(root, "ws");
  const home = join(root, "home");
  const agentDir = join(home, ".pi", "agent");
  mkdirSync(ws, { recursive: true });
  mkdirSync(agentDir, { recursive: true });
  if (user !== undefined)
    writeFileSync(join(agentDir, USER_CONFIG_FILE), typeof user === "string" ? user : JSON.stringify({ version: 1, ...(user as object) }));
  return { ws, home, agentDir };
}

interface Setup {
  readonly backend?: Backend;
  readonly reason?: string;
  readonly user?: unknown;
  readonly enabled?: boolean;
  readonly reviewer?: boolean | "classifier";
  readonly denials?: number;
  readonly install?: string;
}

async function view(s: Setup = {}): Promise<string> {
  const d = dirs(s.user);
  const reviewer = s.reviewer === "classifier" ? { provider: "typesafe", model: "jev-latest", thinking: "off" as const, engine: "classifier" as const } : JUDGE;
  const global = createMemoryGlobalState({ revision: 1, ...(s.reviewer ? { reviewer } : {}) });
  if (s.enabled === false) await global.setEnabled(false);
  const runtime = createRuntimeState(global, () => s.backend ?? "sandboxed");
  const deps: CommandDeps = {
    runtime,
    refresh: () => {},
    origin: () => "typed",
    status: {
      backendReason: () => s.reason ?? "bubblewrap over a staged workspace, probe passed",
      config: (ctx) => loadPolicyConfig({ agentDir: d.agentDir, cwd: ctx.cwd, home: d.home }),
      denials: () => s.denials ?? 0,
      installNote: () => s.install,
    },
  };
  return statusView(deps, { cwd: d.ws, hasUI: true } as unknown as ExtensionCommandContext);
}

const line = (v: string, head: string) => v.split("\n").find((l) => l.startsWith(head)) ?? "";

describe("the /perm status view", () => {
  test("sandboxed, a reviewer, the default network list, no rules", async () => {
    const v = await view({ reviewer: true });
    assert.equal(line(v, "Auto mode:"), "Auto mode: Auto");
    assert.match(line(v, "  why:"), /every call is judged/);
    assert.equal(
      line(v, "Shell commands:"),
      "Shell commands: in the OS sandbox, staged: a command's changes to the workspace are judged before they land (bubblewrap over a staged workspace, probe passed)",
    );
    assert.equal(line(v, "Reviewer:"), "Reviewer: judge/judge-1 (thinking off, chat reviewer engine)");
    const c = await view({ reviewer: "classifier" });
    assert.equal(line(c, "Reviewer:"), "Reviewer: typesafe/jev-latest (classifier engine: soft and hazard conditions judged by a classifier model)");
    assert.match(
      line(v, "Network for sandboxed commands:"),
      /^Network for sandboxed commands: registry\.npmjs\.org, .* and \d+ more \(the default list; anything unlisted is refused\)$/,
    );
    assert.match(line(v, "Writable roots:"), /ws \(the workspace\), .*pi-auto-mode-.* \(the temporary root\)$/);
    assert.equal(line(v, "Rules:"), "Rules: none");
    assert.equal(line(v, "Recent denials"), "Recent denials you may override: none");
  });

  test("the user's network list, its denies and review of unlisted destinations; rules counted; denials", async () => {
    const v = await view({
      user: {
        tmpRoot: "/var/tmp/scratch",
        sandbox: { network: { allow: ["registry.npmjs.org", "github.com"], deny: ["gist.github.com"], reviewUnlisted: true } },
        rules: { allow: [{ command: "make *" }, { tool: "mcp__docs__*" }], deny: [{ command: "terraform *" }] },
      },
      denials: 2,
    });
    assert.equal(
      line(v, "Network for sandboxed commands:"),
      "Network for sandboxed commands: registry.npmjs.org, github.com (your list; 1 denied; an unlisted destination is asked of the reviewer)",
    );
    assert.match(line(v, "Writable roots:"), /, \/var\/tmp\/scratch \(the temporary root\)$/);
    assert.equal(line(v, "Rules:"), "Rules: 3 from your configuration, 0 from this project (2 allow, 0 review, 1 deny)");
    assert.match(line(v, "Recent denials"), /: 2 \(\/perm-denials lists them, \/perm-approve N runs one once\)$/);
    assert.equal(line(v, "Reviewer:"), "Reviewer: none: calls that need review are denied (choose one with /perm-auto-model provider/model)");
    assert.equal(line(v, "Auto mode:"), "Auto mode: Auto · no reviewer");
  });

  test("no network: an empty allow list, an unstaged sandbox, no sandbox", async () => {
    assert.match(line(await view({ user: { sandbox: { network: { allow: [] } } } }), "Network"), /: none \("allow": \[\] in your configuration\)$/);
    const unstaged = await view({ backend: "sandboxed-unstaged", reason: "overlay cannot be mounted" });
    assert.match(line(unstaged, "Network"), /: none \(only a staged sandbox has network\)$/);
    assert.match(
      line(unstaged, "Shell commands:"),
      /not staged: commands write the workspace in place, git writes need review.*\(overlay cannot be mounted\)$/,
    );
    assert.equal(line(unstaged, "Auto mode:"), "Auto mode: Auto · not staged · no reviewer");
  });

  test("why: sandbox unavailable, off, an invalid configuration, an install the agent can write", async () => {
    const gone = await view({ backend: "unavailable", reason: "bwrap is missing" });
    assert.equal(line(gone, "Auto mode:"), "Auto mode: Auto (sandbox unavailable) · no reviewer");
    assert.match(line(gone, "  why:"), /unavailable .*every shell command is denied/);
    assert.equal(line(gone, "Shell commands:"), "Shell commands: denied: the OS sandbox is unavailable (bwrap is missing)");
    const off = await view({ enabled: false });
    assert.equal(line(off, "Auto mode:"), "Auto mode: Off");
    assert.match(line(off, "  why:"), /\/perm-enabled off, for every Pi of this user.*except the hard denies, which stay denied/);
    const broken = await view({ user: "{ nope" });
    assert.equal(line(broken, "Auto mode:"), "Auto mode: Auto (configuration fault)");
    assert.match(line(broken, "  why:"), /auto-mode\.json is invalid .*every call is denied until it is fixed/);
    assert.equal(line(broken, "Network"), "Network, writable roots, rules: unknown until the configuration is fixed");
    const writable = await view({ install: "this copy of auto mode lies in the workspace, so only plain reads run" });
    assert.match(line(writable, "  also:"), /only plain reads run/);
  });

  test("a damaged global state says what to do", async () => {
    const d = dirs();
    const global = createMemoryGlobalState({ revision: 1 });
    global.inject({ kind: "fault", fault: { code: "torn" as never, detail: "the revision watermarks disagree", floor: 3, survivor: undefined } });
    const runtime = createRuntimeState(global, () => "sandboxed");
    const v = statusView(
      {
        runtime,
        refresh: () => {},
        origin: () => "typed",
        status: { backendReason: () => "", config: (ctx) => loadPolicyConfig({ agentDir: d.agentDir, cwd: ctx.cwd, home: d.home }), denials: () => 0 },
      },
      { cwd: d.ws, hasUI: true } as unknown as ExtensionCommandContext,
    );
    assert.equal(line(v, "Auto mode:"), "Auto mode: Auto (configuration fault)");
    assert.match(line(v, "  why:"), /damaged: the revision watermarks disagree.*\/perm-repair/);
    assert.match(line(v, "Reviewer:"), /none/);
  });
});
