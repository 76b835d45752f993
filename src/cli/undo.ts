// `pi-auto-mode undo [--cwd DIR] [N]`: restore what the last N commands auto mode applied in a
// workspace overwrote or removed, refusing where anything changed since. The same core as
// /perm-undo.

import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { repairStaging } from "../sandbox/effects/repair.ts";
import { parseArgs, type CommandSpec } from "./args.ts";
import { CliError, EXIT, type Io } from "./io.ts";

export const UNDO_HELP = `Usage:
  pi-auto-mode undo [--cwd DIR] [--list] [N]

Undo the last N commands (default 1) whose staged changes auto mode applied in the workspace
DIR (default: the current directory), newest first: what they overwrote or removed comes
back, what they created goes. A command is undone only if nothing it changed has changed
since; otherwise the undo stops there and says which files changed.

Options:
  --cwd DIR   the workspace
  --list      list the commands that can be undone, newest first, and change nothing
  -h, --help  show this help

Exit status: 0 undone (or listed); 1 refused (the reason is printed); 2 bad input.
`;

const SPEC: CommandSpec = { flags: { cwd: "string", list: "boolean" }, positionals: [], optional: ["N"], rest: false };

export async function runUndo(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs("undo", argv, SPEC);
  if (args.help) {
    io.out(UNDO_HELP);
    return EXIT.ok;
  }
  const n = args.positionals[0];
  const steps = n === undefined ? 1 : Number(n);
  if (!Number.isInteger(steps) || steps < 1) throw new CliError(`undo: N must be a positive whole number, not ${JSON.stringify(n)}`);
  const dir = resolve(io.cwd, args.strings.get("cwd") ?? ".");
  if (!existsSync(dir)) throw new CliError(`undo: --cwd ${dir} does not exist`);
  const workspace = realpathSync(dir);
  const { agentDirFromEnv } = await import("../state/locations.ts");
  const { effectStore } = await import("../sandbox/effects/store.ts");
  const { listUndo, undoLast } = await import("../sandbox/effects/undo.ts");
  const agentDir = agentDirFromEnv(io.env, homedir());
  const store = effectStore(agentDir);
  await repairStaging(agentDir, workspace, (text) => io.err(`${text}\n`));
  if (args.booleans.has("list")) {
    const entries = listUndo(store, workspace);
    if (entries.length === 0) io.out(`nothing to undo in ${workspace}\n`);
    for (const [i, e] of entries.entries())
      io.out(
        `${i + 1}  ${new Date(e.manifest.at).toISOString()}  ${e.manifest.ops.length} change(s)${e.manifest.kept ? "" : " (not kept: cannot be undone)"}  ${e.manifest.command.split("\n")[0]!.slice(0, 100)}\n`,
      );
    return EXIT.ok;
  }
  const r = undoLast(store, workspace, steps);
  for (const u of r.undone) io.out(`undone: \`${u.command.split("\n")[0]}\` (${u.restored} change(s) restored)\n`);
  if (!r.ok) {
    io.err(`pi-auto-mode undo: ${r.undone.length > 0 ? "stopped: " : ""}${r.refused}\n`);
    return EXIT.findings;
  }
  return EXIT.ok;
}
