// What the network proxy costs (issue 13), on loopback only:
// - per connection: N sequential HTTP requests, each on a new connection, from a Node script on the
//   host straight to a loopback server, and from the same script inside a staged sandbox through
//   the forwarder and the host-side proxy (an `ip:port` allow entry names the server). The added
//   latency is the difference of the per-request medians; both are measured in one run.
// - an install: `npm install` of a few packages from a local registry stand-in, on the host
//   without a sandbox and in the sandbox through the proxy, interleaved, medians and the ratio.
// Prints figures; asserts nothing.

import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { cpus, loadavg, tmpdir } from "node:os";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildPlaces } from "../src/policy/places.ts";
import { createController } from "../src/sandbox/controller.ts";
import { settleEffects } from "../src/sandbox/effects/settle.ts";
import { effectStore } from "../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../src/sandbox/effects/undo.ts";
import type { NetworkSpec } from "../src/policy/network/types.ts";
import { buildRegistry, serveFiles } from "../test/helpers/local-registry.ts";

const REQUESTS = Number(process.argv[2] ?? 200);
const INSTALLS = Number(process.argv[3] ?? 5);
const PACKAGES = ["bench-a", "bench-b", "bench-c", "bench-d", "bench-e"];

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-netbench-")));
mkdirSync(join(root, "files"));
const files = await serveFiles(join(root, "files"));
buildRegistry(join(root, "files"), files.port, PACKAGES);
const network: NetworkSpec = { allow: [`127.0.0.1:${files.port}`], deny: [], reviewUnlisted: false };

const controller = createController();
const status = await controller.ready();
if (status.backend !== "sandboxed") {
  console.log(`no staged sandbox here (${status.backend}: ${status.reason}); nothing to measure`);
  process.exit(0);
}

let seq = 0;
async function sandboxed(command: string): Promise<{ out: string; ms: number }> {
  const base = join(root, `w${++seq}`);
  const ws = join(base, "ws");
  const tmp = join(base, "tmp");
  const home = join(base, "home");
  for (const d of [ws, tmp, home]) mkdirSync(d, { recursive: true });
  execFileSync("git", ["init", "-q"], { cwd: ws });
  const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home, agentDir: join(home, ".pi", "agent"), selfPaths: [] });
  const chunks: Buffer[] = [];
  const t0 = performance.now();
  const r = await controller.run(
    {
      command,
      cwd: ws,
      scope: { places, protectedGlobs: [] },
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C" },
      shell: "/bin/bash",
      workspace: "staged",
      network,
      settle: (end) =>
        settleEffects({ ...end, places, protectedGlobs: [], command, store: effectStore(join(home, ".pi", "agent")), bounds: DEFAULT_UNDO_BOUNDS }),
    },
    { onData: (b) => chunks.push(b), timeout: 300 },
  );
  const ms = performance.now() - t0;
  const out = Buffer.concat(chunks).toString("utf8");
  if (r.kind !== "exited" || r.exitCode !== 0) throw new Error(`sandboxed run failed (${r.kind}): ${out.slice(-800)}`);
  return { out, ms };
}

// One new connection per request (Connection: close), the per-request times printed as JSON.
const client = `
const http = require("http");
const url = process.argv[2], n = Number(process.argv[3]);
const proxy = process.env.HTTP_PROXY;
const once = () => new Promise((resolve, reject) => {
  const t = performance.now();
  const u = new URL(url);
  const opts = proxy
    ? { host: new URL(proxy).hostname, port: new URL(proxy).port, path: url, headers: { host: u.host, connection: "close" }, agent: false }
    : { host: u.hostname, port: u.port, path: u.pathname, headers: { connection: "close" }, agent: false };
  http.get(opts, (res) => { res.resume(); res.on("end", () => resolve(performance.now() - t)); }).on("error", reject);
});
(async () => { const ts = []; for (let i = 0; i < n; i++) ts.push(await once()); console.log(JSON.stringify(ts)); })();
`;
writeFileSync(join(root, "client.cjs"), client);
const url = `http://127.0.0.1:${files.port}/registry/bench-a`;
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

// Asynchronously: the servers live in this process, a synchronous child would starve them.
const run = promisify(execFile);
const hostTimes: number[] = JSON.parse((await run(process.execPath, [join(root, "client.cjs"), url, String(REQUESTS)], { encoding: "utf8" })).stdout);
const inside = await sandboxed(`${process.execPath} ${join(root, "client.cjs")} ${url} ${REQUESTS}`);
// stderr is mixed in (Node warns that its environment proxy agent is experimental): the JSON line.
const sandboxTimes: number[] = JSON.parse(inside.out.split("\n").find((l) => l.startsWith("["))!);
// Warm-up rounds are dropped: the first connections pay for the proxy's and the forwarder's first use.
const warm = (xs: number[]) => xs.slice(Math.min(10, Math.floor(xs.length / 10)));
const hostMedian = median(warm(hostTimes));
const proxiedMedian = median(warm(sandboxTimes));

// npm install of the packages: host (no sandbox) against sandbox through the proxy, interleaved.
const npmCommand = (dir: string) =>
  `cd ${dir} && echo '{"name":"app","version":"1.0.0"}' > package.json && npm install --no-audit --no-fund --loglevel=error --registry http://127.0.0.1:${files.port}/registry/ ${PACKAGES.join(" ")}`;
const hostInstall: number[] = [];
const sandboxInstall: number[] = [];
for (let i = 0; i < INSTALLS; i++) {
  const dir = join(root, `host-${i}`);
  mkdirSync(dir);
  const cache = join(root, `host-cache-${i}`);
  const t0 = performance.now();
  await run("bash", ["-c", npmCommand(dir)], { env: { ...process.env, npm_config_cache: cache } });
  hostInstall.push(performance.now() - t0);
  sandboxInstall.push((await sandboxed(npmCommand("."))).ms);
}

console.log(
  `machine: ${cpus().length} cores, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log(`per connection (${REQUESTS} sequential requests, a new connection each, medians after warm-up):`);
console.log(`  host -> loopback server directly:        ${hostMedian.toFixed(3)} ms`);
console.log(`  sandbox -> forwarder -> proxy -> server: ${proxiedMedian.toFixed(3)} ms`);
console.log(`  added per proxied connection:            ${(proxiedMedian - hostMedian).toFixed(3)} ms (ratio ${(proxiedMedian / hostMedian).toFixed(2)}x)`);
console.log(`npm install of ${PACKAGES.length} packages from a loopback registry (${INSTALLS} rounds, interleaved):`);
console.log(`  host, no sandbox:           median ${median(hostInstall).toFixed(0)} ms (min ${Math.min(...hostInstall).toFixed(0)})`);
console.log(`  sandboxed, through proxy:   median ${median(sandboxInstall).toFixed(0)} ms (min ${Math.min(...sandboxInstall).toFixed(0)})`);
console.log(
  `  ratio: ${(median(sandboxInstall) / median(hostInstall)).toFixed(2)}x (the sandboxed figure includes the sandbox's start, staging and applying node_modules)`,
);

await controller.drain();
await files.close();
rmSync(root, { recursive: true, force: true });
