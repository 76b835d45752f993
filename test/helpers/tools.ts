// Tools of "another extension" for the end-to-end tests.

import type { ExtensionAPI, ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export interface DeployTool {
  readonly factory: ExtensionFactory;
  /** How many times it ran. */
  runs(): number;
  /** What each run was called with, in order. */
  readonly calls: Array<Record<string, unknown>>;
}

/** A custom tool the gate cannot know (routed to review): it runs only when auto mode lets it. */
export function deployTool(): DeployTool {
  const calls: Array<Record<string, unknown>> = [];
  const factory = (api: ExtensionAPI) => {
    api.registerTool({
      name: "deploy_service",
      label: "deploy",
      description: "deploy a service",
      parameters: Type.Object({ service: Type.String() }),
      async execute(_id, params) {
        calls.push(params as Record<string, unknown>);
        return { content: [{ type: "text", text: `deployed ${(params as { service: string }).service}` }], details: {} };
      },
    });
  };
  return { factory, runs: () => calls.length, calls };
}
