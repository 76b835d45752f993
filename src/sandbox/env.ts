// The environment a sandboxed command gets: the agent's, minus credentials, with temp and cache
// locations moved into the temporary root (the home directory is read-only in there, so a
// default cache location would make `npm install` or `go build` fail with EROFS).

import { join } from "node:path";
import { redact } from "../request/redact.ts";
import { isSecretName } from "../request/secret-names.ts";
import data from "./data/sandbox.json" with { type: "json" };

const DROP_NAMES = new Set(data.env.dropNames);

/** A URL with a user part (`redis://:pw@host`, a Sentry DSN's key): the user part is a credential. */
const URL_WITH_USER = /^[a-z][a-z0-9+.-]*:\/\/[^/\s@]+@/i;

/** Why a variable is dropped, or undefined when it is kept. */
export function droppedBecause(name: string, value: string): "name" | "value" | undefined {
  if (DROP_NAMES.has(name) || data.env.dropPrefixes.some((p) => name.startsWith(p))) return "name";
  if (isSecretName(name)) return "name";
  // A value shaped like a credential (an sk-... key, a JWT, a URL with a password) goes too,
  // whatever the variable is called.
  if (redact(value) !== value || URL_WITH_USER.test(value)) return "value";
  return undefined;
}

/** The sandbox's environment; `base` is what Pi would give the command (PI_* included). */
export function sandboxEnv(base: NodeJS.ProcessEnv, tmpRoot: string): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (droppedBecause(name, value) === undefined) out[name] = value;
  }
  for (const name of data.env.tmpVars) out[name] = tmpRoot;
  for (const [name, rel] of Object.entries(data.env.cacheDirs)) out[name] = join(tmpRoot, rel);
  for (const [name, value] of Object.entries(data.env.set)) out[name] = value;
  return out;
}
