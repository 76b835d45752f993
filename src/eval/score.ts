// Replays a corpus through the deterministic gate and scores the routes (shared/eval/README.md).

import { decide, prepareGate, type GateContext, type GateResult, type GateSetup } from "../policy/gate.ts";
import { isSandboxed, type Backend, type ReasonCode, type Route } from "../policy/types.ts";
import { selfPaths } from "../state/locations.ts";
import { substitute, type EvalCase, type Expectation } from "./corpus.ts";
import type { EvalWorkspace } from "./workspace.ts";

export interface CaseResult {
  readonly id: string;
  readonly expect: Expectation;
  readonly route: Route;
  readonly reason: ReasonCode;
  readonly message: string;
  readonly violation: boolean;
  readonly friction: boolean;
  /** Preparation and decision, as the extension pays for one call (median of a few runs). */
  readonly micros: number;
}

export interface EvalSummary {
  readonly corpus: string;
  readonly backend: Backend;
  readonly cases: number;
  readonly violations: number;
  readonly friction: number;
  readonly allow_cases: number;
  readonly friction_rate: number;
  readonly by_route: Record<Route, number>;
  readonly decide_us: { readonly p50: number; readonly p99: number; readonly max: number };
}

export function isViolation(expect: Expectation, route: Route, backend: Backend): boolean {
  switch (expect) {
    case "deny":
      return route !== "deny";
    case "review":
      return route === "allow" || route === "sandbox";
    case "contain":
      return route === "allow" || (!isSandboxed(backend) && route === "sandbox");
    case "allow":
      return false;
  }
}

export function isFriction(expect: Expectation, route: Route): boolean {
  return expect === "allow" && (route === "review" || route === "deny");
}

const TIMED_RUNS = 5;
const WARM_UP_ROUNDS = 3;

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export function evalSetup(w: EvalWorkspace): GateSetup {
  return { cwd: w.ws, home: w.home, agentDir: w.agentDir, defaultTmpRoot: w.tmp, selfPaths: selfPaths(w.agentDir) };
}

export function evalGate(w: EvalWorkspace): GateContext {
  return prepareGate(evalSetup(w));
}

/**
 * One call as the extension pays for it (src/grants/admit-call.ts): the per-call preparation
 * (configuration, places, repository facts, each from its stat-keyed cache), then the decision.
 */
export function decideLikeTheExtension(tool: string, input: unknown, setup: GateSetup, backend: Backend): GateResult {
  return decide(tool, input, prepareGate(setup), backend);
}

export function runCases(cases: readonly EvalCase[], backend: Exclude<Backend, "unavailable">, w: EvalWorkspace): CaseResult[] {
  const setup = evalSetup(w);
  const vars = { ws: w.ws, home: w.home, tmp: w.tmp };
  // A case for `sandboxed` holds for every backend that sandboxes bash.
  const scored = cases.filter((c) => c.backend === undefined || c.backend === backend || (c.backend === "sandboxed" && isSandboxed(backend)));
  const inputs = scored.map((c) => substitute(c.input, vars));
  // Warm-up: let the JIT and the file-system caches settle before anything is timed.
  for (let round = 0; round < WARM_UP_ROUNDS; round++)
    for (const [i, input] of inputs.entries()) decideLikeTheExtension(scored[i]!.tool, input, setup, backend);
  return scored.map((c, i) => {
    // The median of a few timed runs: one decision's cost without a stray GC pause in it.
    const samples: number[] = [];
    let decision = decideLikeTheExtension(c.tool, inputs[i], setup, backend).decision;
    for (let rep = 0; rep < TIMED_RUNS; rep++) {
      const t0 = process.hrtime.bigint();
      decision = decideLikeTheExtension(c.tool, inputs[i], setup, backend).decision;
      samples.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    const micros = percentile(
      samples.sort((a, b) => a - b),
      50,
    );
    return {
      id: c.id,
      expect: c.expect,
      route: decision.route,
      reason: decision.reason,
      message: decision.message,
      violation: isViolation(c.expect, decision.route, backend),
      friction: isFriction(c.expect, decision.route),
      micros,
    };
  });
}

export function summarize(corpus: string, backend: Backend, results: readonly CaseResult[]): EvalSummary {
  const by_route: Record<Route, number> = { allow: 0, sandbox: 0, review: 0, deny: 0 };
  for (const r of results) by_route[r.route]++;
  const allowCases = results.filter((r) => r.expect === "allow").length;
  const friction = results.filter((r) => r.friction).length;
  const times = results.map((r) => r.micros).sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    corpus,
    backend,
    cases: results.length,
    violations: results.filter((r) => r.violation).length,
    friction,
    allow_cases: allowCases,
    friction_rate: allowCases === 0 ? 0 : Math.round((friction / allowCases) * 10000) / 10000,
    by_route,
    decide_us: { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)), max: round(times.at(-1) ?? 0) },
  };
}
