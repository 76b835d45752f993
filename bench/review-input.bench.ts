// Reviewer input size (estimator tokens: one UTF-8 byte = one token) over the review-routed
// cases of a labelled corpus (default shared/eval/cases.jsonl; pass another path as the first
// argument), under both backends, with no history and after 10, 1,000 and 10,000 earlier
// transcript items. What is counted is everything the first attempt sends: the system prompt,
// the input document and the framing allowance.
//
// The earlier items are a generated session (deterministic: the same case and length give the
// same transcript): a repeating round of ordinary work (reads, edits, searches, test runs,
// listings, user turns) in which every third call brings up the action's words and names in
// passing: a search for a word of the command, a note or plan about it, a file or folder entry of
// the same name elsewhere, the same path under another folder or with a suffix, a user turn
// naming a word. That is the long session in which the previous rules filled the budget. A second
// session is the same plus, every 50th item, a call on the exact target (a listing of the folder
// that holds it, a listing of it) or, for a tool that is not a file tool, an earlier call of the
// same tool: evidence that does bear on the action and is sent, within its bound.
//
// Baselines in the same run: the same inputs with no history, and, where git can show it, the
// selection rules before this change (PREVIOUS_RULES) on the same transcripts.
//
// Targets: median <= 2,000 at every history length of the first session; p95 <= 6,000 everywhere.
// Prints figures and ratios; exits 1 when a target is missed.

import { rng } from "../src/eval/generate.ts";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseCorpus, substitute, type EvalCase } from "../src/eval/corpus.ts";
import { evalGate } from "../src/eval/score.ts";
import { buildEvalWorkspace } from "../src/eval/workspace.ts";
import { decide } from "../src/policy/gate.ts";
import type { Backend } from "../src/policy/types.ts";
import { actionForReview } from "../src/grants/admit.ts";
import { DEFAULT_BUDGET, estimateTokens, FRAMING_RESERVE, type TokenBudget } from "../src/review/budget.ts";
import { buildReviewInput, type ActionForReview, type ReviewInput } from "../src/review/input.ts";
import { REVIEWER_SYSTEM_PROMPT } from "../src/review/prompt.ts";
import { transcriptFromUserMessages, type TranscriptItem } from "../src/review/transcript.ts";

const MEDIAN_TARGET = 2000;
const P95_TARGET = 6000;
const SIZES = [10, 1000, 10_000] as const;
/** The last commit with the selection rules this bench compares against. */
const PREVIOUS_RULES = "3123ba1b7cc1b00a1a1b2bed62979a03e7afa68c";

type Build = (a: ActionForReview, t: readonly TranscriptItem[], budget: TokenBudget) => ReviewInput;
type Mode = "mentions" | "exact";

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

// ---------------------------------------------------------------------------------------------
// The generated session.

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const FILE_TOOLS = new Set(["bash", "read", "write", "edit", "ls", "find", "grep"]);

/** What the action names, taken from the raw input (not from the selection under test). */
function mentionsOf(c: EvalCase, input: unknown): { words: string[]; paths: string[] } {
  const strings: string[] = [];
  const visit = (v: unknown, depth: number): void => {
    if (depth > 4) return;
    if (typeof v === "string") strings.push(v);
    else if (Array.isArray(v)) for (const x of v) visit(x, depth + 1);
    else if (typeof v === "object" && v !== null) for (const x of Object.values(v)) visit(x, depth + 1);
  };
  visit(input, 0);
  const tokens = strings
    .flatMap((s) => (s.length > 300 ? [] : s.split(/[\s;|&()<>`'"=,]+/)))
    .filter((t) => t.length >= 3 && !t.startsWith("-") && !t.startsWith("$"));
  const paths = [
    ...new Set(
      tokens.filter((t) => t.includes("/") && !t.includes("://") && !t.includes(":") && !/[*?]/.test(t)).map((t) => (t.length > 1 ? t.replace(/\/+$/, "") : t)),
    ),
  ];
  const words = [...new Set(tokens.flatMap((t) => t.split(/[/.:@]+/)).filter((w) => /^[A-Za-z][\w-]{2,}$/.test(w)))];
  if (words.length === 0) words.push(c.tool.replace(/^mcp__/, "").split("_")[0] ?? c.tool);
  return { words, paths };
}

const ENTRIES = [
  "README.md",
  "CHANGELOG.md",
  "LICENSE",
  "Makefile",
  "package.json",
  "tsconfig.json",
  "index.ts",
  "util.ts",
  "cli.ts",
  "config.ts",
  "server.ts",
  "client.ts",
  "types.d.ts",
  "notes.md",
  "lib",
  "test",
  "fixtures",
  "assets",
  "scripts",
  "docs",
  "examples",
  "vendor",
  "coverage",
  "tmp",
  "logs",
  "public",
  "styles.css",
  "main.go",
];

function listingOf(names: readonly string[]): string {
  return names.map((n) => (n.includes(".") || /^[A-Z]+$/.test(n) ? n : `${n}/`)).join("\n");
}

function lsLong(names: readonly string[]): string {
  return [
    "total 112",
    ...names.map(
      (n, i) =>
        `${n.includes(".") ? "-rw-r--r--" : "drwxr-xr-x"}  1 dev  staff  ${String((i + 1) * 317).padStart(6)} Mar  3 10:${String(10 + (i % 50)).padStart(2, "0")} ${n}`,
    ),
  ].join("\n");
}

const PARAGRAPH =
  "This module keeps the request handling in one place: parsing, validation, retries with backoff and the final response mapping. Callers pass a plain object and get a typed result back; errors are values, not exceptions.";

/**
 * `n` earlier transcript items for case `c` (user messages, tool calls and their results). In
 * "mentions" every third call brings up the action's words or names in passing; "exact" adds,
 * every 25th round, a call on the exact target.
 */
function session(c: EvalCase, input: unknown, n: number, mode: Mode): TranscriptItem[] {
  const { words, paths } = mentionsOf(c, input);
  const next = rng(hash(`${c.id}/${n}`));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const out: TranscriptItem[] = [];
  let id = 0;
  const toolCall = (name: string, args: unknown, result?: string) => {
    const callId = `h${id++}`;
    out.push({ kind: "tool-call", id: callId, name, args });
    out.push({ kind: "tool-result", id: callId, name, text: result ?? "ok", isError: false });
  };
  const ordinary = [
    () => toolCall("read", { path: "src/util.ts" }, `export function add(a, b) {\n  return a + b;\n}\n// ${PARAGRAPH}\n`),
    () =>
      toolCall(
        "edit",
        { path: "src/util.ts", edits: [{ oldText: "return a + b;", newText: `return a + b; // ${PARAGRAPH.slice(0, 120)}` }] },
        "Successfully replaced 1 block in src/util.ts.",
      ),
    () =>
      toolCall(
        "bash",
        { command: "npm test 2>&1 | tail -40" },
        `> demo@1.0.0 test\n> node --test\n\n${Array.from({ length: 12 }, (_, i) => `✔ case ${i} (0.${i}1ms)`).join("\n")}\nℹ tests 12\nℹ pass 12\nℹ fail 0`,
      ),
    () =>
      toolCall(
        "grep",
        { pattern: "export function", path: "src", glob: "*.ts" },
        Array.from({ length: 10 }, (_, i) => `src/mod${i}.ts:${i + 3}: export function step${i}(input: Input): Output {`).join("\n"),
      ),
    () => toolCall("ls", { path: "src" }, listingOf(ENTRIES)),
    () => toolCall("bash", { command: "git status --short" }, Array.from({ length: 12 }, (_, i) => ` M src/mod${i}.ts`).join("\n")),
    () => toolCall("find", { pattern: "**/*.ts", path: "src" }, Array.from({ length: 30 }, (_, i) => `src/${i % 3 ? "lib/" : ""}mod${i}.ts`).join("\n")),
    () =>
      toolCall(
        "bash",
        { command: "git log --oneline -15" },
        Array.from({ length: 15 }, (_, i) => `${(0xabc123 + i * 7919).toString(16)} Fix step ${i}: handle empty input`).join("\n"),
      ),
  ];
  // The action's words and names in passing: none of these is about the action's own target.
  const loose = [
    () => {
      const w = pick(words);
      toolCall(
        "grep",
        { pattern: w, path: "." },
        Array.from({ length: 8 }, (_, i) => `src/mod${i}.ts:${i * 7 + 2}: // ${w}: ${PARAGRAPH.slice(0, 60)}`).join("\n"),
      );
    },
    () => {
      const w = pick(words);
      toolCall(
        "bash",
        { command: `grep -rn "${w}" docs src | head -20` },
        Array.from({ length: 8 }, (_, i) => `docs/guide-${i}.md:${i + 4}: ${w} is configured in the deploy notes`).join("\n"),
      );
    },
    () => {
      const w = pick(words);
      toolCall(
        "edit",
        { path: "docs/notes.md", edits: [{ oldText: "## Open questions", newText: `## Open questions\n\n- ${w}: ${PARAGRAPH}` }] },
        "Successfully replaced 1 block in docs/notes.md.",
      );
    },
    () => {
      const w = pick(words);
      toolCall("read", { path: `docs/${w}.md` }, `# ${w}\n\n${PARAGRAPH}\n`);
    },
    () => {
      const name = paths.length > 0 ? basename(pick(paths)) : pick(words);
      toolCall("ls", { path: "docs" }, listingOf([...ENTRIES.slice(0, 20), name]));
    },
    () => {
      const w = pick(words);
      toolCall(
        "find",
        { pattern: `*${w}*`, path: "." },
        [`docs/${w}.md`, `src/lib/${w}-helpers.ts`, `test/${w}.test.ts`, `examples/${w}/README.md`].join("\n"),
      );
    },
    () => {
      const w = pick(words);
      toolCall(
        "write",
        { path: `docs/${w}-plan.md`, content: `# Plan for ${w}\n\n${PARAGRAPH}\n\n${PARAGRAPH}\n` },
        `Successfully wrote 480 bytes to docs/${w}-plan.md`,
      );
    },
    // Near misses: the same path under another folder, or with something after its name.
    () => {
      if (paths.length === 0) return toolCall("bash", { command: `echo ${pick(words)}` }, pick(words));
      const p = pick(paths).replace(/^\/+/, "");
      toolCall("bash", { command: `ls -la examples/${p}` }, lsLong(ENTRIES.slice(0, 8)));
    },
    () => {
      if (paths.length === 0) return toolCall("read", { path: `docs/${pick(words)}.txt` }, PARAGRAPH);
      const p = pick(paths);
      toolCall("bash", { command: `cp ${p}.orig ${p}2 && ls ${dirname(p)}` }, listingOf([...ENTRIES.slice(0, 12), `${basename(p)}2`, `${basename(p)}.orig`]));
    },
  ];
  // About the exact target.
  const exact = (): void => {
    if (paths.length > 0) {
      const p = pick(paths);
      const parent = dirname(p);
      const variant = Math.floor(next() * 3);
      if (variant === 0) toolCall("ls", { path: parent }, listingOf([...ENTRIES, basename(p)]));
      else if (variant === 1) toolCall("bash", { command: `ls -la ${parent}` }, lsLong([...ENTRIES, basename(p)]));
      else toolCall("bash", { command: `ls -la ${p}` }, lsLong(ENTRIES.slice(0, 12)));
    } else if (!FILE_TOOLS.has(c.tool)) {
      const args = typeof input === "object" && input !== null ? { ...(input as Record<string, unknown>) } : {};
      toolCall(c.tool, args, "done");
    } else {
      loose[Math.floor(next() * loose.length)]!();
    }
  };
  const chatter = ["now add input validation to add()", "run the tests again", "looks good", "also update the README", "why did that fail?"];
  for (let i = 0; out.length < n; i++) {
    if (i % 10 === 9) out.push({ kind: "user", text: i % 50 === 49 ? `and keep ${pick(words)} in mind` : pick(chatter) });
    else if (i % 25 === 3 && mode === "exact") exact();
    else if (i % 3 === 1) loose[Math.floor(next() * loose.length)]!();
    else ordinary[Math.floor(next() * ordinary.length)]!();
  }
  return out.slice(0, n);
}

// ---------------------------------------------------------------------------------------------
// The previous rules, from git, on the same transcripts.

async function previousRules(): Promise<{ build: Build; dispose: () => void } | undefined> {
  const repo = fileURLToPath(new URL("../", import.meta.url));
  let text: string;
  try {
    text = execFileSync("git", ["-C", repo, "show", `${PREVIOUS_RULES}:src/review/input.ts`], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), "pi-auto-mode-previous-input-"));
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  // Its imports, pointed at this repository's modules.
  text = text.replace(
    /from "\.\.?\/([^"]+)"/g,
    (_m, rel: string) => `from ${JSON.stringify(pathToFileURL(join(repo, "src", rel.startsWith("request/") ? "" : "review", rel)).href)}`,
  );
  const file = join(dir, "input.previous.ts");
  writeFileSync(file, text);
  try {
    const build = ((await import(pathToFileURL(file).href)) as { buildReviewInput: Build }).buildReviewInput;
    return { build, dispose };
  } catch {
    dispose();
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------

interface Row {
  readonly median: number;
  readonly p95: number;
  readonly max: number;
  readonly maxId: string;
  /** Median evidence items kept, and the most. */
  readonly items: number;
  readonly itemsMax: number;
  readonly earlier: number;
  /** Median build time, ms. */
  readonly ms: number;
  readonly refused: number;
}

function measure(actions: readonly { id: string; action: ActionForReview; transcript: TranscriptItem[] }[], build: Build): Row {
  const sizes: { id: string; tokens: number; items: number; earlier: number }[] = [];
  const times: number[] = [];
  let refused = 0;
  for (const { id, action, transcript } of actions) {
    const t0 = process.hrtime.bigint();
    const input = build(action, transcript, DEFAULT_BUDGET);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (!input.ok) {
      refused++;
      continue;
    }
    sizes.push({ id, tokens: input.tokens, items: input.evidence.kept, earlier: input.earlierUserMessages.kept });
  }
  const tokens = sizes.map((s) => s.tokens).sort((a, b) => a - b);
  const items = sizes.map((s) => s.items).sort((a, b) => a - b);
  const biggest = sizes.reduce((m, s) => (s.tokens > m.tokens ? s : m), { id: "", tokens: 0, items: 0, earlier: 0 });
  return {
    median: percentile(tokens, 50),
    p95: percentile(tokens, 95),
    max: biggest.tokens,
    maxId: biggest.id,
    items: percentile(items, 50),
    itemsMax: items.at(-1) ?? 0,
    earlier: percentile(
      sizes.map((s) => s.earlier).sort((a, b) => a - b),
      50,
    ),
    ms: percentile(
      times.sort((a, b) => a - b),
      50,
    ),
    refused,
  };
}

const corpusPath = process.argv[2] ?? fileURLToPath(new URL("../../shared/eval/cases.jsonl", import.meta.url));
const cases = parseCorpus(readFileSync(corpusPath, "utf8"), corpusPath);
const w = buildEvalWorkspace();
const previous = await previousRules();
let missed = false;
try {
  const gate = evalGate(w);
  const vars = { ws: w.ws, home: w.home, tmp: w.tmp };
  console.log(
    `corpus ${corpusPath}: ${cases.length} cases; budget ${DEFAULT_BUDGET}; system prompt ${estimateTokens(REVIEWER_SYSTEM_PROMPT)} + framing ${FRAMING_RESERVE} tokens in every figure`,
  );
  console.log(previous ? `previous rules: src/review/input.ts at ${PREVIOUS_RULES.slice(0, 10)}` : "previous rules: not available (no git history here)");
  const fmt = (r: Row) =>
    `median ${String(r.median).padStart(5)}  p95 ${String(r.p95).padStart(5)}  max ${String(r.max).padStart(5)}  evidence items median ${r.items} max ${r.itemsMax}  earlier user msgs median ${r.earlier}  build ${r.ms.toFixed(2)} ms${r.refused ? `  refused ${r.refused}` : ""}`;
  for (const backend of ["sandboxed", "review-only"] as const satisfies readonly Backend[]) {
    const routed: { c: EvalCase; action: ActionForReview; input: unknown }[] = [];
    for (const c of cases) {
      if (c.backend !== undefined && c.backend !== backend) continue;
      const input = substitute(c.input, vars);
      const { request, decision } = decide(c.tool, input, gate, backend);
      if (decision.route !== "review" || !request) continue;
      routed.push({ c, input, action: actionForReview({ toolCallId: `call-${c.id}`, parentToolCallId: undefined, request, decision, transcript: [] }) });
    }
    console.log(
      `\n${backend}: ${routed.length} review-routed cases  [targets: median <= ${MEDIAN_TARGET} at every length of the first session, p95 <= ${P95_TARGET} everywhere]`,
    );
    const none = routed.map(({ c, action }) => ({ id: c.id, action, transcript: transcriptFromUserMessages(c.user) }));
    const baseline = measure(none, buildReviewInput);
    console.log(`  ${"no history (baseline)".padEnd(34)} ${fmt(baseline)}`);
    if (previous) console.log(`  ${"no history, previous rules".padEnd(34)} ${fmt(measure(none, previous.build))}`);
    for (const mode of ["mentions", "exact"] as const) {
      console.log(
        `  ${mode === "mentions" ? "session that mentions the action's words and names in passing" : "the same session, also visiting the exact target (every 50th item)"}:`,
      );
      for (const n of SIZES) {
        const withHistory = routed.map(({ c, action, input }) => ({
          id: c.id,
          action,
          transcript: [...session(c, input, n, mode), ...transcriptFromUserMessages(c.user)],
        }));
        const now = measure(withHistory, buildReviewInput);
        // Where the exact target was visited, what bears on it is sent: only the p95 bound applies there.
        const ok = (mode === "exact" || now.median <= MEDIAN_TARGET) && now.p95 <= P95_TARGET;
        missed ||= !ok;
        const label = `${n.toLocaleString("en")} earlier items`;
        console.log(`    ${label.padEnd(32)} ${fmt(now)}  x${(now.median / baseline.median).toFixed(2)} of baseline  ${ok ? "ok" : "MISSED"}`);
        if (previous) {
          const before = measure(withHistory, previous.build);
          console.log(
            `    ${`${label}, previous rules`.padEnd(32)} ${fmt(before)}  x${(before.median / baseline.median).toFixed(2)} of baseline; now x${(now.median / before.median).toFixed(2)} of it`,
          );
        }
      }
    }
  }
} finally {
  w.dispose();
  previous?.dispose();
}
process.exitCode = missed ? 1 : 0;
