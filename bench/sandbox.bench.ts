// What the OS sandbox adds to one shell command, in milliseconds: `true` and `git status` in a
// small repository, each run 50 times unsandboxed (Pi's own local bash backend), 50 times
// sandboxed writing the workspace in place (layout, placeholders, bubblewrap, seccomp, limits),
// and 50 times staged (the production path: copy-on-write workspace, effects judged and applied),
// interleaved so all see the same machine. Prints min and median and the added medians; the
// targets: the whole sandbox at most 10 ms over plain bash, staging at most 5 ms over the
// in-place sandbox. Asserts nothing: timings belong in a report, not in a test.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { join } from "node:path";
import { createLocalBashOperations } from "@earendil-works/pi-coding-agent";
import { buildPlaces } from "../src/policy/places.ts";
import { createController } from "../src/sandbox/controller.ts";
import { settleEffects } from "../src/sandbox/effects/settle.ts";
import { effectStore } from "../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../src/sandbox/effects/undo.ts";

const RUNS = Number(process.argv[2] ?? 50);
const TARGET_MS = 10;
const STAGING_TARGET_MS = 5;

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
if (status.backend !== "sandboxed" && status.backend !== "sandboxed-unstaged") {
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

const store = effectStore(join(root, "agent"));
async function sandboxed(command: string, workspace: "direct" | "staged" = "direct"): Promise<number> {
  const t = performance.now();
  const r = await controller.run(
    {
      command,
      cwd: ws,
      scope: { places, protectedGlobs: [] },
      env,
      shell: "/bin/bash",
      workspace,
      settle: (end) => settleEffects({ ...end, places, protectedGlobs: [], command, store, bounds: DEFAULT_UNDO_BOUNDS }),
    },
    { onData: () => {} },
  );
  if (r.kind !== "exited" || r.exitCode !== 0 || r.effects?.outcome === "discarded") throw new Error(`${command}: ${JSON.stringify(r)}`);
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
console.log(
  `probe (first ready(), includes dependency checks): ${probeMs.toFixed(1)} ms; first sandboxed command (creates placeholders): ${cold.toFixed(1)} ms`,
);
console.log(
  `${"command".padEnd(12)} ${"plain min/median".padStart(18)} ${"in place min/median".padStart(20)} ${"staged min/median".padStart(18)} ${"staging adds".padStart(13)} ${"sandbox adds".padStart(13)}`,
);
let worst = 0;
let worstStaging = 0;
const staged = status.backend === "sandboxed";
for (const command of ["true", "git status"]) {
  const plain: number[] = [];
  const boxed: number[] = [];
  const stagedRuns: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    plain.push(await unsandboxed(command));
    boxed.push(await sandboxed(command));
    if (staged) stagedRuns.push(await sandboxed(command, "staged"));
  }
  const p = stats(plain);
  const b = stats(boxed);
  const s = staged ? stats(stagedRuns) : b;
  const stagingAdds = s.median - b.median;
  const added = s.median - p.median;
  worst = Math.max(worst, added);
  worstStaging = Math.max(worstStaging, stagingAdds);
  console.log(
    `${command.padEnd(12)} ${`${f(p.min)} / ${f(p.median)}`.padStart(18)} ${`${f(b.min)} / ${f(b.median)}`.padStart(20)} ${`${f(s.min)} / ${f(s.median)}`.padStart(18)} ${f(stagingAdds).padStart(13)} ${f(added).padStart(13)}`,
  );
}
if (!staged) console.log(`staging unavailable here (${status.reason}); only the in-place sandbox was measured`);
console.log(`target: the whole sandbox adds <= ${TARGET_MS} ms at the median: ${worst <= TARGET_MS ? "met" : "NOT met"} (worst ${worst.toFixed(1)} ms)`);
if (staged)
  console.log(
    `target: staging adds <= ${STAGING_TARGET_MS} ms over the in-place sandbox: ${worstStaging <= STAGING_TARGET_MS ? "met" : "NOT met"} (worst ${worstStaging.toFixed(1)} ms)`,
  );
await controller.drain();
rmSync(root, { recursive: true, force: true });
