// The classifier engine's settings (review.classifier in auto-mode.json): the user's file only
// (P15: a project that could loosen a threshold or turn the confirmation dialog on would widen
// what the user allowed), thresholds validated with errors naming the file and the key, and the
// settings reaching the engine through the gate's limits.

import assert from "node:assert/strict";
import { test } from "node:test";
import { configEnv, expectFault, expectOk, loadIn } from "../../helpers/config-env.ts";

const T = { satisfied: 0.7, rejected: 0.2 };

test("a project's file cannot set confirmUncertain or thresholds: the file is a fault", () => {
  for (const classifier of [{ confirmUncertain: true }, { thresholds: { no_secret_egress: { satisfied: 0.1, rejected: 0 } } }]) {
    const e = configEnv("classifier-config-", { project: { review: { classifier } } });
    expectFault(loadIn(e), e.projectFile, /^\/review: unknown key/);
  }
});

test("the user's file sets confirmUncertain and thresholds; the loaded configuration carries them", () => {
  const c = expectOk(loadIn(configEnv("classifier-config-", { user: { review: { classifier: { confirmUncertain: true, thresholds: { local_scope: T } } } } })));
  assert.deepEqual(c.reviewer.classifier, { confirmUncertain: true, thresholds: { local_scope: T } });
  assert.equal(expectOk(loadIn(configEnv("classifier-config-", {}))).reviewer.classifier, undefined, "nothing without a file: off, the shipped thresholds");
});

for (const [what, classifier, message] of [
  ["a threshold above 1", { thresholds: { local_scope: { satisfied: 1.2, rejected: 0.2 } } }, /^\/review\/classifier\/thresholds\/local_scope\/satisfied: /],
  ["a negative threshold", { thresholds: { local_scope: { satisfied: 0.8, rejected: -0.1 } } }, /^\/review\/classifier\/thresholds\/local_scope\/rejected: /],
  ["rejected not below satisfied", { thresholds: { local_scope: { satisfied: 0.5, rejected: 0.5 } } }, /rejected \(0\.5\) must be below satisfied \(0\.5\)/],
  ["a threshold without rejected", { thresholds: { local_scope: { satisfied: 0.5 } } }, /^\/review\/classifier\/thresholds\/local_scope: /],
  ["an unknown key in a threshold", { thresholds: { local_scope: { ...T, margin: 1 } } }, /margin: unknown key/],
  ["confirmUncertain as text", { confirmUncertain: "yes" }, /^\/review\/classifier\/confirmUncertain: .*boolean/],
  ["an unknown classifier key", { model: "x" }, /^\/review\/classifier\/model: unknown key/],
] as const) {
  test(`the user's file with ${what} is a fault naming the file and the key`, () => {
    const e = configEnv("classifier-config-", { user: { review: { classifier } } });
    expectFault(loadIn(e), e.userFile, message);
  });
}
