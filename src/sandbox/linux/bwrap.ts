// The bubblewrap command line for one sandboxed command. Pure: the layout, the placeholders and
// the limits in, argv out. Every flag is here for a measured reason (../shared/research/sandbox.md):
//
// - new user, pid, net, ipc, uts (and, where possible, cgroup) namespaces: no host processes,
//   no network but the sandbox's own loopback, no host SysV IPC;
// - --cap-drop ALL: as root, bwrap otherwise keeps every capability inside the sandbox;
// - --disable-userns: no nested user namespace, so no way to get capabilities back and remount;
// - --die-with-parent and the pid namespace: nothing outlives the command (no detached jobs);
// - --new-session: no TIOCSTI keystroke injection into the agent's terminal;
// - a fresh /dev (host disks are not visible; a read-only mount does not stop writes to device
//   nodes) and a fresh /proc with /proc/sys read-only: bwrap skips its own /proc/sys cover when
//   the caller is root, and root in the sandbox is host root for files guarded only by mode bits.

import type { SandboxLayout } from "../layout.ts";
import type { Limits } from "./limits.ts";

const PLACEHOLDER_TMPFS_BYTES = 65536;

export interface BwrapPlan {
  readonly layout: SandboxLayout;
  /** Placeholders (empty directories we made) standing in for layout.missing. */
  readonly placeholders: readonly string[];
  /** Missing entries that appeared meanwhile: ordinary protected entries now. */
  readonly appeared: readonly string[];
  readonly cwd: string;
  /** The user's shell (bash), run inside. */
  readonly shell: string;
  readonly command: string;
  readonly limits: Limits;
  readonly fds: { readonly seccomp: number; readonly started: number };
  /** Staged roots: the merged view (a path in the holder's namespace) bound where the root is. */
  readonly views?: ReadonlyMap<string, string>;
  /** Folders hidden under an empty tmpfs: the stage folder, so no command sees another's layers. */
  readonly hidden?: readonly string[];
  /** Inside the holder's user namespace the caller is uid 0: map the command back to the caller. */
  readonly ids?: { readonly uid: number; readonly gid: number };
  /** The command's environment, set by bwrap (a holder is started before the command is known). */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * The holder starts bwrap inside the network forwarder's namespace (holder.ts): then bwrap must
   * not make one of its own, which would have no way out at all.
   */
  readonly forwarderNetwork?: boolean;
}

/**
 * The shell line that runs first inside the sandbox, before the command: apply the limits, then
 * tell the host the sandbox is up (one byte on the started fd) and close that fd, so the command
 * never sees it. It is a line of its own: bash runs a -c string line by line, so even a command
 * with a syntax error cannot keep the start signal from being sent. (Like Pi's own command
 * prefix, it moves the command's line numbers down by one.)
 */
export function prelude(limits: Limits, startedFd: number, strict = true): string {
  const procs = `-u ${limits.processes}`;
  const data = `-d ${Math.floor(limits.dataBytes / 1024)}`;
  // Strict (Linux): hard limits, and a sandbox that cannot set them does not start. Lenient
  // (macOS, untested on real hardware): soft limits where the system allows them.
  const ulimits = strict ? `ulimit ${procs} ${data} || exit 125` : `ulimit -S ${procs} 2>/dev/null; ulimit -S ${data} 2>/dev/null`;
  return `${ulimits}; printf . >&${startedFd} && exec ${startedFd}>&- || exit 125`;
}

/** The -c string: the prelude line, then the command exactly as written. */
export function withPrelude(command: string, limits: Limits, startedFd: number, strict = true): string {
  return `${prelude(limits, startedFd, strict)}\n${command}`;
}

export function bwrapArgs(plan: BwrapPlan): string[] {
  const { layout } = plan;
  const a: string[] = [
    "--new-session",
    "--die-with-parent",
    "--unshare-user",
    "--unshare-pid",
    ...(plan.forwarderNetwork ? [] : ["--unshare-net"]),
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
    "--disable-userns",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    // /dev itself is a tmpfs the sandbox could fill (RAM); /dev/shm gets a bounded one of its own.
    "--size",
    String(plan.limits.shmBytes),
    "--tmpfs",
    "/dev/shm",
    "--remount-ro",
    "/dev",
    "--proc",
    "/proc",
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
    // Pressure-stall triggers are host-wide registrations that root could write here.
    "--ro-bind-try",
    "/proc/pressure",
    "/proc/pressure",
  ];
  if (plan.ids) a.splice(a.indexOf("--unshare-user") + 1, 0, "--uid", String(plan.ids.uid), "--gid", String(plan.ids.gid));
  if (plan.env) {
    a.push("--clearenv");
    for (const [k, v] of Object.entries(plan.env)) if (v !== undefined) a.push("--setenv", k, v);
  }
  for (const w of layout.writable) a.push("--bind", plan.views?.get(w) ?? w, w);
  // A staged root outside the writable roots (a worktree's git dir): writable only as its staged view.
  for (const [root, view] of plan.views ?? []) if (!layout.writable.includes(root)) a.push("--bind", view, root);
  // Outermost first, so a nested entry is mounted on top of its parent's mount.
  const readOnly = [...new Set([...layout.readOnly, ...plan.appeared])].sort((x, y) => x.length - y.length || x.localeCompare(y));
  for (const p of readOnly) a.push("--ro-bind", p, p);
  // A placeholder gets a tiny tmpfs of mode 0555 rather than a read-only bind: a bind costs ~0.1 ms
  // (bwrap re-reads the whole mount table for each), a tmpfs ~0.01 ms, and there are dozens. Being
  // a mount point, it cannot be removed or renamed (EBUSY); without capabilities, writing into it
  // fails (EACCES); a command that chmods it first writes into its own tmpfs, which the host
  // never sees and which vanishes with the sandbox.
  for (const p of [...plan.placeholders].sort((x, y) => x.length - y.length || x.localeCompare(y)))
    a.push("--perms", "0555", "--size", String(PLACEHOLDER_TMPFS_BYTES), "--tmpfs", p);
  const remount: string[] = [];
  for (const m of layout.masked) {
    if (m.kind === "dir") {
      a.push("--tmpfs", m.path);
      remount.push(m.path);
    } else a.push("--ro-bind", "/dev/null", m.path);
  }
  for (const h of plan.hidden ?? []) {
    a.push("--tmpfs", h);
    remount.push(h);
  }
  for (const r of remount) a.push("--remount-ro", r);
  a.push("--seccomp", String(plan.fds.seccomp), "--chdir", plan.cwd, "--", plan.shell, "-c", withPrelude(plan.command, plan.limits, plan.fds.started));
  return a;
}
