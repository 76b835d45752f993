// The code handlers of every family in one registry, and the handlers and judgements the analysis
// calls by name (git, xargs and npx, option command lines, what find selects).

import type { HandlerRegistry } from "../invocation.ts";
import { ARCHIVE_HANDLERS } from "./archives.ts";
import { EDITOR_HANDLERS } from "./editors.ts";
import { FIND_HANDLERS } from "./find.ts";
import { INTERPRETER_HANDLERS } from "./interpreters.ts";
import { NETWORK_HANDLERS } from "./network.ts";
import { OPERAND_HANDLERS } from "./operands.ts";
import { PACKAGE_HANDLERS } from "./packages.ts";
import { PI_HANDLERS } from "./pi.ts";
import { PROCESS_HANDLERS } from "./processes.ts";
import { SHELL_HANDLERS } from "./shells.ts";
import { TEXT_HANDLERS } from "./text.ts";

/** Every family's code handlers, by the name commands.json gives them (the families' names are disjoint). */
export const CODE_HANDLERS: HandlerRegistry = {
  ...OPERAND_HANDLERS,
  ...TEXT_HANDLERS,
  ...ARCHIVE_HANDLERS,
  ...FIND_HANDLERS,
  ...SHELL_HANDLERS,
  ...INTERPRETER_HANDLERS,
  ...PACKAGE_HANDLERS,
  ...NETWORK_HANDLERS,
  ...PROCESS_HANDLERS,
  ...EDITOR_HANDLERS,
  ...PI_HANDLERS,
};

export { foundPaths } from "./find.ts";
export { git } from "./git.ts";
export { judgeFoundRemoval, operandHandler } from "./operands.ts";
export { npx } from "./packages.ts";
export { xargs } from "./processes.ts";
export { commandOptionFindings } from "./shells.ts";
