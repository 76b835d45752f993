// The boundary broker, for other extensions (`import { getBoundaryBroker } from "pi-auto-mode/broker"`):
// ask auto mode about an action at your own boundary and get the answer a tool call would get
// (deterministic layers, reviewer, the user's overrides), with a one-shot grant token if asked.
// It is published process-wide at Symbol.for("pi-auto-mode:boundary-broker") while auto mode is
// loaded; without auto mode there is no broker, and an asker should fail closed.

import { type BoundaryBroker, BROKER_SYMBOL } from "./grants/broker.ts";

export type { BoundaryBroker, BoundaryRequest, BrokerDecision, BrokerOptions, Provenance } from "./grants/broker.ts";
export { BROKER_SYMBOL } from "./grants/broker.ts";

/** The broker of the auto mode loaded in this process, if one is. */
export function getBoundaryBroker(): BoundaryBroker | undefined {
  const b = (globalThis as { [BROKER_SYMBOL]?: unknown })[BROKER_SYMBOL] as Partial<BoundaryBroker> | undefined;
  return b && b.version === 1 && typeof b.review === "function" && typeof b.consumeGrant === "function" ? (b as BoundaryBroker) : undefined;
}
