// One canonical request per tool call: the tool, its input, the cwd, the paths the tool will
// touch, and a stable hash. A verdict or grant is bound to this hash, never to loose fields.

import { builtinTool, TOOLS } from "./tools.ts";
import { createHash } from "node:crypto";
import { canonicalJson, DEFAULT_JSON_LIMITS, type JsonLimits } from "./canonical-json.ts";
import { resolveLikePi, resolveReadLikePi, resolveReal } from "./paths.ts";

export type RequestHash = string & { readonly __brand: "RequestHash" };

export interface ResolvedPath {
  /** The argument as the model wrote it. */
  readonly raw: string;
  /** Pi's resolution: absolute, before symlinks. */
  readonly lexical: string;
  /** After every symlink on the way. */
  readonly real: string;
  readonly exists: boolean;
}

export interface CanonicalRequest {
  readonly tool: string;
  readonly input: unknown;
  readonly cwd: string;
  /** The file path a file tool will open; empty for other tools. */
  readonly paths: readonly ResolvedPath[];
  /** Sorted-key JSON of { tool, input, cwd, paths }. */
  readonly canonical: string;
  readonly hash: RequestHash;
}

export type RequestResult = { readonly ok: true; readonly request: CanonicalRequest } | { readonly ok: false; readonly reason: string };

/** Tools whose `path` argument names a file or directory, and whether a missing one defaults to ".". */

function resolvePathArg(tool: string, input: unknown, cwd: string, home: string): ResolvedPath[] {
  const builtin = builtinTool(tool);
  const entry = builtin && TOOLS[builtin];
  if (!entry || entry.path === "none" || typeof input !== "object" || input === null) return [];
  const spec = { optional: entry.path === "optional", read: entry.resolve === "read" };
  const raw = (input as { path?: unknown }).path;
  if (raw === undefined && spec.optional) {
    const lexical = resolveLikePi(".", cwd, home);
    return [{ raw: ".", lexical, ...resolveReal(lexical) }];
  }
  if (typeof raw !== "string") return [];
  // Pi reads "" as the working directory itself, which no read, write or edit can mean: malformed.
  // The listing tools read it as "." (their default), and so does the gate.
  if (raw === "" && !spec.optional) return [];
  const lexical = spec.read ? resolveReadLikePi(raw, cwd, home) : resolveLikePi(raw, cwd, home);
  return [{ raw, lexical, ...resolveReal(lexical) }];
}

export function buildRequest(tool: string, input: unknown, cwd: string, home: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): RequestResult {
  const inputJson = canonicalJson(input, limits);
  if (!inputJson.ok) return { ok: false, reason: inputJson.reason };
  let paths: ResolvedPath[];
  try {
    paths = resolvePathArg(tool, input, cwd, home);
  } catch {
    // A path Pi could not open either (NUL byte, bad file URL, symlink loop): judged as malformed input.
    paths = [];
  }
  // Keys in sorted order; the input's canonical text is spliced in rather than serialized twice.
  const pathsJson = `[${paths.map((p) => `{"exists":${p.exists},"lexical":${JSON.stringify(p.lexical)},"raw":${JSON.stringify(p.raw)},"real":${JSON.stringify(p.real)}}`).join(",")}]`;
  const canonical = `{"cwd":${JSON.stringify(cwd)},"input":${inputJson.text},"paths":${pathsJson},"tool":${JSON.stringify(tool)}}`;
  const hash = createHash("sha256").update(canonical).digest("hex") as RequestHash;
  return { ok: true, request: { tool, input, cwd, paths, canonical, hash } };
}
