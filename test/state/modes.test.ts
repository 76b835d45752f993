// P2 and P16: the effective mode is a total function, checked against a written truth table,
// and every runtime starts in auto; only a reload restores "unrestricted".

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BACKENDS, type Backend } from "../../src/policy/types.ts";
import {
  CONFIG_HEALTHS,
  effectiveMode,
  STATUS_LABELS,
  statusLabel,
  type ConfigHealth,
  type EffectiveMode,
  type ModeInputs,
} from "../../src/state/effective.ts";
import { modeHandoff, restoredMode, type SessionStartReason } from "../../src/state/session.ts";

// enabled, config, requested, backend -> effective mode (the reviewer flag never changes the mode).
// "fault": the user's auto-mode.json is invalid; "state-fault": the durable global state is damaged,
// so the enabled flag itself is unknown and cannot turn the gate off.
const TRUTH: ReadonlyArray<[boolean, ConfigHealth, "auto" | "unrestricted", Backend, EffectiveMode]> = [
  [false, "ok", "auto", "sandboxed", "off"],
  [false, "ok", "auto", "sandboxed-unstaged", "off"],
  [false, "ok", "auto", "review-only", "off"],
  [false, "ok", "auto", "unavailable", "off"],
  [false, "ok", "unrestricted", "sandboxed", "off"],
  [false, "ok", "unrestricted", "sandboxed-unstaged", "off"],
  [false, "ok", "unrestricted", "review-only", "off"],
  [false, "ok", "unrestricted", "unavailable", "off"],
  [false, "fault", "auto", "sandboxed", "off"],
  [false, "fault", "auto", "sandboxed-unstaged", "off"],
  [false, "fault", "auto", "review-only", "off"],
  [false, "fault", "auto", "unavailable", "off"],
  [false, "fault", "unrestricted", "sandboxed", "off"],
  [false, "fault", "unrestricted", "sandboxed-unstaged", "off"],
  [false, "fault", "unrestricted", "review-only", "off"],
  [false, "fault", "unrestricted", "unavailable", "off"],
  [false, "state-fault", "auto", "sandboxed", "auto-config-fault"],
  [false, "state-fault", "auto", "sandboxed-unstaged", "auto-config-fault"],
  [false, "state-fault", "auto", "review-only", "auto-config-fault"],
  [false, "state-fault", "auto", "unavailable", "auto-config-fault"],
  [false, "state-fault", "unrestricted", "sandboxed", "auto-config-fault"],
  [false, "state-fault", "unrestricted", "sandboxed-unstaged", "auto-config-fault"],
  [false, "state-fault", "unrestricted", "review-only", "auto-config-fault"],
  [false, "state-fault", "unrestricted", "unavailable", "auto-config-fault"],
  [true, "state-fault", "auto", "sandboxed", "auto-config-fault"],
  [true, "state-fault", "auto", "sandboxed-unstaged", "auto-config-fault"],
  [true, "state-fault", "auto", "review-only", "auto-config-fault"],
  [true, "state-fault", "auto", "unavailable", "auto-config-fault"],
  [true, "state-fault", "unrestricted", "sandboxed", "auto-config-fault"],
  [true, "state-fault", "unrestricted", "sandboxed-unstaged", "auto-config-fault"],
  [true, "state-fault", "unrestricted", "review-only", "auto-config-fault"],
  [true, "state-fault", "unrestricted", "unavailable", "auto-config-fault"],
  [true, "fault", "auto", "sandboxed", "auto-config-fault"],
  [true, "fault", "auto", "sandboxed-unstaged", "auto-config-fault"],
  [true, "fault", "auto", "review-only", "auto-config-fault"],
  [true, "fault", "auto", "unavailable", "auto-config-fault"],
  [true, "fault", "unrestricted", "sandboxed", "auto-config-fault"],
  [true, "fault", "unrestricted", "sandboxed-unstaged", "auto-config-fault"],
  [true, "fault", "unrestricted", "review-only", "auto-config-fault"],
  [true, "fault", "unrestricted", "unavailable", "auto-config-fault"],
  [true, "ok", "unrestricted", "sandboxed", "unrestricted"],
  [true, "ok", "unrestricted", "sandboxed-unstaged", "unrestricted"],
  [true, "ok", "unrestricted", "review-only", "unrestricted"],
  [true, "ok", "unrestricted", "unavailable", "unrestricted"],
  [true, "ok", "auto", "sandboxed", "auto"],
  [true, "ok", "auto", "sandboxed-unstaged", "auto"],
  [true, "ok", "auto", "review-only", "auto-review-only"],
  [true, "ok", "auto", "unavailable", "auto-sandbox-unavailable"],
];

describe("P2: the effective mode truth table", () => {
  test("the table covers every combination exactly once", () => {
    const keys = new Set(TRUTH.map(([e, c, r, b]) => `${e}|${c}|${r}|${b}`));
    assert.equal(keys.size, 2 * CONFIG_HEALTHS.length * 2 * BACKENDS.length);
    assert.equal(TRUTH.length, keys.size);
  });

  test("effectiveMode matches the table for every input, with and without a reviewer", () => {
    for (const [enabled, configHealth, requested, backend, expected] of TRUTH) {
      for (const reviewerConfigured of [true, false]) {
        const m: ModeInputs = { enabled, configHealth, requested, backend, reviewerConfigured };
        assert.equal(effectiveMode(m), expected, JSON.stringify(m));
      }
    }
  });
});

describe("P16: the status line shows the true effective state", () => {
  test("each effective mode has its documented label", () => {
    assert.deepEqual(Object.values(STATUS_LABELS).sort(), [
      "Auto",
      "Auto (configuration fault)",
      "Auto (review-only)",
      "Auto (sandbox unavailable)",
      "Off",
      "Unrestricted",
    ]);
  });

  test("the label starts with the effective mode's label and notes a missing reviewer", () => {
    for (const [enabled, configHealth, requested, backend, expected] of TRUTH) {
      const label = statusLabel({ enabled, configHealth, requested, backend, reviewerConfigured: false });
      assert.ok(label.startsWith(STATUS_LABELS[expected]), label);
      assert.equal(label.includes("no reviewer"), expected === "auto" || expected === "auto-review-only" || expected === "auto-sandbox-unavailable");
      // A sandbox that writes the workspace in place says so after the mode.
      const unstaged = expected === "auto" && backend === "sandboxed-unstaged" ? " · not staged" : "";
      assert.equal(statusLabel({ enabled, configHealth, requested, backend, reviewerConfigured: true }), `${STATUS_LABELS[expected]}${unstaged}`);
    }
  });
});

describe("P2: unrestricted never carries into another runtime", () => {
  const carried = { sessionId: "s1", mode: "unrestricted" as const };
  for (const reason of ["startup", "new", "resume", "fork"] as SessionStartReason[]) {
    test(`${reason} starts in auto even after an unrestricted runtime`, () => {
      assert.equal(restoredMode(reason, carried, "s1"), "auto");
    });
  }
  test("reload restores what the same runtime's previous instance handed over, for the same session only", () => {
    assert.equal(restoredMode("reload", carried, "s1"), "unrestricted");
    assert.equal(restoredMode("reload", { sessionId: "s1", mode: "auto" }, "s1"), "auto");
    assert.equal(restoredMode("reload", carried, "s2"), "auto", "another session's");
    assert.equal(restoredMode("reload", undefined, "s1"), "auto", "nothing handed over");
  });
  test("the hand-off is taken once, per runtime object, and cannot be replaced", () => {
    const h = modeHandoff();
    const runtime = {};
    h.leave(runtime, carried);
    assert.equal(modeHandoff(), h, "a later load finds the same hand-off");
    assert.equal(h.take({}), undefined, "another runtime's");
    assert.deepEqual(h.take(runtime), carried);
    assert.equal(h.take(runtime), undefined, "once");
    assert.throws(() => {
      (globalThis as Record<symbol, unknown>)[Symbol.for("pi-auto-mode:mode-handoff")] = { take: () => carried };
    });
  });
});
