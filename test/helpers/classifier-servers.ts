// Loopback HTTP servers that speak two of pi-ai's classifier APIs, so pi-ai's own classifier
// client (postClassifierRequest and the API modules' parsers) runs against them unchanged:
//
// - "typesafe-system-one": POST {baseUrl}/systemone, body { model, state, questions: { id: { type:
//   "noul" | "score" | "choice", instructions, criteria } } }, answered with { answers: { id: { type:
//   "noul", noul: p } | { type: "score", score, confidence } | { type: "choice", choice, probabilities:
//   { value: p }, confidence } }, usage: { input_tokens, output_tokens } }.
// - "openai-decisions": POST {baseUrl}/decisions, body { model, input: JSON text of the state,
//   questions: [{ type: "predicate" | "score" | "choice", name, instructions, ... }] }, answered with
//   { answers: [{ name, type: "predicate", probability } | { name, type: "score", score, confidence } |
//   { name, type: "choice", choice, probabilities: [{ value, probability }], confidence } |
//   { name, type: "refusal" }], usage }.
//
// Each request takes the next scripted step (or the fallback); every request's path, headers and
// raw body are kept, so a test can assert what reached the server and what never did. Only async
// I/O: a synchronous child process in the same test process would starve these servers.

import { createServer, type IncomingMessage, type Server } from "node:http";
import { listenOnLoopback } from "./loopback-http.ts";

export type ClassifierWireApi = "typesafe-system-one" | "openai-decisions";

/** One answer as the test means it: a probability (bool), or a score or choice answer. */
export type ScriptedAnswer =
  | number
  | { readonly score: number; readonly confidence?: number }
  | { readonly choice: string; readonly probabilities?: Readonly<Record<string, number>>; readonly confidence?: number };

export type ClassifierStep =
  | {
      /** Answers every question the request asked. */
      readonly kind: "answer";
      /** Per question id; a question not named here gets `otherwise`. */
      readonly answers?: Readonly<Record<string, ScriptedAnswer>>;
      /** For a bool question not in `answers`; without it such a question is left unanswered. */
      readonly otherwise?: number;
      /** Question ids left out of the answer although asked. */
      readonly omit?: readonly string[];
      /** Question ids refused (openai-decisions' `refusal` answer; the System One wire has none and leaves them out). */
      readonly refuse?: readonly string[];
      /** Per question id: the raw wire answer to send instead (e.g. a wrong type, a string probability). */
      readonly raw?: Readonly<Record<string, unknown>>;
      readonly usage?: { readonly input: number; readonly output: number };
      /** Waits this long before answering. */
      readonly delayMs?: number;
    }
  | { readonly kind: "status"; readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: string }
  /** A 200 with this exact body (invalid JSON, JSON of the wrong shape). */
  | { readonly kind: "body"; readonly body: string; readonly contentType?: string }
  /** The connection is destroyed after the request was read: no status line at all. */
  | { readonly kind: "reset" }
  /** The request is read and never answered. */
  | { readonly kind: "hang" }
  /** The step chosen from the request itself (for requests whose order is not fixed, e.g. an eval's pool). */
  | { readonly kind: "by"; readonly step: (req: ClassifierRequest) => ClassifierStep };

export interface ClassifierRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly raw: string;
  readonly body: Record<string, unknown> | undefined;
  /** The questions asked, by id, in the wire's own type names (noul/predicate/score/choice). */
  readonly questions: Readonly<Record<string, { readonly type: string; readonly [k: string]: unknown }>>;
  /** The state sent: System One's `state`, Decisions' `input` parsed back from its JSON text. */
  readonly state: unknown;
}

export interface ClassifierServer {
  readonly api: ClassifierWireApi;
  /** What to put in models.json: `${baseUrl}/systemone` or `${baseUrl}/decisions` is posted to. */
  readonly baseUrl: string;
  readonly received: ClassifierRequest[];
  /** The next requests' steps, in order; `fallback` answers every request after them. */
  script(steps: readonly ClassifierStep[], fallback?: ClassifierStep): void;
  /** Requests that were read but not answered yet (hanging or delayed). */
  pending(): number;
  /** Everything every request carried, headers and body, as one text: for scanning for secrets. */
  everything(): string;
  close(): Promise<void>;
}

const NO_SCRIPT: ClassifierStep = { kind: "status", status: 500, body: '{"error":{"message":"no scripted response"}}' };

function questionsOf(api: ClassifierWireApi, body: Record<string, unknown> | undefined): ClassifierRequest["questions"] {
  if (!body) return {};
  const q = body.questions;
  if (api === "typesafe-system-one") {
    return q && typeof q === "object" && !Array.isArray(q) ? (q as ClassifierRequest["questions"]) : {};
  }
  if (!Array.isArray(q)) return {};
  const out: Record<string, { type: string }> = {};
  for (const x of q) if (x && typeof x === "object" && typeof x.name === "string") out[x.name] = x;
  return out;
}

function stateOf(api: ClassifierWireApi, body: Record<string, unknown> | undefined): unknown {
  if (!body) return undefined;
  if (api === "typesafe-system-one") return body.state;
  if (typeof body.input !== "string") return body.input;
  try {
    return JSON.parse(body.input);
  } catch {
    return body.input;
  }
}

function firstChoice(q: { readonly [k: string]: unknown }): string {
  const c = q.criteria ?? q.choices;
  if (Array.isArray(c)) return String((c[0] as { value?: unknown })?.value ?? c[0] ?? "a");
  if (c && typeof c === "object") return Object.keys(c)[0] ?? "a";
  return "a";
}

/** One wire answer for a question of wire type `type`, in the API's shape. */
function wireAnswer(
  api: ClassifierWireApi,
  id: string,
  q: { readonly type: string; readonly [k: string]: unknown },
  a: ScriptedAnswer,
): Record<string, unknown> {
  const named = api === "openai-decisions" ? { name: id } : {};
  if (typeof a === "number") {
    return api === "openai-decisions" ? { ...named, type: "predicate", probability: a } : { type: "noul", noul: a };
  }
  if ("score" in a) return { ...named, type: "score", score: a.score, confidence: a.confidence ?? 0.9 };
  const choice = a.choice || firstChoice(q);
  const probs = a.probabilities ?? { [choice]: 1 };
  return {
    ...named,
    type: "choice",
    choice,
    probabilities: api === "openai-decisions" ? Object.entries(probs).map(([value, probability]) => ({ value, probability })) : probs,
    confidence: a.confidence ?? 0.9,
  };
}

function answerBody(api: ClassifierWireApi, req: ClassifierRequest, step: Extract<ClassifierStep, { kind: "answer" }>): string {
  const entries: Array<[string, Record<string, unknown> | unknown]> = [];
  for (const [id, q] of Object.entries(req.questions)) {
    if (step.omit?.includes(id)) continue;
    if (step.raw && id in step.raw) {
      entries.push([id, step.raw[id]]);
      continue;
    }
    if (step.refuse?.includes(id)) {
      if (api === "openai-decisions") entries.push([id, { name: id, type: "refusal" }]);
      continue;
    }
    const a = step.answers?.[id] ?? step.otherwise;
    if (a === undefined) continue;
    entries.push([id, wireAnswer(api, id, q, a)]);
  }
  const usage = step.usage ? { input_tokens: step.usage.input, output_tokens: step.usage.output } : { input_tokens: 120, output_tokens: 0 };
  const answers = api === "openai-decisions" ? entries.map(([, a]) => a) : Object.fromEntries(entries);
  return JSON.stringify(api === "openai-decisions" ? { id: "dec_loopback", object: "decision", answers, usage } : { answers, usage });
}

export async function startClassifierServer(api: ClassifierWireApi): Promise<ClassifierServer> {
  const received: ClassifierRequest[] = [];
  let queue: ClassifierStep[] = [];
  let fallback: ClassifierStep | undefined;
  let waiting = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: Record<string, unknown> | undefined;
      try {
        const parsed: unknown = JSON.parse(raw);
        body = parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
      } catch {
        body = undefined;
      }
      const r: ClassifierRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        raw,
        body,
        questions: questionsOf(api, body),
        state: stateOf(api, body),
      };
      received.push(r);
      let step = queue.shift() ?? fallback ?? NO_SCRIPT;
      while (step.kind === "by") step = step.step(r);
      switch (step.kind) {
        case "answer": {
          const send = () => {
            waiting--;
            if (res.destroyed) return;
            res.writeHead(200, { "content-type": "application/json" });
            res.end(answerBody(api, r, step));
          };
          waiting++;
          if (step.delayMs) setTimeout(send, step.delayMs);
          else send();
          return;
        }
        case "status":
          res.writeHead(step.status, { "content-type": "application/json", ...step.headers });
          res.end(step.body ?? JSON.stringify({ error: { message: `status ${step.status}`, type: "loopback" } }));
          return;
        case "body":
          res.writeHead(200, { "content-type": step.contentType ?? "application/json" });
          res.end(step.body);
          return;
        case "reset":
          req.socket.destroy();
          return;
        case "hang":
          waiting++;
          res.on("close", () => waiting--);
          return;
      }
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    api,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    script(steps, otherwise) {
      queue = [...steps];
      fallback = otherwise;
    },
    pending: () => waiting,
    everything: () => received.map((r) => `${r.method} ${r.path}\n${JSON.stringify(r.headers)}\n${r.raw}`).join("\n"),
    close,
  };
}
