// A judgement thread that never answers (for judge-run.ts's deadline and abort): it says it has
// the job by writing `judging` in the job's temporary root, then blocks its thread for good.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parentPort } from "node:worker_threads";

parentPort?.on("message", (job: { places: { tmpRoot: string } }) => {
  writeFileSync(join(job.places.tmpRoot, "judging"), "");
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
});
