// A decision as the gate records it (grants/admit-call.ts CallRecord): call t1 of bash, allowed as
// read-only, unless `over` says otherwise. For the tests of what is made from such a record: the
// decision entry, the check widget, the audit.

import type { CallRecord } from "../../src/grants/admit-call.ts";

export const callRecord = (over: Partial<CallRecord> = {}): CallRecord => ({
  toolCallId: "t1",
  parentToolCallId: undefined,
  tool: "bash",
  mode: "auto",
  route: "allow",
  reason: "read-only",
  outcome: "allowed",
  hash: undefined,
  message: "",
  ...over,
});
