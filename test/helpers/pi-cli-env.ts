// The environment a real `pi` CLI child runs in for a test: offline, with its own home and agent
// dir, and the Node running the test first on PATH (`pi` starts with `#!/usr/bin/env node`, so it
// then runs on that Node, not on whatever `node` the machine has).

import { delimiter, dirname } from "node:path";

export function piCliEnv(home: string, agentDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: [dirname(process.execPath), process.env.PATH ?? ""].join(delimiter),
    HOME: home,
    USERPROFILE: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
  };
}
