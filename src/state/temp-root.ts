// The sandbox's writable temporary folder, one per session (P18). The temp root is one private
// folder per user, `$TMPDIR/pi-auto-mode-<uid>` (or the user config's `tmpRoot`); each session
// makes its own folder in it (`session-XXXXXX`, mkdtemp: a fresh name, mode 0700), and that folder
// is the sandbox's TMPDIR and caches, so two sessions or workspaces never share what their
// commands leave there. It goes when the session ends.
//
// The default root's name can be taken first by another account (a symlink to a folder of ours,
// a folder of theirs): then it is not used, and the session makes a fresh private root beside it
// instead (mkdtemp, removed at the end), rather than lose its sandbox to whoever planted the name.
// A configured root is the user's choice: when it is not a private folder of theirs it is refused,
// and the gate denies every call until it is fixed (the reason and the fix are in the footer).

import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { ensurePrivateDir, freshPrivateDir, privateDirProblem, removePrivateDir } from "./private-dir.ts";

export type TempChoice =
  | {
      readonly ok: true;
      /** The temp root the session's folder is in. */
      readonly root: string;
      /** This session's private folder: the sandbox's writable temporary root. */
      readonly path: string;
      /** Why the default root was not used, when it was not. */
      readonly note?: string;
    }
  | { readonly ok: false; readonly root: string; readonly reason: string };

const FIX_CONFIGURED = 'remove it, or set "tmpRoot" in auto-mode.json to a folder of yours with mode 700';
const FIX_DEFAULT = 'point TMPDIR at a folder only you and root can change (such as /tmp), or set "tmpRoot" in auto-mode.json';

export function defaultTmpRootPath(base: string = tmpdir()): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : "user";
  return join(base, `pi-auto-mode-${uid}`);
}

/** Sessions with folders: what a process exit without a session end (a test, `process.exit`) still removes. */
const open = new Set<TempSession>();
let exitHook = false;
function track(session: TempSession): void {
  open.add(session);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const s of open) {
      try {
        s.close();
      } catch {
        // what cannot be removed stays until the system clears its temp dir
      }
    }
  });
}

export class TempSession {
  private readonly base: string;
  /** Session folder by root. */
  private readonly folders = new Map<string, string>();
  /** The default root this session uses, once chosen (a fresh one when the default was refused). */
  private chosen: { readonly root: string; readonly note?: string; readonly fresh: boolean } | undefined;

  constructor(opts: { readonly base?: string } = {}) {
    this.base = opts.base ?? tmpdir();
  }

  get defaultRoot(): string {
    return defaultTmpRootPath(this.base);
  }

  /** This session's folder under the configured root, or under the default one (`undefined`). */
  folder(configured: string | undefined): TempChoice {
    const root = configured === undefined ? this.defaultChoice() : this.configuredRoot(resolve(configured));
    if (!root.ok) return root;
    const note = configured === undefined ? this.chosen?.note : undefined;
    const known = this.folders.get(root.root);
    // Checked at every use: a command may have opened its own TMPDIR to others (chmod 777 "$TMPDIR").
    if (known !== undefined && privateDirProblem(known) === undefined) return { ok: true, root: root.root, path: known, ...(note ? { note } : {}) };
    if (known !== undefined) {
      this.folders.delete(root.root);
      removePrivateDir(known);
    }
    const made = freshPrivateDir(root.root, "session-");
    if (!made.ok) return { ok: false, root: root.root, reason: `the temporary root ${root.root} cannot hold this session's folder: ${made.reason}` };
    this.folders.set(root.root, made.path);
    track(this);
    return { ok: true, root: root.root, path: made.path, ...(note ? { note } : {}) };
  }

  /** Removes every folder this session made (its commands' temporary files and caches). */
  close(): void {
    for (const dir of this.folders.values()) removePrivateDir(dir);
    this.folders.clear();
    if (this.chosen?.fresh) removePrivateDir(this.chosen.root);
    this.chosen = undefined;
    open.delete(this);
  }

  private configuredRoot(root: string): { ok: true; root: string } | { ok: false; root: string; reason: string } {
    const r = ensurePrivateDir(root);
    if (r.ok) return { ok: true, root };
    return { ok: false, root, reason: `the configured tmpRoot ${root} cannot be used (${r.reason}): ${FIX_CONFIGURED}` };
  }

  private defaultChoice(): { ok: true; root: string } | { ok: false; root: string; reason: string } {
    const wanted = this.defaultRoot;
    if (this.chosen && privateDirProblem(this.chosen.root) === undefined) return { ok: true, root: this.chosen.root };
    if (this.chosen?.fresh) removePrivateDir(this.chosen.root);
    this.chosen = undefined;
    const r = ensurePrivateDir(wanted);
    if (r.ok) {
      this.chosen = { root: wanted, fresh: false };
      return { ok: true, root: wanted };
    }
    // Taken by someone else: a fresh private root beside it, which no one can have made first.
    const fresh = freshPrivateDir(dirname(wanted), `${wanted.slice(dirname(wanted).length + 1)}-`);
    if (!fresh.ok) return { ok: false, root: wanted, reason: `the temporary root ${wanted} cannot be used (${r.reason}): ${FIX_DEFAULT}` };
    this.chosen = {
      root: fresh.path,
      fresh: true,
      note: `${wanted} was not used (${r.reason}), so this session uses a fresh private root ${fresh.path}`,
    };
    return { ok: true, root: fresh.path };
  }
}
