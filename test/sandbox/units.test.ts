// The sandbox's pure parts: the seccomp program (interpreted the way the kernel runs it), the
// environment filter, the layout of protected paths, the bwrap command line (the macOS profile:
// macos-profile.test.ts), the placeholder registry, the limits, and backend selection.

import { readProbeCache, writeProbeCache } from "../../src/sandbox/probe-cache.ts";
import { probeWithCache } from "../../src/sandbox/probe.ts";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { buildPlaces } from "../../src/policy/places.ts";
import { selectBackend } from "../../src/sandbox/controller.ts";
import { droppedBecause, sandboxEnv } from "../../src/sandbox/env.ts";
import { escalationAsk } from "../../src/request/escalation-ask.ts";
import { computeLayout, LayoutError } from "../../src/sandbox/layout.ts";
import { bwrapArgs, withPrelude } from "../../src/sandbox/linux/bwrap.ts";
import { compareVersions } from "../../src/sandbox/linux/driver.ts";
import { sandboxLimits } from "../../src/sandbox/linux/limits.ts";
import { createPlaceholderPool, processStart, type Owner } from "../../src/sandbox/linux/placeholders.ts";
import { AUDIT_ARCH, deniedSyscalls, interpret, SECCOMP_RESULTS, seccompArch, seccompProgram } from "../../src/sandbox/linux/seccomp.ts";
import { startFailureReason } from "../../src/sandbox/probe.ts";
import type { SandboxDriver } from "../../src/sandbox/types.ts";

const roots: string[] = [];
function scratch(): string {
  const r = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-sbu-")));
  roots.push(r);
  return r;
}
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function fixture() {
  const root = scratch();
  const ws = join(root, "ws");
  const tmp = join(root, "tmp");
  const home = join(root, "home");
  for (const d of [join(ws, ".git"), tmp, join(home, ".ssh"), join(home, ".aws")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
  writeFileSync(join(home, ".netrc"), "machine x password y\n");
  const places = () =>
    buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [join(home, ".pi", "agent", "auto-mode.json")] });
  return { root, ws, tmp, home, places };
}

describe("seccomp program", () => {
  for (const arch of ["x64", "arm64"] as const) {
    const prog = seccompProgram(arch);
    const a = AUDIT_ARCH[arch];
    const socket = arch === "x64" ? 41 : 198;
    const run = (nr: number, arg0 = 0, auditArch = a) => interpret(prog, { arch: auditArch, nr, arg0 });
    test(`${arch}: AF_UNIX sockets are refused, other families and syscalls pass`, () => {
      assert.equal(run(socket, 1), SECCOMP_RESULTS.eperm, "socket(AF_UNIX)");
      assert.equal(run(socket, 2), SECCOMP_RESULTS.allow, "socket(AF_INET)");
      assert.equal(run(socket, 10), SECCOMP_RESULTS.allow, "socket(AF_INET6)");
      for (const nr of [0, 1, 2, 3, 56, 57, 59, 220, 435]) assert.equal(run(nr), SECCOMP_RESULTS.allow, `syscall ${nr}`);
    });
    test(`${arch}: io_uring and the keyring are refused`, () => {
      assert.deepEqual(deniedSyscalls(arch), ["io_uring_setup", "io_uring_enter", "io_uring_register", "add_key", "request_key", "keyctl"]);
      for (const nr of [425, 426, 427]) assert.equal(run(nr), SECCOMP_RESULTS.eperm);
    });
    test(`${arch}: a foreign ABI kills the process`, () => {
      assert.equal(run(0, 0, 0x40000003), SECCOMP_RESULTS.kill, "i386");
      assert.equal(run(0, 0, 0x40000028), SECCOMP_RESULTS.kill, "arm");
    });
  }
  test("x32 syscall numbers are killed on x86_64", () => {
    assert.equal(interpret(seccompProgram("x64"), { arch: AUDIT_ARCH.x64, nr: 0x40000000 + 41, arg0: 1 }), SECCOMP_RESULTS.kill);
  });
  test("only x64 and arm64 have a program", () => {
    assert.equal(seccompArch("x64"), "x64");
    assert.equal(seccompArch("arm64"), "arm64");
    assert.equal(seccompArch("ia32"), undefined);
    assert.equal(seccompArch("riscv64"), undefined);
  });
});

describe("environment", () => {
  test("credentials leave, ordinary variables and Pi's stay, temp and caches move into the tmp root", () => {
    const env = sandboxEnv(
      {
        PATH: "/usr/bin",
        HOME: "/home/u",
        LANG: "C.UTF-8",
        PI_SESSION_ID: "abc",
        PI_MODEL: "m",
        OPENAI_API_KEY: "x",
        ANTHROPIC_API_KEY: "x",
        GITHUB_TOKEN: "x",
        GH_TOKEN: "x",
        AWS_SECRET_ACCESS_KEY: "x",
        AWS_SESSION_TOKEN: "x",
        NPM_TOKEN: "x",
        SSH_AUTH_SOCK: "/run/ssh.sock",
        DB_PASSWORD: "x",
        "npm_config_//registry.npmjs.org/:_authToken": "x",
        SOME_URL: "https://user:hunter2@example.com/",
        INNOCENT: "sk-ant-abcdefghijklmnopqrstuvwx",
        KEYBOARD_LAYOUT: "us",
        DBUS_SESSION_BUS_ADDRESS: "unix:path=/run/bus",
      },
      "/tmp/root",
    );
    for (const kept of ["PATH", "HOME", "LANG", "PI_SESSION_ID", "PI_MODEL", "KEYBOARD_LAYOUT"]) assert.ok(kept in env, kept);
    for (const gone of [
      "OPENAI_API_KEY",
      "ANTHROPIC_API_KEY",
      "GITHUB_TOKEN",
      "GH_TOKEN",
      "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",
      "NPM_TOKEN",
      "SSH_AUTH_SOCK",
      "DB_PASSWORD",
      "npm_config_//registry.npmjs.org/:_authToken",
      "SOME_URL",
      "INNOCENT",
      "DBUS_SESSION_BUS_ADDRESS",
    ])
      assert.ok(!(gone in env), gone);
    assert.equal(env.TMPDIR, "/tmp/root");
    assert.equal(env.XDG_CACHE_HOME, "/tmp/root/cache");
    assert.equal(env.npm_config_cache, "/tmp/root/cache/npm");
    assert.equal(env.PI_AUTO_MODE_SANDBOXED, "1");
  });
  test("the reason is the name or the value", () => {
    assert.equal(droppedBecause("MY_API_KEY", "x"), "name");
    assert.equal(droppedBecause("HARMLESS", "ghp_abcdefghijklmnopqrstuvwxyz0123"), "value");
    assert.equal(droppedBecause("HARMLESS", "value"), undefined);
  });
  test("database and password-manager credentials go, by name or by a URL that carries a user", () => {
    for (const name of ["PGPASSWORD", "MYSQL_PWD", "DB_PASS", "BW_SESSION", "OP_SESSION_my_team", "SENTRY_DSN", "CI_JOB_JWT", "REDISCLI_AUTH", "SSHPASS"])
      assert.equal(droppedBecause(name, "hunter2"), "name", name);
    for (const value of [
      "redis://:hunter2@cache:6379/0",
      "https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/1",
      "postgres://app:pw@db/app",
      "amqp://guest:guest@mq:5672",
    ])
      assert.equal(droppedBecause("SOME_URL", value), "value", value);
    // The working directory and ordinary URLs stay.
    for (const [name, value] of [
      ["PWD", "/work"],
      ["OLDPWD", "/"],
      ["PI_SESSION_ID", "abc"],
      ["API_BASE", "https://api.example.com/v1"],
      ["GIT_ASKPASS", "/usr/lib/git/askpass"],
    ] as const)
      assert.equal(droppedBecause(name, value), undefined, name);
  });
});

describe("layout of writable and protected paths", () => {
  test("protected entries at the workspace root, existing or missing; secrets masked", () => {
    const f = fixture();
    writeFileSync(join(f.ws, "AGENTS.md"), "x");
    const layout = computeLayout({ places: f.places(), protectedGlobs: [], ownPaths: [] });
    assert.deepEqual(
      layout.writable,
      [f.ws, f.tmp].sort((a, b) => a.length - b.length),
    );
    assert.ok(layout.readOnly.includes(join(f.ws, ".git")));
    assert.ok(layout.readOnly.includes(join(f.ws, "AGENTS.md")));
    for (const m of [".pi", ".codex", ".agents", ".husky", ".vscode", "CLAUDE.md", ".envrc", ".gitmodules", ".github"])
      assert.ok(layout.missing.includes(join(f.ws, m)), m);
    assert.ok(!layout.missing.includes(join(f.ws, ".git")));
    const masked = new Map(layout.masked.map((m) => [m.path, m.kind]));
    assert.equal(masked.get(join(f.home, ".ssh")), "dir");
    assert.equal(masked.get(join(f.home, ".aws")), "dir");
    assert.equal(masked.get(join(f.home, ".netrc")), "file");
  });

  test("nested repositories, a gitdir file and its target, .github/workflows, user globs", () => {
    const f = fixture();
    const gitdirTarget = join(f.ws, "vendor", "real-gitdir");
    mkdirSync(join(f.ws, "pkgs", "a", ".git"), { recursive: true });
    mkdirSync(join(f.ws, "pkgs", "b"), { recursive: true });
    mkdirSync(gitdirTarget, { recursive: true });
    writeFileSync(join(f.ws, "pkgs", "b", ".git"), `gitdir: ${gitdirTarget}\n`);
    mkdirSync(join(f.ws, ".github", "workflows"), { recursive: true });
    writeFileSync(join(f.ws, ".github", "workflows", "ci.yml"), "on: push\n");
    mkdirSync(join(f.ws, "secrets"), { recursive: true });
    mkdirSync(join(f.ws, "node_modules", "x", ".git"), { recursive: true });
    const layout = computeLayout({ places: f.places(), protectedGlobs: [join(f.ws, "secrets")], ownPaths: [] });
    for (const p of [join(f.ws, "pkgs", "a", ".git"), join(f.ws, "pkgs", "b", ".git"), gitdirTarget, join(f.ws, ".github", "workflows"), join(f.ws, "secrets")])
      assert.ok(layout.readOnly.includes(p), p);
    assert.ok(!layout.missing.includes(join(f.ws, ".github")), ".github exists; only workflows is protected");
    assert.ok(!layout.readOnly.some((p) => p.includes("node_modules")), "regenerable folders are not scanned");
  });

  test("an empty directory where a protected path belongs is left to the placeholder pool, not bound as the real thing", () => {
    const f = fixture();
    mkdirSync(join(f.ws, ".codex"));
    mkdirSync(join(f.ws, ".github"));
    mkdirSync(join(f.ws, ".vscode"));
    writeFileSync(join(f.ws, ".vscode", "settings.json"), "{}");
    const layout = computeLayout({ places: f.places(), protectedGlobs: [], ownPaths: [] });
    assert.ok(layout.missing.includes(join(f.ws, ".codex")));
    assert.ok(layout.missing.includes(join(f.ws, ".github")), "one placeholder for every protected path below an empty .github");
    assert.ok(!layout.missing.some((m) => m.startsWith(join(f.ws, ".github") + "/")));
    assert.ok(layout.readOnly.includes(join(f.ws, ".vscode")), "a directory with content is the real thing");
  });

  test("a protected symlink protects its target; the scan is bounded", () => {
    const f = fixture();
    mkdirSync(join(f.ws, "config", "pi"), { recursive: true });
    symlinkSync("config/pi", join(f.ws, ".pi"));
    for (let i = 0; i < 30; i++) mkdirSync(join(f.ws, `d${i}`));
    const layout = computeLayout({ places: f.places(), protectedGlobs: [], ownPaths: [], maxDirs: 10 });
    assert.ok(layout.readOnly.includes(join(f.ws, "config", "pi")));
    assert.equal(layout.scan.truncated, true);
  });

  test("a workspace that holds the home directory protects shell start-up files and hides secrets", () => {
    const f = fixture();
    const places = buildPlaces({ workspace: f.root, tmpRoot: f.tmp, home: f.home, agentDir: join(f.home, ".pi", "agent"), selfPaths: [] });
    writeFileSync(join(f.home, ".bashrc"), "");
    const layout = computeLayout({ places, protectedGlobs: [], ownPaths: [join(f.root, "run")] });
    assert.ok(layout.readOnly.includes(join(f.home, ".bashrc")));
    assert.ok(layout.missing.includes(join(f.home, ".profile")));
    assert.ok(layout.missing.includes(join(f.root, "run")));
    assert.ok(layout.masked.some((m) => m.path === join(f.home, ".ssh")));
    assert.ok(!layout.readOnly.includes(join(f.home, ".ssh")), "a masked secret is not also bound");
  });

  test("the root directory or a missing workspace cannot be a writable root", () => {
    const f = fixture();
    const places = buildPlaces({ workspace: "/", tmpRoot: f.tmp, home: f.home, agentDir: join(f.home, "a"), selfPaths: [] });
    assert.throws(() => computeLayout({ places, protectedGlobs: [], ownPaths: [] }), LayoutError);
    const gone = buildPlaces({ workspace: join(f.root, "nope"), tmpRoot: f.tmp, home: f.home, agentDir: join(f.home, "a"), selfPaths: [] });
    assert.throws(() => computeLayout({ places: gone, protectedGlobs: [], ownPaths: [] }), /not a directory/);
  });
});

describe("bwrap command line", () => {
  const f = fixture();
  const layout = computeLayout({ places: f.places(), protectedGlobs: [], ownPaths: [] });
  const argv = bwrapArgs({
    layout,
    placeholders: layout.missing,
    appeared: [],
    cwd: f.ws,
    shell: "/bin/bash",
    command: "echo hi",
    limits: { processes: 100, dataBytes: 1024 * 1024, shmBytes: 4096 },
    fds: { seccomp: 3, started: 4 },
  });
  const at = (...seq: string[]) => argv.findIndex((_, i) => seq.every((s, j) => argv[i + j] === s));

  test("every hardening flag is there", () => {
    for (const flag of [
      "--new-session",
      "--die-with-parent",
      "--unshare-user",
      "--unshare-pid",
      "--unshare-net",
      "--unshare-ipc",
      "--unshare-uts",
      "--disable-userns",
    ])
      assert.ok(argv.includes(flag), flag);
    assert.ok(at("--cap-drop", "ALL") >= 0);
    assert.ok(at("--seccomp", "3") >= 0);
    assert.ok(at("--chdir", f.ws) >= 0);
  });

  test("mount order: read-only root, fresh read-only /dev with a bounded /dev/shm, /proc with /proc/sys read-only, writable roots, then protected paths, placeholders and masks", () => {
    const root = at("--ro-bind", "/", "/");
    const dev = at("--dev", "/dev");
    const proc = at("--proc", "/proc");
    const sys = at("--ro-bind", "/proc/sys", "/proc/sys");
    const ws = at("--bind", f.ws, f.ws);
    const git = at("--ro-bind", join(f.ws, ".git"), join(f.ws, ".git"));
    const codex = at("--perms", "0555", "--size", "65536", "--tmpfs", join(f.ws, ".codex"));
    const ssh = at("--tmpfs", join(f.home, ".ssh"));
    const sshRo = at("--remount-ro", join(f.home, ".ssh"));
    const netrc = at("--ro-bind", "/dev/null", join(f.home, ".netrc"));
    const shm = at("--size", "4096", "--tmpfs", "/dev/shm");
    const devRo = at("--remount-ro", "/dev");
    assert.ok(root >= 0 && root < dev && dev < shm && shm < devRo && devRo < proc && proc < sys && sys < ws, "base mounts first");
    assert.ok(ws < git && ws < codex && ws < ssh && ssh < sshRo && netrc > ws, "protected after writable");
    assert.equal(argv.indexOf("--"), argv.length - 4);
  });

  test("the command runs unchanged after a prelude line that sets limits and signals the start", () => {
    const tail = argv.slice(argv.indexOf("--") + 1);
    assert.deepEqual(tail, ["/bin/bash", "-c", withPrelude("echo hi", { processes: 100, dataBytes: 1024 * 1024, shmBytes: 4096 }, 4)]);
    assert.equal(tail[2], "ulimit -u 100 -d 1024 || exit 125; printf . >&4 && exec 4>&- || exit 125\necho hi");
  });
});

describe("placeholders: reference counted across leases and processes", () => {
  test("the last holder removes a placeholder; an earlier release leaves it for the other", async () => {
    const root = scratch();
    const reg = join(root, "registry");
    const p = join(root, "ws", ".codex");
    mkdirSync(join(root, "ws"));
    const pool = createPlaceholderPool(reg, { lingerMs: 0 });
    const h1 = pool.acquire([p]);
    assert.deepEqual(h1.placeholders, [p]);
    assert.ok(existsSync(p));
    const h2 = pool.acquire([p]);
    assert.deepEqual(h2.placeholders, [p]);
    pool.release(h1);
    assert.ok(existsSync(p), "still held by the second lease");
    pool.release(h2);
    assert.ok(!existsSync(p), "the last holder removed it");
    assert.deepEqual(readdirSync(reg), [], "no holder record left");
    // Set aside at once, deleted off the event loop.
    for (let i = 0; i < 100 && readdirSync(join(root, "ws")).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(readdirSync(join(root, "ws")), [], "nothing set aside is left either");
  });

  test("another process's placeholder is shared, not removed under it", () => {
    const root = scratch();
    const reg = join(root, "registry");
    const p = join(root, ".pi");
    const other: Owner = { pid: process.ppid, start: processStart(process.ppid)! };
    const theirs = createPlaceholderPool(reg, { lingerMs: 0, owner: other });
    const mine = createPlaceholderPool(reg, { lingerMs: 0 });
    const ht = theirs.acquire([p]);
    const hm = mine.acquire([p]);
    assert.deepEqual(hm.placeholders, [p], "a placeholder another process made is still a placeholder");
    mine.release(hm);
    assert.ok(existsSync(p), "the other process still holds it");
    theirs.release(ht);
    assert.ok(!existsSync(p));
  });

  test("unused placeholders linger for the next command, then go; flush removes them at once", async () => {
    const root = scratch();
    const reg = join(root, "registry");
    const p = join(root, ".agents");
    const pool = createPlaceholderPool(reg, { lingerMs: 30 });
    pool.release(pool.acquire([p]));
    assert.ok(existsSync(p), "lingers");
    const again = pool.acquire([p]);
    assert.deepEqual(again.placeholders, [p]);
    pool.release(again);
    await new Promise((r) => setTimeout(r, 80));
    assert.ok(!existsSync(p), "gone after the linger");
    pool.release(pool.acquire([p]));
    pool.flush();
    assert.ok(!existsSync(p));
    assert.deepEqual(pool.kept(), []);
  });

  test("a path that exists for real is never treated as a placeholder", () => {
    const root = scratch();
    const reg = join(root, "registry");
    const p = join(root, ".pi");
    mkdirSync(p);
    const pool = createPlaceholderPool(reg, { lingerMs: 0 });
    const h = pool.acquire([p]);
    assert.deepEqual(h.existing, [p]);
    pool.release(h);
    assert.ok(existsSync(p));
  });

  test("a dead process's placeholders are cleaned up, a live one's are kept", () => {
    const root = scratch();
    const reg = join(root, "registry");
    const p = join(root, ".codex");
    const q = join(root, ".agents");
    createPlaceholderPool(reg, { lingerMs: 0, owner: { pid: 2 ** 22 + 12345, start: "1" } }).acquire([p]);
    const live = createPlaceholderPool(reg, { lingerMs: 0, owner: { pid: process.ppid, start: processStart(process.ppid)! } });
    const hl = live.acquire([q]);
    const mine = createPlaceholderPool(reg, { lingerMs: 0 });
    mine.release(mine.acquire([join(root, ".x")]));
    assert.ok(!existsSync(p), "the dead process's placeholder went");
    assert.ok(existsSync(q), "the live process's placeholder stays");
    live.release(hl);
    assert.ok(!existsSync(q));
  });

  test("content put into a placeholder makes it the user's: it is left alone", () => {
    const root = scratch();
    const reg = join(root, "registry");
    const p = join(root, ".vscode");
    const pool = createPlaceholderPool(reg, { lingerMs: 0 });
    const h = pool.acquire([p]);
    writeFileSync(join(p, "settings.json"), "{}");
    pool.release(h);
    assert.ok(existsSync(join(p, "settings.json")));
  });
});

describe("limits, versions, probe reasons, backend selection, escalation input", () => {
  test("limits never exceed what the process may set", () => {
    const root = scratch();
    const file = join(root, "limits");
    writeFileSync(
      file,
      [
        "Limit                     Soft Limit           Hard Limit           Units     ",
        "Max data size             unlimited            unlimited            bytes     ",
        "Max processes             500                  1000                 processes ",
      ].join("\n"),
    );
    assert.deepEqual(sandboxLimits({ processes: 2048, dataBytes: 8 * 2 ** 30, shmBytes: 1 }, file), { processes: 1000, dataBytes: 8 * 2 ** 30, shmBytes: 1 });
    assert.deepEqual(sandboxLimits({ processes: 100, dataBytes: 1, shmBytes: 1 }, join(root, "missing")), { processes: 100, dataBytes: 1, shmBytes: 1 });
  });
  test("bubblewrap versions compare numerically", () => {
    assert.ok(compareVersions("0.8.0", "0.8.0") === 0);
    assert.ok(compareVersions("0.10.0", "0.8.0") > 0);
    assert.ok(compareVersions("0.7.9", "0.8.0") < 0);
  });
  test("start failures get an actionable reason", () => {
    assert.match(startFailureReason("bwrap: Creating new namespace failed: No space left on device"), /user namespaces are disabled/);
    assert.match(startFailureReason("bwrap: setting up uid map: Operation not permitted"), /CAP_SETFCAP/);
    assert.match(startFailureReason("bwrap: No permissions to create new namespace"), /refuses new namespaces/);
  });
  test("backend: linux and macOS are sandboxed only with a passing probe; elsewhere review-only", () => {
    const ok = { ok: true, ms: 30, driver: "bubblewrap", notes: [], staging: { available: true, how: "overlay" } } as const;
    const unstaged = { ...ok, staging: { available: false, reason: "no overlay" } } as const;
    const bad = { ok: false, ms: 3, driver: "bubblewrap", reason: "bubblewrap (bwrap) not installed", missing: [] } as const;
    for (const platform of ["linux", "darwin"]) {
      assert.equal(selectBackend(platform, ok).backend, "sandboxed");
      assert.equal(selectBackend(platform, unstaged).backend, "sandboxed-unstaged");
      assert.match(selectBackend(platform, unstaged).reason, /cannot be staged \(no overlay\)/);
      assert.deepEqual(selectBackend(platform, bad), { backend: "unavailable", reason: bad.reason });
      assert.equal(selectBackend(platform, "pending").backend, "unavailable");
      assert.equal(selectBackend(platform, undefined).backend, "unavailable");
    }
    for (const platform of ["win32", "freebsd", "openbsd", "aix"]) {
      assert.equal(selectBackend(platform, ok).backend, "review-only");
      assert.equal(selectBackend(platform, bad).backend, "review-only");
    }
  });
  test("escalation requests are read strictly", () => {
    assert.deepEqual(escalationAsk({ command: "x" }), { kind: "default" });
    assert.deepEqual(escalationAsk({ command: "x", sandbox_permissions: "use_default" }), { kind: "default" });
    assert.deepEqual(escalationAsk({ command: "x", sandbox_permissions: "require_escalated", justification: " needs docker " }), {
      kind: "escalated",
      justification: "needs docker",
    });
    assert.equal(escalationAsk({ command: "x", sandbox_permissions: "require_escalated" }).kind, "invalid");
    assert.equal(escalationAsk({ command: "x", sandbox_permissions: "require_escalated", justification: "   " }).kind, "invalid");
    assert.equal(escalationAsk({ command: "x", sandbox_permissions: "yes" }).kind, "invalid");
    assert.equal(escalationAsk({ command: "x", sandbox_permissions: "require_escalated", justification: "x".repeat(5000) }).kind, "invalid");
  });
});

describe("the remembered probe (probe-cache.ts)", () => {
  const PASS = { ok: true, ms: 120, driver: "bubblewrap", notes: ["bubblewrap 0.8.0"], staging: { available: true, how: "overlay" } } as const;
  function driverWith(cache: { file: string; key: string }, prepares: { n: number }): SandboxDriver {
    return {
      name: "fake",
      platform: "linux",
      check: () => ({ ok: true, notes: [] }),
      stagingCheck: () => ({ available: false, reason: "fake" }),
      probeCache: () => cache,
      prepare() {
        prepares.n++;
        throw new Error("the fake sandbox cannot run");
      },
      exec: async () => ({ kind: "not-started", detail: "fake" }),
      transient: () => false,
      settle() {},
      shutdown: async () => {},
      stopNow() {},
      facts: () => [],
    };
  }
  test("a pass under the same key is used without probing; another key, an old entry or a failure is probed afresh", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pi-auto-mode-pc-"));
    const file = join(dir, "probe.json");
    writeProbeCache(file, "k1", PASS);
    const prepares = { n: 0 };
    const hit = await probeWithCache(driverWith({ file, key: "k1" }, prepares));
    assert.deepEqual([hit.ok, hit.ok && hit.cached, prepares.n], [true, true, 0]);
    const miss = await probeWithCache(driverWith({ file, key: "k2" }, prepares));
    assert.equal(miss.ok, false, "a different key runs the real probe (which fails here)");
    assert.equal(prepares.n, 1);
    assert.ok(readProbeCache(file, "k1"), "a failure under another key keeps this pass");
    assert.equal(readProbeCache(file, "k1", Date.now() + 25 * 3600 * 1000), undefined, "a day old: probed again");
    const fresh = await probeWithCache(driverWith({ file, key: "k1" }, prepares), true);
    assert.equal(fresh.ok, false, "doctor's fresh probe does not trust the remembered pass");
    assert.equal(readProbeCache(file, "k1"), undefined, "and its failure forgets the pass: the next start probes too");
    writeProbeCache(file, "k1", PASS);
    writeProbeCache(file, "k4", PASS);
    assert.ok(readProbeCache(file, "k1") && readProbeCache(file, "k4"), "two ways of running the sandbox keep their own passes");
    writeFileSync(file, "{not json");
    assert.equal(readProbeCache(file, "k1"), undefined);
    writeProbeCache(file, "k3", { ok: false, ms: 1, driver: "x", reason: "no", missing: [] });
    assert.equal(readProbeCache(file, "k3"), undefined, "failures are not remembered");
    rmSync(dir, { recursive: true, force: true });
  });
});
