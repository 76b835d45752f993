// Network for sandboxed commands (issue 13), through the real sandbox: the forwarder on the
// sandbox's loopback, the host-side proxy on its unix socket, the allowlist. Loopback only: every
// server here listens on the host's 127.0.0.1, and the only entries that let anything through
// name one of them exactly (`127.0.0.1:PORT`). Everything else must be refused, with the refusal
// recorded by host and port and told to the command.
//
// Run as root, and (from the root run) once more as an unprivileged user (nobody, via setpriv).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { buildPlaces } from "../../src/policy/places.ts";
import { createController, type RunResult, type SandboxController } from "../../src/sandbox/controller.ts";
import { createLinuxDriver } from "../../src/sandbox/linux/driver.ts";
import { probeDriver } from "../../src/sandbox/probe.ts";
import { settleEffects } from "../../src/sandbox/effects/settle.ts";
import { effectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../../src/sandbox/effects/undo.ts";
import type { Destination, NetworkSpec } from "../../src/policy/network/types.ts";
import type { ProbeResult, SandboxDriver } from "../../src/sandbox/types.ts";
import { buildRegistry, buildRepository, serveFiles, type FileServer } from "../helpers/local-registry.ts";
import { canRunAsNobody, runAsNobody } from "../helpers/nobody-pass.ts";
import networkData from "../../src/policy/data/network.json" with { type: "json" };

const NODE = process.execPath;
const PORT = networkData.forwarder.port;
const IS_ROOT = process.getuid?.() === 0;
const CHILD_FLAG = "PI_AUTO_MODE_NETWORK_CHILD";
const HERE = fileURLToPath(import.meta.url);
const REPO = join(HERE, "..", "..", "..");
const WHO = IS_ROOT ? "root" : `uid ${process.getuid?.()}`;

let probe: ProbeResult = { ok: false, ms: 0, driver: "bubblewrap", reason: "not probed yet", missing: [] };
let driver: SandboxDriver;
let controller: SandboxController;
let scratch: string;
let seq = 0;

let files: FileServer;
let other: FileServer;
let udp: { socket: UdpSocket; port: number; got: number };

const skip = () => (probe.ok ? false : `sandbox unavailable: ${probe.reason}`);
const canStage = () => probe.ok && probe.staging.available;

function sh(cwd: string, cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

interface Ran {
  readonly out: string;
  readonly result: RunResult;
  readonly ws: string;
}

async function run(script: string, network: NetworkSpec | undefined, opts: { reviewDestination?: (d: Destination) => Promise<boolean> } = {}): Promise<Ran> {
  const root = join(scratch, `w${++seq}`);
  const ws = join(root, "ws");
  const tmp = join(root, "tmp");
  const home = join(root, "home");
  for (const d of [ws, tmp, home]) mkdirSync(d, { recursive: true });
  sh(ws, "git", ["init", "-q"]);
  const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
  const chunks: Buffer[] = [];
  const result = await controller.run(
    {
      command: script,
      cwd: ws,
      scope: { places, protectedGlobs: [] },
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C" },
      shell: "/bin/bash",
      workspace: "staged",
      ...(network ? { network } : {}),
      settle: (end) =>
        settleEffects({ ...end, places, protectedGlobs: [], command: script, store: effectStore(join(home, ".pi", "agent")), bounds: DEFAULT_UNDO_BOUNDS }),
    },
    { onData: (b) => chunks.push(b), timeout: 60, ...(opts.reviewDestination ? { reviewDestination: opts.reviewDestination } : {}) },
  );
  return { out: Buffer.concat(chunks).toString("utf8"), result, ws };
}

const spec = (allow: readonly string[], more: Partial<NetworkSpec> = {}): NetworkSpec => ({ allow, deny: [], reviewUnlisted: false, ...more });
const exited = (r: Ran) => {
  assert.equal(r.result.kind, "exited", `the sandbox ran the command: ${r.out}`);
  return r.result.kind === "exited" ? r.result.exitCode : -1;
};
const refusedOf = (r: Ran) => (r.result.network?.refused ?? []).map((x) => `${x.host}:${x.port} ${x.kind}`);
const allowedOf = (r: Ran) => (r.result.network?.allowed ?? []).map((x) => `${x.host}:${x.port}`);

before(async () => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-net-")));
  driver = createLinuxDriver({ runDir: join(scratch, "run") });
  probe = await probeDriver(driver);
  if (!probe.ok) {
    process.stderr.write(`# sandbox unavailable, network checks skip: ${probe.reason}\n`);
    return;
  }
  controller = createController({ platform: "linux", driver, probe: async () => probe });
  await controller.ready();
  const fileRoot = join(scratch, "files");
  mkdirSync(fileRoot);
  files = await serveFiles(fileRoot);
  buildRegistry(fileRoot, files.port, ["tiny-pkg"]);
  buildRepository(fileRoot);
  other = await serveFiles();
  const socket = createSocket("udp4");
  udp = { socket, port: 0, got: 0 };
  socket.on("message", () => udp.got++);
  await new Promise<void>((r) => socket.bind(0, "127.0.0.1", () => r()));
  udp.port = socket.address().port;
});

after(async () => {
  await Promise.all([files?.close(), other?.close()]);
  udp?.socket.close();
  if (controller) await controller.drain();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe(`network through the proxy as ${WHO}`, { concurrency: 1 }, () => {
  const only = (t: { skip: (why: string) => void }) => {
    const why = skip() || (canStage() ? false : "the workspace cannot be staged here, and only a staged run has network");
    if (why) t.skip(why);
    return !why;
  };

  test("curl reaches a host server an ip:port entry names", async (t) => {
    if (!only(t)) return;
    const r = await run(`curl -sS -m 10 http://127.0.0.1:${files.port}/registry/tiny-pkg -o got.json && echo ok`, spec([`127.0.0.1:${files.port}`]));
    assert.equal(exited(r), 0, r.out);
    assert.ok(files.hits.includes("/registry/tiny-pkg"), "the host server saw the request");
    assert.match(readFileSync(join(r.ws, "got.json"), "utf8"), /tiny-pkg/);
    assert.deepEqual(allowedOf(r), [`127.0.0.1:${files.port}`]);
  });

  test("node fetch goes through the proxy too", async (t) => {
    if (!only(t)) return;
    const r = await run(
      `${NODE} -e 'fetch("http://127.0.0.1:${files.port}/registry/tiny-pkg").then(r=>r.json()).then(j=>console.log("name="+j.name))'`,
      spec([`127.0.0.1:${files.port}`]),
    );
    assert.equal(exited(r), 0, r.out);
    assert.match(r.out, /name=tiny-pkg/);
  });

  test("npm install from a local registry stand-in", async (t) => {
    if (!only(t)) return;
    const r = await run(
      `echo '{"name":"app","version":"1.0.0"}' > package.json && npm install --no-audit --no-fund --registry http://127.0.0.1:${files.port}/registry/ tiny-pkg 2>&1 && node -e 'console.log(require("tiny-pkg"))'`,
      spec([`127.0.0.1:${files.port}`]),
    );
    assert.equal(exited(r), 0, r.out);
    assert.match(r.out, /tiny/);
    assert.equal(existsSync(join(r.ws, "node_modules", "tiny-pkg", "index.js")), true, "the install landed in the workspace");
    assert.ok(files.hits.includes("/tarballs/tiny-pkg-1.0.0.tgz"));
  });

  test("git clone over HTTP from a local server", async (t) => {
    if (!only(t)) return;
    // Into $TMPDIR: a repository made in the workspace is held for review like any new .git (P17).
    const r = await run(
      `git clone -q http://127.0.0.1:${files.port}/repo.git "$TMPDIR/cloned" 2>&1 && cat "$TMPDIR/cloned/hello.txt"`,
      spec([`127.0.0.1:${files.port}`]),
    );
    assert.equal(exited(r), 0, r.out);
    assert.match(r.out, /from the host's repository/);
    assert.ok(files.hits.some((h) => h.startsWith("/repo.git/")));
  });

  test("an unlisted port on loopback is refused, and the command is told why", async (t) => {
    if (!only(t)) return;
    const before = other.hits.length;
    const r = await run(`curl -sS -m 10 http://127.0.0.1:${other.port}/unlisted; echo "rc=$?"`, spec([`127.0.0.1:${files.port}`]));
    exited(r);
    assert.equal(other.hits.length, before, "nothing reached the unlisted server");
    assert.deepEqual(refusedOf(r), [`127.0.0.1:${other.port} unlisted`]);
    assert.match(r.out, /sandbox\.network\.allow/, "the refusal the command got names what the user can do");
  });

  test("a name that resolves to loopback is refused at the address check", async (t) => {
    if (!only(t)) return;
    // `localhost` allowed by name: the proxy resolves it, and loopback needs an exact ip:port entry.
    const r = await run(
      `curl -sS -m 10 --noproxy '' -x http://127.0.0.1:${PORT} http://localhost:${other.port}/by-name; echo "rc=$?"`,
      spec([`localhost:${other.port}`]),
    );
    exited(r);
    assert.equal(
      other.hits.some((h) => h === "/by-name"),
      false,
    );
    assert.deepEqual(refusedOf(r), [`localhost:${other.port} address`], r.out);
  });

  test("a metadata address is refused even when a bare entry names it", async (t) => {
    if (!only(t)) return;
    const r = await run(
      "curl -sS -m 10 http://169.254.169.254/latest/meta-data/; echo done",
      // A bare address is a host entry: it never unlocks an address that is not public.
      spec(["169.254.169.254", `127.0.0.1:${files.port}`]),
    );
    exited(r);
    const refused = refusedOf(r);
    assert.ok(
      refused.some((x) => x.startsWith("169.254.169.254:80 address")),
      refused.join(", "),
    );
  });

  test("CONNECT to an unlisted host on an allowed port is refused before any lookup", async (t) => {
    if (!only(t)) return;
    const r = await run(`curl -sS -m 10 -p -x http://127.0.0.1:${PORT} http://example.com:${files.port}/; echo "rc=$?"`, spec([`127.0.0.1:${files.port}`]));
    exited(r);
    assert.deepEqual(refusedOf(r), [`example.com:${files.port} unlisted`]);
  });

  test("raw DNS, UDP, a direct TCP connect and the proxy's own unix socket get nowhere", async (t) => {
    if (!only(t)) return;
    const tcpBefore = files.hits.length;
    const sock = join(scratch, "run", "net");
    const r = await run(
      [
        "getent hosts registry.npmjs.org > dns.txt; echo dns=$?",
        `${NODE} -e 'const d=require("dgram").createSocket("udp4");d.send("x",53,"1.1.1.1",e=>{console.log("udp53="+(e?e.code:"sent"));d.send("y",${udp.port},"127.0.0.1",()=>d.close())})'`,
        `curl -sS -m 5 --noproxy '*' http://127.0.0.1:${files.port}/direct; echo direct=$?`,
        `${NODE} -e 'const s=require("net").connect(${files.port},"127.0.0.1");s.on("connect",()=>console.log("tcp=connected"));s.on("error",e=>console.log("tcp="+e.code))'`,
        `for s in ${sock}/*.sock; do ${NODE} -e 'const s=require("net").connect(process.argv[1]);s.on("connect",()=>console.log("unix=connected"));s.on("error",e=>console.log("unix="+e.code))' "$s"; done`,
      ].join("\n"),
      spec([`127.0.0.1:${files.port}`]),
    );
    exited(r);
    assert.equal(readFileSync(join(r.ws, "dns.txt"), "utf8"), "", "no name resolves inside");
    assert.doesNotMatch(r.out, /udp53=sent/);
    assert.match(r.out, /direct=[1-9]/);
    assert.match(r.out, /tcp=ECONNREFUSED/);
    assert.match(r.out, /unix=EPERM/, "the socket is there, and connecting to it is refused");
    assert.equal(files.hits.length, tcpBefore, "nothing bypassed the proxy");
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(udp.got, 0, "no datagram reached the host");
  });

  test("a denied entry wins over an allowed one", async (t) => {
    if (!only(t)) return;
    const r = await run(
      `curl -sS -m 10 http://127.0.0.1:${files.port}/denied; echo "rc=$?"`,
      spec([`127.0.0.1:${files.port}`], { deny: [`127.0.0.1:${files.port}`] }),
    );
    exited(r);
    assert.deepEqual(refusedOf(r), [`127.0.0.1:${files.port} denied`]);
    assert.equal(files.hits.includes("/denied"), false);
  });

  test("an unlisted destination reviewed through the broker: allowed once, the next connection refused", async (t) => {
    if (!only(t)) return;
    let asked = 0;
    const review = async (d: Destination) => {
      asked++;
      assert.equal(`${d.host}:${d.port}`, `localhost:${other.port}`);
      return asked === 1;
    };
    // The name is unlisted; the loopback address behind it is named exactly, so only the review decides.
    const r = await run(
      `curl -sS -m 10 --noproxy '' -x http://127.0.0.1:${PORT} http://localhost:${other.port}/first; echo; curl -sS -m 10 --noproxy '' -x http://127.0.0.1:${PORT} http://localhost:${other.port}/second; echo "rc=$?"`,
      spec([`127.0.0.1:${other.port}`], { reviewUnlisted: true }),
      { reviewDestination: review },
    );
    exited(r);
    assert.equal(asked, 2, "each connection is asked about on its own");
    assert.ok(other.hits.includes("/first"));
    assert.equal(other.hits.includes("/second"), false);
    assert.deepEqual(refusedOf(r), [`localhost:${other.port} review-denied`]);
  });

  test("the probe found network on this machine", (t) => {
    if (!only(t)) return;
    assert.deepEqual(probe.ok && probe.network, { available: true });
  });

  test("where the probe could not give network, an allow list gives none: the command runs without it", async (t) => {
    if (!only(t)) return;
    const noNet = createController({
      platform: "linux",
      driver,
      probe: async () => ({ ...probe, network: { available: false, reason: "a test" } }) as ProbeResult,
    });
    await noNet.ready();
    const saved = controller;
    controller = noNet;
    try {
      const r = await run(
        `echo "proxy=[$HTTPS_PROXY]"; curl -sS -m 5 http://127.0.0.1:${files.port}/no-probe; echo "rc=$?"`,
        spec([`127.0.0.1:${files.port}`]),
      );
      exited(r);
      assert.match(r.out, /proxy=\[\]/);
      assert.equal(files.hits.includes("/no-probe"), false);
      assert.match(noNet.facts().join("\n"), /network: none \(a test\)/);
    } finally {
      controller = saved;
    }
  });

  test("without allow entries the sandbox has no network at all, and no proxy is set", async (t) => {
    if (!only(t)) return;
    const r = await run(`echo "proxy=[$HTTPS_PROXY]"; curl -sS -m 5 http://127.0.0.1:${files.port}/none; echo "rc=$?"`, spec([]));
    exited(r);
    assert.match(r.out, /proxy=\[\]/);
    assert.equal(files.hits.includes("/none"), false);
    assert.equal(r.result.network, undefined);
  });
});

describe("the network checks' other pass", () => {
  const enabled = canRunAsNobody(CHILD_FLAG);
  test("every check passes as nobody (uid 65534)", {
    skip: enabled ? undefined : IS_ROOT ? "setpriv missing or already a child pass" : "only from a root run",
  }, async (t) => {
    const reason = skip();
    if (reason) return t.skip(reason);
    const r = runAsNobody(t, { file: HERE, cwd: REPO, flag: CHILD_FLAG, homePrefix: "pi-auto-mode-netpass-" });
    const { summary, failures } = r;
    assert.equal(r.status, 0, `the pass failed:\n${failures.join("\n")}\n${r.stderr.slice(-2000)}`);
    assert.ok(
      summary.some((l) => /^# pass [1-9]/.test(l)),
      "the pass ran checks",
    );
    // Its only skip is its own "other pass" test.
    assert.ok(!summary.some((l) => /^# skipped (?:[2-9]|\d{2,})/.test(l)), "it did not skip the checks");
  });
});
