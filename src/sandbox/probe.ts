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
import type { ProbeResult, SandboxDriver } from "./types.ts";

const PROBE_TIMEOUT_S = 20;

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

/** Run the probe for one driver. */
export async function probeDriver(driver: SandboxDriver): Promise<ProbeResult> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  const fail = (reason: string, missing: readonly string[] = []): ProbeResult => ({ ok: false, ms: ms(), driver: driver.name, reason, missing });
  const check = driver.check();
  if (!check.ok) return fail(check.reason, check.missing);

  let root: string | undefined;
  let server: Awaited<ReturnType<typeof listen>> | undefined;
  try {
    root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-probe-")));
    const ws = join(root, "ws");
    const tmp = join(root, "tmp");
    const out = join(root, "out");
    const home = join(root, "home");
    for (const d of [join(ws, ".git"), tmp, out, join(home, ".ssh")]) mkdirSync(d, { recursive: true });
    writeFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
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
      "echo x > .git/g 2>/dev/null",
      "mkdir .codex/x 2>/dev/null; echo x > .codex/y 2>/dev/null",
      'cat "$HOME/.ssh/id_probe" 2>/dev/null',
      "test -w /proc/sys/kernel/core_pattern && echo PROBE-SYSCTL-WRITABLE",
      `(exec 3<>/dev/tcp/127.0.0.1/${server.port}) 2>/dev/null && echo PROBE-TCP`,
      "command -v unshare >/dev/null && unshare -r true 2>/dev/null && echo PROBE-USERNS",
      driver.platform === "linux" ? "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status" : "true",
      "echo PROBE-DONE",
    ].join("\n");
    const prepared = driver.prepare({
      command: script,
      cwd: ws,
      scope: { places, protectedGlobs: [] },
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C" },
      shell: existsSync("/bin/bash") ? "/bin/bash" : "bash",
    });
    const chunks: Buffer[] = [];
    let outcome;
    try {
      outcome = await driver.exec(prepared.spec, { onData: (b) => chunks.push(b), timeout: PROBE_TIMEOUT_S });
    } finally {
      prepared.release();
      // Placeholders linger for the next command; the probe checks that they do go.
      driver.settle();
    }
    const text = Buffer.concat(chunks).toString("utf8");
    if (outcome.kind === "not-started") return fail(startFailureReason(outcome.detail));
    if (outcome.kind === "timeout") return fail(`the sandbox probe did not finish within ${PROBE_TIMEOUT_S} s`);
    if (outcome.kind === "aborted") return fail("the sandbox probe was aborted");
    if (outcome.exitCode !== 0 || !text.includes("PROBE-DONE")) return fail(`the probe command failed inside the sandbox (exit ${outcome.exitCode}): ${text.trim().slice(-300)}`);
    // Judged on the host.
    if (!existsSync(join(ws, "w")) || readFileSync(join(ws, "w"), "utf8") !== "ok\n") return fail("the sandbox could not write its workspace");
    if (existsSync(join(out, "o"))) return fail("the sandbox wrote outside its workspace");
    if (existsSync(join(ws, ".git", "g"))) return fail("the sandbox wrote into .git");
    if (existsSync(join(ws, ".codex", "x")) || existsSync(join(ws, ".codex", "y"))) return fail("the sandbox created a missing protected path (.codex)");
    if (existsSync(join(ws, ".codex"))) return fail("a placeholder for a missing protected path was left behind");
    if (text.includes(secret)) return fail("the sandbox could read an identity secret (~/.ssh)");
    if (server.connections() > 0 || text.includes("PROBE-TCP")) return fail("the sandbox reached a host TCP port on 127.0.0.1");
    if (text.includes("PROBE-SYSCTL-WRITABLE")) return fail("the sandbox could write /proc/sys (host kernel settings)");
    if (text.includes("PROBE-USERNS")) return fail("the sandbox could create a nested user namespace");
    if (driver.platform === "linux") {
      if (!/^Seccomp:\s*2$/m.test(text)) return fail("the seccomp filter was not applied inside the sandbox");
      if (!/^NoNewPrivs:\s*1$/m.test(text)) return fail("no_new_privs was not set inside the sandbox");
      if (!/^CapEff:\s*0+$/m.test(text)) return fail("the sandbox kept capabilities");
    }
    return { ok: true, ms: ms(), driver: driver.name, notes: check.notes };
  } catch (e) {
    return fail(`the sandbox probe failed: ${(e as Error).message}`);
  } finally {
    server?.server.close();
    if (root) rmSync(root, { recursive: true, force: true });
  }
}
