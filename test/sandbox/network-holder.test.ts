// The holder's network step (linux/holder.ts), attacked directly: the command's bwrap joins the
// network namespace of the pid the host hands it, so a wrong pid must never put the command in
// the host's network. A pid in the holder's own namespace (the host's), a pid that is no process,
// or a word that is no pid: the holder stops with 125 and the command never runs. Only a pid in a
// namespace of its own, the forwarder's, lets it run, and then it sees that namespace's loopback
// and nothing else.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { resolveHostTool } from "../../src/sandbox/linux/host-tools.ts";
import { ENDED_FD, FORWARDER_READY_FD, holderCommand } from "../../src/sandbox/linux/holder.ts";

const IS_ROOT = process.getuid?.() === 0;
const hostPath = (name: "bwrap" | "unshare" | "nsenter" | "mount") => {
  const t = resolveHostTool(name);
  return t.ok ? t.path : undefined;
};
const tools = { bwrap: hostPath("bwrap"), unshare: hostPath("unshare"), nsenter: hostPath("nsenter"), mount: hostPath("mount") };
const missing = Object.entries(tools)
  .filter(([, p]) => !p)
  .map(([n]) => n);
let dir: string;

before(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-holder-net-")));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Run the holder with a stand-in forwarder that reports `pid` (its own when "self"); the command touches a marker. */
async function holder(pid: string | "self"): Promise<{ code: number | null; ran: boolean; output: string; said: string }> {
  const marker = join(dir, `ran-${Math.random().toString(36).slice(2)}`);
  const forwarder = join(dir, `fwd-${Math.random().toString(36).slice(2)}.sh`);
  const line = pid === "self" ? '"ready $$"' : `'ready ${pid}'`;
  writeFileSync(forwarder, `echo ${line} >&${FORWARDER_READY_FD}; exec ${FORWARDER_READY_FD}>&-; exec sleep 30\n`);
  const argsFile = join(dir, `argv-${Math.random().toString(36).slice(2)}`);
  const commandFile = join(dir, `cmd-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    argsFile,
    ["--unshare-user", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--bind", dir, dir, "--dev", "/dev", "--proc", "/proc"]
      .map((a) => `${a}\0`)
      .join(""),
  );
  writeFileSync(commandFile, `/bin/bash\0touch ${marker}; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '\0`);
  const h = holderCommand({
    unshare: tools.unshare!,
    mount: tools.mount!,
    shell: "/bin/bash",
    mode: IS_ROOT ? "root" : "userns",
    roots: [],
    bwrap: tools.bwrap!,
    argsFile,
    commandFile,
    network: { nsenter: tools.nsenter!, node: "/bin/sh", forwarder, socket: join(dir, "unused.sock"), port: 3128 },
  });
  const stdio: ("pipe" | "ignore")[] = ["ignore", "pipe", "pipe", "ignore", "ignore", "pipe", "ignore", "pipe"];
  const child = spawn(h.file, [...h.args], { stdio, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  const fds = child.stdio as unknown as (Writable & Readable)[];
  const ended = fds[ENDED_FD]!;
  const ready = fds[FORWARDER_READY_FD]!;
  let output = "";
  child.stdout!.on("data", (b: Buffer) => (output += b));
  child.stderr!.on("data", (b: Buffer) => (output += b));
  let said = "";
  ready.on("data", (b: Buffer) => (said += b));
  await new Promise<void>((resolve) => {
    const t = setInterval(() => {
      if (said.includes("\n")) {
        clearInterval(t);
        resolve();
      }
    }, 5);
  });
  const reported = /^ready (\S+)/.exec(said)?.[1] ?? "";
  ended.on("data", (b: Buffer) => {
    if (String(b).startsWith("ended")) ended.end("go\n");
  });
  ended.on("error", () => {});
  ended.write(`go ${reported}\n`);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  return { code, ran: existsSync(marker), output, said };
}

describe("the holder joins only the forwarder's network namespace", { skip: missing.length ? `missing: ${missing.join(", ")}` : undefined }, () => {
  test("the forwarder's own namespace: the command runs and sees only a loopback", async () => {
    const r = await holder("self");
    assert.equal(r.code, 0, r.output);
    assert.equal(r.ran, true);
    assert.deepEqual(r.output.trim().split("\n"), ["lo"], "no interface but the namespace's loopback");
  });

  test("a pid in the host's namespace: stopped before the command runs", async () => {
    const r = await holder(String(process.pid));
    assert.equal(r.code, 125, r.output);
    assert.equal(r.ran, false, "the command never ran in the host's network");
  });

  test("a pid that is no process, and a word that is no pid: stopped", async () => {
    for (const word of ["4194304", "1;touch", "$(id)", "../1"]) {
      const r = await holder(word);
      assert.equal(r.code, 125, `${word}: ${r.output}`);
      assert.equal(r.ran, false, word);
    }
  });
});
