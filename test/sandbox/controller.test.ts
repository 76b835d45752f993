// The sandbox controller with injected drivers and platforms: ownership of the process slot,
// per-command leases, drain on shutdown, poison when cleanup fails, no replay after a failure
// (P9), backend selection for review-only and unavailable platforms (P5, P16), and how many
// times an escalated call runs on the host (P7): once when approved, never when denied.

import { testEffects, UNSTAGED_STAGING } from "../helpers/effects.ts";
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { BashOperations, ExtensionContext, ExtensionToolContext, ToolCallEvent } from "@earendil-works/pi-coding-agent";
import { buildPlaces } from "../../src/policy/places.ts";
import { createTicketBook } from "../../src/grants/tickets.ts";
import { CONTROLLER_PROTOCOL, createController, resetSharedController, sharedController, type SandboxController } from "../../src/sandbox/controller.ts";
import type { SpawnIo, SpawnOutcome, SpawnSpec } from "../../src/sandbox/spawn.ts";
import { RequestError, type ProbeResult, type RunRequest, type SandboxDriver } from "../../src/sandbox/types.ts";
import { createMemoryGlobalState } from "../../src/state/global.ts";
import { createRuntimeState } from "../../src/state/runtime-state.ts";
import { createSandboxedBashTool, isActiveBash } from "../../src/tools/bash.ts";
import { createToolCallGate } from "../../src/tools/tool-call-gate.ts";
import type { ReviewHook } from "../../src/tools/review-call.ts";
import { ZERO_USAGE } from "../../src/review/types.ts";

const OK: ProbeResult = { ok: true, ms: 1, driver: "fake", notes: [], staging: UNSTAGED_STAGING };

interface Counts {
  probes: number;
  prepares: number;
  execs: number;
  releases: number;
  shutdowns: number;
}

type Exec = (spec: SpawnSpec, io: SpawnIo) => Promise<SpawnOutcome>;

function fakeDriver(opts: { exec?: Exec; prepare?: (req: RunRequest) => void; release?: () => void; shutdown?: () => void } = {}): {
  driver: SandboxDriver;
  counts: Counts;
} {
  const counts: Counts = { probes: 0, prepares: 0, execs: 0, releases: 0, shutdowns: 0 };
  const driver: SandboxDriver = {
    name: "fake",
    platform: "linux",
    check: () => ({ ok: true, notes: [] }),
    stagingCheck: () => UNSTAGED_STAGING,
    prepare(req) {
      counts.prepares++;
      opts.prepare?.(req);
      return {
        spec: { file: "fake", args: [], env: {}, cwd: req.cwd, startedFd: 4 },
        layout: undefined as never,
        release() {
          counts.releases++;
          opts.release?.();
        },
      };
    },
    async exec(spec, io) {
      counts.execs++;
      return opts.exec ? opts.exec(spec, io) : { kind: "exited", exitCode: 0 };
    },
    settle() {},
    transient: (detail) => detail.startsWith("bwrap: Can't find source path"),
    async shutdown() {
      counts.shutdowns++;
      opts.shutdown?.();
    },
    stopNow() {},
    facts: () => [],
  };
  return { driver, counts };
}

function controllerWith(
  driver: SandboxDriver,
  probe: ProbeResult = OK,
  extra: { drainTimeoutMs?: number } = {},
): { c: SandboxController; probes: () => number } {
  let probes = 0;
  const c = createController({
    platform: "linux",
    driver,
    probe: async () => {
      probes++;
      return probe;
    },
    ...extra,
  });
  return { c, probes: () => probes };
}

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
  resetSharedController();
});

function request(): RunRequest {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-sbc-")));
  roots.push(root);
  mkdirSync(join(root, "ws"));
  mkdirSync(join(root, "tmp"));
  const places = buildPlaces({ workspace: join(root, "ws"), tmpRoot: join(root, "tmp"), home: root, agentDir: join(root, "agent"), selfPaths: [] });
  return { command: "true", cwd: join(root, "ws"), scope: { places, protectedGlobs: [] }, env: {}, shell: "/bin/bash", workspace: "direct" };
}

const io: SpawnIo = { onData: () => {} };

/** An exec that runs until it is aborted or released by hand. */
function gatedExec(): { exec: Exec; finish: () => void; started: Promise<void> } {
  let finish!: () => void;
  let markStarted!: () => void;
  const started = new Promise<void>((r) => (markStarted = r));
  const done = new Promise<void>((r) => (finish = r));
  const exec: Exec = async (_spec, io) => {
    markStarted();
    const aborted = new Promise<"aborted">((r) => io.signal?.addEventListener("abort", () => r("aborted"), { once: true }));
    const how = await Promise.race([done.then(() => "done" as const), aborted]);
    return how === "aborted" ? { kind: "aborted", started: true } : { kind: "exited", exitCode: 0 };
  };
  return { exec, finish, started };
}

describe("backend selection by platform and probe (injected)", () => {
  test("an unsupported platform is review-only and never runs anything in a sandbox", async () => {
    const c = createController({ platform: "win32" });
    assert.equal((await c.ready()).backend, "review-only");
    const r = await c.run(request(), io);
    assert.equal(r.kind, "refused");
  });

  test("a failed probe on Linux is unavailable with its reason, never review-only; nothing executes", async () => {
    const { driver, counts } = fakeDriver();
    const { c } = controllerWith(driver, {
      ok: false,
      ms: 1,
      driver: "fake",
      reason: "bubblewrap (bwrap) not installed: apt-get install bubblewrap",
      missing: [],
    });
    const s = await c.ready();
    assert.deepEqual(s, { backend: "unavailable", reason: "bubblewrap (bwrap) not installed: apt-get install bubblewrap" });
    assert.deepEqual(await c.run(request(), io), { kind: "refused", reason: s.reason });
    assert.equal(counts.execs, 0);
    assert.equal(counts.prepares, 0);
  });

  test("before the probe finishes the backend is unavailable; the probe runs once per process", async () => {
    const { driver } = fakeDriver();
    const { c, probes } = controllerWith(driver);
    assert.equal(c.status().backend, "unavailable");
    assert.match(c.status().reason, /probe has not finished/);
    await Promise.all([c.ready(), c.ready(), c.ready()]);
    await c.ready();
    assert.equal(probes(), 1);
    assert.equal(c.status().backend, "sandboxed-unstaged");
  });
});

describe("ownership of the process slot", () => {
  test("every copy of this package shares one controller", () => {
    resetSharedController();
    let created = 0;
    const make = () => {
      created++;
      return createController({ platform: "win32" });
    };
    const a = sharedController(make);
    const b = sharedController(make);
    assert.equal(a, b);
    assert.equal(created, 1);
    resetSharedController();
  });

  test("a copy with another protocol gets a controller that refuses, and says why", async () => {
    resetSharedController();
    (globalThis as Record<symbol, unknown>)[Symbol.for("pi-auto-mode:sandbox-controller")] = { protocol: CONTROLLER_PROTOCOL + 1 };
    const c = sharedController();
    assert.equal(c.status().backend, "unavailable");
    assert.match(c.status().reason, /another copy of pi-auto-mode/);
    assert.equal((await c.run(request(), io)).kind, "refused");
    resetSharedController();
  });
});

describe("leases and drain", () => {
  test("each command holds a lease while it runs; placeholders are given back every time", async () => {
    const g1 = gatedExec();
    let n = 0;
    const { driver, counts } = fakeDriver({ exec: (s, i) => (++n === 1 ? g1.exec(s, i) : Promise.resolve({ kind: "exited", exitCode: 3 })) });
    const { c } = controllerWith(driver);
    await c.ready();
    const first = c.run(request(), io);
    await g1.started;
    assert.equal(c.activeLeases(), 1);
    assert.deepEqual(await c.run(request(), io), { kind: "exited", exitCode: 3 });
    g1.finish();
    assert.deepEqual(await first, { kind: "exited", exitCode: 0 });
    assert.equal(c.activeLeases(), 0);
    assert.equal(counts.releases, 2);
  });

  test("the last session to detach drains: running commands finish first, new ones are refused meanwhile", async () => {
    const g = gatedExec();
    const { driver, counts } = fakeDriver({ exec: g.exec });
    const { c } = controllerWith(driver);
    c.attach("a");
    c.attach("b");
    await c.ready();
    const running = c.run(request(), io);
    await g.started;
    assert.deepEqual(await c.detach("a"), { ok: true });
    assert.equal(counts.shutdowns, 0, "another session still uses the sandbox");
    const draining = c.detach("b");
    assert.match(c.status().reason, /shutting down/);
    assert.equal((await c.run(request(), io)).kind, "refused");
    assert.equal(counts.shutdowns, 0, "not while a command runs");
    g.finish();
    assert.deepEqual(await draining, { ok: true });
    assert.deepEqual(await running, { kind: "exited", exitCode: 0 });
    assert.equal(counts.shutdowns, 1);
    assert.equal(c.status().backend, "sandboxed-unstaged", "a clean drain leaves the sandbox usable for a later session");
  });

  test("a command still running at the drain deadline is stopped", async () => {
    const g = gatedExec();
    const { driver, counts } = fakeDriver({ exec: g.exec });
    const { c } = controllerWith(driver, OK, { drainTimeoutMs: 20 });
    await c.ready();
    const running = c.run(request(), io);
    await g.started;
    assert.deepEqual(await c.drain(), { ok: true });
    assert.deepEqual(await running, { kind: "aborted" });
    assert.equal(counts.shutdowns, 1);
  });

  test("cleanup that fails poisons the controller until restart", async () => {
    const { driver } = fakeDriver({
      shutdown: () => {
        throw new Error("cgroup busy");
      },
    });
    const { c } = controllerWith(driver);
    await c.ready();
    const report = await c.drain();
    assert.equal(report.ok, false);
    assert.match(c.status().reason, /cleanup failed.*cgroup busy.*restart Pi/);
    assert.equal((await c.run(request(), io)).kind, "refused");
  });

  test("a placeholder that cannot be removed poisons too, but the finished command's result stands", async () => {
    const { driver, counts } = fakeDriver({
      release: () => {
        throw new Error("EBUSY");
      },
    });
    const seen: string[] = [];
    const { c } = controllerWith(driver);
    c.subscribe((s) => seen.push(s.backend));
    await c.ready();
    assert.deepEqual(await c.run(request(), io), { kind: "exited", exitCode: 0 });
    assert.equal(c.status().backend, "unavailable");
    assert.ok(seen.includes("unavailable"), "listeners hear about it (the status line follows)");
    assert.equal((await c.run(request(), io)).kind, "refused");
    assert.equal(counts.execs, 1);
  });
});

describe("exactly once (P9): failures are never replayed", () => {
  test("a sandbox that fails to start: the command did not run, the backend is failed, nothing is retried", async () => {
    const { driver, counts } = fakeDriver({ exec: async () => ({ kind: "not-started", detail: "bwrap: Creating new namespace failed" }) });
    const { c } = controllerWith(driver);
    await c.ready();
    assert.deepEqual(await c.run(request(), io), { kind: "not-started", reason: "bwrap: Creating new namespace failed" });
    assert.match(c.status().reason, /failed during a command/);
    assert.equal((await c.run(request(), io)).kind, "refused");
    assert.equal(counts.execs, 1);
  });

  test("a start failure from a file removed during setup refuses that call only; the sandbox stays usable", async () => {
    let n = 0;
    const { driver, counts } = fakeDriver({
      exec: async () =>
        ++n === 1 ? { kind: "not-started", detail: "bwrap: Can't find source path /ws/.pi: No such file or directory" } : { kind: "exited", exitCode: 0 },
    });
    const { c } = controllerWith(driver);
    await c.ready();
    assert.equal((await c.run(request(), io)).kind, "refused");
    assert.equal(c.status().backend, "sandboxed-unstaged");
    assert.deepEqual(await c.run(request(), io), { kind: "exited", exitCode: 0 });
    assert.equal(counts.execs, 2, "the refused call was not run again: the second is a new call");
  });

  test("an ambiguous failure (the runner throws after the command may have started) is reported, not retried", async () => {
    let sideEffects = 0;
    const { driver, counts } = fakeDriver({
      exec: async () => {
        sideEffects++;
        throw new Error("pipe exploded");
      },
    });
    const { c } = controllerWith(driver);
    await c.ready();
    const r = await c.run(request(), io);
    assert.equal(r.kind, "ambiguous");
    assert.equal(sideEffects, 1);
    assert.equal((await c.run(request(), io)).kind, "refused");
    assert.equal(sideEffects, 1, "never run a second time");
    assert.equal(counts.releases, 1, "placeholders are still given back");
  });

  test("a call the sandbox cannot take is refused without marking the backend failed; an infrastructure fault in prepare does mark it", async () => {
    let mode: "request" | "infra" = "request";
    const { driver, counts } = fakeDriver({
      prepare: () => {
        if (mode === "request") throw new RequestError("the workspace / cannot be a writable root");
        throw new Error("EIO");
      },
    });
    const { c } = controllerWith(driver);
    await c.ready();
    assert.deepEqual(await c.run(request(), io), { kind: "refused", reason: "the workspace / cannot be a writable root" });
    assert.equal(c.status().backend, "sandboxed-unstaged");
    mode = "infra";
    assert.equal((await c.run(request(), io)).kind, "not-started");
    assert.equal(c.status().backend, "unavailable");
    assert.equal(counts.execs, 0);
  });
});

describe("escalation counts through the gate and the bash tool (P7)", () => {
  /** A reviewer hook that answers every escalation the same way (or fails). */
  const answering =
    (answer: () => "allow" | "deny"): ReviewHook =>
    async () =>
      answer() === "allow"
        ? { kind: "admit", run: "direct", review: { kind: "verdict" } as never, binding: undefined as never }
        : { kind: "deny", text: "the reviewer denied it", review: undefined, binding: undefined, changed: undefined };
  async function setup(review: ReviewHook | undefined) {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-sbe-")));
    roots.push(root);
    const cwd = join(root, "ws");
    mkdirSync(cwd);
    process.env.PI_CODING_AGENT_DIR = join(root, "agent");
    const { driver, counts } = fakeDriver();
    const { c } = controllerWith(driver);
    await c.ready();
    const runtime = createRuntimeState(createMemoryGlobalState({ enabled: true }), () => c.status().backend);
    const admissions = createTicketBook();
    let hostRuns = 0;
    const local: BashOperations = {
      exec: async () => {
        hostRuns++;
        return { exitCode: 0 };
      },
    };
    const gate = createToolCallGate({
      runtime,
      agentDir: () => join(root, "agent"),
      record: () => {},
      ...(review ? { review } : {}),
      tickets: admissions,
    });
    const tool = createSandboxedBashTool({ controller: () => c, admissions, settings: () => ({}), localOperations: () => local, effects: testEffects() }, cwd);
    const ctx = {
      cwd,
      signal: undefined,
      hasUI: false,
      ui: { setStatus() {} },
      sessionManager: { getSessionId: () => "s", getSessionFile: () => undefined },
      model: undefined,
    } as unknown as ExtensionContext;
    let n = 0;
    const call = async (input: Record<string, unknown>): Promise<{ blocked: string } | { result: unknown }> => {
      const event = { type: "tool_call", toolCallId: `call-${++n}`, toolName: "bash", input } as unknown as ToolCallEvent;
      const verdict = await gate(event, ctx);
      if (verdict?.block) return { blocked: verdict.reason ?? "" } as const;
      const result = await tool.execute(event.toolCallId, input as never, undefined, undefined, ctx as unknown as ExtensionToolContext);
      return { result };
    };
    return { call, counts, hostRuns: () => hostRuns };
  }

  test("without a reviewer an escalation is denied and runs zero times, in or out of the sandbox", async () => {
    const s = await setup(undefined);
    const r = await s.call({ command: "ls", sandbox_permissions: "require_escalated", justification: "needs the host's docker socket" });
    assert.ok("blocked" in r);
    assert.match(r.blocked, /needs review, and no reviewer is set\.\nWhy it needs review: this command asks to run outside the sandbox/);
    assert.equal(s.hostRuns(), 0);
    assert.equal(s.counts.execs, 0);
  });

  test("an approved escalation runs exactly once, on the host, never in the sandbox", async () => {
    let reviews = 0;
    const s = await setup(
      answering(() => {
        reviews++;
        return "allow";
      }),
    );
    const r = await s.call({ command: "ls", sandbox_permissions: "require_escalated", justification: "needs the host" });
    assert.ok("result" in r);
    assert.equal(s.hostRuns(), 1);
    assert.equal(s.counts.execs, 0);
    assert.equal(reviews, 1);
    // A second identical call gets a fresh review of its own.
    await s.call({ command: "ls", sandbox_permissions: "require_escalated", justification: "needs the host" });
    assert.equal(reviews, 2);
    assert.equal(s.hostRuns(), 2);
  });

  test("a reviewer that throws or denies denies (P5)", async () => {
    for (const reviewer of [async () => Promise.reject(new Error("timeout")), answering(() => "deny")] satisfies ReviewHook[]) {
      const s = await setup(reviewer);
      const r = await s.call({ command: "ls", sandbox_permissions: "require_escalated", justification: "x" });
      assert.ok("blocked" in r);
      assert.equal(s.hostRuns(), 0);
    }
  });

  test("a missing justification denies before any review; a default call runs once in the sandbox", async () => {
    let reviews = 0;
    const s = await setup(
      answering(() => {
        reviews++;
        return "allow";
      }),
    );
    const r = await s.call({ command: "ls", sandbox_permissions: "require_escalated" });
    assert.ok("blocked" in r);
    assert.match(r.blocked, /needs a justification/);
    assert.equal(reviews, 0);
    const d = await s.call({ command: "ls" });
    assert.ok("result" in d);
    assert.equal(s.counts.execs, 1);
    assert.equal(s.hostRuns(), 0);
  });

  test("a hard-denied command is never sent to the escalation reviewer (P3)", async () => {
    let reviews = 0;
    const s = await setup(
      answering(() => {
        reviews++;
        return "allow";
      }),
    );
    const r = await s.call({ command: "rm -rf ~", sandbox_permissions: "require_escalated", justification: "cleanup" });
    assert.ok("blocked" in r);
    assert.equal(reviews, 0);
    assert.equal(s.hostRuns(), 0);
  });

  test("another extension's bash replacing ours is detected (the backend then counts as unavailable)", () => {
    const ours = createSandboxedBashTool({
      controller: () => createController({ platform: "win32" }),
      admissions: createTicketBook(),
      settings: () => ({}),
      effects: testEffects(),
    });
    assert.equal(
      isActiveBash(
        [
          { name: "read", parameters: {} },
          { name: "bash", parameters: ours.parameters },
        ],
        ours,
      ),
      true,
    );
    assert.equal(isActiveBash([{ name: "bash", parameters: { ...ours.parameters } }], ours), false);
    assert.equal(isActiveBash([{ name: "read", parameters: {} }], ours), true, "no bash at all: nothing to contain");
  });

  test("a bash execution without the gate's admission never runs", async () => {
    const s = await setup(undefined);
    void s;
    const { driver, counts } = fakeDriver();
    const { c } = controllerWith(driver);
    await c.ready();
    const tool = createSandboxedBashTool({ controller: () => c, admissions: createTicketBook(), settings: () => ({}), effects: testEffects() });
    await assert.rejects(
      tool.execute("never-gated", { command: "ls" } as never, undefined, undefined, { cwd: tmpdir() } as unknown as ExtensionToolContext),
      /did not pass auto mode's gate/,
    );
    assert.equal(counts.execs, 0);
  });
});

describe("how a sandboxed call sees the workspace (P6, P17)", () => {
  /** A gate and bash tool over a fake driver that records the workspace access of every run. */
  async function through(staging: "staged" | "unstaged", reviewAdmits: boolean) {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-sbw-")));
    roots.push(root);
    const cwd = join(root, "ws");
    mkdirSync(cwd);
    process.env.PI_CODING_AGENT_DIR = join(root, "agent");
    const seen: string[] = [];
    const { driver } = fakeDriver({ prepare: (req) => void seen.push(req.workspace) });
    const probe: ProbeResult = {
      ok: true,
      ms: 1,
      driver: "fake",
      notes: [],
      staging: staging === "staged" ? { available: true, how: "fake" } : UNSTAGED_STAGING,
    };
    const { c } = controllerWith(driver, probe);
    await c.ready();
    const runtime = createRuntimeState(createMemoryGlobalState({ enabled: true }), () => c.status().backend);
    const admissions = createTicketBook();
    const allowed = {
      kind: "verdict",
      verdict: { risk_level: "low", user_authorization: "high", outcome: "allow", rationale: "ok" },
      reviewer: undefined,
      usage: ZERO_USAGE,
      attempts: 1,
      inputTokens: 1,
      durationMs: 1,
    } as const;
    const review: ReviewHook = async () =>
      reviewAdmits
        ? { kind: "admit", run: "sandbox", review: allowed as never, binding: undefined as never }
        : { kind: "deny", text: "no", review: undefined, binding: undefined, changed: undefined };
    const gate = createToolCallGate({
      runtime,
      agentDir: () => join(root, "agent"),
      record: () => {},
      review,
      tickets: admissions,
    });
    const tool = createSandboxedBashTool({ controller: () => c, admissions, settings: () => ({}), effects: testEffects(join(root, "agent")) }, cwd);
    const ctx = {
      cwd,
      signal: undefined,
      hasUI: false,
      ui: { setStatus() {} },
      sessionManager: { getSessionId: () => "s", getSessionFile: () => undefined, getBranch: () => [] },
      model: undefined,
    } as unknown as ExtensionContext;
    let n = 0;
    const run = async (command: string) => {
      const event = { type: "tool_call", toolCallId: `w-${++n}`, toolName: "bash", input: { command } } as unknown as ToolCallEvent;
      const verdict = await gate(event, ctx);
      if (verdict?.block) return "blocked";
      await tool.execute(event.toolCallId, { command } as never, undefined, undefined, ctx as unknown as ExtensionToolContext).catch(() => {});
      return seen.at(-1);
    };
    return { run, backend: () => c.status().backend };
  }

  test("where the machine stages, every bash call is staged, git writes included", async () => {
    const s = await through("staged", false);
    assert.equal(s.backend(), "sandboxed");
    assert.equal(await s.run("cat README.md"), "staged");
    assert.equal(await s.run("git add -A && git commit -m wip"), "staged");
  });

  test("where nothing can be staged, a git write runs only after review, with .git writable but its code-running parts", async () => {
    const denied = await through("unstaged", false);
    assert.equal(denied.backend(), "sandboxed-unstaged");
    assert.equal(await denied.run("cat README.md"), "direct");
    assert.equal(await denied.run("git add -A && git commit -m wip"), "blocked", "without an allow nothing runs");
    const reviewed = await through("unstaged", true);
    assert.equal(await reviewed.run("git add -A && git commit -m wip"), "direct-git");
    assert.equal(await reviewed.run("cat README.md"), "direct", "an ordinary command never gets .git writable");
  });
});
