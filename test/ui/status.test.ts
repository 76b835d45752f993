// The footer's text (src/ui/status.ts): one "auto-mode:" prefix, the reviewer named where reviews
// go to it, Unrestricted and Off highlighted in the TUI and plain words for an RPC client.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { footerText, showStatus } from "../../src/ui/status.ts";
import { recordingUi } from "../helpers/ui.ts";

describe("the footer", () => {
  test("names the reviewer where reviews go to it, and only there", () => {
    const reviewer = { provider: "judge", model: "judge-1", thinking: "off" } as const;
    assert.deepEqual(footerText({ mode: "auto", label: "Auto", reviewer }), { label: "Auto", tone: undefined, rest: " · reviewer judge/judge-1" });
    assert.equal(footerText({ mode: "unrestricted", label: "Unrestricted", reviewer }).rest, "");
    assert.equal(footerText({ mode: "off", label: "Off", reviewer }).rest, "");
    assert.equal(footerText({ mode: "auto", label: "Auto", reviewer: { ...reviewer, thinking: "low" } }).rest, " · reviewer judge/judge-1 (low)");
  });

  test("highlights Unrestricted and Off in the TUI, says one prefix, and shows words alone elsewhere", () => {
    const rec = recordingUi();
    const theme = { fg: (c: string, t: string) => `<${c}>${t}</>` };
    const ui = Object.assign(rec.ui, { theme }) as typeof rec.ui;
    showStatus({ ui, mode: "tui" }, { mode: "unrestricted", label: "Unrestricted" });
    showStatus({ ui, mode: "tui" }, { mode: "off", label: "Off" });
    showStatus({ ui, mode: "tui" }, { mode: "auto", label: "Auto (sandbox unavailable)", why: "bwrap missing" });
    showStatus({ ui, mode: "rpc" }, { mode: "off", label: "Off" });
    assert.deepEqual(rec.statuses("auto-mode"), [
      "auto-mode: <warning>Unrestricted</>",
      "auto-mode: <error>Off</>",
      "auto-mode: Auto (sandbox unavailable) — bwrap missing",
      "auto-mode: Off",
    ]);
    for (const s of rec.statuses("auto-mode")) assert.equal(s.split("auto-mode:").length, 2, s);
  });
});
