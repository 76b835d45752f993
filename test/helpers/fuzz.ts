// Shared settings for the property tests in test/fuzz/. Under `npm test` every property runs with a
// fixed seed and a small, fixed number of runs, so the suite stays fast and a failure replays
// exactly; `npm run fuzz` raises the runs (PI_AUTO_MODE_FUZZ_RUNS) and, unless
// PI_AUTO_MODE_FUZZ_SEED names one, draws a fresh seed, which it prints so that a failure found in
// a long run can be replayed with the same seed.
//
//   PI_AUTO_MODE_FUZZ_RUNS=20000   runs for the in-process properties (each keeps at least its quick count)
//   PI_AUTO_MODE_FUZZ_SEED=1234    the seed (default: fixed under npm test, random under a long run)

import type { TestContext } from "node:test";
import fc from "fast-check";

const RUNS = Number(process.env.PI_AUTO_MODE_FUZZ_RUNS ?? "0");
if (!Number.isSafeInteger(RUNS) || RUNS < 0) throw new Error(`PI_AUTO_MODE_FUZZ_RUNS must be a count, not ${process.env.PI_AUTO_MODE_FUZZ_RUNS}`);

/** Whether this is a long run (`npm run fuzz`) rather than the bounded one in `npm test`. */
export const LONG_RUN = RUNS > 0;

const FIXED_SEED = 20261201;
const seedEnv = process.env.PI_AUTO_MODE_FUZZ_SEED;
export const FUZZ_SEED = seedEnv !== undefined && seedEnv !== "" ? Number(seedEnv) : LONG_RUN ? (Date.now() ^ (process.pid << 8)) >>> 0 : FIXED_SEED;
if (!Number.isSafeInteger(FUZZ_SEED)) throw new Error(`PI_AUTO_MODE_FUZZ_SEED must be an integer, not ${seedEnv}`);

/**
 * The number of runs of one property: `quick` under npm test; in a long run PI_AUTO_MODE_FUZZ_RUNS
 * scaled by `weight`, the property's cost relative to an in-process decision (a property that
 * starts a child process per run takes a small weight), never fewer than `quick`.
 */
export function fuzzRuns(quick: number, weight = 1): number {
  return LONG_RUN ? Math.max(quick, Math.round(RUNS * weight)) : quick;
}

export interface FuzzOptions<Ts> {
  readonly runs: number;
  /** Inputs that always run first (hand-picked edges). */
  readonly examples?: readonly Ts[];
  /** False where each run is slow to fail (a child killed at its deadline): report the first failure unshrunk. */
  readonly shrink?: boolean;
}

function show(v: unknown): string {
  try {
    return fc.stringify(v);
  } catch {
    return String(v);
  }
}

/**
 * Checks `property` with the shared seed and the given runs, and reports through `t.diagnostic`
 * how many runs passed and, on failure, the shrunk counterexample (with the seed and path that
 * replay it), then fails the test with fast-check's own report.
 */
export async function checkProperty<Ts>(t: TestContext, property: fc.IProperty<Ts> | fc.IAsyncProperty<Ts>, opts: FuzzOptions<Ts>): Promise<void> {
  const t0 = performance.now();
  const details = await fc.check(property as fc.IAsyncProperty<Ts>, {
    seed: FUZZ_SEED,
    numRuns: opts.runs,
    examples: opts.examples ? [...opts.examples] : undefined,
    endOnFailure: opts.shrink === false,
  });
  const ms = Math.round(performance.now() - t0);
  if (!details.failed) {
    t.diagnostic(`${details.numRuns} runs passed (${details.numSkips} skipped), seed ${details.seed}, ${ms} ms`);
    return;
  }
  t.diagnostic(
    `FAILED after ${details.numRuns} runs and ${details.numShrinks} shrinks, seed ${details.seed}, path ${JSON.stringify(details.counterexamplePath)}, ${ms} ms`,
  );
  if (details.counterexample !== null) t.diagnostic(`${opts.shrink === false ? "first" : "shrunk"} counterexample: ${show(details.counterexample)}`);
  if (details.errorInstance instanceof Error) t.diagnostic(`because: ${details.errorInstance.message.split("\n")[0]}`);
  throw new Error(fc.defaultReportMessage(details) ?? "the property failed");
}
