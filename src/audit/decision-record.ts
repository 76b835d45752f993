// The redacted record of one gate decision, kept as a custom session entry (never sent to the model).

import type { CallRecord } from "../grants/admit-call.ts";
import { redact } from "../request/redact.ts";

export const DECISION_ENTRY_TYPE = "pi-auto-mode/decision";

export type { Outcome } from "../grants/admit-call.ts";

/** What the gate decided (grants/admit-call.ts CallRecord), its message redacted (P11), and when. */
export interface DecisionRecord extends CallRecord {
  readonly at: number;
}

export function decisionRecord(fields: CallRecord, now: number): DecisionRecord {
  return { ...fields, message: redact(fields.message), at: now };
}
