// What redaction costs per text, in microseconds: 10,000 generated realistic shell commands (most
// hold no secret: the prefilter's case) and the canary texts of every secret format (each holds
// one), after untimed warm-up rounds; single-shot samples, so stray pauses land in p99 and max.
// Redaction runs on every call's audit entry, status and widget text and on the reviewer's input.
// Pass a module path as the first argument to time another redactor on the same inputs.
// Prints figures and asserts nothing.

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { generator } from "../src/eval/generate.ts";
import { CANARIES } from "../test/helpers/secret-canaries.ts";

const mod = process.argv[2] ? pathToFileURL(resolve(process.argv[2])).href : "../src/request/redact.ts";
const { redact } = (await import(mod)) as { redact: (s: string) => string };

const next = generator(7);
const commands = Array.from({ length: 10000 }, () => next());
const canaries = CANARIES.map((c) => c.text);

function time(items: readonly string[], rounds: number): { p50: number; p99: number; max: number; n: number } {
  for (let r = 0; r < 3; r++) for (const s of items) redact(s);
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++)
    for (const s of items) {
      const t0 = process.hrtime.bigint();
      redact(s);
      samples.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  samples.sort((a, b) => a - b);
  const at = (p: number) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
  return { n: samples.length, p50: at(50), p99: at(99), max: samples.at(-1)! };
}

const fmt = (s: ReturnType<typeof time>) => `n ${s.n}  p50 ${s.p50.toFixed(1)}  p99 ${s.p99.toFixed(1)}  max ${s.max.toFixed(1)}`;
console.log(`redactor ${mod}`);
console.log(`generated commands (mean ${Math.round(commands.reduce((a, c) => a + c.length, 0) / commands.length)} chars): ${fmt(time(commands, 3))}`);
console.log(
  `canary texts (one secret each, mean ${Math.round(canaries.reduce((a, c) => a + c.length, 0) / canaries.length)} chars): ${fmt(time(canaries, 200))}`,
);
