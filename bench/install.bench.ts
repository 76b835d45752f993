// What staging costs an install: an `npm install`-like command writing a 10,000-file node_modules,
// fresh and as a reinstall (rm -rf node_modules first), run in the sandbox writing the workspace in
// place and over a staged workspace (judged and applied), interleaved, median of 5 each. Prints
// medians and ratios; the target is staged no slower than in place ("not slower than today").

import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { buildPlaces } from "../src/policy/places.ts";
import { createController } from "../src/sandbox/controller.ts";
import { settleEffects } from "../src/sandbox/effects/settle.ts";
import { effectStore } from "../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../src/sandbox/effects/undo.ts";

const RUNS = Number(process.argv[2] ?? 5);
const FILES = 10_000;
const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-install-")));
const ws = join(root, "ws");
const tmp = join(root, "tmp");
mkdirSync(ws);
mkdirSync(tmp);
execFileSync("git", ["init", "-q"], { cwd: ws });
writeFileSync(join(ws, "package.json"), '{"name":"bench"}\n');
// What an installer does: many small files in many package folders.
writeFileSync(
  join(tmp, "install.js"),
  `const fs=require("fs");for(let p=0;p<${FILES / 10};p++){const d="node_modules/pkg"+p;fs.mkdirSync(d,{recursive:true});for(let f=0;f<10;f++)fs.writeFileSync(d+"/f"+f+".js","module.exports="+p+";\\n")}`,
);

const controller = createController();
const status = await controller.ready();
if (status.backend !== "sandboxed") {
  console.log(`staging unavailable here (${status.backend}: ${status.reason})`);
  process.exit(0);
}
const places = buildPlaces({ workspace: ws, tmpRoot: tmp, home: root, agentDir: join(root, "agent"), selfPaths: [] });
const store = effectStore(join(root, "agent"));

async function run(command: string, workspace: "direct" | "staged"): Promise<number> {
  const t = performance.now();
  const r = await controller.run(
    {
      command,
      cwd: ws,
      scope: { places, protectedGlobs: [] },
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      shell: "/bin/bash",
      workspace,
      settle: (end) => settleEffects({ ...end, places, protectedGlobs: [], command, store, bounds: DEFAULT_UNDO_BOUNDS }),
    },
    { onData: () => {} },
  );
  if (r.kind !== "exited" || r.exitCode !== 0 || r.effects?.outcome === "discarded") throw new Error(`${command}: ${JSON.stringify(r).slice(0, 400)}`);
  return performance.now() - t;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const install = `${process.execPath} "$TMPDIR/install.js"`;
const cases = [
  { name: "fresh install", prepare: () => rmSync(join(ws, "node_modules"), { recursive: true, force: true }), command: install },
  { name: "reinstall", prepare: () => {}, command: `rm -rf node_modules && ${install}` },
];
console.log(
  `install-like writes of ${FILES} files, ${RUNS} runs each, interleaved (node ${process.versions.node}, ${cpus().length} cpus, load ${loadavg()[0]!.toFixed(2)})`,
);
for (const c of cases) {
  const direct: number[] = [];
  const staged: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    c.prepare();
    direct.push(await run(c.command, "direct"));
    c.prepare();
    staged.push(await run(c.command, "staged"));
  }
  const d = median(direct);
  const s = median(staged);
  console.log(
    `${c.name.padEnd(14)} in place median ${d.toFixed(0)} ms, staged median ${s.toFixed(0)} ms, ratio ${(s / d).toFixed(2)} (${s <= d * 1.05 ? "not slower" : "SLOWER"})`,
  );
}
await controller.drain();
rmSync(root, { recursive: true, force: true });
