// At start: finish the applies a crash interrupted (roll forward, or say what could not be), and
// remove run folders that dead processes left behind. Every entry point runs it first.

import { readdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { loadPolicyConfig, undoBounds } from "../../policy/config/load.ts";
import { discardRun, staleRuns } from "../stage.ts";
import { effectStore } from "./store-paths.ts";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether an apply left a journal (an unreadable folder counts: the recovery says why). */
function journalsLeft(dir: string): boolean {
  try {
    return readdirSync(dir).some((n) => n.endsWith(".json"));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

export async function repairStaging(agentDir: string, cwd: string, say: (text: string) => void): Promise<void> {
  const store = effectStore(agentDir);
  // The apply machinery is loaded only when there is something to finish.
  if (journalsLeft(store.journalDir)) {
    try {
      const { recoverJournals } = await import("./apply.ts");
      const r = await recoverJournals(store, undoBounds(loadPolicyConfig({ agentDir, cwd, home: homedir() })));
      for (const x of r.recovered)
        say(
          `auto mode: an apply of \`${x.command.split("\n")[0]}\` in ${x.workspace} was interrupted; it has been completed (${x.completed} change(s) finished, ${x.alreadyDone} already done)${x.lost.length ? `, but these could not be: ${x.lost.join(", ")}` : ""}.`,
        );
      for (const f of r.failed) say(`auto mode: an interrupted apply could not be repaired: ${f}`);
    } catch (e) {
      say(`auto mode: interrupted applies could not be checked: ${(e as Error).message}`);
    }
  }
  for (const dir of staleRuns(store.base, alive)) discardRun({ dir });
  // Removed build output the background removal did not finish (the process ended first).
  void rm(join(store.base, "trash"), { recursive: true, force: true, maxRetries: 2 }).catch(() => {});
}
