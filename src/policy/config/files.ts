// File names of the configuration, shared by the loader and by self-protection.

import { join } from "node:path";

/** The user configuration, in Pi's agent directory. */
export const USER_CONFIG_FILE = "auto-mode.json";

/** The project configuration, relative to the workspace. It can only tighten. */
export const PROJECT_CONFIG_FILE = join(".pi", "auto-mode.json");
