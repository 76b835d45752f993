// The capability probe: before auto mode trusts a sandbox, it runs the real one once, through the
// exact production path (driver.prepare + driver.exec), on a scratch fixture, and judges the
// effects from the host: files that must appear or must not, connections a host listener did or
// did not receive. Anything short of "every check passed" is a precise reason, and the backend
// becomes unavailable (P5, P16): never a silent fallback to running unsandboxed.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { buildPlaces } from "../policy/places.ts";
import { ROOT_ENTRIES } from "./layout.ts";
import type { StagedFacts } from "./effects/facts.ts";
import { removeRun, removeTree } from "./stage.ts";
import { readProbeCache, writeProbeCache } from "./probe-cache.ts";
import type { NetworkStatus, ProbeResult, SandboxDriver, StagingStatus } from "./types.ts";
import type { NetworkSpec } from "../policy/network/types.ts";
import type { Places } from "../policy/places.ts";
import type { SpawnOutcome } from "./spawn.ts";
import { HOST_PATH } from "./linux/host-tools.ts";

const PROBE_TIMEOUT_S = 20;

/** Bump whenever what the probe checks changes: a remembered pass of an older probe is not trusted. */
export const PROBE_REVISION = 2;

// The probe runs in the background while Pi starts; a process that ends meanwhile (pi -p) must not
// leave its scratch folders behind.
const scratch = new Set<string>();
let exitHook = false;
function track(root: string): void {
  scratch.add(root);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const r of scratch) rmSync(r, { recursive: true, force: true });
  });
}

/** A scratch folder for one probe run, removed at exit if the run cannot remove it: the workspace, temporary root and home go inside. */
function scratchRoot(prefix: string): { readonly root: string; readonly ws: string; readonly tmp: string; readonly home: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  track(root);
  return { root, ws: join(root, "ws"), tmp: join(root, "tmp"), home: join(root, "home") };
}

function listen(): Promise<{ server: Server; port: number; connections: () => number }> {
  return new Promise((resolve, reject) => {
    let count = 0;
    const server = createServer((s) => {
      count++;
      s.destroy();
    });
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const addr = server.address();
      resolve({ server, port: typeof addr === "object" && addr ? addr.port : 0, connections: () => count });
    });
  });
}

/** Turn bwrap's start failure into a reason a user can act on. */
export function startFailureReason(detail: string): string {
  const d = detail.trim();
  let hint = "";
  if (/Creating new namespace failed|max_.*namespaces|ENOSPC|No space left on device/.test(d)) {
    let max = "";
    try {
      max = readFileSync("/proc/sys/user/max_user_namespaces", "utf8").trim();
    } catch {
      // not readable
    }
    hint = ` (user namespaces are disabled${max ? `: /proc/sys/user/max_user_namespaces is ${max}` : ""})`;
  } else if (/setting up uid map: Operation not permitted/.test(d)) hint = " (root without CAP_SETFCAP in the bounding set, e.g. in a restricted container)";
  else if (/No permissions to create new namespace|Operation not permitted/.test(d))
    hint = " (the kernel, a container's seccomp profile or an AppArmor user-namespace restriction refuses new namespaces)";
  else if (/[Uu]nknown option|[Uu]nrecognized option/.test(d)) hint = " (bubblewrap is too old for one of the options)";
  return `sandbox did not start: ${d.split("\n").slice(-3).join(" ")}${hint}`;
}

/** The probe, or a pass remembered under exactly the same key (probe-cache.ts); `fresh` always probes. */
export async function probeWithCache(driver: SandboxDriver, fresh = false): Promise<ProbeResult> {
  const check = driver.check();
  const cache = check.ok ? driver.probeCache?.() : undefined;
  if (cache && !fresh) {
    const hit = readProbeCache(cache.file, cache.key);
    if (hit) return { ...hit, ms: 0, cached: true };
  }
  const r = await probeDriver(driver);
  if (cache) writeProbeCache(cache.file, cache.key, r);
  return r;
}

/** Run the probe for one driver: staged when the machine can stage, else (or when staging fails) direct. */
export async function probeDriver(driver: SandboxDriver): Promise<ProbeResult> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  const check = driver.check();
  if (!check.ok) return { ok: false, ms: ms(), driver: driver.name, reason: check.reason, missing: check.missing };
  let staging: StagingStatus = driver.stagingCheck();
  if (staging.available) {
    const staged = await probeOnce(driver, "staged");
    if (staged === undefined) return { ok: true, ms: ms(), driver: driver.name, notes: check.notes, staging, network: await probeNetwork(driver) };
    // The staged run failed: the sandbox may still work without staging.
    staging = { available: false, reason: `the staging probe failed: ${staged}` };
  }
  const direct = await probeOnce(driver, "direct");
  if (direct !== undefined) return { ok: false, ms: ms(), driver: driver.name, reason: direct, missing: [] };
  // Unstaged, a command has no network: say why, rather than leave it "not probed".
  const network: NetworkStatus = {
    available: false,
    reason: driver.networkCheck?.() ?? "the workspace is not staged, and a command that writes it in place has no network",
  };
  return { ok: true, ms: ms(), driver: driver.name, notes: check.notes, staging, network };
}

/** Run one probe script in the scratch workspace, and give back everything it took, whatever happened. */
async function runScript(
  driver: SandboxDriver,
  script: string,
  places: Places,
  home: string,
  workspace: "staged" | "direct",
  network?: NetworkSpec,
): Promise<{ readonly outcome: SpawnOutcome; readonly text: string }> {
  const prepared = driver.prepare({
    command: script,
    cwd: places.workspace,
    scope: { places, protectedGlobs: [] },
    // The system's tools only: what the probe's script runs must not depend on the agent's PATH.
    env: { PATH: HOST_PATH, HOME: home, LANG: "C" },
    shell: existsSync("/bin/bash") ? "/bin/bash" : "bash",
    workspace,
    ...(network ? { network } : {}),
  });
  const chunks: Buffer[] = [];
  try {
    const outcome = await driver.exec(prepared.spec, { onData: (b) => chunks.push(b), timeout: PROBE_TIMEOUT_S });
    return { outcome, text: Buffer.concat(chunks).toString("utf8") };
  } finally {
    prepared.release();
    if (prepared.stage) removeRun(prepared.stage);
    // Placeholders linger for the next command; the probe checks that they do go.
    driver.settle();
  }
}

/**
 * Whether a staged run can have network: one run with an allow entry for a probe server on the
 * host's loopback, reached through the forwarder and the proxy, and not reached directly. A
 * failure here takes the network away (commands then have none, as before), never the sandbox.
 */
async function probeNetwork(driver: SandboxDriver): Promise<NetworkStatus> {
  const no = (reason: string): NetworkStatus => ({ available: false, reason });
  const problem = driver.networkCheck ? driver.networkCheck() : "this platform's sandbox has no network proxy";
  if (problem !== undefined) return no(problem);
  let root: string | undefined;
  let server: Server | undefined;
  try {
    let ws: string, tmp: string, home: string;
    ({ root, ws, tmp, home } = scratchRoot("pi-auto-mode-probe-net-"));
    for (const d of [ws, tmp, home]) mkdirSync(d, { recursive: true });
    const token = `probe-net-${randomBytes(6).toString("hex")}`;
    let direct = 0;
    const s = createServer((c) => {
      c.once("data", (b) => {
        // Through the proxy the request line carries the absolute URL; a direct one would not.
        if (!String(b).startsWith("GET /")) direct++;
        c.end(`HTTP/1.0 200 OK\r\ncontent-length: ${token.length}\r\n\r\n${token}`);
      });
      c.on("error", () => {});
    });
    server = s;
    const port = await new Promise<number>((resolve, reject) => {
      s.once("error", reject);
      s.listen(0, "127.0.0.1", () => resolve((s.address() as { port: number }).port));
    });
    const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
    const script = [
      // Only bash's /dev/tcp: no tool of the machine is assumed. Through the forwarder ...
      `exec 3<>/dev/tcp/127.0.0.1/"\${HTTP_PROXY##*:}" || exit 3`,
      `printf 'GET http://127.0.0.1:${port}/ HTTP/1.0\r\nHost: 127.0.0.1:${port}\r\n\r\n' >&3`,
      "cat <&3",
      // ... and not around it.
      `(exec 4<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo PROBE-NET-DIRECT`,
      "echo PROBE-NET-DONE",
    ].join("\n");
    const { outcome, text } = await runScript(driver, script, places, home, "staged", { allow: [`127.0.0.1:${port}`], deny: [], reviewUnlisted: false });
    if (outcome.kind === "not-started") return no(`the network's forwarder did not start: ${outcome.detail.trim().split("\n").slice(-2).join(" ")}`);
    if (outcome.kind !== "exited") return no(`the network probe ended with ${outcome.kind}`);
    if (text.includes("PROBE-NET-DIRECT") || direct > 0) return no("the network probe reached the host's loopback without the proxy");
    if (!text.includes(token) || !text.includes("PROBE-NET-DONE")) return no(`the network probe did not get through the proxy: ${text.trim().slice(-200)}`);
    return { available: true };
  } catch (e) {
    return no(`the network probe failed: ${(e as Error).message}`);
  } finally {
    server?.close();
    if (root) {
      removeTree(root);
      scratch.delete(root);
    }
  }
}

/** One real run of the sandbox on a scratch fixture; undefined when every check passed, else why not. */
async function probeOnce(driver: SandboxDriver, workspace: "staged" | "direct"): Promise<string | undefined> {
  let root: string | undefined;
  let server: Awaited<ReturnType<typeof listen>> | undefined;
  const stagedRun = workspace === "staged";
  try {
    let ws: string, tmp: string, home: string;
    ({ root, ws, tmp, home } = scratchRoot("pi-auto-mode-probe-"));
    const out = join(root, "out");
    for (const d of [join(ws, ".git"), join(ws, "gdir"), tmp, out, join(home, ".ssh")]) mkdirSync(d, { recursive: true });
    writeFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(ws, ".git", "config"), "[core]\n");
    writeFileSync(join(ws, "gone"), "gone\n");
    writeFileSync(join(ws, "gdir", "old"), "old\n");
    // Every other protected name exists as an empty file (bound read-only), so the probe needs
    // one placeholder (.codex) rather than dozens: directories are slow to remove on some disks.
    for (const entry of ROOT_ENTRIES) if (entry !== ".git" && entry !== ".codex" && !entry.includes("/")) writeFileSync(join(ws, entry), "");
    const secret = `probe-secret-${randomBytes(6).toString("hex")}`;
    writeFileSync(join(home, ".ssh", "id_probe"), secret);
    server = await listen();
    const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
    // Every line tries one thing; the host judges what happened, the markers only help the reason.
    const script = [
      "echo ok > w",
      "echo x > ../out/o 2>/dev/null",
      stagedRun ? "echo x >> .git/config 2>/dev/null; rm -f gone; rm -rf gdir; mkdir gdir; echo n > gdir/n" : "echo x > .git/g 2>/dev/null",
      "mkdir .codex/x 2>/dev/null; echo x > .codex/y 2>/dev/null",
      'cat "$HOME/.ssh/id_probe" 2>/dev/null',
      "test -w /proc/sys/kernel/core_pattern && echo PROBE-SYSCTL-WRITABLE",
      `(exec 3<>/dev/tcp/127.0.0.1/${server.port}) 2>/dev/null && echo PROBE-TCP`,
      "command -v unshare >/dev/null && unshare -r true 2>/dev/null && echo PROBE-USERNS",
      driver.platform === "linux" ? "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status" : "true",
      "echo PROBE-DONE",
    ].join("\n");
    const { outcome, text } = await runScript(driver, script, places, home, workspace);
    const facts: StagedFacts | undefined = outcome.kind === "exited" ? outcome.facts : undefined;
    if (outcome.kind === "not-started") return startFailureReason(outcome.detail);
    if (outcome.kind === "timeout") return `the sandbox probe did not finish within ${PROBE_TIMEOUT_S} s`;
    if (outcome.kind === "aborted") return "the sandbox probe was aborted";
    if (outcome.kind === "disk-full") return `the sandbox probe was stopped: ${outcome.detail}`;
    if (outcome.exitCode !== 0 || !text.includes("PROBE-DONE"))
      return `the probe command failed inside the sandbox (exit ${outcome.exitCode}): ${text.trim().slice(-300)}`;
    // Judged on the host.
    if (stagedRun) {
      if (!facts?.ok) return `the staged changes could not be read${facts && !facts.ok ? `: ${facts.reason}` : ""}`;
      const changes = facts.roots.flatMap((r) => r.changes.map((c) => `${c.op} ${c.rel}`));
      for (const want of ["write w", "delete gone", "delete gdir/old", "write gdir/n"])
        if (!changes.includes(want)) return `the staged run did not show "${want}" (it showed: ${changes.join(", ").slice(0, 300)})`;
      if (existsSync(join(ws, "w")) || !existsSync(join(ws, "gone")) || !existsSync(join(ws, "gdir", "old")))
        return "the staged run changed the real workspace";
      if (readFileSync(join(ws, ".git", "config"), "utf8") !== "[core]\n" || changes.includes("write .git/config"))
        return "the staged run could change .git/config";
    } else {
      if (!existsSync(join(ws, "w")) || readFileSync(join(ws, "w"), "utf8") !== "ok\n") return "the sandbox could not write its workspace";
      if (existsSync(join(ws, ".git", "g"))) return "the sandbox wrote into .git";
      if (existsSync(join(ws, ".codex", "x")) || existsSync(join(ws, ".codex", "y"))) return "the sandbox created a missing protected path (.codex)";
      if (existsSync(join(ws, ".codex"))) return "a placeholder for a missing protected path was left behind";
    }
    if (existsSync(join(out, "o"))) return "the sandbox wrote outside its workspace";
    if (existsSync(join(ws, ".codex"))) return "the sandbox created .codex in the real workspace";
    if (text.includes(secret)) return "the sandbox could read an identity secret (~/.ssh)";
    if (server.connections() > 0 || text.includes("PROBE-TCP")) return "the sandbox reached a host TCP port on 127.0.0.1";
    if (text.includes("PROBE-SYSCTL-WRITABLE")) return "the sandbox could write /proc/sys (host kernel settings)";
    if (text.includes("PROBE-USERNS")) return "the sandbox could create a nested user namespace";
    if (driver.platform === "linux") {
      if (!/^Seccomp:\s*2$/m.test(text)) return "the seccomp filter was not applied inside the sandbox";
      if (!/^NoNewPrivs:\s*1$/m.test(text)) return "no_new_privs was not set inside the sandbox";
      if (!/^CapEff:\s*0+$/m.test(text)) return "the sandbox kept capabilities";
    }
    return undefined;
  } catch (e) {
    return `the sandbox probe failed: ${(e as Error).message}`;
  } finally {
    server?.server.close();
    if (root) {
      removeTree(root);
      scratch.delete(root);
    }
  }
}
