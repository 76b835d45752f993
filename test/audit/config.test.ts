// The audit's configuration keys (audit.enabled, audit.retentionDays): defaults, the user's bounds
// as faults, and a project that can only turn the audit off or shorten its retention (P15).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { explainConfig, readConfigFiles } from "../../src/policy/config/origins.ts";
import { configEnv, expectFault, expectOk, loadIn } from "../helpers/config-env.ts";

const audit = (files: { user?: unknown; project?: unknown }) => expectOk(loadIn(configEnv("audit-config-", files))).audit;

test("without a file the audit is on and keeps 180 days", () => {
  assert.deepEqual(audit({}), { enabled: true, retentionDays: 180, workspaceRetentionDays: 180 });
});

test("the user's file turns it off or sets the retention within 1-3650 days", () => {
  assert.deepEqual(audit({ user: { audit: { enabled: false } } }), { enabled: false, retentionDays: 180, workspaceRetentionDays: 180 });
  assert.deepEqual(audit({ user: { audit: { retentionDays: 1 } } }), { enabled: true, retentionDays: 1, workspaceRetentionDays: 1 });
  assert.deepEqual(audit({ user: { audit: { retentionDays: 3650 } } }).retentionDays, 3650);
});

for (const [what, value, message] of [
  ["a retention of 0 days", { retentionDays: 0 }, /^\/audit\/retentionDays: .*1/],
  ["a retention of 3651 days", { retentionDays: 3651 }, /^\/audit\/retentionDays: .*3650/],
  ["a fractional retention", { retentionDays: 1.5 }, /^\/audit\/retentionDays: .*integer/],
  ["a retention as text", { retentionDays: "30" }, /^\/audit\/retentionDays: /],
  ["enabled as text", { enabled: "no" }, /^\/audit\/enabled: .*boolean/],
  ["an unknown audit key", { path: "/tmp/audit" }, /^\/audit\/path: unknown key/],
] as const) {
  test(`the user's file with ${what} is a fault naming the file and the key`, () => {
    const e = configEnv("audit-config-", { user: { audit: value } });
    expectFault(loadIn(e), e.userFile, message);
  });
}

test("a project can turn the audit off, never on", () => {
  assert.equal(audit({ project: { audit: { enabled: false } } }).enabled, false);
  // The user's off stays off whatever the project says; a project's `true` is not even a valid file.
  const e = configEnv("audit-config-", { user: { audit: { enabled: false } }, project: { audit: { enabled: true } } });
  expectFault(loadIn(e), e.projectFile, /^\/audit\/enabled: a project file can only set this to false/);
  const on = configEnv("audit-config-", { project: { audit: { enabled: true } } });
  expectFault(loadIn(on), on.projectFile, /^\/audit\/enabled: a project file can only set this to false/);
});

test("a project can shorten its workspace's retention, never extend it or the store's", () => {
  assert.deepEqual(audit({ project: { audit: { retentionDays: 30 } } }), { enabled: true, retentionDays: 180, workspaceRetentionDays: 30 });
  assert.deepEqual(audit({ user: { audit: { retentionDays: 90 } }, project: { audit: { retentionDays: 400 } } }), {
    enabled: true,
    retentionDays: 90,
    workspaceRetentionDays: 90,
  });
  const e = configEnv("audit-config-", { project: { audit: { retentionDays: 5000 } } });
  expectFault(loadIn(e), e.projectFile, /^\/audit\/retentionDays: .*3650/);
});

test("pi-auto-mode config says where each audit value came from", () => {
  const explain = (files: { user?: unknown; project?: unknown }) => {
    const e = configEnv("audit-config-", files);
    const loc = { agentDir: e.agentDir, cwd: e.ws, home: e.home };
    return explainConfig(expectOk(loadIn(e)), readConfigFiles(loc), { tmpRoot: e.tmp, maxInputTokens: 1, deadlineMs: 1 }).audit;
  };
  assert.deepEqual(explain({}), { enabled: { value: true, origin: "default" }, retentionDays: { value: 180, origin: "default" } });
  assert.deepEqual(explain({ user: { audit: { enabled: true, retentionDays: 60 } }, project: { audit: { enabled: false, retentionDays: 7 } } }), {
    enabled: { value: false, origin: "project" },
    retentionDays: { value: 7, origin: "project" },
  });
  // A project's longer retention is not the one that applies: the user's is shown.
  assert.deepEqual(explain({ user: { audit: { retentionDays: 60 } }, project: { audit: { retentionDays: 90 } } }).retentionDays, { value: 60, origin: "user" });
});

test("the README's configuration example, audit keys included, is a valid user file", () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Configuration"));
  const example = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(section)![1]!) as { audit?: unknown; version?: number };
  assert.deepEqual(example.audit, { enabled: true, retentionDays: 180 });
  const { version: _, ...user } = example;
  const e = configEnv("audit-config-", { user });
  assert.deepEqual(expectOk(loadIn(e)).audit, { enabled: true, retentionDays: 180, workspaceRetentionDays: 180 });
});
