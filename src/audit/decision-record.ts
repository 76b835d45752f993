// The redacted record of one gate decision, kept as a custom session entry (never sent to the model).

import { redact } from "../request/redact.ts";
import type { ReasonCode, Route } from "../policy/types.ts";
import type { CallRecord, Outcome } from "../grants/admit-call.ts";
import type { EffectiveMode } from "../state/effective.ts";

export const DECISION_ENTRY_TYPE = "pi-auto-mode/decision";

export type { Outcome } from "../grants/admit-call.ts";

export interface DecisionRecord {
  readonly toolCallId: string;
  readonly parentToolCallId: string | undefined;
  readonly tool: string;
  readonly mode: EffectiveMode;
  readonly route: Route;
  readonly reason: ReasonCode;
  readonly outcome: Outcome;
  readonly hash: string | undefined;
  /** Redacted (P11). */
  readonly message: string;
  readonly at: number;
}

export function decisionRecord(fields: CallRecord, now: number): DecisionRecord {
  return { ...fields, message: redact(fields.message), at: now };
}
