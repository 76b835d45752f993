// The sandbox controller loaded on demand (src/sandbox/deferred-controller.ts): nothing is loaded
// until a command needs it or the process is idle, a deferred sandbox never reads as working, and
// what sessions did before the load (attach, detach, subscribe) holds after it.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { selectBackend } from "../../src/sandbox/backend.ts";
import type { SandboxController } from "../../src/sandbox/controller.ts";
import { deferredController } from "../../src/sandbox/deferred-controller.ts";
import type { BackendStatus } from "../../src/sandbox/types.ts";

const SANDBOXED: BackendStatus = { backend: "sandboxed", reason: "fake driver" };

/** A controller that records what it was asked, and whose probe the test finishes. */
function fake() {
  const owners = new Set<string>();
  const listeners = new Set<(s: BackendStatus) => void>();
  let probed = false;
  const runs: string[] = [];
  const c: SandboxController = {
    protocol: 1,
    ready: async () => {
      probed = true;
      for (const l of listeners) l(SANDBOXED);
      return SANDBOXED;
    },
    status: () => (probed ? SANDBOXED : selectBackend("linux", "pending")),
    probeResult: () => undefined,
    attach: (o) => void owners.add(o),
    detach: async (o) => {
      owners.delete(o);
      return { ok: true };
    },
    run: async (req) => {
      runs.push(req.command);
      return { kind: "exited", exitCode: 0 };
    },
    drain: async () => ({ ok: true }),
    activeLeases: () => 0,
    owners: () => [...owners],
    subscribe: (l) => {
      listeners.add(l);
      return () => void listeners.delete(l);
    },
    facts: () => ["fake"],
  };
  return { c, owners, runs, probed: () => probed };
}

function counting(c: SandboxController) {
  let loads = 0;
  return {
    load: async () => {
      loads++;
      return c;
    },
    loads: () => loads,
  };
}

describe("a deferred sandbox controller", () => {
  test("loads nothing until a command needs it, and reads as a probe that has not finished", async () => {
    const f = fake();
    const l = counting(f.c);
    const d = deferredController(l.load, "linux");
    assert.deepEqual(d.status(), selectBackend("linux", "pending"));
    assert.equal(d.status().backend, "unavailable");
    assert.equal(d.probeResult(), undefined);
    assert.equal(l.loads(), 0);
    const r = await d.run({ command: "true" } as Parameters<SandboxController["run"]>[0], {} as Parameters<SandboxController["run"]>[1]);
    assert.deepEqual(r, { kind: "exited", exitCode: 0 });
    assert.equal(l.loads(), 1);
    assert.ok(f.probed(), "the probe ran before the command");
    assert.deepEqual(f.runs, ["true"]);
    await d.ready();
    assert.equal(l.loads(), 1, "loaded once");
    assert.deepEqual(d.status(), SANDBOXED);
  });

  test("on a platform without a sandbox it reads as review-only before and after the load", async () => {
    const d = deferredController(async () => fake().c, "win32");
    assert.equal(d.status().backend, "review-only");
  });

  test("sessions that attached before the load are its owners after it; one that left before is not", async () => {
    const f = fake();
    const d = deferredController(counting(f.c).load, "linux");
    d.attach("a");
    d.attach("b");
    assert.deepEqual([...d.owners()].sort(), ["a", "b"]);
    assert.deepEqual(await d.detach("b"), { ok: true });
    await d.ready();
    assert.deepEqual([...f.owners], ["a"]);
    d.attach("c");
    assert.deepEqual([...f.owners].sort(), ["a", "c"]);
    await d.detach("a");
    assert.deepEqual([...f.owners], ["c"]);
  });

  test("a detach with nothing loaded loads nothing", async () => {
    const l = counting(fake().c);
    const d = deferredController(l.load, "linux");
    d.attach("a");
    assert.deepEqual(await d.detach("a"), { ok: true });
    assert.deepEqual(await d.drain(), { ok: true });
    assert.equal(l.loads(), 0);
  });

  test("a listener subscribed before the load hears the probe's result, and not after it unsubscribed", async () => {
    const f = fake();
    const d = deferredController(counting(f.c).load, "linux");
    const heard: string[] = [];
    const off = d.subscribe((s) => heard.push(s.backend));
    await d.ready();
    assert.deepEqual(heard, ["sandboxed"]);
    off();
    await f.c.ready();
    assert.deepEqual(heard, ["sandboxed"]);
  });

  test("a sandbox that cannot load refuses every command and says why", async () => {
    const d = deferredController(async () => {
      throw new Error("no such module");
    }, "linux");
    const s = await d.ready();
    assert.equal(s.backend, "unavailable");
    assert.match(s.reason, /could not be loaded: no such module/);
    const r = await d.run({ command: "true" } as Parameters<SandboxController["run"]>[0], {} as Parameters<SandboxController["run"]>[1]);
    assert.equal(r.kind, "refused");
  });

  test("settled() starts nothing; loadWhenIdle loads after the delay, and settled() then resolves", async () => {
    const f = fake();
    const l = counting(f.c);
    const d = deferredController(l.load, "linux");
    let settled: BackendStatus | undefined;
    void d.settled().then((s) => {
      settled = s;
    });
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(l.loads(), 0);
    assert.equal(settled, undefined);
    d.loadWhenIdle(20);
    assert.equal(l.loads(), 0, "not at once");
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(l.loads(), 1);
    assert.deepEqual(settled, SANDBOXED);
  });

  test("the idle load never keeps a process alive", async () => {
    // A process whose only work left is the idle timer exits at once, without loading.
    const mod = fileURLToPath(new URL("../../src/sandbox/deferred-controller.ts", import.meta.url));
    const script = `import { deferredController } from ${JSON.stringify(mod)};
const d = deferredController(async () => { console.log("loaded"); throw new Error("x"); }, "linux");
d.loadWhenIdle(60_000);
console.log("end");`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ["--input-type=module", "-e", script], { timeout: 10_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    assert.equal(out.trim(), "end");
  });
});
