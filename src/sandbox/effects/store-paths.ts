// Where the effects store's folders are (store.ts holds what reads and writes them). Apart so that
// what only needs to know a folder, such as the check at start for interrupted applies, does not
// load the store's file machinery.

import { join } from "node:path";

export interface EffectStore {
  readonly base: string;
  readonly journalDir: string;
  readonly undoRoot: string;
  readonly lockDir: string;
}

export function effectStore(agentDir: string): EffectStore {
  const base = join(agentDir, "auto-mode", "staging");
  return { base, journalDir: join(base, "journal"), undoRoot: join(base, "undo"), lockDir: join(base, "locks") };
}
