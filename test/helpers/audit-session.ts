// What the audit tests share: a prompt of tool calls through a real session (which flushes the
// audit at its end), the store's rows and bytes read back, and a decision as the gate hands it
// to the recorder.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { AuditStore, auditDir, type DailyRow } from "../../src/audit/store.ts";
import type { CallRecord } from "../../src/grants/admit-call.ts";
import { callRecord } from "./call-record.ts";
import { type PiHarness, toolResults } from "./pi-session.ts";

export const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });

/** Runs one prompt of tool calls, then shuts the session down (which flushes the audit). */
export async function run(h: PiHarness, calls: Array<[string, Parameters<typeof fauxToolCall>[1]]>) {
  h.faux.setResponses([...calls.map(([n, a]) => call(n, a)), fauxAssistantMessage([fauxText("done")])]);
  await h.session.prompt("go");
  const results = toolResults(h.session);
  await h.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
  return results;
}

/** The store's rows, read through a connection of the test's own. */
export function rowsOf(agentDir: string): DailyRow[] {
  const warnings: string[] = [];
  const store = AuditStore.open({ dir: auditDir(agentDir), onWarning: (m) => warnings.push(m) });
  const rows = store.rows();
  store.close();
  assert.deepEqual(warnings, []);
  return rows;
}

/** Every byte of the audit folder's files, to scan for what must not be stored. */
export function auditBytes(agentDir: string): Buffer {
  return Buffer.concat(readdirSync(auditDir(agentDir)).map((f) => readFileSync(join(auditDir(agentDir), f))));
}

/** A decision as the gate hands it to the recorder: call `id` of `tool`, allowed as read-only unless `over` says otherwise. */
export const record = (id: string, tool: string, over: Partial<CallRecord> = {}): CallRecord => callRecord({ toolCallId: id, tool, ...over });
