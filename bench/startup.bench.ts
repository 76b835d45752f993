// What the extension adds to Pi's start: `pi -p` with a scripted one-line model, with and without
// pi-auto-mode installed at user level, interleaved so both see the same machine. The first run with
// the extension pays for its first load (Pi's loader compiles and caches the TypeScript); the
// sandbox and its probe load at the first shell command or once Pi is idle (a reply that needs no
// command never waits for them: src/sandbox/deferred-controller.ts). Prints medians and the added median; the target is at most 50 ms added.
// Also `pi-auto-mode sandbox -- true`, which pays for one cheap check per run (the remembered probe),
// against Node running one bare bubblewrap.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const RUNS = Number(process.argv[2] ?? 15);
const TARGET_MS = 50;
const repo = realpathSync(fileURLToPath(new URL("..", import.meta.url)));
const piBin = join(repo, "node_modules", ".bin", "pi");
const model = join(repo, "bench", "fixtures", "startup-model.ts");
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-startup-")));
const ws = join(root, "ws");
mkdirSync(ws);

function home(name: string, install: boolean): NodeJS.ProcessEnv {
  const h = join(root, name);
  const agentDir = join(h, ".pi", "agent");
  mkdirSync(agentDir, { recursive: true });
  const env = {
    ...process.env,
    PATH: [dirname(process.execPath), process.env.PATH ?? ""].join(delimiter),
    HOME: h,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
  };
  if (install) execFileSync(piBin, ["install", repo], { cwd: ws, env, stdio: "ignore" });
  else writeFileSync(join(agentDir, "settings.json"), "{}\n");
  return env;
}

const bare = home("bare", false);
const gated = home("gated", true);
const time = (env: NodeJS.ProcessEnv): number => {
  const t = performance.now();
  const r = spawnSync(piBin, ["-e", model, "--model", "scripted/m1", "-p", "hi"], { cwd: ws, env, input: "", encoding: "utf8", timeout: 30_000 });
  const ms = performance.now() - t;
  if (r.status !== 0 || !r.stdout.includes("ok")) throw new Error(`pi -p failed (${r.status}): ${r.stderr.slice(-500)}`);
  return ms;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const first = time(gated);
const a: number[] = [];
const b: number[] = [];
for (let i = 0; i < RUNS; i++) {
  a.push(time(bare));
  b.push(time(gated));
}
// The CLI against what any Node CLI that runs bubblewrap pays: Node's own start, plus one bare
// bwrap run (no staging, no filtering, no judging), interleaved.
const timed = (file: string, args: string[]): number => {
  const t = performance.now();
  const r = spawnSync(file, args, { env: gated, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${file} ${args.join(" ")} failed (${r.status}): ${r.stderr.slice(-500)}`);
  return performance.now() - t;
};
const bwrapBin = ["/usr/bin/bwrap", "/bin/bwrap"].find((p) => spawnSync(p, ["--version"]).status === 0);
const cli: number[] = [];
const bareBwrap: number[] = [];
for (let i = 0; i < RUNS; i++) {
  cli.push(timed(process.execPath, [join(repo, "bin", "pi-auto-mode.js"), "sandbox", "--cwd", ws, "--", "true"]));
  if (bwrapBin)
    bareBwrap.push(
      timed(process.execPath, [
        "-e",
        `require("node:child_process").spawnSync(${JSON.stringify(bwrapBin)}, ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "--die-with-parent", "true"], { stdio: "inherit" })`,
      ]),
    );
}
console.log(`pi -p start-up, ${RUNS} runs each, interleaved (node ${process.versions.node}, ${cpus().length} cpus, load ${loadavg()[0]!.toFixed(2)})`);
console.log(`first run with the extension (its first load): ${first.toFixed(0)} ms`);
console.log(
  `without the extension: median ${median(a).toFixed(0)} ms; with it: median ${median(b).toFixed(0)} ms; added ${(median(b) - median(a)).toFixed(0)} ms (ratio ${(median(b) / median(a)).toFixed(2)})`,
);
console.log(`target: added <= ${TARGET_MS} ms: ${median(b) - median(a) <= TARGET_MS ? "met" : "NOT met"}`);
console.log(
  `pi-auto-mode sandbox -- true: median ${median(cli).toFixed(0)} ms` +
    (bareBwrap.length
      ? `; node running one bare bwrap: median ${median(bareBwrap).toFixed(0)} ms (ratio ${(median(cli) / median(bareBwrap)).toFixed(2)})`
      : "; bwrap not found: no baseline"),
);
rmSync(root, { recursive: true, force: true });
