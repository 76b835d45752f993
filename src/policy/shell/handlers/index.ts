// The code handlers of every family in one registry, and the handlers and judgements the analysis
// calls by name (git, xargs and npx, option command lines, what find selects).

import type { HandlerRegistry } from "../invocation.ts";
import { ARCHIVE_HANDLERS } from "./archives.ts";
import { EXEC_HANDLERS } from "./exec.ts";
import { FIND_HANDLERS } from "./find.ts";
import { OPERAND_HANDLERS } from "./operands.ts";
import { TEXT_HANDLERS } from "./text.ts";

/** Every family's code handlers, by the name commands.json gives them (the families' names are disjoint). */
export const CODE_HANDLERS: HandlerRegistry = {
  ...OPERAND_HANDLERS,
  ...TEXT_HANDLERS,
  ...ARCHIVE_HANDLERS,
  ...FIND_HANDLERS,
  ...EXEC_HANDLERS,
};

export { commandOptionFindings, npx, xargs } from "./exec.ts";
export { foundPaths } from "./find.ts";
export { git } from "./git.ts";
export { judgeFoundRemoval, operandHandler } from "./operands.ts";
