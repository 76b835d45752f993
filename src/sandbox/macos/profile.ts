// The Seatbelt (SBPL) profile for `sandbox-exec` on macOS. Generated from the same layout as the
// Linux mounts. UNTESTED ON REAL HARDWARE: these machines cannot run sandbox-exec, so only the
// generated profile is tested (test/sandbox/macos-profile.test.ts reads it with an evaluator of
// its rules); the probe still runs it for real before macOS trusts it, and a profile Seatbelt
// refuses makes the backend unavailable, never unsandboxed.
//
// macOS has no staging: nothing judges a command's effects after it ends, so this profile alone
// guards the workspace. Shape: deny by default, allow what ordinary builds need, then the denies.
// Seatbelt lets the LAST matching rule decide (the rule Apple's own profiles and sandbox-runtime's
// rely on), so every deny comes after the allows it narrows; protected paths are also carved out
// of the write allow itself (require-not), so they hold whatever the precedence. Seatbelt matches
// paths, so a protected path that does not exist yet is covered without a placeholder.
//
// Paths are matched without regard to ASCII case: APFS and HFS+ ignore case by default, so
// `.GIT/config` is `.git/config` to git and `Agents.MD` is an agent's AGENTS.md. What is not
// matched: names with code points HFS+ (not APFS) ignores (`.g\u200Cit`), since Seatbelt's
// regex syntax for such bytes is not known to us.

import { dirname } from "node:path";
import pathData from "../../policy/data/paths.json" with { type: "json" };
import type { SandboxLayout } from "../layout.ts";

/** A string literal for SBPL: backslashes and double quotes escaped, control characters refused. */
export function sbplString(s: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(s)) throw new Error(`path with a control character cannot go into a sandbox profile: ${JSON.stringify(s)}`);
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/**
 * A regex (its body) that matches `s` exactly, ASCII letters in either case: `.git` gives
 * `\.[gG][iI][tT]`. Characters special to a regex are escaped; everything else stands for itself.
 */
export function foldedRegex(s: string): string {
  let out = "";
  for (const c of s) {
    const lo = c.toLowerCase();
    const up = c.toUpperCase();
    if (/^[a-z]$/.test(lo) && lo !== up && /^[A-Z]$/.test(up)) out += `[${lo}${up}]`;
    else if (/[.[\]()*+?{}|^$\\]/.test(c)) out += `\\${c}`;
    else out += c;
  }
  return out;
}

const regexFilter = (body: string) => `(regex ${sbplString(body)})`;
const alternatives = (names: readonly string[]) => `(${names.map(foldedRegex).join("|")})`;

/**
 * One regex per root for many paths, in any case: `^<root>/(<rel>|<rel>...)<tail>`, the root the
 * longest of `roots` that holds them (`/` for the rest), so a profile with many protected paths
 * stays a few rules long. `tail` is `(/|$)` for a path and everything below it, `$` for the path only.
 */
function pathsFilters(paths: readonly string[], roots: readonly string[], tail: string): string[] {
  const byRoot = new Map<string, string[]>();
  const sorted = [...roots].sort((a, b) => b.length - a.length);
  for (const p of new Set(paths)) {
    const root = sorted.find((r) => p.startsWith(r.endsWith("/") ? r : `${r}/`)) ?? "/";
    const rel = p.slice(root === "/" ? 1 : root.length + 1);
    if (rel === "") continue;
    byRoot.set(root, [...(byRoot.get(root) ?? []), rel]);
  }
  return [...byRoot].map(([root, rels]) => regexFilter(`^${root === "/" ? "" : foldedRegex(root)}/${alternatives(rels.sort())}${tail}`));
}

/**
 * Device files a shell writes. /dev/tty is the controlling terminal, and the command has none
 * (spawn.ts starts it in a session of its own), so opening it fails; the user's other terminals
 * (/dev/ttys*) and new pseudo-terminals (/dev/ptmx) are not here: Seatbelt cannot tell the
 * command's own pseudo-terminal from the user's, and writing or ioctl-ing (TIOCSTI) another
 * terminal of the same user types into a shell outside the sandbox.
 */
const DEVICE_WRITES = ["/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/dtracehelper"];

/** Terminal devices: pseudo-terminals (new and BSD-style), their multiplexer, the console. */
const TERMINALS = ["^/dev/ttys[0-9]+$", "^/dev/(pty|tty)[p-w][0-9a-f]$", "^/dev/ptmx$", "^/dev/console$"];

/** The Mach services a sandboxed command may look up, each with why ordinary tools need it. */
export const KEPT_MACH_SERVICES: readonly { readonly name: string; readonly why: string }[] = [
  { name: "com.apple.system.opendirectoryd.libinfo", why: "user and group look-ups (getpwuid, getpwnam): git, ssh, whoami, ~ expansion" },
  { name: "com.apple.system.opendirectoryd.membership", why: "group membership (getgrouplist, mbr_*) that access checks and id use" },
  { name: "com.apple.system.logger", why: "the legacy syslog (ASL) endpoint libc logs to; write-only" },
  { name: "com.apple.logd", why: "os_log, which every framework writes to; write-only" },
  { name: "com.apple.system.notification_center", why: "notify(3), which libc uses to learn of time zone and directory cache changes" },
];

/**
 * Services refused by name as well as by the default deny, so the profile says why. Each one
 * reaches outside the sandbox: the keychain (`git credential-osxkeychain get`, `security
 * find-generic-password`), LaunchServices and Apple Events (`open -a Terminal x.command` starts a
 * program outside the sandbox), trustd (it fetches the certificate URLs a caller hands it: a way
 * out to the network), DNS (mDNSResponder over Mach carries data out), diagnostics and time.
 */
const REFUSED_MACH_SERVICES = [
  "com.apple.SecurityServer",
  "com.apple.securityd.xpc",
  "com.apple.trustd",
  "com.apple.trustd.agent",
  "com.apple.coreservices.launchservicesd",
  "com.apple.lsd.mapdb",
  "com.apple.coreservices.appleevents",
  "com.apple.dnssd.service",
  "com.apple.mDNSResponder",
  "com.apple.diagnosticd",
  "com.apple.timed",
];

/** Build output: a package's own `.github` or `.vscode` there is written by installs and run by nothing. */
const REGENERABLE = pathData.regenerableDirs;
/** Every protected name the gate knows, wherever it lies in the workspace; `.git` apart (no build-output exception). */
const ANYWHERE = [...pathData.protectedNames, ...pathData.protectedFileNames, ...pathData.protectedSequences.map((s) => s.join("/"))].filter(
  (n) => n !== ".git",
);

/**
 * Protected names at any depth of the workspace (macOS has no judge to hold a nested repository or
 * `AGENTS.md` after the command, as the staged Linux sandbox does). In build output only `.git`:
 * the exception holds only when no folder above the build output starts with a dot (every
 * protected folder name does), so `.pi/npm/node_modules` stays protected.
 */
function anywhereFilters(workspace: string): string[] {
  const ws = foldedRegex(workspace);
  const names = regexFilter(`^${ws}/(.*/)?${alternatives(ANYWHERE)}(/|$)`);
  const inBuildOutput = regexFilter(`^${ws}/([^./][^/]*/)*${alternatives(REGENERABLE)}/`);
  return [regexFilter(`^${ws}/(.*/)?${foldedRegex(".git")}(/|$)`), `(require-all ${names} (require-not ${inBuildOutput}))`];
}

/** The folders above `p`, up to but not including `/`. */
function ancestorsOf(p: string): string[] {
  const out: string[] = [];
  for (let a = dirname(p); a !== "/" && a !== "."; a = dirname(a)) out.push(a);
  return out;
}

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
    `(allow mach-lookup ${KEPT_MACH_SERVICES.map((s) => `(global-name ${sbplString(s.name)})`).join(" ")})`,
  ];
  const roots = layout.writable;
  const protectedFilters = [
    ...pathsFilters([...input.protectedPaths, ...layout.masked.filter((m) => m.kind === "dir").map((m) => m.path)], roots, "(/|$)"),
    ...pathsFilters(
      layout.masked.filter((m) => m.kind === "file").map((m) => m.path),
      roots,
      "$",
    ),
    ...anywhereFilters(layout.workspace),
  ];
  const inRoots = roots.length === 1 ? `(subpath ${sbplString(roots[0]!)})` : `(require-any ${roots.map((r) => `(subpath ${sbplString(r)})`).join(" ")})`;
  const writeRules = [`(require-all ${inRoots} (require-not (require-any ${protectedFilters.join(" ")})))`];
  writeRules.push(...DEVICE_WRITES.map((d) => `(literal ${sbplString(d)})`), '(regex #"^/dev/fd/[0-9]+$")');
  lines.push(`(allow file-write*\n  ${writeRules.join("\n  ")})`);

  // The denies, after every allow (the last matching rule decides).
  // Protected paths: no write of any kind, no hard link or clone of them (a link to a hook is the hook).
  lines.push(`(deny file-write* file-link file-clone\n  ${protectedFilters.join("\n  ")})`);
  // Their ancestors: a folder above a protected path moved away takes the path out of its rule
  // (`mv sub sub2; write sub2/.git/hooks/pre-commit; mv sub2 sub`), and a missing one made a
  // symlink points the path elsewhere. So none of them is removed, renamed or created, as
  // sandbox-runtime does; files inside them are written as usual. Names matched anywhere need no
  // ancestors: their rule follows them wherever they are moved (the limit is in the README).
  const literal = [...input.protectedPaths, ...layout.masked.map((m) => m.path)];
  const ancestors = [...new Set(literal.flatMap(ancestorsOf))].sort();
  if (ancestors.length > 0) lines.push(`(deny file-write-unlink file-write-create\n  ${pathsFilters(ancestors, roots, "$").join("\n  ")})`);
  // Identity secrets: neither readable nor writable.
  if (layout.masked.length > 0)
    lines.push(
      `(deny file-read* file-write* file-link file-clone\n  ${layout.masked.map((m) => (m.kind === "dir" ? `(subpath ${sbplString(m.path)})` : `(literal ${sbplString(m.path)})`)).join("\n  ")})`,
    );
  // Other terminals: not even readable (a read takes the keys typed into the user's other shells).
  lines.push(`(deny file-read* file-write* file-ioctl\n  ${TERMINALS.map(regexFilter).join("\n  ")})`);
  // No set-user-id or set-group-id bit on anything, and Gatekeeper's quarantine mark neither set
  // nor removed (removing it would let a downloaded program run unchecked), as Apple's own
  // application profile does.
  lines.push("(deny file-write-setugid)");
  lines.push('(deny file-write-xattr (xattr "com.apple.quarantine"))');
  // No network at all: macOS has no private loopback, so even 127.0.0.1 would be the host's, and
  // there is no forwarder: the sandbox.network allowlist is not used on macOS.
  lines.push("(deny network*)");
  lines.push(`(deny mach-lookup ${REFUSED_MACH_SERVICES.map((s) => `(global-name ${sbplString(s)})`).join(" ")})`);
  return lines.join("\n") + "\n";
}
