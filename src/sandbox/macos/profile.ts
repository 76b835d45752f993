// The Seatbelt (SBPL) profile for `sandbox-exec` on macOS. Generated from the same layout as the
// Linux mounts. UNTESTED ON REAL HARDWARE: these machines cannot run sandbox-exec, so only the
// generated text is unit-tested; the probe still runs it for real before macOS trusts it.
//
// Shape: deny by default, then allow what ordinary builds need. Writes are allowed only below the
// writable roots and never below a protected path; carve-outs use require-not inside the allow
// rule, so they hold whatever precedence Seatbelt gives to later rules. Seatbelt matches paths,
// so a protected path that does not exist yet is covered without a placeholder.

import type { SandboxLayout } from "../layout.ts";

/** A string literal for SBPL: backslashes and double quotes escaped, control characters refused. */
export function sbplString(s: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(s)) throw new Error(`path with a control character cannot go into a sandbox profile: ${JSON.stringify(s)}`);
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Device files every shell needs to write. */
const DEVICE_WRITES = ["/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/dtracehelper"];

/** Mach services for user and group lookups, time zones and system logging; nothing that starts processes. */
const MACH_SERVICES = [
  "com.apple.system.opendirectoryd.libinfo",
  "com.apple.system.opendirectoryd.membership",
  "com.apple.system.logger",
  "com.apple.system.notification_center",
  "com.apple.logd",
  "com.apple.diagnosticd",
  "com.apple.trustd.agent",
  "com.apple.SecurityServer",
  "com.apple.coreservices.launchservicesd",
  "com.apple.timed",
];

export interface ProfileInput {
  readonly layout: SandboxLayout;
  /** Protected paths inside the writable roots: existing ones and ones that may be created. */
  readonly protectedPaths: readonly string[];
}

export function seatbeltProfile(input: ProfileInput): string {
  const { layout } = input;
  const lines: string[] = [
    "(version 1)",
    "(deny default)",
    "(allow process-exec)",
    "(allow process-fork)",
    "(allow signal (target same-sandbox))",
    "(allow process-info* (target same-sandbox))",
    "(allow sysctl-read)",
    "(allow file-read*)",
    "(allow ipc-posix-sem)",
    "(allow ipc-posix-shm-read* ipc-posix-shm-write-create ipc-posix-shm-write-data ipc-posix-shm-write-unlink)",
    "(allow pseudo-tty)",
    '(allow file-read* file-write* file-ioctl (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))',
    `(allow mach-lookup ${MACH_SERVICES.map((s) => `(global-name ${sbplString(s)})`).join(" ")})`,
  ];
  const protect = (root: string) => input.protectedPaths.filter((p) => p === root || p.startsWith(root.endsWith("/") ? root : `${root}/`));
  const writeRules: string[] = [];
  for (const root of layout.writable) {
    const nots = protect(root)
      .filter((p) => p !== root)
      .map((p) => `(require-not (subpath ${sbplString(p)}))`);
    writeRules.push(nots.length === 0 ? `(subpath ${sbplString(root)})` : `(require-all (subpath ${sbplString(root)}) ${nots.join(" ")})`);
  }
  writeRules.push(...DEVICE_WRITES.map((d) => `(literal ${sbplString(d)})`), '(regex #"^/dev/fd/[0-9]+$")');
  lines.push(`(allow file-write*\n  ${writeRules.join("\n  ")})`);
  // No network at all: macOS has no private loopback, so even 127.0.0.1 would be the host's.
  lines.push("(deny network*)");
  // DNS goes through mDNSResponder over Mach, not a socket: deny it too, it can carry data out.
  lines.push('(deny mach-lookup (global-name "com.apple.dnssd.service") (global-name "com.apple.mDNSResponder"))');
  if (layout.masked.length > 0)
    lines.push(
      `(deny file-read* file-write*\n  ${layout.masked.map((m) => (m.kind === "dir" ? `(subpath ${sbplString(m.path)})` : `(literal ${sbplString(m.path)})`)).join("\n  ")})`,
    );
  return lines.join("\n") + "\n";
}
