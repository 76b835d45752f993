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

export interface BwrapPlan {
  readonly layout: SandboxLayout;
  /** Placeholders (empty directories) now standing in for layout.missing, plus entries that appeared meanwhile. */
  readonly placeholders: readonly string[];
  readonly cwd: string;
  /** The user's shell (bash), run inside. */
  readonly shell: string;
  readonly command: string;
  readonly limits: Limits;
  readonly fds: { readonly seccomp: number; readonly started: number };
}

/**
 * The shell code that runs first inside the sandbox: apply the limits, tell the host the
 * sandbox is up (one byte on the started fd, then close it so the command never sees it), and
 * replace itself by the user's shell running the command string unchanged. Separate from the
 * command, so a syntax error in the command cannot hide the start signal, and line numbers in
 * the command's error messages stay as the model wrote them.
 */
export function prelude(limits: Limits, startedFd: number, strict = true): string {
  const procs = `-u ${limits.processes}`;
  const data = `-d ${Math.floor(limits.dataBytes / 1024)}`;
  // Strict (Linux): hard limits, and a sandbox that cannot set them does not start. Lenient
  // (macOS, untested on real hardware): soft limits where the system allows them.
  const ulimits = strict ? `ulimit ${procs} ${data} || exit 125` : `ulimit -S ${procs} 2>/dev/null; ulimit -S ${data} 2>/dev/null`;
  return `${ulimits}; printf . >&${startedFd} && exec ${startedFd}>&- || exit 125; exec "$0" -c "$1"`;
}

export function bwrapArgs(plan: BwrapPlan): string[] {
  const { layout } = plan;
  const a: string[] = [
    "--new-session",
    "--die-with-parent",
    "--unshare-user",
    "--unshare-pid",
    "--unshare-net",
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
  for (const w of layout.writable) a.push("--bind", w, w);
  // Outermost first, so a nested entry is mounted on top of its parent's mount.
  const readOnly = [...new Set([...layout.readOnly, ...plan.placeholders])].sort((x, y) => x.length - y.length || x.localeCompare(y));
  for (const p of readOnly) a.push("--ro-bind", p, p);
  const remount: string[] = [];
  for (const m of layout.masked) {
    if (m.kind === "dir") {
      a.push("--tmpfs", m.path);
      remount.push(m.path);
    } else a.push("--ro-bind", "/dev/null", m.path);
  }
  for (const r of remount) a.push("--remount-ro", r);
  a.push("--seccomp", String(plan.fds.seccomp), "--chdir", plan.cwd, "--", plan.shell, "-c", prelude(plan.limits, plan.fds.started), plan.shell, plan.command);
  return a;
}
