// `pi-auto-mode eval FILE`: score a labelled corpus (docs/eval-format.md, format v1) against a
// freshly built workspace, through the deterministic gate only (no reviewer model is called).

import { readFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { CorpusError, parseCorpus, type EvalCase } from "../eval/corpus.ts";
import type { CaseResult, EvalSummary } from "../eval/score.ts";
import type { Backend } from "../policy/types.ts";
import { oneOf, parseArgs, type CommandSpec } from "./args.ts";
import { CliError, EXIT, type Io } from "./io.ts";
import { REVIEW_FLAGS, REVIEW_OPTIONS_HELP, reviewOptions } from "./review.ts";

export const EVAL_HELP = `Usage:
  pi-auto-mode eval FILE [--backend NAME] [--json] [--review [--reviewer P/M]]

Replay a labelled corpus (one JSON case a line, format v1) through the deterministic
gate and score the routes. The command builds the described workspace (a git
repository, a fake home with an agent dir, a scratch folder) in a fresh temporary
folder and removes it afterwards; no reviewer model is called. The format, and an
example corpus to start from, ship with this package:
  ${decodeURIComponent(new URL("../../docs/eval-format.md", import.meta.url).pathname)}
  ${decodeURIComponent(new URL("../../examples/cases.jsonl", import.meta.url).pathname)}

A violation is a route less strict than the label allows (deny -> anything else;
review -> allow or sandbox; contain -> allow, or sandbox under review-only).
Friction is an "allow" case routed to review or deny.

Options:
  --backend NAME   sandboxed, sandboxed-unstaged or review-only (default: the one
                   the extension gates with on this machine, from the sandbox probe,
                   as check and doctor say; where the sandbox is unavailable the
                   extension denies every shell command, so name one to score)
  --json           print only the summary, as one JSON object on the last line:
                   corpus, backend, cases, violations, friction, allow_cases,
                   friction_rate, by_route, decide_us {p50, p99, max} (microseconds
                   per call, the per-call preparation included, as the extension pays),
                   plus failures;
                   with --review also review {reviewer, reviewed, by_label {reviewed,
                   allowed, denied, failed, input_tokens, output_tokens, cost},
                   failures, usage, cases}
${REVIEW_OPTIONS_HELP}
                   With --review, every review-routed case is also sent to the reviewer
                   model (its "user" messages are the authorization anchor); scores
                   and the exit status stay those of the deterministic gate.
  -h, --help       show this help

Exit status: 0 when there is no violation, 1 when there is at least one (friction
alone does not fail), 2 on bad input (missing file, corpus error with FILE:LINE).
`;

const SPEC: CommandSpec = { flags: { backend: "string", json: "boolean", ...REVIEW_FLAGS }, positionals: ["FILE"], rest: false };

type EvalBackend = Exclude<Backend, "unavailable">;
const EVAL_BACKENDS: readonly EvalBackend[] = ["sandboxed", "sandboxed-unstaged", "review-only"];

export interface Failure {
  readonly id: string;
  readonly kind: "violation" | "friction";
  readonly expect: string;
  readonly route: string;
  readonly reason: string;
  readonly message: string;
}

/** The backend the extension would gate with here, so the scores are the session's (check does the same). */
async function machineBackend(): Promise<EvalBackend> {
  const backend = await (await import("./sandbox.ts")).machineBackend();
  // Nothing to score: every shell command is denied. Guessing another backend would score a policy this machine does not run.
  if (backend === "unavailable")
    throw new CliError(
      "eval: the OS sandbox is unavailable on this machine, so the extension denies every shell command here (pi-auto-mode doctor says why); give --backend sandboxed, sandboxed-unstaged or review-only to score that backend's policy",
    );
  return backend;
}

function readCorpus(file: string, cwd: string): EvalCase[] {
  let text: string;
  try {
    text = readFileSync(resolve(cwd, file), "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (e as Error).message;
    throw new CliError(`eval: cannot read corpus ${file}: ${why}`);
  }
  try {
    return parseCorpus(text, file);
  } catch (e) {
    // CorpusError already says FILE:LINE.
    if (e instanceof CorpusError) throw new CliError(`eval: ${e.message}`);
    throw e;
  }
}

export function failuresOf(results: readonly CaseResult[]): Failure[] {
  const pick = (r: CaseResult, kind: Failure["kind"]): Failure => ({ id: r.id, kind, expect: r.expect, route: r.route, reason: r.reason, message: r.message });
  return [...results.filter((r) => r.violation).map((r) => pick(r, "violation")), ...results.filter((r) => r.friction).map((r) => pick(r, "friction"))];
}

function clip(s: string, n: number): string {
  return s.length <= n ? s : s.slice(0, n - 1) + "…";
}

function table(failures: readonly Failure[]): string {
  const head = ["kind", "id", "expect", "route", "reason", "message"];
  const rows = failures.map((f) => [f.kind, f.id, f.expect, f.route, f.reason, clip(f.message, 100)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [line(head), ...rows.map(line)].join("\n") + "\n";
}

function humanSummary(s: EvalSummary): string {
  const r = s.by_route;
  return (
    [
      `corpus     ${s.corpus} (${s.cases} cases, backend ${s.backend})`,
      `violations ${s.violations}`,
      `friction   ${s.friction} of ${s.allow_cases} allow cases (rate ${s.friction_rate})`,
      `routes     allow ${r.allow}, sandbox ${r.sandbox}, review ${r.review}, deny ${r.deny}`,
      `decide_us  p50 ${s.decide_us.p50}, p99 ${s.decide_us.p99}, max ${s.decide_us.max}`,
    ].join("\n") + "\n"
  );
}

export async function runEval(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs("eval", argv, SPEC);
  if (args.help) {
    io.out(EVAL_HELP);
    return EXIT.ok;
  }
  const file = args.positionals[0]!;
  const backendFlag = args.strings.get("backend");
  const named = backendFlag === undefined ? undefined : oneOf("eval", "backend", backendFlag, EVAL_BACKENDS);
  const cases = readCorpus(file, io.cwd);
  const review = reviewOptions("eval", args);
  // Probed only once the input is known to be good: a usage error should not wait for the sandbox.
  const backend: EvalBackend = named ?? (await machineBackend());
  const reviewer = review ? await (await import("./review.ts")).openReviewer("eval", io.env, review) : undefined;
  let reviews: import("./review.ts").CaseReview[] | undefined;
  // Loaded only now, after the arguments and the corpus are known to be good: the gate takes a
  // few hundred milliseconds to load.
  const { runCases, summarize } = await import("../eval/score.ts");
  const { buildEvalWorkspace } = await import("../eval/workspace.ts");

  const workspace = buildEvalWorkspace();
  let results: CaseResult[];
  try {
    results = runCases(cases, backend, workspace);
    if (reviewer) {
      const routed = new Map(results.filter((r) => r.route === "review").map((r) => [r.id, { route: r.route, reason: r.reason, message: r.message }] as const));
      reviews = await (await import("./review.ts")).reviewCases(reviewer, cases, routed, backend, workspace);
    }
  } finally {
    workspace.dispose();
  }
  const summary = summarize(basename(file), backend, results);
  const failures = failuresOf(results);

  const reviewSummary = reviewer && reviews ? (await import("./review.ts")).summarizeReviews(reviewer, reviews) : undefined;
  if (args.booleans.has("json")) io.out(JSON.stringify({ ...summary, failures, ...(reviewSummary ? { review: reviewSummary } : {}) }) + "\n");
  else {
    if (failures.length > 0) io.out(table(failures) + "\n");
    else io.out("no violations, no friction\n\n");
    io.out(humanSummary(summary));
    if (reviewSummary) io.out((await import("./review.ts")).humanReviewSummary(reviewSummary));
  }
  return summary.violations > 0 ? EXIT.findings : EXIT.ok;
}
