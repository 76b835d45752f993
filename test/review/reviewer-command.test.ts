// After /perm-auto-model the user sees which reviewer was saved and that the setting is global,
// as the last thing said: the TUI shows one status line at a time, and the mode change's own line
// used to replace the confirmation at once.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { fauxProvider } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { reviewerSavedText } from "../../src/commands/reviewer.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { startPi, type PiHarness } from "../helpers/pi-session.ts";
import { recordingUi } from "../helpers/ui.ts";

const harnesses: PiHarness[] = [];
after(async () => {
  for (const h of harnesses) await h.dispose();
});

async function world() {
  const judge = fauxProvider({ provider: "judge", models: [{ id: "judge-1" }, { id: "thinker", reasoning: true }] });
  const rec = recordingUi({ select: (_title, options) => (options.includes("judge/thinker") ? "judge/thinker" : "low") });
  const h = await startPi({ extensionFactories: [(api: ExtensionAPI) => api.registerProvider(judge.provider)], uiContext: rec.ui, mode: "rpc" });
  harnesses.push(h);
  return { h, rec };
}

describe("/perm-auto-model confirms what it saved", () => {
  test("the last notification names the reviewer and says the setting is global", async () => {
    const { h, rec } = await world();
    await h.session.prompt("/perm unrestricted");
    await h.session.prompt("/perm-auto-model judge/thinker medium");
    const last = rec.notes.at(-1)!;
    assert.equal(last.level, "info");
    assert.match(last.text, /^Reviewer saved: judge\/thinker \(thinking medium\)\. This setting is global: every Pi session of this user uses it/);
    assert.ok(last.text.includes(processGlobalState(h.agentDir).location), last.text);
    assert.match(last.text, /This runtime is now in auto mode/);
    const r = await processGlobalState(h.agentDir).read();
    assert.deepEqual(r.kind === "ok" && r.snapshot.reviewer, { provider: "judge", model: "thinker", thinking: "medium" });
  });

  test("picked from the list: the same confirmation, last", async () => {
    const { h, rec } = await world();
    await h.session.prompt("/perm-auto-model");
    assert.match(rec.notes.at(-1)!.text, /^Reviewer saved: judge\/thinker \(thinking low\)\. This setting is global/);
  });

  test("a refused choice says nothing was changed, and is the last word too", async () => {
    const { h, rec } = await world();
    await h.session.prompt("/perm-auto-model judge/nope");
    const last = rec.notes.at(-1)!;
    assert.equal(last.level, "error");
    assert.match(last.text, /^Reviewer not changed: Pi knows no model judge\/nope/);
  });

  test("the text without a session", () => {
    assert.equal(
      reviewerSavedText({ provider: "p", model: "m", thinking: "off" }, "/a/state.json"),
      "Reviewer saved: p/m (thinking off). This setting is global: every Pi session of this user uses it, those already running included, until it is changed (stored in /a/state.json). This runtime is now in auto mode",
    );
  });
});
