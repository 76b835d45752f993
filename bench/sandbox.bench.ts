// What the OS sandbox adds to one shell command, in milliseconds: `true` and `git status` in a
// small repository, each run 50 times unsandboxed (Pi's own local bash backend) and 50 times
// sandboxed (the full production path: layout, placeholders, bubblewrap, seccomp, limits),
// interleaved so both see the same machine. Prints min and median and the added median; the
// target is at most 10 ms added. Asserts nothing: timings belong in a report, not in a test.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { join } from "node:path";
import { createLocalBashOperations } from "@earendil-works/pi-coding-agent";
import { buildPlaces } from "../src/policy/places.ts";
import { createController } from "../src/sandbox/controller.ts";

const RUNS = Number(process.argv[2] ?? 50);
const TARGET_MS = 10;

const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-bench-")));
const ws = join(root, "repo");
const tmp = join(root, "tmp");
mkdirSync(join(ws, "src"), { recursive: true });
mkdirSync(tmp);
for (let i = 0; i < 100; i++) writeFileSync(join(ws, "src", `f${i}.ts`), `export const x${i} = ${i};\n`);
const git = (...args: string[]) => execFileSync("git", ["-c", "user.email=b@b", "-c", "user.name=b", ...args], { cwd: ws, stdio: "ignore" });
git("init", "-q");
git("add", "-A");
git("commit", "-q", "-m", "bench");
writeFileSync(join(ws, "src", "f0.ts"), "changed\n");

const t0 = performance.now();
const controller = createController();
const status = await controller.ready();
const probeMs = performance.now() - t0;
if (status.backend !== "sandboxed") {
  console.log(`sandbox unavailable: ${status.reason}`);
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
}

const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home: root, agentDir: join(root, "agent"), selfPaths: [] });
const local = createLocalBashOperations();
const env = process.env;

async function unsandboxed(command: string): Promise<number> {
  const t = performance.now();
  const r = await local.exec(command, ws, { onData: () => {}, env });
  if (r.exitCode !== 0) throw new Error(`${command} exited ${r.exitCode}`);
  return performance.now() - t;
}

async function sandboxed(command: string): Promise<number> {
  const t = performance.now();
  const r = await controller.run({ command, cwd: ws, scope: { places, protectedGlobs: [] }, env, shell: "/bin/bash" }, { onData: () => {} });
  if (r.kind !== "exited" || r.exitCode !== 0) throw new Error(`${command}: ${JSON.stringify(r)}`);
  return performance.now() - t;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2 };
};
const f = (n: number) => n.toFixed(1).padStart(6);

// The first sandboxed command of a burst also creates the placeholders; measured on its own.
const cold = await sandboxed("true");

console.log(`sandbox overhead, ${RUNS} runs each, interleaved (node ${process.versions.node}, ${cpus().length} cpus, load ${loadavg()[0]!.toFixed(2)})`);
console.log(`probe (first ready(), includes dependency checks): ${probeMs.toFixed(1)} ms; first sandboxed command (creates placeholders): ${cold.toFixed(1)} ms`);
console.log(`${"command".padEnd(12)} ${"unsandboxed min/median".padStart(24)} ${"sandboxed min/median".padStart(22)} ${"added median".padStart(14)}`);
let worst = 0;
for (const command of ["true", "git status"]) {
  const plain: number[] = [];
  const boxed: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    plain.push(await unsandboxed(command));
    boxed.push(await sandboxed(command));
  }
  const p = stats(plain);
  const b = stats(boxed);
  const added = b.median - p.median;
  worst = Math.max(worst, added);
  console.log(`${command.padEnd(12)} ${`${f(p.min)} / ${f(p.median)}`.padStart(24)} ${`${f(b.min)} / ${f(b.median)}`.padStart(22)} ${f(added).padStart(14)}`);
}
console.log(`target: median added <= ${TARGET_MS} ms: ${worst <= TARGET_MS ? "met" : "NOT met"} (worst ${worst.toFixed(1)} ms)`);
await controller.drain();
rmSync(root, { recursive: true, force: true });
