// Pi's own command line, which can take auto mode out of the agent.

import { finding } from "../finding.ts";
import type { Handler, HandlerRegistry } from "../invocation.ts";
import { PI_CLI, reasonOf, SUBCOMMANDS } from "../table.ts";

/**
 * Pi's command line. Pi loads auto mode through its settings' package lists: `pi remove`/`uninstall`
 * take an entry out (whichever source it names may be the one that loads auto mode) and `pi config`
 * switches resources off, so they are denied as self-disabling, as is an agent started without
 * extensions. Printing a provider's credential is a secret read.
 */
const piCli: Handler = (inv) => {
  const off = inv.args.find((a) => a.value !== null && PI_CLI.disablingOptions.has(a.value));
  if (off) return [finding("self-protection", `${inv.name} ${off.value} starts an agent with auto mode off`)];
  const table = SUBCOMMANDS.get("pi")!;
  let at = -1;
  for (let i = 0; i < inv.args.length; i++) {
    const v = inv.args[i]!.value;
    if (v === null) return [finding("dynamic-command", `${inv.name} with an argument only known at run time`)];
    if (v === "--") break;
    if (table.byName.has(v) || !v.startsWith("-")) {
      at = i;
      break;
    }
    if (PI_CLI.valueOptions.has(v)) i++;
  }
  const sub = at >= 0 ? inv.args[at]!.value! : undefined;
  const cls = sub === undefined ? (table.empty ?? table.fallback) : (table.byName.get(sub) ?? table.fallback);
  if (cls === "deny") return [finding("self-protection", `${inv.name} ${sub} removes or disables Pi packages, the one that loads auto mode among them`)];
  const rest = inv.args.slice(at + 1).map((a) => a.value);
  if (
    sub !== undefined &&
    PI_CLI.secretSubcommands.some(([s, ...words]) => s === sub && words.every((w, i) => (w.startsWith("-") ? rest.includes(w) : rest[i] === w)))
  )
    return [finding("identity-secret", `${inv.name} ${sub} ${rest[0] ?? ""} prints a provider credential`)];
  const reason = reasonOf(inv.name, cls);
  if (cls === "contain") return [finding("network", `${inv.name} runs an agent that reaches the model provider`)];
  return [finding(reason, `${inv.name} ${sub ?? ""}`.trim())];
};

/** This family's code handlers, by the name commands.json gives them. */
export const PI_HANDLERS: HandlerRegistry = {
  pi: () => piCli,
};
