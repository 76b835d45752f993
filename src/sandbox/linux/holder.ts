// The holder: a small shell, in a mount namespace of its own, that mounts each staged root's
// overlay and then runs bubblewrap over the merged views. bubblewrap 0.8 has no overlay options,
// and an overlay mounted in a private namespace before it is, to bwrap, an ordinary directory to
// bind (../shared/research/staging.md). As root, `unshare -m` gives the namespace; as an
// unprivileged user `unshare -Urm` adds a user namespace that owns it, and the overlay then keeps
// its whiteouts and opaque marks in user.* attributes (`userxattr`).
//
// When bwrap has exited (the pid namespace takes every process of the command with it), the holder
// says so on the ended fd and waits there: while it waits, its mount namespace and so the merged
// views still exist, and the host reads them through /proc/<pid>/root to see which lower entries
// the command removed. Then the host answers and the holder exits with bwrap's status. The command
// itself never has the ended fd (it is closed for bwrap), so it cannot announce its own end early.

import type { StagedRoot } from "../stage.ts";

export type HolderMode = "root" | "userns";

/** The fd the holder reports the end of the command on, and reads the host's go-ahead from. */
export const ENDED_FD = 5;

// Fixed text: every path arrives as a positional parameter, never inside the script.
// $1 mount options prefix, $2 the number of roots, then 5 words a root, then bwrap, its options
// file and the command file. It mounts, waits for the word to start (both files are written by
// then), runs bwrap with the options from the first file (bwrap reads and closes fd 6) and the
// shell and command from the second (NUL-separated, read by bash's own `read`, no process), then
// reports the end and waits to be released.
const SCRIPT = [
  "o=$1; n=$2; shift 2",
  'while [ "$n" -gt 0 ]; do',
  '  if [ "$1" != "$2" ]; then mount --bind "$1" "$2" || exit 125; fi',
  '  mount -t overlay overlay -o "${o}lowerdir=$2,upperdir=$3,workdir=$4" "$5" || exit 125',
  "  shift 5; n=$((n-1))",
  "done",
  `read -r _ <&${ENDED_FD} || exit 125`,
  `{ IFS= read -r -d '' sh_; IFS= read -r -d '' cmd_; } <"$3"`,
  `"$1" --args 6 6<"$2" -- "$sh_" -c "$cmd_" </dev/null ${ENDED_FD}>&-`,
  "s=$?",
  `printf 'ended %s\\n' "$s" >&${ENDED_FD} && read -r _ <&${ENDED_FD}`,
  'exit "$s"',
].join("\n");

/**
 * Options every staged overlay gets: no redirects (a renamed lower directory is copied, so the
 * upper layer alone says what moved), no metadata-only copy-up (a changed file is whole in the
 * upper layer), no inode index and no xino (nothing outside the upper layer to read back).
 */
const OVERLAY_OPTIONS = "redirect_dir=nofollow,metacopy=off,index=off,xino=off,";

export interface HolderCommand {
  readonly file: string;
  readonly args: readonly string[];
}

export function holderCommand(opts: {
  readonly unshare: string;
  readonly shell: string;
  readonly mode: HolderMode;
  readonly roots: readonly StagedRoot[];
  /** The bwrap to run, the file its options will be in, and the file its command will be in. */
  readonly bwrap: string;
  readonly argsFile: string;
  readonly commandFile: string;
}): HolderCommand {
  const ns = opts.mode === "root" ? ["-m", "--propagation", "private"] : ["-Urm", "--propagation", "private"];
  const options = `${opts.mode === "userns" ? "userxattr," : ""}${OVERLAY_OPTIONS}`;
  const roots = opts.roots.flatMap((r) => [r.root, r.lower, r.upper, r.work, r.merged]);
  return {
    file: opts.unshare,
    args: [...ns, opts.shell, "-c", SCRIPT, "pi-auto-mode-holder", options, String(opts.roots.length), ...roots, opts.bwrap, opts.argsFile, opts.commandFile],
  };
}
