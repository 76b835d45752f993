// A loopback HTTP server that speaks OpenAI chat completions (streaming SSE), so pi-ai's real
// OpenAI client code runs against it. Each request takes the next scripted step; every request
// body is kept for assertions. Registered with Pi through a models.json custom provider.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { listenOnLoopback } from "./loopback-http.ts";

export type Step =
  | {
      readonly kind: "verdict";
      readonly text: string;
      readonly usage?: { prompt: number; completion: number };
      readonly chunkDelayMs?: number;
      readonly chunks?: number;
      /** The answer starts only when this settles: the request is pending until then. */
      readonly after?: Promise<unknown>;
    }
  | { readonly kind: "status"; readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: string }
  | { readonly kind: "reset" }
  | { readonly kind: "hang" }
  | { readonly kind: "malformed" };

export interface Received {
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly raw: string;
  readonly body: { readonly messages?: Array<{ role: string; content: unknown }>; readonly [k: string]: unknown };
}

export interface Loopback {
  readonly baseUrl: string;
  readonly received: Received[];
  /** The next requests' answers, in order; `otherwise` answers every request after them. */
  script(steps: readonly Step[], otherwise?: Step): void;
  close(): Promise<void>;
}

function chunk(id: string, delta: Record<string, unknown>, finish: string | null): string {
  return `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "judge", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

async function streamVerdict(res: ServerResponse, step: Extract<Step, { kind: "verdict" }>): Promise<void> {
  if (step.after) await step.after;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const id = "chatcmpl-loopback";
  const n = Math.max(1, step.chunks ?? 1);
  const size = Math.ceil(step.text.length / n);
  res.write(chunk(id, { role: "assistant", content: "" }, null));
  for (let i = 0; i < step.text.length; i += size) {
    if (step.chunkDelayMs) await new Promise((r) => setTimeout(r, step.chunkDelayMs));
    if (res.destroyed) return;
    res.write(chunk(id, { content: step.text.slice(i, i + size) }, null));
  }
  res.write(chunk(id, {}, "stop"));
  const u = step.usage ?? { prompt: 500, completion: 30 };
  res.write(
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "judge", choices: [], usage: { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion } })}\n\n`,
  );
  res.end("data: [DONE]\n\n");
}

export async function startLoopback(): Promise<Loopback> {
  const received: Received[] = [];
  let queue: Step[] = [];
  let fallback: Step | undefined;
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => (raw += d));
    req.on("end", () => {
      let body: Received["body"] = {};
      try {
        body = JSON.parse(raw) as Received["body"];
      } catch {
        // kept raw
      }
      received.push({ path: req.url ?? "", headers: req.headers, raw, body });
      const step = queue.shift() ?? fallback ?? { kind: "status", status: 500, body: '{"error":{"message":"no scripted response"}}' };
      switch (step.kind) {
        case "verdict":
          void streamVerdict(res, step);
          return;
        case "status":
          res.writeHead(step.status, { "content-type": "application/json", ...step.headers });
          res.end(step.body ?? JSON.stringify({ error: { message: `status ${step.status}`, type: "test" } }));
          return;
        case "reset":
          req.socket.destroy();
          return;
        case "hang":
          // Headers and a first chunk, then nothing, ever: only the caller's deadline ends it.
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(chunk("hang", { role: "assistant", content: "" }, null));
          return;
        case "malformed":
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end('data: {"id": "x", "choices": [ {"delta": \n\ndata: not json at all\n\n');
          return;
      }
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    script(steps, otherwise) {
      queue = [...steps];
      fallback = otherwise;
    },
    close,
  };
}

/** A models.json with one custom provider "loop" pointing at the server (priced, so cost shows). */
export function loopbackModels(baseUrl: string, apiKey = "loopback-key"): unknown {
  return {
    providers: {
      loop: {
        baseUrl,
        api: "openai-completions",
        apiKey,
        models: [
          { id: "judge", cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } },
          { id: "thinker", reasoning: true, cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } },
        ],
      },
    },
  };
}
