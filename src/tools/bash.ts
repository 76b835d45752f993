// The `bash` tool, overridden so that execution goes through the sandbox backend. Everything else
// is Pi's own: the definition is spread from createBashToolDefinition (renderers, description,
// prompt text) and each call is executed by a fresh Pi definition with our BashOperations, so
// output truncation, the full-output file, timeouts, the command prefix and the PI_* variables
// behave exactly as Pi makes them.
//
// The tool never decides anything: the gate (tool_call) admits a call and says where it runs,
// and the tool takes that admission once. A call without one never runs (P4, P9).

import { existsSync } from "node:fs";
import {
  createBashToolDefinition,
  createLocalBashOperations,
  getShellConfig,
  type BashOperations,
  type ExtensionToolContext,
  type ToolDefinition,
} from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { AdmissionBook } from "../sandbox/admission.ts";
import type { SandboxController } from "../sandbox/controller.ts";
import { SANDBOX_PERMISSIONS } from "../sandbox/escalation.ts";
import { DENIAL_HEAD } from "../policy/denial.ts";
import type { SandboxScope } from "../sandbox/types.ts";

export interface BashShellSettings {
  readonly shellPath?: string;
  readonly shellCommandPrefix?: string;
}

export interface BashToolDeps {
  readonly controller: () => SandboxController;
  readonly admissions: AdmissionBook;
  /** Pi's shell settings, read at each call (they may change, and are not readable at load time). */
  readonly settings: () => BashShellSettings;
  /** Pi's ordinary local backend; injectable so tests can count what runs on the host. */
  readonly localOperations?: (shellPath: string | undefined) => BashOperations;
}

const MAX_TIMEOUT_S = 2_147_483_647 / 1000;

const GUIDELINE =
  'Shell commands run in an OS sandbox: they can write only the workspace and the temporary directory ($TMPDIR), not .git or other protected paths, and have no network. If a command truly needs to run outside it, call bash again with sandbox_permissions "require_escalated" and a justification; each such call is reviewed on its own.';

function schema(base: ToolDefinition["parameters"]) {
  const props = (base as unknown as { properties: Record<string, never> }).properties;
  return Type.Object({
    ...props,
    sandbox_permissions: Type.Optional(
      Type.Union(
        SANDBOX_PERMISSIONS.map((p) => Type.Literal(p)),
        { description: 'Where the command runs: "use_default" (the sandbox, the default) or "require_escalated" (outside the sandbox, only after a fresh review)' },
      ),
    ),
    justification: Type.Optional(Type.String({ description: 'Required with "require_escalated": why this command must run outside the sandbox' })),
  });
}

/** Pi's BashOperations contract, over the sandbox controller. */
export function sandboxOperations(controller: SandboxController, scope: SandboxScope, shell: string): BashOperations {
  return {
    exec: async (command, cwd, { onData, signal, timeout, env }) => {
      if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_S))
        throw new Error(`Invalid timeout: must be a finite number of seconds up to ${MAX_TIMEOUT_S}`);
      if (signal?.aborted) throw new Error("aborted");
      if (!existsSync(cwd)) throw new Error(`Working directory does not exist: ${cwd}\nCannot execute bash commands.`);
      const r = await controller.run({ command, cwd, scope, env: env ?? process.env, shell }, { onData, signal, timeout });
      switch (r.kind) {
        case "exited":
          return { exitCode: r.exitCode };
        case "aborted":
          throw new Error("aborted");
        case "timeout":
          throw new Error(`timeout:${r.seconds}`);
        case "refused":
          throw new Error(`Auto mode's sandbox did not run this command: ${r.reason}`);
        case "not-started":
          throw new Error(`The sandbox failed to start, so the command did not run: ${r.reason}. Auto mode denies shell commands until Pi restarts.`);
        case "ambiguous":
          throw new Error(`The sandbox failed while the command may have been running; it is not retried: ${r.reason}`);
      }
    },
  };
}

/**
 * Whether the `bash` Pi would run is this definition. Another extension (or an SDK custom tool)
 * registering `bash` wins over ours, and would run sandbox-routed commands bare: then the
 * backend must count as unavailable. Pi passes the registered schema through, so identity tells.
 */
export function isActiveBash(tools: readonly { readonly name: string; readonly parameters: unknown }[], ours: ToolDefinition): boolean {
  const bash = tools.find((t) => t.name === "bash");
  return bash === undefined || bash.parameters === ours.parameters;
}

export function createSandboxedBashTool(deps: BashToolDeps, cwd: string = process.cwd()): ToolDefinition {
  const base = createBashToolDefinition(cwd);
  const local = deps.localOperations ?? ((shellPath) => createLocalBashOperations({ shellPath }));
  return {
    ...base,
    description: `${base.description} By default the command runs in an OS sandbox (no network; writes only in the workspace and $TMPDIR).`,
    promptGuidelines: [...(base.promptGuidelines ?? []), GUIDELINE],
    parameters: schema(base.parameters),
    // Pi judges every call of a parallel batch before it runs any; a shell command can change what
    // its siblings' judgements rest on (`ln -s` under a path a sibling write was judged to keep in
    // the workspace). A sequential tool makes Pi judge and run a batch that contains it call by call.
    executionMode: "sequential",
    async execute(toolCallId, params, signal, onUpdate, ctx: ExtensionToolContext) {
      const p = params as { command: string; timeout?: number };
      const taken = deps.admissions.take(toolCallId);
      // Every refusal says it was automatic policy, not the user (P4).
      if (taken.kind === "missing") throw new Error(`${DENIAL_HEAD} This bash call did not pass auto mode's gate, so it does not run.`);
      if (taken.kind === "conflict") throw new Error(`${DENIAL_HEAD} Two tool calls share this id, so which one was judged is unclear; neither runs.`);
      const a = taken.admission;
      // The input is frozen after the gate; this only catches a bug that would run something unjudged.
      if (a.command !== p.command) throw new Error(`${DENIAL_HEAD} The command changed after it was judged, so it does not run.`);
      const settings = deps.settings();
      const operations =
        a.placement === "sandbox" ? sandboxOperations(deps.controller(), a.scope, getShellConfig(settings.shellPath).shell) : local(settings.shellPath);
      const run = createBashToolDefinition(ctx.cwd || cwd, { operations, commandPrefix: settings.shellCommandPrefix, shellPath: settings.shellPath });
      return run.execute(toolCallId, { command: p.command, timeout: p.timeout }, signal, onUpdate, ctx);
    },
  } as ToolDefinition;
}
