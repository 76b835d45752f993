// Held effects kept for the user (P14, P17): when a staged command's changes are held and not
// applied (no reviewer, or the reviewer said no), its upper layer is kept a while, so the user can
// approve exactly those changes with /perm-approve. They are then applied from the kept layer
// without running the command again, only if nothing they touch changed meanwhile (all or
// nothing), and never after the keep time; a few are kept at most, the oldest go first.

import type { StageRun } from "../stage.ts";
import type { ApplyOp } from "./judge.ts";
import type { EffectStore } from "./store.ts";
import type { UndoBounds } from "./undo.ts";

export const KEEP_MS = 10 * 60_000;
export const KEPT_AT_MOST = 3;

/** What applying kept effects did: applied whole, or nothing, and why. */
export type KeptApply =
  | { readonly kind: "applied"; readonly applied: number; readonly undoId: string | undefined }
  | { readonly kind: "refused"; readonly why: string };

export interface KeptEffects {
  readonly command: string;
  readonly summary: string;
  /** Applies the kept changes once, if none of their targets changed since the command ran. */
  apply(): Promise<KeptApply>;
  /** Drops them (the run's folders go). */
  discard(): void;
}

export interface KeepRequest {
  readonly run: Pick<StageRun, "dir">;
  readonly command: string;
  readonly summary: string;
  readonly ops: readonly ApplyOp[];
  readonly lostBytes: number;
  readonly store: EffectStore;
  readonly workspace: string;
  readonly bounds: UndoBounds;
  readonly now?: () => number;
}

const kept: KeptEffects[] = [];

/** Keeps a held run's effects; the run's folders now belong to the returned handle. */
export function keepHeld(req: KeepRequest, discardRun: (run: Pick<StageRun, "dir">) => void): KeptEffects {
  const now = req.now ?? Date.now;
  const until = now() + KEEP_MS;
  let state: "kept" | "used" | "gone" = "kept";
  const drop = () => {
    if (state === "gone") return;
    state = "gone";
    clearTimeout(timer);
    const i = kept.indexOf(handle);
    if (i >= 0) kept.splice(i, 1);
    try {
      discardRun(req.run);
    } catch {
      // the next start's sweep removes it
    }
  };
  const handle: KeptEffects = {
    command: req.command,
    summary: req.summary,
    async apply() {
      if (state !== "kept")
        return { kind: "refused", why: state === "used" ? "these changes were already approved" : "the kept changes are gone (kept for 10 minutes)" };
      if (now() > until) {
        drop();
        return { kind: "refused", why: "the kept changes are gone (kept for 10 minutes)" };
      }
      state = "used";
      try {
        const { applyEffects } = await import("./apply.ts");
        const r = await applyEffects({
          store: req.store,
          workspace: req.workspace,
          command: req.command,
          ops: req.ops,
          bounds: req.bounds,
          lostBytes: req.lostBytes,
          allOrNothing: true,
        });
        if (r.conflicts.length > 0)
          return {
            kind: "refused",
            why: `the workspace changed since the command ran (${r.conflicts[0]!.path}: ${r.conflicts[0]!.detail}), so nothing was applied`,
          };
        return { kind: "applied", applied: r.applied, undoId: r.undoId };
      } catch (e) {
        return { kind: "refused", why: `applying failed: ${(e as Error).message}; the next start repairs what was begun` };
      } finally {
        drop();
      }
    },
    discard: drop,
  };
  const timer = setTimeout(drop, KEEP_MS);
  timer.unref?.();
  kept.push(handle);
  while (kept.length > KEPT_AT_MOST) kept[0]!.discard();
  return handle;
}

/** Every kept set goes (the sandbox drains: the process is ending). */
export function discardAllKept(): void {
  for (const k of [...kept]) k.discard();
}
