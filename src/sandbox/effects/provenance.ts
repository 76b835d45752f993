// Files auto mode itself created: an earlier applied command made them (nothing was there before)
// and nobody changed them since. Removing or rewriting such a file takes nothing of the user's,
// so it never counts as lost content. Read from the undo store, which holds exactly that record.

import { sameInode, type Identity } from "./identity.ts";
import type { EffectStore } from "./store.ts";
import { listUndo } from "./undo.ts";

export function agentCreatedIn(store: EffectStore, workspace: string): (path: string, id: Identity) => boolean {
  let created: Map<string, Identity> | undefined;
  return (path, id) => {
    if (!created) {
      created = new Map();
      // Oldest first, so a later record of the same path wins.
      for (const e of listUndo(store, workspace).reverse())
        for (const op of e.manifest.ops) {
          if (op.kind === "put" && op.pre === null && op.post !== null) created.set(op.target, op.post);
          else created.delete(op.target);
        }
    }
    const rec = created.get(path);
    return rec !== undefined && sameInode(rec, id);
  };
}
