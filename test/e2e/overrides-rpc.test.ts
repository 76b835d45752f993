// P14 in RPC mode through the real `pi` command line: a shell call denied for want of a reviewer,
// `/perm-approve 1` sent as an RPC prompt (the user's, as typed) and its dialog answered by the
// client, the agent's exact retry runs once (in the sandbox), and the same call after that is
// denied again.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { RpcClient } from "@earendil-works/pi-coding-agent";
import { resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import { piCliEnv } from "../helpers/pi-cli-env.ts";

const repo = realpathSync(fileURLToPath(new URL("../..", import.meta.url)));
const cliPath = join(repo, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js");
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-rpc-")));
const home = join(root, "home");
const agentDir = join(home, ".pi", "agent");
const ws = join(root, "ws");

let unavailable: string | undefined;
before(async () => {
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(ws, { recursive: true });
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major < 22 || (major === 22 && minor < 19)) unavailable = `Pi 1.6 needs Node >= 22.19; this runs on ${process.versions.node}`;
  else if (!existsSync(cliPath)) unavailable = `the pi command line is not installed at ${cliPath} (run npm install)`;
  else {
    resetSharedController();
    const s = await sharedController().ready();
    if (s.backend !== "sandboxed") unavailable = `sandbox unavailable: ${s.backend}: ${s.reason}`;
    resetSharedController();
  }
});
after(() => rmSync(root, { recursive: true, force: true }));

type Event = { type: string; toolName?: string; isError?: boolean; result?: { content?: Array<{ type: string; text?: string }> } };

describe("P14: /perm-approve in RPC mode with the real pi CLI", () => {
  test("denied, approved once over RPC, the exact retry runs, the next identical call is denied", { timeout: 60_000 }, async (t) => {
    if (unavailable) return t.skip(unavailable);
    const env = Object.fromEntries(Object.entries(piCliEnv(home, agentDir)).filter((e): e is [string, string] => typeof e[1] === "string"));
    const client = new RpcClient({
      cliPath,
      cwd: ws,
      env,
      args: ["--no-session", "--model", "scripted/m1", "-e", join(repo, "test", "fixtures", "pi-rpc-faux-model.ts"), "-e", join(repo, "src", "extension.ts")],
    });
    const events: Event[] = [];
    await client.start();
    try {
      // The RPC client is the user's interface: it answers the approval dialog, which shows the whole call.
      const asked: string[] = [];
      client.onEvent((e) => {
        events.push(e as Event);
        const r = e as unknown as { type: string; id?: string; method?: string; title?: string; message?: string };
        if (r.type !== "extension_ui_request" || r.method !== "confirm") return;
        asked.push(`${r.title}\n${r.message}`);
        const stdin = (client as unknown as { process: { stdin: NodeJS.WritableStream } }).process.stdin;
        stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: r.id, confirmed: true })}\n`);
      });
      const results = () => events.filter((e) => e.type === "tool_execution_end");
      // The nth run has settled (a /perm-approve prompt is handled, and the turn it starts is the run).
      const until = async (n: number) => {
        for (let i = 0; i < 400 && events.filter((e) => e.type === "agent_settled").length < n; i++) await new Promise((r) => setTimeout(r, 50));
      };
      await client.prompt("check the shell");
      await until(1);
      assert.equal(results()[0]?.isError, true, "denied for want of a reviewer");
      await client.prompt("/perm-approve 1");
      await until(2);
      assert.match(asked.join("\n"), /kill -0 \$\$ && echo alive/, "the dialog showed the call it approved");
      const text = (e: Event | undefined) => (e?.result?.content ?? []).map((c) => c.text ?? "").join("");
      assert.equal(results()[1]?.isError, false, `the approved retry ran: ${text(results()[1])}\n${client.getStderr()}`);
      assert.match(text(results()[1]), /alive/);
      await client.prompt("once more");
      await until(3);
      assert.equal(results()[2]?.isError, true, "the same call is denied again");
    } finally {
      await client.stop();
    }
  });
});
