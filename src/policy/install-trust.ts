// Whether the copy of auto mode that runs could have been written by the agent it gates (P3, P5).
// A copy inside the workspace or the temporary root is one the agent can edit (a project that
// ships its own "auto mode", a checkout being developed, a copy the agent itself installed): its
// gate is only as strong as the agent's last edit. Such a copy gates nothing but plain reads,
// unless the user says, outside the model's reach, that this is the copy they develop.

import { decision, type Decision } from "./types.ts";
import { isWithin, type Places } from "./places.ts";

/** Set in the environment Pi starts with (a model cannot set it for the running Pi) to develop a checkout. */
export const WRITABLE_COPY_ENV = "PI_AUTO_MODE_TRUST_WRITABLE_COPY";

export type InstallTrust =
  | { readonly kind: "trusted"; readonly root: string }
  /** Inside (or holding) a root the agent can write; `optedIn`: the user develops this copy. */
  | { readonly kind: "writable"; readonly root: string; readonly within: string; readonly optedIn: boolean };

export function optedIn(env: NodeJS.ProcessEnv): boolean {
  return env[WRITABLE_COPY_ENV] === "1";
}

/** `root`: the real path of the package that runs. A writable root holding it, or inside it, makes it writable. */
export function installTrust(root: string, places: Pick<Places, "workspace" | "tmpRoot">, env: NodeJS.ProcessEnv): InstallTrust {
  for (const [what, dir] of [
    ["the workspace", places.workspace],
    ["the temporary root", places.tmpRoot],
  ] as const) {
    if (isWithin(dir, root) || isWithin(root, dir)) return { kind: "writable", root, within: `${what} ${dir}`, optedIn: optedIn(env) };
  }
  return { kind: "trusted", root };
}

/** What a writable copy does with a call: plain reads go on, anything else is denied (never reviewed). */
export function guardedByInstall(trust: InstallTrust, d: Decision): Decision {
  if (trust.kind === "trusted" || trust.optedIn) return d;
  if (d.route === "deny" || (d.route === "allow" && d.reason === "read-only")) return d;
  return decision(
    "deny",
    "untrusted-install",
    `auto mode is running from ${trust.root}, inside ${trust.within}, where the agent can change it, so it cannot vouch for its own judgement: only plain reads run. Install it outside the workspace (pi install from its registry or another folder), or, to develop this copy, start Pi with ${WRITABLE_COPY_ENV}=1.`,
  );
}

/** One line for the status and doctor. */
export function installLine(trust: InstallTrust): string {
  if (trust.kind === "trusted") return `loaded from ${trust.root} (outside the workspace and the temporary root: trusted)`;
  return trust.optedIn
    ? `loaded from ${trust.root}, inside ${trust.within}: a development copy (${WRITABLE_COPY_ENV}=1), gating as usual but not protecting its own files`
    : `loaded from ${trust.root}, inside ${trust.within}: not trusted, only plain reads run`;
}
