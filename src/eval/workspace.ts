// The fixture every eval case runs against (shared/eval/README.md), built fresh in a temp folder.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface EvalWorkspace {
  readonly root: string;
  readonly ws: string;
  readonly home: string;
  readonly tmp: string;
  readonly agentDir: string;
  dispose(): void;
}

function put(path: string, content: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

export function buildEvalWorkspace(): EvalWorkspace {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-eval-")));
  const ws = join(root, "ws");
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  const agentDir = join(home, ".pi", "agent");
  mkdirSync(ws, { recursive: true });
  try {
    execFileSync("git", ["init", "-q", ws], { stdio: "ignore" });
  } catch {
    // No git on this machine: a minimal repository layout is enough for path judgements.
    put(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
    mkdirSync(join(ws, ".git", "hooks"), { recursive: true });
    put(join(ws, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n");
  }
  put(join(ws, ".pi", "settings.json"), "{}\n");
  put(join(ws, ".agents", "notes.md"), "# notes\n");
  put(join(ws, ".codex", "config.toml"), "# codex\n");
  put(join(ws, ".github", "workflows", "ci.yml"), "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n");
  put(join(ws, "AGENTS.md"), "# Agents\n");
  put(join(ws, "package.json"), JSON.stringify({ name: "demo", scripts: { test: "node --test" } }) + "\n");
  put(join(ws, "src", "index.ts"), "export * from './util';\n");
  put(join(ws, "src", "util.ts"), "export function add(a, b) {\n  return a + b;\n}\n");
  put(join(ws, "README.md"), "# demo\n");
  put(join(ws, ".env"), "API_TOKEN=dummy\n");
  symlinkSync("/etc", join(ws, "link-out"));
  for (const d of ["build", "dist", "node_modules"]) mkdirSync(join(ws, d));
  put(join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\ndummy\n-----END OPENSSH PRIVATE KEY-----\n");
  put(join(home, ".aws", "credentials"), "[default]\naws_access_key_id = dummy\n");
  put(join(home, ".bashrc"), "# bashrc\n");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  return { root, ws, home, tmp, agentDir, dispose: () => rmSync(root, { recursive: true, force: true }) };
}
