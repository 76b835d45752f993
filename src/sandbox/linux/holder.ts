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

/** The fd the network forwarder says it listens on (the holder itself closes it). */
export const FORWARDER_READY_FD = 7;

/** With network: the tools and files the holder starts the forwarder with. */
export interface HolderNetwork {
  readonly nsenter: string;
  readonly node: string;
  readonly forwarder: string;
  readonly socket: string;
  readonly port: number;
}

// Fixed text: every path arrives as a positional parameter, never inside the script, and every
// program it runs is one of them (an absolute path from host-tools.ts): its PATH is never searched,
// so nothing a sandboxed command left in a folder on some PATH runs here, on the host.
// $1 mount, $2 mount options prefix, $3 the number of roots, then 5 words a root, then bwrap, its options
// file and the command file, and, with network, nsenter, node, the forwarder's entry, the proxy's
// socket and the port. It mounts, starts the forwarder (network.ts) in a network namespace of its
// own, waits for the word to start (both files are written by then; with network the word carries
// the forwarder's pid, which the host learned from the forwarder itself), runs bwrap with the
// options from the first file (bwrap reads and closes fd 6) and the shell and command from the
// second (NUL-separated, read by bash's own `read`, no process), then reports the end and waits to
// be released.
//
// With network, bwrap runs inside the forwarder's namespace (nsenter) instead of making its own:
// that namespace has a loopback, the forwarder's port and nothing else. The host's namespace must
// never be the one joined (a pid that is not the forwarder's): a namespace that is the holder's
// own, or no namespace at all, stops the run before anything starts.
const SCRIPT = [
  "m=$1; o=$2; n=$3; shift 3",
  'while [ "$n" -gt 0 ]; do',
  '  if [ "$1" != "$2" ]; then "$m" --bind "$1" "$2" || exit 125; fi',
  '  "$m" -t overlay overlay -o "${o}lowerdir=$2,upperdir=$3,workdir=$4" "$5" || exit 125',
  "  shift 5; n=$((n-1))",
  "done",
  "f=",
  'if [ "$#" -gt 3 ]; then',
  `  "$1" --unshare-user --unshare-net --unshare-ipc --new-session --die-with-parent --cap-drop ALL --ro-bind / / --dev /dev -- "$5" "$6" "$7" "$8" </dev/null >/dev/null 2>&1 ${ENDED_FD}>&- &`,
  "  f=$!",
  "fi",
  `exec ${FORWARDER_READY_FD}>&-`,
  `read -r _ p <&${ENDED_FD} || exit 125`,
  `{ IFS= read -r -d '' sh_; IFS= read -r -d '' cmd_; } <"$3"`,
  'if [ -n "$f" ]; then',
  '  case $p in ""|*[!0-9]*) exit 125;; esac',
  "  [[ -e /proc/$p/ns/net && ! /proc/$p/ns/net -ef /proc/$$/ns/net ]] || exit 125",
  `  "$4" --net=/proc/$p/ns/net -- "$1" --args 6 6<"$2" -- "$sh_" -c "$cmd_" </dev/null ${ENDED_FD}>&-`,
  "else",
  `  "$1" --args 6 6<"$2" -- "$sh_" -c "$cmd_" </dev/null ${ENDED_FD}>&-`,
  "fi",
  "s=$?",
  // Gone before the end is reported: the forwarder lives in the run's cgroup, which is removed after.
  'if [ -n "$f" ]; then kill "$f" 2>/dev/null; wait "$f" 2>/dev/null; fi',
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
  /** util-linux's mount, by its absolute path. */
  readonly mount: string;
  readonly shell: string;
  readonly mode: HolderMode;
  readonly roots: readonly StagedRoot[];
  /** The bwrap to run, the file its options will be in, and the file its command will be in. */
  readonly bwrap: string;
  readonly argsFile: string;
  readonly commandFile: string;
  readonly network?: HolderNetwork;
}): HolderCommand {
  const ns = opts.mode === "root" ? ["-m", "--propagation", "private"] : ["-Urm", "--propagation", "private"];
  const options = `${opts.mode === "userns" ? "userxattr," : ""}${OVERLAY_OPTIONS}`;
  const roots = opts.roots.flatMap((r) => [r.root, r.lower, r.upper, r.work, r.merged]);
  const n = opts.network;
  const net = n ? [n.nsenter, n.node, n.forwarder, n.socket, String(n.port)] : [];
  return {
    file: opts.unshare,
    args: [
      ...ns,
      opts.shell,
      "-c",
      SCRIPT,
      "pi-auto-mode-holder",
      opts.mount,
      options,
      String(opts.roots.length),
      ...roots,
      opts.bwrap,
      opts.argsFile,
      opts.commandFile,
      ...net,
    ],
  };
}
