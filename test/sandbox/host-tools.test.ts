// The host side of the sandbox runs no program a sandboxed command could have made (P18, issue 22
// item 1). With a workspace folder on the agent's PATH (an activated .venv, $PWD/node_modules/.bin),
// a command that creates `.venv/bin/mount` (applied as a new file) must not get it run ON THE HOST
// by the holder, the spawner, the probe or the network forwarder's start: every host tool is
// resolved from a fixed system list, and every host-side child gets a fixed PATH.
//
// The fake tools here append to a marker file outside every writable root and then run the real
// tool, so a hit would be silent to the user: only the marker tells. Run as root and, from a root
// run, once more as nobody.

import assert from "node:assert/strict";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { buildPlaces, type Places } from "../../src/policy/places.ts";
import { createController, type SandboxController } from "../../src/sandbox/controller.ts";
import { settleEffects } from "../../src/sandbox/effects/settle.ts";
import { effectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../../src/sandbox/effects/undo.ts";
import { reportText } from "../../src/sandbox/effects/report.ts";
import { createLinuxDriver } from "../../src/sandbox/linux/driver.ts";
import { HOST_PATH, resolveHostTool, toolUnderRoot, trustedExecutable } from "../../src/sandbox/linux/host-tools.ts";
import { probeDriver } from "../../src/sandbox/probe.ts";
import type { ProbeResult } from "../../src/sandbox/types.ts";
import { EMPTY_CONFIG } from "../../src/policy/config/load.ts";
import { canRunAsNobody, runAsNobody } from "../helpers/nobody-pass.ts";

const CHILD_FLAG = "PI_AUTO_MODE_HOST_TOOLS_CHILD";
const HERE = fileURLToPath(import.meta.url);
const REPO = join(HERE, "..", "..", "..");
const IS_ROOT = process.getuid?.() === 0;
const WHO = IS_ROOT ? "root" : `uid ${process.getuid?.()}`;
const TOOLS = ["bwrap", "unshare", "nsenter", "mount"] as const;
const REAL = Object.fromEntries(TOOLS.map((t) => [t, ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map((d) => join(d, t)).find((p) => existsSync(p))]));
const HAVE_TOOLS = TOOLS.every((t) => REAL[t] !== undefined);

/** A fake `name` in `dir`: it notes that it ran (in `marker`), then runs the real tool, so nothing looks wrong. */
function fakeTool(dir: string, name: string, marker: string): string {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\necho "${name} $*" >> '${marker}'\nexec '${REAL[name]}' "$@"\n`);
  chmodSync(p, 0o755);
  return p;
}

const savedPath = process.env.PATH;
let scratch: string;
before(() => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-host-tools-")));
});
after(() => {
  process.env.PATH = savedPath;
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("host tool resolution ignores the agent's PATH", () => {
  test("a fake bwrap, unshare, nsenter or mount first on the PATH is never the one found", {
    skip: HAVE_TOOLS ? undefined : "util-linux or bubblewrap missing",
  }, () => {
    const fakes = join(scratch, "fakes-resolve");
    mkdirSync(fakes, { recursive: true });
    const marker = join(scratch, "resolve-marker");
    for (const t of TOOLS) fakeTool(fakes, t, marker);
    process.env.PATH = `${fakes}:${savedPath ?? "/usr/bin:/bin"}`;
    try {
      for (const t of TOOLS) {
        const found = resolveHostTool(t);
        assert.ok(found.ok, `${t} is found: ${found.ok ? "" : found.reason}`);
        assert.ok(!found.chain.some((p) => p.startsWith(fakes)), `${t} is not the fake one: ${found.path}`);
      }
    } finally {
      process.env.PATH = savedPath;
    }
  });

  test("the driver's host children get no program and no PATH entry from the agent's PATH", {
    skip: HAVE_TOOLS ? undefined : "util-linux or bubblewrap missing",
  }, () => {
    const fakes = join(scratch, "fakes-driver");
    mkdirSync(fakes, { recursive: true });
    const marker = join(scratch, "driver-marker");
    for (const t of TOOLS) fakeTool(fakes, t, marker);
    const agentPath = `${fakes}:${savedPath ?? "/usr/bin:/bin"}`;
    process.env.PATH = agentPath;
    try {
      const driver = createLinuxDriver({ runDir: join(scratch, "run-unit"), lingerMs: 0, spawner: false });
      const check = driver.check();
      assert.ok(check.ok, `the driver checks out with the real tools: ${check.ok ? "" : check.reason}`);
      assert.equal(existsSync(marker), false, `nothing from the agent's PATH ran at the check: ${existsSync(marker) ? readFileSync(marker, "utf8") : ""}`);
      const staging = driver.stagingCheck();
      if (!staging.available) return;
      const ws = join(scratch, "unit-ws");
      const tmp = join(scratch, "unit-tmp");
      const home = join(scratch, "unit-home");
      for (const d of [ws, tmp, home]) mkdirSync(d, { recursive: true });
      const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
      const prepared = driver.prepare({
        command: "true",
        cwd: ws,
        scope: { places, protectedGlobs: [] },
        env: { PATH: agentPath, HOME: home },
        shell: "/bin/bash",
        workspace: "staged",
        network: EMPTY_CONFIG.network,
      });
      try {
        const spec = prepared.spec;
        const host = [spec.file, ...spec.args];
        assert.ok(!host.some((a) => a.includes(fakes)), `no host argument names the agent's PATH: ${host.filter((a) => a.includes(fakes)).join(" ")}`);
        assert.ok(!String(spec.env.PATH).includes(fakes), `the holder's PATH is not the agent's: ${spec.env.PATH}`);
        assert.deepEqual(Object.keys(spec.env).sort(), ["LANG", "PATH"], "the holder gets a minimal environment");
        // The holder script calls nothing by name: mount is one of its positional parameters.
        const script = spec.args[spec.args.indexOf("-c") + 1] ?? "";
        assert.doesNotMatch(script, /(^|[\s;|&(])mount\s/m, "the holder script does not call mount by name");
        // The command inside the sandbox keeps the agent's PATH (env.ts): only the host side changed.
        const argv = spec.staged?.argv ?? [];
        const setPath = argv.findIndex((a, i) => a === "PATH" && argv[i - 1] === "--setenv");
        assert.equal(argv[setPath + 1], agentPath, "the sandboxed command still gets the agent's PATH");
      } finally {
        prepared.release();
        driver.settle();
      }
      // Unstaged, bwrap itself is the host child: a clean environment; the command's comes on fd 6 (--args).
      const direct = driver.prepare({
        command: "true",
        cwd: ws,
        scope: { places, protectedGlobs: [] },
        env: { PATH: agentPath, HOME: home, LD_LIBRARY_PATH: join(ws, "lib") },
        shell: "/bin/bash",
        workspace: "direct",
      });
      try {
        const spec = direct.spec;
        assert.deepEqual(Object.keys(spec.env).sort(), ["LANG", "PATH"], "bwrap runs on the host with a minimal environment");
        assert.ok(!String(spec.env.PATH).includes(fakes));
        assert.deepEqual(spec.args.slice(0, 2), ["--args", "6"]);
        assert.ok(!spec.args.some((a) => a.includes(fakes)), "no value of the command's environment in the host's argv");
        const options = readFileSync(spec.fd6File!, "utf8").split("\0");
        assert.equal(options[0], "--clearenv");
        assert.equal(options[options.indexOf("PATH") + 1], agentPath, "the command inside still gets the agent's PATH");
        assert.equal(options[options.indexOf("LD_LIBRARY_PATH") + 1], join(ws, "lib"));
      } finally {
        direct.release();
        driver.settle();
      }
      assert.equal(existsSync(marker), false, "nothing from the agent's PATH ran");
    } finally {
      process.env.PATH = savedPath;
    }
  });
});

describe("a host tool anyone else could change is refused, with the reason", () => {
  const folder = (name: string, mode: number) => {
    const d = join(scratch, name);
    mkdirSync(d, { recursive: true });
    chmodSync(d, mode);
    return d;
  };

  test("in a folder others can write (a temp folder)", () => {
    const open = folder("open-bin", 0o777);
    const tool = fakeTool(open, "bwrap", join(scratch, "never"));
    const why = trustedExecutable(tool);
    assert.ok("reason" in why && /writable by .*others/.test(why.reason), JSON.stringify(why));
  });

  test("under a root-owned sticky folder open to all (as /tmp): a tool of ours is trusted, one others may rename is not", (t) => {
    if (!IS_ROOT) return t.skip("a root-owned sticky folder is made by root");
    const sticky = folder("sticky-open", 0o1777);
    const ours = join(sticky, "checkout");
    mkdirSync(ours, { mode: 0o755 });
    const tool = fakeTool(ours, "nsenter", join(scratch, "never"));
    const fine = trustedExecutable(tool);
    assert.ok("chain" in fine, JSON.stringify(fine));
    // Without the sticky bit anyone may rename the checkout away and put another in its place.
    chmodSync(sticky, 0o777);
    const open = trustedExecutable(tool);
    assert.ok("reason" in open && open.reason === `${sticky} is writable by its group and others (mode 0777)`, JSON.stringify(open));
    // Sticky, but another user's folder: its owner may change it.
    chmodSync(sticky, 0o1777);
    chownSync(sticky, 65534, 65534);
    const theirs = trustedExecutable(tool);
    assert.ok("reason" in theirs && /owned by uid 65534/.test(theirs.reason), JSON.stringify(theirs));
  });

  test("in a trusted folder: a file or folder its group can write, or another user's file", (t) => {
    // The temp folder is writable by all, so this needs a folder whose every ancestor is ours or root's (root's home).
    const base = mkdtempSync(join(homedir(), ".pi-auto-mode-host-tools-"));
    try {
      const ok = fakeTool(base, "mount", join(scratch, "never"));
      const fine = trustedExecutable(ok);
      if (!("chain" in fine)) return t.skip(`no folder with a trusted chain to test in: ${fine.reason}`);
      chmodSync(ok, 0o775);
      const g = trustedExecutable(ok);
      assert.ok("reason" in g && g.reason === `${ok} is writable by its group (mode 0775)`, JSON.stringify(g));
      chmodSync(ok, 0o755);
      const sub = join(base, "sub");
      mkdirSync(sub);
      const inner = fakeTool(sub, "unshare", join(scratch, "never"));
      chmodSync(sub, 0o777);
      const w = trustedExecutable(inner);
      assert.ok("reason" in w && w.reason === `${sub} is writable by its group and others (mode 0777)`, JSON.stringify(w));
      if (IS_ROOT) {
        chmodSync(sub, 0o755);
        chownSync(inner, 65534, 65534);
        const o = trustedExecutable(inner);
        assert.ok("reason" in o && o.reason === `${inner} is owned by uid 65534, neither root nor this user`, JSON.stringify(o));
      }
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  test("every step of a symlink chain is checked: a link in a writable folder to a system tool is refused", () => {
    const open = folder("open-links", 0o777);
    const link = join(open, "unshare");
    symlinkSync(REAL.unshare!, link);
    const why = trustedExecutable(link);
    assert.ok(
      "reason" in why && /writable by .*others/.test(why.reason),
      `the link's folder is refused even though its target is fine: ${JSON.stringify(why)}`,
    );
    // A system folder's own link (/bin -> usr/bin, sh -> dash) is followed to the real file.
    const sh = trustedExecutable("/bin/sh");
    assert.ok("chain" in sh, JSON.stringify(sh));
    assert.equal(sh.chain[0], "/bin/sh");
    assert.equal(sh.chain.at(-1), realpathSync("/bin/sh"));
  });

  test("a configured bwrapPath is held to the same checks", () => {
    const open = folder("open-bwrap", 0o777);
    const marker = join(scratch, "bwrap-path-marker");
    const fake = fakeTool(open, "bwrap", marker);
    const driver = createLinuxDriver({ runDir: join(scratch, "run-bwrap-path"), bwrapPath: fake, spawner: false });
    const c = driver.check();
    assert.equal(c.ok, false);
    assert.match(c.ok ? "" : c.reason, /bubblewrap cannot be trusted: .*writable by .*others/);
    assert.equal(existsSync(marker), false, "the refused bwrap never ran (not even --version)");
    assert.ok(
      driver.facts().some((f) => f.startsWith(`host tools (PATH ${HOST_PATH}): bwrap refused: ${fake} is refused`)),
      driver.facts().join("\n"),
    );
  });

  test("a tool under a writable root of the request is refused for it", () => {
    const mount = resolveHostTool("mount");
    if (!mount.ok) return;
    assert.match(toolUnderRoot(mount, ["/usr"]) ?? "", /lies under \/usr, which the sandboxed command can write/);
    assert.equal(toolUnderRoot(mount, [scratch]), undefined);
  });
});

describe(`a workspace folder on the agent's PATH, through the real sandbox (${WHO})`, () => {
  let probe: ProbeResult = { ok: false, ms: 0, driver: "bubblewrap", reason: "not probed yet", missing: [] };
  const controllers: SandboxController[] = [];
  let root: string;
  let ws: string;
  let tmp: string;
  let home: string;
  let outside: string;
  let marker: string;
  let places: Places;
  let agentPath: string;

  before(async () => {
    root = join(scratch, "real");
    ws = join(root, "ws");
    tmp = join(root, "tmp");
    home = join(root, "home");
    outside = join(root, "outside");
    marker = join(outside, "HOST-RAN");
    for (const d of [join(ws, ".venv", "bin"), tmp, join(home, ".pi", "agent"), outside]) mkdirSync(d, { recursive: true });
    writeFileSync(join(ws, "README.md"), "hello\n");
    // An activated virtualenv: its bin folder first on the agent's PATH, as `source .venv/bin/activate` leaves it.
    writeFileSync(join(ws, ".venv", "pyvenv.cfg"), "home = /usr/bin\n");
    agentPath = `${join(ws, ".venv", "bin")}:${join(ws, "node_modules", ".bin")}:${savedPath ?? "/usr/bin:/bin"}`;
    process.env.PATH = agentPath;
    places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
    const first = createLinuxDriver({ runDir: join(root, "run-probe"), lingerMs: 0 });
    probe = await probeDriver(first);
    await first.shutdown();
    if (!probe.ok) process.stderr.write(`# sandbox unavailable, host-tool checks skip: ${probe.reason}\n`);
  });
  after(async () => {
    for (const c of controllers) await c.drain();
    process.env.PATH = savedPath;
  });

  const run = async (c: SandboxController, command: string) => {
    const chunks: Buffer[] = [];
    const r = await c.run(
      {
        command,
        cwd: ws,
        scope: { places, protectedGlobs: [] },
        env: { ...process.env, PATH: agentPath, HOME: home },
        shell: "/bin/bash",
        workspace: "staged",
        network: EMPTY_CONFIG.network,
        settle: (end) =>
          settleEffects({ ...end, places, protectedGlobs: [], command, store: effectStore(join(home, ".pi", "agent")), bounds: DEFAULT_UNDO_BOUNDS }),
      },
      { onData: (b) => chunks.push(b), timeout: 30 },
    );
    const out = Buffer.concat(chunks).toString("utf8");
    return { r, out, effects: r.kind === "exited" && r.effects ? reportText(r.effects, ws) : "" };
  };

  for (const spawner of [true, false]) {
    test(`fake tools a command leaves in .venv/bin never run on the host (spawner ${spawner ? "on" : "off"})`, async (t) => {
      if (!probe.ok) return t.skip(`sandbox unavailable: ${probe.reason}`);
      if (!probe.staging.available) return t.skip(`the workspace cannot be staged: ${probe.staging.reason}`);
      rmSync(marker, { force: true });
      for (const name of TOOLS) rmSync(join(ws, ".venv", "bin", name), { force: true });
      const c = createController({
        platform: "linux",
        driver: createLinuxDriver({ runDir: join(root, `run-${spawner}`), lingerMs: 0, spawner }),
        probe: async () => probe,
      });
      controllers.push(c);
      await c.ready();
      // The command plants the tools (they are ordinary new files in the workspace, so they land).
      const plant = TOOLS.map(
        (name) => `printf '%s\\n' '#!/bin/sh' 'echo "${name} $*" >> ${marker}' 'exec ${REAL[name]} "$@"' > .venv/bin/${name} && chmod 755 .venv/bin/${name}`,
      ).join(" && ");
      const planted = await run(c, `${plant} && echo planted`);
      assert.equal(planted.r.kind, "exited", planted.out);
      assert.match(planted.out, /planted/);
      t.diagnostic(planted.effects.replace(/\n/g, " | "));
      for (const name of TOOLS) assert.ok(existsSync(join(ws, ".venv", "bin", name)), `the fake ${name} was applied to the real workspace (the premise)`);
      assert.equal(existsSync(marker), false, "planting ran nothing on the host");

      // Every later command, with the planted tools first on the agent's PATH.
      for (let i = 0; i < 2; i++) {
        const later = await run(c, `echo later-${i} > later-${i}.txt && cat later-${i}.txt`);
        assert.equal(later.r.kind, "exited", later.out);
        assert.match(later.out, new RegExp(`later-${i}`), "the command still works");
        assert.equal(existsSync(marker), false, `a planted tool ran on the host: ${existsSync(marker) ? readFileSync(marker, "utf8") : ""}`);
      }
      // A fresh probe (a new driver: every tool resolved again), as the next agent start does.
      const fresh = createLinuxDriver({ runDir: join(root, `run-fresh-${spawner}`), lingerMs: 0, spawner });
      const again = await probeDriver(fresh);
      await fresh.shutdown();
      assert.equal(existsSync(marker), false, `a planted tool ran on the host at the probe: ${existsSync(marker) ? readFileSync(marker, "utf8") : ""}`);
      assert.ok(again.ok, `the fresh probe passes: ${again.ok ? "" : again.reason}`);
      assert.equal(again.staging.available, true, "and stages");
    });
  }
});

describe(`unstaged, bwrap is the host child (${WHO})`, () => {
  test("with fake tools first on the agent's PATH it runs the system's, and the command still gets its environment", async (t) => {
    if (!HAVE_TOOLS) return t.skip("util-linux or bubblewrap missing");
    const root = join(scratch, "direct");
    const ws = join(root, "ws");
    const tmp = join(root, "tmp");
    const home = join(root, "home");
    const marker = join(root, "HOST-RAN");
    for (const d of [join(ws, ".venv", "bin"), tmp, join(home, ".pi", "agent")]) mkdirSync(d, { recursive: true });
    for (const name of TOOLS) fakeTool(join(ws, ".venv", "bin"), name, marker);
    const agentPath = `${join(ws, ".venv", "bin")}:${savedPath ?? "/usr/bin:/bin"}`;
    process.env.PATH = agentPath;
    const c = createController({ platform: "linux", driver: createLinuxDriver({ runDir: join(root, "run"), lingerMs: 0, staging: false }) });
    try {
      const status = await c.ready();
      if (status.backend !== "sandboxed-unstaged") return t.skip(`sandbox unavailable: ${status.reason}`);
      const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
      const chunks: Buffer[] = [];
      const r = await c.run(
        {
          command: 'printf "%s|%s" "$HOST_TOOLS_VAR" "$PATH" > env.txt',
          cwd: ws,
          scope: { places, protectedGlobs: [] },
          env: { ...process.env, PATH: agentPath, HOME: home, HOST_TOOLS_VAR: "kept" },
          shell: "/bin/bash",
          workspace: "direct",
        },
        { onData: (b) => chunks.push(b), timeout: 30 },
      );
      assert.equal(r.kind, "exited", Buffer.concat(chunks).toString("utf8"));
      assert.equal(readFileSync(join(ws, "env.txt"), "utf8"), `kept|${agentPath}`, "the command inside gets its environment, the agent's PATH included");
      assert.equal(existsSync(marker), false, `a tool from the agent's PATH ran on the host: ${existsSync(marker) ? readFileSync(marker, "utf8") : ""}`);
    } finally {
      await c.drain();
      process.env.PATH = savedPath;
    }
  });
});

describe("the host-tool checks' other pass", () => {
  const enabled = canRunAsNobody(CHILD_FLAG);
  test("every check passes as nobody (uid 65534)", {
    skip: enabled ? undefined : IS_ROOT ? "setpriv missing or already a child pass" : "only from a root run",
  }, (t) => {
    const r = runAsNobody(t, { file: HERE, cwd: REPO, flag: CHILD_FLAG, homePrefix: "pi-auto-mode-hosttools-" });
    assert.equal(r.status, 0, `the pass failed:\n${r.failures.join("\n")}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-2000)}`);
    assert.ok(
      r.summary.some((l) => /^# pass [1-9]/.test(l)),
      "the pass ran checks",
    );
    // Its only skips: its own "other pass" test, and the trusted-folder test (its home is in the temp folder).
    assert.ok(!r.summary.some((l) => /^# skipped (?:[3-9]|\d{2,})/.test(l)), "it did not skip the checks");
  });
});
