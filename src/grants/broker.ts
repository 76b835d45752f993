// The boundary broker (P14): other extensions that own a boundary of their own (a sandbox
// adapter, a network proxy, an MCP gateway) ask auto mode about an action at that boundary and
// get the same answer a tool call would: the same deterministic layers, the same reviewer. The
// user's overrides are not the broker's: an approval is for the agent's exact retry, so the
// broker's gate has none, and its reviews count on a breaker of their own. A decision can carry a grant token the asker later redeems, once, for exactly
// the request it was given for. Pi-free: the extension publishes it on globalThis.

import { createHash, randomBytes } from "node:crypto";
import { canonicalJson } from "../request/canonical-json.ts";
import { redact } from "../request/redact.ts";
import type { CallEnv, CallRecord, GateCall, GateOutcome, JudgedCall } from "./admit-call.ts";

export const BROKER_SYMBOL: unique symbol = Symbol.for("pi-auto-mode:boundary-broker") as never;

/** One action at another extension's boundary. */
export interface BoundaryRequest {
  readonly surface: "shell" | "file" | "network" | "tool";
  /** shell: "exec"; file: "read" | "write"; network: "connect"; tool: the tool's name. */
  readonly operation: string;
  readonly cwd: string;
  readonly command?: string;
  readonly path?: string;
  /** A host, host:port or URL. */
  readonly destination?: string;
  readonly toolInput?: unknown;
}

export interface BrokerOptions {
  readonly sessionId: string;
  /** The asker's own name for where the action happens (recorded, not judged). */
  readonly scopeKey?: string;
  /** Return a one-shot grant token with an allow. */
  readonly issueGrant?: boolean;
}

/** Who allowed it: the rules alone, or a reviewer (a user's approval is the agent's tool call's, never the broker's). */
export type Provenance = "deterministic" | "reviewer";

export type BrokerDecision =
  | {
      readonly kind: "allow";
      /** contained: the asker must run it inside its own containment (the gate's sandbox route). */
      readonly run: "direct" | "contained";
      readonly provenance: Provenance;
      readonly reason: string;
      readonly grant?: string;
    }
  | { readonly kind: "deny"; readonly reason: string; readonly message: string };

export interface BoundaryBroker {
  readonly version: 1;
  review(request: BoundaryRequest, options: BrokerOptions): Promise<BrokerDecision>;
  /** True once, for exactly the request the token was issued for, in that session, before it expires. */
  consumeGrant(request: BoundaryRequest, sessionId: string, token: string): boolean;
}

export const BROKER_GRANT_TTL_MS = 60_000;

export interface BrokerDeps {
  /** The call gate (grants/admit-call.ts) with the extension's state, its sandbox route returned to the asker. */
  readonly admit: (call: GateCall, env: CallEnv) => Promise<GateOutcome>;
  /** The current session's id, or undefined before a session started: the broker answers only for it. */
  readonly currentSession: () => string | undefined;
  /** The reviewer for the current session, if one can be asked now. */
  readonly review?: CallEnv["review"];
  readonly record?: (r: CallRecord & { readonly broker: { readonly surface: string; readonly scopeKey?: string } }, judged?: JudgedCall) => void;
  readonly now?: () => number;
}

/** The gate's tool call for a boundary request, or why there is none. */
export function asToolCall(r: BoundaryRequest): { readonly tool: string; readonly input: unknown } | { readonly problem: string } {
  switch (r.surface) {
    case "shell":
      return typeof r.command === "string" && r.command !== ""
        ? { tool: "bash", input: { command: r.command } }
        : { problem: "a shell request needs a command" };
    case "file":
      if (typeof r.path !== "string" || r.path === "") return { problem: "a file request needs a path" };
      if (r.operation === "read") return { tool: "read", input: { path: r.path } };
      if (r.operation === "write") return { tool: "write", input: { path: r.path, content: "" } };
      return { problem: `a file request's operation is read or write, not ${JSON.stringify(r.operation)}` };
    case "network":
      // No deterministic layer knows this boundary's destinations: a tool no rule knows is reviewed.
      return typeof r.destination === "string" && r.destination !== ""
        ? { tool: "network_connect", input: { destination: r.destination, operation: r.operation } }
        : { problem: "a network request needs a destination" };
    case "tool":
      return r.operation !== "" ? { tool: r.operation, input: r.toolInput ?? {} } : { problem: "a tool request needs the tool's name as its operation" };
    default:
      return { problem: `unknown surface ${JSON.stringify((r as { surface: unknown }).surface)}` };
  }
}

/** Every field of the request, exactly: a grant for one request is no grant for any other. */
export function requestDigest(r: BoundaryRequest, sessionId: string): string | undefined {
  const json = canonicalJson({ request: r, sessionId });
  return json.ok ? createHash("sha256").update(json.text).digest("hex") : undefined;
}

export function createBroker(deps: BrokerDeps): BoundaryBroker {
  const now = deps.now ?? Date.now;
  const grants = new Map<string, { readonly digest: string; readonly expiresAt: number }>();
  let n = 0;
  return {
    version: 1,
    async review(request, options) {
      const deny = (reason: string, message: string): BrokerDecision => ({ kind: "deny", reason, message });
      if (typeof options?.sessionId !== "string" || options.sessionId !== deps.currentSession())
        return deny("unsupported-input", "the broker answers only for the session running now");
      const digest = requestDigest(request, options.sessionId);
      const mapped = request && typeof request === "object" ? asToolCall(request) : { problem: "the request is not an object" };
      if ("problem" in mapped || digest === undefined || typeof request.cwd !== "string" || request.cwd === "")
        return deny("malformed-input", "problem" in mapped ? mapped.problem : "the request needs a cwd and must be plain JSON");
      let record: CallRecord | undefined;
      const call: GateCall = {
        toolCallId: `broker-${++n}`,
        parentToolCallId: undefined,
        toolName: mapped.tool,
        input: structuredClone(mapped.input),
        cwd: request.cwd,
      };
      let outcome: GateOutcome;
      try {
        outcome = await deps.admit(call, {
          sessionId: options.sessionId,
          ...(deps.review ? { review: deps.review } : {}),
          record: (r, judged) => {
            record = r;
            deps.record?.({ ...r, broker: { surface: request.surface, ...(options.scopeKey !== undefined ? { scopeKey: options.scopeKey } : {}) } }, judged);
          },
        });
      } catch (e) {
        // Whatever failed decided nothing: the action is not allowed (P5).
        return deny("gate-error", `auto mode could not judge the request: ${redact((e as Error)?.message ?? String(e))}`);
      }
      const reason = record?.reason ?? "gate-error";
      if (outcome.kind === "deny") return deny(reason, outcome.text);
      // Admitted on a user's grant: the broker's gate was given the tool calls' overrides, which it must never spend.
      if (record?.approvedBy !== undefined) return deny("gate-error", "auto mode's broker was wired to the user's approvals of tool calls");
      const provenance = provenanceOf(record);
      const decision: BrokerDecision = { kind: "allow", run: outcome.kind === "run-sandboxed" ? "contained" : "direct", provenance, reason };
      if (!options.issueGrant) return decision;
      const token = randomBytes(16).toString("hex");
      grants.set(token, { digest, expiresAt: now() + BROKER_GRANT_TTL_MS });
      return { ...decision, grant: token };
    },
    consumeGrant(request, sessionId, token) {
      const g = typeof token === "string" ? grants.get(token) : undefined;
      if (!g) return false;
      // Redeemed or not, a token is tried once: a wrong request spends it.
      grants.delete(token);
      return now() <= g.expiresAt && requestDigest(request, sessionId) === g.digest;
    },
  };
}

function provenanceOf(r: CallRecord | undefined): Provenance {
  return r?.route === "review" ? "reviewer" : "deterministic";
}

/**
 * The sandbox proxy's question about one unlisted destination, asked as any boundary would ask
 * it: allowed only when the broker allows it and its grant is redeemed for exactly this
 * connection, at once. Every later connection, to the same destination too, is asked again.
 */
export function connectionReviewer(
  broker: BoundaryBroker,
  sessionId: string,
  cwd: string,
): (dest: { readonly host: string; readonly port: number }) => Promise<boolean> {
  return async (dest) => {
    const host = dest.host.includes(":") ? `[${dest.host}]` : dest.host;
    const request: BoundaryRequest = { surface: "network", operation: "connect", cwd, destination: `${host}:${dest.port}` };
    try {
      const d = await broker.review(request, { sessionId, issueGrant: true, scopeKey: "pi-auto-mode sandbox proxy" });
      return d.kind === "allow" && d.grant !== undefined && broker.consumeGrant(request, sessionId, d.grant);
    } catch {
      return false;
    }
  };
}
