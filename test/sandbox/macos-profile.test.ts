// The macOS Seatbelt profile, read and not run: sandbox-exec does not exist on these machines, so
// these tests generate the profile through the real driver (its layout of a real scratch folder)
// and ask a small evaluator of the profile (test/helpers/sbpl.ts: deny default, the last matching
// rule decides) what it allows. macOS has no staging, so this profile alone guards the workspace.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { doctorProblems } from "../../src/cli/doctor.ts";
import { buildPlaces } from "../../src/policy/places.ts";
import { createMacDriver } from "../../src/sandbox/macos/driver.ts";
import { foldedRegex, KEPT_MACH_SERVICES, sbplString } from "../../src/sandbox/macos/profile.ts";
import { probeDriver } from "../../src/sandbox/probe.ts";
import type { SandboxDriver } from "../../src/sandbox/types.ts";
import { decide, rulesOf, sbplRegex, type Query, type Rule } from "../helpers/sbpl.ts";

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A workspace with its own repository, a nested one (`packages/lib/.git`), a source folder, an existing `.vscode` and `.github`. */
function fixture(opts: { workspaceIsHome?: boolean } = {}) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-mac-")));
  roots.push(root);
  const home = join(root, "home");
  const ws = opts.workspaceIsHome ? home : join(root, "ws");
  const tmp = join(root, "tmp");
  for (const d of [
    join(ws, ".git"),
    join(ws, "packages", "lib", ".git"),
    join(ws, "src"),
    join(ws, ".vscode"),
    tmp,
    join(home, ".ssh"),
    join(home, ".config", "gh"),
  ])
    mkdirSync(d, { recursive: true });
  writeFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
  // An existing .github (not empty: an empty folder where a protected path belongs counts as vacant).
  mkdirSync(join(ws, ".github"));
  writeFileSync(join(ws, ".github", "CODEOWNERS"), "* @me\n");
  writeFileSync(join(ws, "packages", "lib", ".git", "HEAD"), "ref: refs/heads/main\n");
  writeFileSync(join(home, ".config", "gh", "hosts.yml"), "token: x\n");
  const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
  // Any existing file stands in for /usr/bin/sandbox-exec: the driver only checks that it is there.
  const driver = createMacDriver({ sandboxExec: process.execPath });
  const prepared = driver.prepare({
    command: "true",
    cwd: ws,
    scope: { places, protectedGlobs: [] },
    env: { PATH: "/usr/bin:/bin", HOME: home },
    shell: "/bin/bash",
    workspace: "direct",
  });
  const args = prepared.spec.args;
  assert.equal(args[0], "-p");
  const profile = args[1]!;
  return { root, ws, tmp, home, profile, rules: rulesOf(profile), layout: prepared.layout, driver };
}

const f = fixture();
const at = (...p: string[]) => join(f.ws, ...p);
const ask = (rules: readonly Rule[], q: Query) => decide(rules, q);
const write = (path: string, op = "file-write-create") => ask(f.rules, { op, path });

describe("macOS profile: the generated text", () => {
  test("parses as SBPL: every rule an allow or a deny with known filters, every regex in the shared subset", () => {
    // rulesOf throws on anything it cannot read; the fixture already called it.
    assert.ok(f.rules.length > 10);
    assert.deepEqual(f.rules[0], { action: "deny", ops: ["default"], filters: [] });
  });
  test("ordinary writes below the workspace and the temporary root are allowed; outside them not", () => {
    for (const op of ["file-write-create", "file-write-data", "file-write-unlink", "file-write-mode"]) {
      assert.equal(write(at("src", "a.ts"), op), "allow", op);
      assert.equal(write(join(f.tmp, "x"), op), "allow", op);
      assert.equal(write(join(f.home, "x"), op), "deny", op);
    }
    assert.equal(write(at("src"), "file-write-unlink"), "allow", "a folder without protected entries can be renamed or removed");
  });
});

describe("macOS profile: protected paths and their ancestors", () => {
  test("every protected path is unwritable, for every write operation", () => {
    for (const p of [
      at(".git", "hooks", "pre-commit"),
      at(".git", "config"),
      at("packages", "lib", ".git", "config"),
      at(".vscode", "tasks.json"),
      at("AGENTS.md"),
      at(".github", "workflows", "ci.yml"),
    ])
      for (const op of ["file-write-create", "file-write-data", "file-write-unlink", "file-write-mode", "file-write-xattr"])
        assert.equal(write(p, op), "deny", `${op} ${p}`);
  });
  test("the ancestors of each protected path cannot be renamed, removed or created (mv sub sub2; write sub2/.git/hooks/x; mv sub2 sub)", () => {
    const protectedPaths = [at(".git"), at("packages", "lib", ".git"), at(".vscode"), at(".github", "workflows"), at(".github", "copilot-instructions.md")];
    for (const p of protectedPaths)
      for (let a = dirname(p); a !== "/"; a = dirname(a))
        for (const op of ["file-write-unlink", "file-write-create"]) assert.equal(write(a, op), "deny", `${op} of ${a}, an ancestor of ${p}`);
    // The rename of the nested repository's folder is what the attack needs first.
    assert.equal(write(at("packages", "lib"), "file-write-unlink"), "deny");
    assert.equal(write(at("packages"), "file-write-unlink"), "deny");
    // Its ancestors stay ordinary folders otherwise: files can be made in them.
    assert.equal(write(at("packages", "lib", "index.ts")), "allow");
    assert.equal(write(at("packages", "other")), "allow");
  });
  test("the ancestors of masked secrets inside the workspace cannot be renamed either", () => {
    const h = fixture({ workspaceIsHome: true });
    const gh = join(h.home, ".config", "gh");
    assert.ok(
      h.layout.masked.some((m) => m.path === gh),
      "the fixture masks ~/.config/gh",
    );
    assert.equal(ask(h.rules, { op: "file-read-data", path: join(gh, "hosts.yml") }), "deny");
    assert.equal(ask(h.rules, { op: "file-write-unlink", path: join(h.home, ".config") }), "deny", "mv ~/.config ~/.c2 would unmask ~/.c2/gh");
    assert.equal(ask(h.rules, { op: "file-write-unlink", path: join(h.home, "src") }), "allow");
  });
  test("hard links and clones of protected paths are refused", () => {
    for (const op of ["file-link", "file-clone"]) assert.equal(write(at(".git", "hooks", "pre-commit"), op), "deny", op);
  });
});

describe("macOS profile: names match case-insensitively (APFS and HFS+ ignore case by default)", () => {
  test("foldedRegex, read as a JavaScript RegExp, matches every spelling and nothing else", () => {
    const re = (s: string) => sbplRegex(`^${foldedRegex(s)}$`);
    for (const s of [".git", ".GIT", ".Git", ".gIT"]) assert.ok(re(".git").test(s), s);
    for (const s of ["Agents.MD", "agents.md", "AGENTS.md"]) assert.ok(re("AGENTS.md").test(s), s);
    for (const s of ["xgit", ".gitx", "git", ".git/"]) assert.ok(!re(".git").test(s), s);
    for (const s of ["AGENTSxmd", "AGENTS.mdx", "xAGENTS.md"]) assert.ok(!re("AGENTS.md").test(s), s);
    assert.ok(re("/Users/Me/a+b (1)").test("/users/me/A+B (1)"));
    assert.ok(!re("/Users/Me/a+b (1)").test("/Users/Me/aab (1)"), "+ is literal");
  });
  test("other spellings of protected root entries are refused", () => {
    for (const p of [
      at(".GIT", "config"),
      at(".Git", "hooks", "pre-commit"),
      at("Agents.MD"),
      at("agents.md"),
      at(".VSCODE", "tasks.json"),
      at(".GitHub", "Workflows", "ci.yml"),
      at(".PI", "settings.json"),
    ])
      assert.equal(write(p), "deny", p);
  });
  test("the same in a workspace whose root is not yet a repository", () => {
    const fresh = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-mac-norepo-")));
    roots.push(fresh);
    const ws = join(fresh, "ws");
    mkdirSync(ws);
    mkdirSync(join(fresh, "tmp"));
    const places = buildPlaces({
      workspace: ws,
      tmpRoot: join(fresh, "tmp"),
      home: join(fresh, "home"),
      agentDir: join(fresh, "home", ".pi", "agent"),
      selfPaths: [],
    });
    const p = createMacDriver({ sandboxExec: process.execPath }).prepare({
      command: "true",
      cwd: ws,
      scope: { places, protectedGlobs: [] },
      env: {},
      shell: "/bin/bash",
      workspace: "direct",
    });
    const rules = rulesOf(p.spec.args[1]!);
    for (const q of [".GIT", ".git", ".GIT/config", ".Git/HEAD"]) assert.equal(decide(rules, { op: "file-write-create", path: join(ws, q) }), "deny", q);
  });
});

describe("macOS profile: protected names anywhere in the workspace", () => {
  test("a new nested repository, AGENTS.md or .vscode is refused at any depth, in any case", () => {
    for (const p of [
      at("src", ".git"),
      at("src", ".GIT", "config"),
      at("src", "deep", ".git", "hooks", "pre-commit"),
      at("src", "AGENTS.md"),
      at("src", "Claude.md"),
      at("src", ".vscode", "tasks.json"),
      at("src", ".envrc"),
      at("src", ".github", "workflows", "x.yml"),
      at("src", ".PI", "settings.json"),
    ])
      assert.equal(write(p), "deny", p);
  });
  test("inside build output (node_modules, dist, .venv, ...) a package's own .github or .vscode may be written, a repository may not", () => {
    for (const p of [
      at("node_modules", "pkg", ".vscode", "settings.json"),
      at("node_modules", ".pnpm", "a@1", "node_modules", "a", ".github", "workflows", "ci.yml"),
      at("node_modules", "pkg", "AGENTS.md"),
      at(".venv", "lib", "site-packages", "x", ".travis.yml"),
      at("src", "dist", ".idea", "x"),
    ])
      assert.equal(write(p), "allow", p);
    for (const p of [at("node_modules", "pkg", ".git", "config"), at("node_modules", "pkg", ".GIT", "hooks", "x"), at("dist", ".git")])
      assert.equal(write(p), "deny", p);
  });
  test("build output below a protected folder is no exception", () => {
    for (const p of [
      at("src", ".vscode", "node_modules", "x"),
      at("src", ".pi", "npm", "node_modules", "evil", "index.js"),
      at(".claude", "node_modules", "x"),
    ])
      assert.equal(write(p), "deny", p);
  });
  test("a name is a whole path component", () => {
    for (const p of [
      at("src", "x.git", "config"),
      at("src", ".gitignore"),
      at("src", "AGENTS.md.bak"),
      at("src", "my.vscode", "a"),
      at(".github", "dependabot.yml"),
    ])
      assert.equal(write(p), "allow", p);
  });
});

describe("macOS profile: terminals, services, set-id bits, quarantine, network", () => {
  test("no other terminal is open: /dev/ttys*, /dev/ptmx and pseudo-tty are refused; the command's own /dev/tty stays", () => {
    for (const op of ["file-write-data", "file-read-data", "file-ioctl"]) {
      assert.equal(ask(f.rules, { op, path: "/dev/ttys003" }), "deny", `${op} /dev/ttys003`);
      assert.equal(ask(f.rules, { op, path: "/dev/ptmx" }), "deny", `${op} /dev/ptmx`);
      assert.equal(ask(f.rules, { op, path: "/dev/ttyp0" }), "deny", `${op} /dev/ttyp0`);
      assert.equal(ask(f.rules, { op, path: "/dev/console" }), "deny", `${op} /dev/console`);
    }
    assert.equal(ask(f.rules, { op: "pseudo-tty" }), "deny");
    assert.equal(ask(f.rules, { op: "file-write-data", path: "/dev/tty" }), "allow");
    assert.equal(ask(f.rules, { op: "file-write-data", path: "/dev/null" }), "allow");
  });
  test("mach-lookup: only the kept services; the keychain, LaunchServices, trustd and DNS are refused", () => {
    for (const s of [
      "com.apple.SecurityServer",
      "com.apple.securityd.xpc",
      "com.apple.coreservices.launchservicesd",
      "com.apple.lsd.mapdb",
      "com.apple.trustd.agent",
      "com.apple.trustd",
      "com.apple.dnssd.service",
      "com.apple.mDNSResponder",
      "com.apple.coreservices.appleevents",
      "com.apple.diagnosticd",
      "com.apple.timed",
    ])
      assert.equal(ask(f.rules, { op: "mach-lookup", machName: s }), "deny", s);
    for (const s of KEPT_MACH_SERVICES) assert.equal(ask(f.rules, { op: "mach-lookup", machName: s.name }), "allow", s.name);
    assert.deepEqual(
      KEPT_MACH_SERVICES.map((s) => s.name),
      [
        "com.apple.system.opendirectoryd.libinfo",
        "com.apple.system.opendirectoryd.membership",
        "com.apple.system.logger",
        "com.apple.logd",
        "com.apple.system.notification_center",
      ],
    );
    for (const s of KEPT_MACH_SERVICES) assert.ok(s.why.length > 20, `${s.name} says why it stays`);
    const allowed = f.rules.filter((r) => r.action === "allow" && r.ops.includes("mach-lookup"));
    assert.equal(allowed.length, 1, "one allow rule lists every service kept");
    assert.doesNotMatch(JSON.stringify(allowed), /SecurityServer|launchservices|trustd/);
  });
  test("set-id bits cannot be set, and the quarantine attribute cannot be set or removed, even where writes are allowed", () => {
    assert.equal(write(at("src", "sh"), "file-write-setugid"), "deny");
    assert.equal(write(join(f.tmp, "sh"), "file-write-setugid"), "deny");
    assert.equal(ask(f.rules, { op: "file-write-xattr", path: at("src", "app"), xattr: "com.apple.quarantine" }), "deny");
    assert.equal(ask(f.rules, { op: "file-write-xattr", path: at("src", "app"), xattr: "user.note" }), "allow");
    assert.ok(f.profile.includes('(deny file-write-xattr (xattr "com.apple.quarantine"))'));
    assert.ok(f.profile.includes("(deny file-write-setugid)"));
  });
  test("no network at all, and the driver says the allowlist is not used on macOS", () => {
    for (const op of ["network-outbound", "network-bind", "network-inbound"]) assert.equal(ask(f.rules, { op }), "deny", op);
    assert.doesNotMatch(f.profile, /\(allow network/);
    const why = f.driver.networkCheck?.();
    assert.match(why ?? "", /macOS/);
    assert.match(why ?? "", /sandbox\.network/);
  });
  test("a probe of a driver without staging reports why its commands have no network", async () => {
    // The macOS driver cannot run here; one that passes its direct probe run stands in for it.
    const stand: SandboxDriver = {
      ...f.driver,
      check: () => ({ ok: true, notes: [] }),
      // What a passing direct run does: the workspace gets `w`, the script reaches its end.
      exec: async (spec, io) => {
        writeFileSync(join(spec.cwd, "w"), "ok\n");
        io.onData(Buffer.from("PROBE-DONE\n"));
        return { kind: "exited", exitCode: 0 };
      },
    };
    const r = await probeDriver(stand);
    assert.ok(r.ok && r.network && !r.network.available, JSON.stringify(r));
    assert.equal(r.network.available ? "" : r.network.reason, f.driver.networkCheck?.());
  });
});

test("doctor on macOS says commands have no network and the allowlist is not used, without Linux's overlay advice", () => {
  const facts = (driver: string) =>
    ({
      machine: { apparmorRestrictUserns: null, root: false, bwrap: null },
      pi: { status: "installed", compatible: true },
      extension: { status: "enabled", copies: [{ enabled: true, thisCopy: true }] },
      install: { root: "/x", trust: "trusted" },
      config: { status: "ok" },
      state: { status: "ok" },
      network: null,
      reviewer: { valid: true, configured: true },
      backend: { name: "sandboxed-unstaged", why: "..." },
      sandbox: { probe: { ok: true, ms: 1, driver, reason: null }, missing: [], facts: [] },
    }) as unknown as Parameters<typeof doctorProblems>[0];
  const mac = doctorProblems(facts("sandbox-exec"));
  assert.equal(mac.length, 1, JSON.stringify(mac));
  assert.match(mac[0]!.what, /^macOS: .*no network at all.*sandbox\.network allowlist above is not used/);
  assert.doesNotMatch(mac[0]!.fix, /overlay|kernel|unshare/);
  assert.match(doctorProblems(facts("bubblewrap"))[0]!.fix, /overlay/, "Linux keeps its own advice");
});

test("strings are escaped; control characters refused", () => {
  assert.equal(sbplString('a"b\\c'), '"a\\"b\\\\c"');
  assert.throws(() => sbplString("a\nb"));
});
