// Tools of "another extension" for the end-to-end tests.

import type { ExtensionAPI, ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

/** A custom tool the gate cannot know (routed to review): it runs only when auto mode lets it. */
export function deployTool(): { factory: ExtensionFactory; runs: () => number } {
  let runs = 0;
  const factory = (api: ExtensionAPI) => {
    api.registerTool({
      name: "deploy_service",
      label: "deploy",
      description: "deploy a service",
      parameters: Type.Object({ service: Type.String() }),
      async execute() {
        runs++;
        return { content: [{ type: "text", text: "deployed" }], details: {} };
      },
    });
  };
  return { factory, runs: () => runs };
}
