// A data file replaced for one child process, as an edit of the installed file would replace it: a
// Node module hook (loaded with --import) that answers every import of a path ending in `suffix`
// with the given JSON.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** Writes the hook into `dir`; returns the file URL to pass to node's --import. */
export function jsonOverride(dir: string, suffix: string, data: unknown): string {
  const hooks = join(dir, "hooks.mjs");
  writeFileSync(
    hooks,
    `export async function load(url, context, next) {
  if (url.endsWith(${JSON.stringify(suffix)})) return { format: "json", source: ${JSON.stringify(JSON.stringify(data))}, shortCircuit: true };
  return next(url, context);
}`,
  );
  const register = join(dir, "register.mjs");
  writeFileSync(register, `import { register } from "node:module"; register(${JSON.stringify(pathToFileURL(hooks).href)});`);
  return pathToFileURL(register).href;
}
