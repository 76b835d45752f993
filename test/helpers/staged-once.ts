// One staged command through the production path (the bubblewrap driver, controller.run, and
// settleEffects with no reviewer), in a process of its own, so a test can give the whole of it a
// time limit from outside: a host that blocks for ever (a FIFO opened by the judge) is then a
// failed test, not a hung one. Usage: node staged-once.ts '<json Job>'; prints one JSON line
// (Outcome) on stdout.

import { buildPlaces } from "../../src/policy/places.ts";
import { createController } from "../../src/sandbox/controller.ts";
import { reportText } from "../../src/sandbox/effects/report.ts";
import { settleEffects } from "../../src/sandbox/effects/settle.ts";
import { effectStore } from "../../src/sandbox/effects/store.ts";
import { DEFAULT_UNDO_BOUNDS } from "../../src/sandbox/effects/undo.ts";
import { createLinuxDriver } from "../../src/sandbox/linux/driver.ts";
import { probeDriver } from "../../src/sandbox/probe.ts";

export interface Job {
  readonly ws: string;
  readonly tmp: string;
  readonly home: string;
  readonly agentDir: string;
  readonly runDir: string;
  readonly script: string;
  readonly env?: Readonly<Record<string, string>>;
}

export type Outcome =
  | { readonly skip: string }
  | { readonly kind: string; readonly outcome: string | undefined; readonly why: string | undefined; readonly report: string; readonly out: string };

async function main(job: Job): Promise<Outcome> {
  const driver = createLinuxDriver({ runDir: job.runDir, limits: { processes: 1024, dataBytes: 4 * 2 ** 30, shmBytes: 2 ** 26 } });
  const probe = await probeDriver(driver);
  if (!probe.ok) return { skip: `the sandbox is unavailable: ${probe.reason}` };
  if (!probe.staging.available) return { skip: `staging is unavailable: ${probe.staging.reason}` };
  const controller = createController({ platform: "linux", driver, probe: async () => probe });
  await controller.ready();
  const places = buildPlaces({ workspace: job.ws, tmpRoot: job.tmp, home: job.home, agentDir: job.agentDir, selfPaths: [] });
  const chunks: Buffer[] = [];
  try {
    const r = await controller.run(
      {
        command: job.script,
        cwd: job.ws,
        scope: { places, protectedGlobs: [] },
        env: { ...process.env, HOME: job.home, ...job.env },
        shell: "/bin/bash",
        workspace: "staged",
        settle: (end) =>
          settleEffects({ ...end, places, protectedGlobs: [], command: job.script, store: effectStore(job.agentDir), bounds: DEFAULT_UNDO_BOUNDS }),
      },
      { onData: (b) => chunks.push(b), timeout: 60 },
    );
    const effects = r.kind === "exited" ? r.effects : undefined;
    return {
      kind: r.kind,
      outcome: effects?.outcome,
      why: effects?.outcome === "discarded" ? effects.why : undefined,
      report: effects ? reportText(effects, job.ws) : "reason" in r ? r.reason : "",
      out: Buffer.concat(chunks).toString("utf8").slice(-2000),
    };
  } finally {
    await controller.drain();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = await main(JSON.parse(process.argv[2]!) as Job);
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}
