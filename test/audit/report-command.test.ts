// /perm-audit in a real AgentSession (faux provider): the report lands as a custom entry in the
// session, and the model's next request carries none of it (the faux provider sees the context).

import assert from "node:assert/strict";
import { test } from "node:test";
import { fauxAssistantMessage, fauxText } from "@earendil-works/pi-ai";
import { auditDir } from "../../src/audit/query.ts";
import { AUDIT_ENTRY_TYPE, type AuditEntry } from "../../src/commands/audit.ts";
import { reviewed, seed } from "../helpers/audit-seed.ts";
import { startPi } from "../helpers/pi-session.ts";
import { recordingUi } from "../helpers/ui.ts";

test("/perm-audit: a custom entry with the report and its suggestion, never in the model's context", async (t) => {
  const ui = recordingUi();
  const seen: string[] = [];
  const h = await startPi({
    mode: "rpc",
    uiContext: ui.ui,
    responses: [
      (context) => {
        seen.push(JSON.stringify(context.messages));
        return fauxAssistantMessage([fauxText("ok")]);
      },
    ],
  });
  t.after(() => h.dispose());
  seed(auditDir(h.agentDir), [[reviewed("git push origin main", { at: Date.now(), project: h.cwd }), 3]]);
  await h.session.prompt("/perm-audit --days 3 --min-count 3");
  const entries = h.session.sessionManager
    .getEntries()
    .flatMap((e) => (e.type === "custom" && e.customType === AUDIT_ENTRY_TYPE ? [e.data as AuditEntry] : []));
  assert.equal(entries.length, 1, "one report entry");
  const text = entries[0]!.lines.join("\n");
  assert.match(text, /^Auto mode audit: .* \(3 days, this project\)/);
  assert.match(text, /"command": "git push origin main"/);
  assert.match(text, /evidence of preference, not proof of safety/);
  // The model's next turn: its request holds the user's prompt and nothing of the report.
  await h.session.prompt("what next?");
  assert.equal(seen.length, 1, "the model was asked once");
  assert.match(seen[0]!, /what next\?/);
  for (const fragment of ["Auto mode audit", "git push origin main", "Rule suggestions", "perm-audit"])
    assert.ok(!seen[0]!.includes(fragment), `the model saw ${fragment}`);
  assert.ok(!h.session.messages.some((m) => JSON.stringify(m).includes("Auto mode audit")), "no message in the session holds it");
});

test("/perm-audit with a bad option says why and appends nothing; with no store it says there is no data yet", async (t) => {
  const ui = recordingUi();
  const h = await startPi({ mode: "rpc", uiContext: ui.ui });
  t.after(() => h.dispose());
  await h.session.prompt("/perm-audit");
  assert.match(ui.notes.at(-1)!.text, /No audit data yet/);
  await h.session.prompt("/perm-audit --days 0");
  assert.deepEqual(ui.notes.at(-1), {
    text: '/perm-audit: --days takes a whole number from 1 to 3650, not "0". Usage: /perm-audit [--days N] [--top N] [--min-count N] [--scope current|all]',
    level: "error",
  });
  assert.equal(h.session.sessionManager.getEntries().filter((e) => e.type === "custom" && e.customType === AUDIT_ENTRY_TYPE).length, 0);
});
