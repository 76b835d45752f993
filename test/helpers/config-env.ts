// A scratch home, agent dir and workspace for configuration tests, with the user's and the
// project's auto-mode.json written when given, and the three ways such tests read the result.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { type ConfigResult, loadPolicyConfig, type PolicyConfig, PROJECT_CONFIG_FILE, USER_CONFIG_FILE } from "../../src/policy/config/load.ts";

export interface ConfigEnv {
  readonly root: string;
  readonly ws: string;
  readonly home: string;
  readonly agentDir: string;
  readonly tmp: string;
  readonly userFile: string;
  readonly projectFile: string;
}

const made: string[] = [];
let cleanup = false;

/** A fresh setting; `user`/`project` (without `version`, which is added) are written as the files. */
export function configEnv(prefix: string, files: { readonly user?: unknown; readonly project?: unknown } = {}): ConfigEnv {
  if (!cleanup) {
    cleanup = true;
    after(() => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(root);
  const ws = join(root, "ws");
  const home = join(root, "home");
  const agentDir = join(home, ".pi", "agent");
  const tmp = join(root, "tmp");
  for (const d of [join(ws, ".pi"), join(ws, "src"), agentDir, tmp]) mkdirSync(d, { recursive: true });
  writeFileSync(join(ws, "src", "index.ts"), "export {};\n");
  const e = { root, ws, home, agentDir, tmp, userFile: join(agentDir, USER_CONFIG_FILE), projectFile: join(ws, PROJECT_CONFIG_FILE) };
  if (files.user !== undefined) writeFileSync(e.userFile, JSON.stringify({ version: 1, ...(files.user as object) }));
  if (files.project !== undefined) writeFileSync(e.projectFile, JSON.stringify({ version: 1, ...(files.project as object) }));
  return e;
}

export const loadIn = (e: ConfigEnv): ConfigResult => loadPolicyConfig({ agentDir: e.agentDir, cwd: e.ws, home: e.home });

export function expectOk(r: ConfigResult): PolicyConfig {
  assert.equal(r.ok, true, r.ok ? "" : `unexpected fault in ${r.path}: ${r.message}`);
  return (r as Extract<ConfigResult, { ok: true }>).config;
}

export function expectFault(r: ConfigResult, path: string, message: RegExp): void {
  assert.equal(r.ok, false, "expected a configuration fault");
  const f = r as Extract<ConfigResult, { ok: false }>;
  assert.equal(f.path, path);
  assert.match(f.message, message);
}
