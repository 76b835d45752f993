// The Pi edge of the boundary broker: publishes it at Symbol.for("pi-auto-mode:boundary-broker")
// when the extension loads, answering for the session Pi runs now with that session's reviewer.
// The broker's own modules load at its first use, as the gate's do at the first tool call.

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { decisionRecord, type DecisionRecord } from "../audit/decision-record.ts";
import type { AdmitDeps, JudgedCall } from "../grants/admit-call.ts";
import type { BoundaryBroker } from "../grants/broker.ts";
import type { ReviewHook } from "./review-call.ts";
import { sessionOf } from "./session-of.ts";

const SYMBOL = Symbol.for("pi-auto-mode:boundary-broker");

export interface BrokerLinkDeps {
  /** The context of the session running now; undefined before one starts and after it ends. */
  readonly session: () => ExtensionContext | undefined;
  /** The broker's own review hook: its reviews count on a breaker of their own, not the agent's. */
  readonly reviewHook: () => Promise<ReviewHook | undefined>;
  /**
   * The gate's state, without the user's overrides: those are the agent's tool calls' (P14). The
   * broker never spends an approval the user gave a tool call, and its denials are not listed as
   * ones the user could approve; its grants are its own tokens.
   */
  readonly admitDeps: Omit<AdmitDeps, "overrides" | "resetBreaker">;
  /** `judged`: what the gate judged the call's paths with, by reference, for the audit (never stored). */
  readonly record: (r: DecisionRecord, judged?: JudgedCall) => void;
}

export function publishBroker(deps: BrokerLinkDeps): BoundaryBroker {
  let real: Promise<BoundaryBroker> | undefined;
  let loaded: BoundaryBroker | undefined;
  const load = async (): Promise<BoundaryBroker> => {
    const [{ createBroker }, { createCallGate }] = await Promise.all([import("../grants/broker.ts"), import("../grants/admit-call.ts")]);
    // Dropped here too, so no wiring can hand the broker the tool calls' overrides.
    const { overrides: _o, resetBreaker: _r, ...admitDeps } = deps.admitDeps as AdmitDeps;
    const admit = createCallGate(admitDeps);
    const hook = await deps.reviewHook();
    loaded = createBroker({
      admit,
      currentSession: () => {
        const ctx = deps.session();
        return ctx ? sessionOf(ctx).sessionId : undefined;
      },
      review: async (ask) => {
        const ctx = deps.session();
        if (!hook || !ctx) throw new Error("no session to review in");
        return hook({ event: { toolCallId: `broker-${ask.request.hash.slice(0, 12)}`, parentToolCallId: undefined }, ctx, ...ask });
      },
      record: (r, judged) => deps.record(decisionRecord(r, Date.now()), judged),
    });
    return loaded;
  };
  const facade: BoundaryBroker = {
    version: 1,
    review: async (request, options) => (await (real ??= load())).review(request, options),
    // No grant exists before the broker's first review.
    consumeGrant: (request, sessionId, token) => loaded?.consumeGrant(request, sessionId, token) ?? false,
  };
  // The newest load answers (a /reload or a new session loads the extension again; the old
  // instance's state is gone). Another extension could replace it, as it could patch anything in
  // this process: extensions share one trust level, the broker is not a boundary between them.
  Object.defineProperty(globalThis, SYMBOL, { value: facade, writable: true, configurable: true, enumerable: false });
  return facade;
}
