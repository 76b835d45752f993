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
import type { ExecutionTicket, TicketBook } from "../grants/tickets.ts";
import type { RunResult, SandboxController } from "../sandbox/controller.ts";
import { SANDBOX_PERMISSIONS } from "../request/escalation-ask.ts";
import { ticketDenial } from "../policy/denial.ts";
import type { KeptEffects } from "../sandbox/effects/kept.ts";
import type { EffectReport, HeldReviewer } from "../sandbox/effects/settle.ts";
import type { EffectStore } from "../sandbox/effects/store.ts";
import type { UndoBounds } from "../sandbox/effects/undo.ts";
import type { Destination, NetReport } from "../policy/network/types.ts";
import { networkNote } from "../sandbox/network/notes.ts";
import { wantsNetwork } from "../sandbox/network/proxy-env.ts";

export interface BashShellSettings {
  readonly shellPath?: string;
  readonly shellCommandPrefix?: string;
}

export interface BashToolDeps {
  readonly controller: () => SandboxController;
  readonly admissions: TicketBook;
  /** Pi's shell settings, read at each call (they may change, and are not readable at load time). */
  readonly settings: () => BashShellSettings;
  /** Pi's ordinary local backend; injectable so tests can count what runs on the host. */
  readonly localOperations?: (shellPath: string | undefined) => BashOperations;
  /** Where applied effects are journaled and kept for undo, and how much is kept. */
  readonly effects: EffectsDeps;
  /** Who the sandbox's proxy asks about an unlisted destination (the boundary broker), when the user opted in. */
  readonly destinations?: (call: { readonly toolCallId: string; readonly ctx: ExtensionToolContext }) => ((dest: Destination) => Promise<boolean>) | undefined;
  /** What a sandboxed command did on the network, when it did anything there: recorded beside its decision. */
  readonly onNetwork?: (call: { readonly toolCallId: string }, report: NetReport) => void;
  /** Told once after each sandboxed run, with the controller's result and how long the run took (telemetry). */
  readonly onRun?: (call: { readonly toolCallId: string }, result: RunResult, durationMs: number) => void;
}

export interface EffectsDeps {
  readonly store: () => EffectStore;
  readonly bounds: () => UndoBounds;
  /** The reviewer for this call's held effects, when one is configured and auto mode gates. */
  readonly reviewer?: (call: { readonly toolCallId: string; readonly ctx: ExtensionToolContext }) => HeldReviewer | undefined;
  /** Held effects that were kept: the user may approve them (recent denials, P14). */
  readonly onHeld?: (
    call: { readonly toolCallId: string; readonly ctx: ExtensionToolContext; readonly command: string },
    kept: KeptEffects,
  ) => void | Promise<void>;
}

const MAX_TIMEOUT_S = 2_147_483_647 / 1000;

const GUIDELINE =
  'Shell commands run in an OS sandbox, over a staged copy of the workspace: what a command changes is applied when it ends, unless it would destroy work git cannot give back, rewrite git history or touch protected paths (.git config and hooks, AGENTS.md, .pi, CI files); those changes are held for review and otherwise discarded, and the result says so. Outside the workspace only the temporary directory ($TMPDIR) is writable. The network is reachable only through a proxy to the hosts the user allowlisted (package registries by default); a refused host is named in the result. If a command truly needs to run outside the sandbox, call bash again with sandbox_permissions "require_escalated" and a justification; each such call is reviewed on its own.';

function schema(base: ToolDefinition["parameters"]) {
  const props = (base as unknown as { properties: Record<string, never> }).properties;
  return Type.Object({
    ...props,
    sandbox_permissions: Type.Optional(
      Type.Union(
        SANDBOX_PERMISSIONS.map((p) => Type.Literal(p)),
        {
          description:
            'Where the command runs: "use_default" (the sandbox, the default) or "require_escalated" (outside the sandbox, only after a fresh review)',
        },
      ),
    ),
    justification: Type.Optional(Type.String({ description: 'Required with "require_escalated": why this command must run outside the sandbox' })),
  });
}

export interface SandboxRun {
  readonly ticket: Extract<ExecutionTicket, { placement: "sandbox" }>;
  /** The command as the model wrote it (Pi's command prefix is not part of what is judged). */
  readonly command: string;
  readonly effects: EffectsDeps;
  readonly reviewer: HeldReviewer | undefined;
  /** Set when the run ends: what became of a staged command's changes. */
  report?: EffectReport;
  /** Asked about an unlisted destination, when there is someone to ask. */
  readonly reviewDestination?: (dest: Destination) => Promise<boolean>;
  /** Set when the run ends: what it did on the network. */
  network?: NetReport;
  /** Set when the run ends: whether it ended with a failure of its own. */
  failed?: boolean;
  /** Set when the run ends: the controller's result and the run's duration. */
  result?: { readonly run: RunResult; readonly durationMs: number };
}

/** Pi's BashOperations contract, over the sandbox controller. */
export function sandboxOperations(controller: SandboxController, run: SandboxRun, shell: string): BashOperations {
  const { scope, workspace } = run.ticket;
  return {
    exec: async (command, cwd, { onData, signal, timeout, env }) => {
      if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_S))
        throw new Error(`Invalid timeout: must be a finite number of seconds up to ${MAX_TIMEOUT_S}`);
      if (signal?.aborted) throw new Error("aborted");
      if (!existsSync(cwd)) throw new Error(`Working directory does not exist: ${cwd}\nCannot execute bash commands.`);
      const started = performance.now();
      const r = await controller.run(
        {
          command,
          cwd,
          scope,
          env: env ?? process.env,
          shell,
          workspace,
          ...(scope.network ? { network: scope.network } : {}),
          settle: async (end) => {
            const [{ settleEffects }, { keepHeld }, { discardRun }] = await Promise.all([
              import("../sandbox/effects/settle.ts"),
              import("../sandbox/effects/kept.ts"),
              import("../sandbox/stage.ts"),
            ]);
            const store = run.effects.store();
            const bounds = run.effects.bounds();
            return settleEffects({
              ...end,
              places: scope.places,
              protectedGlobs: scope.protectedGlobs,
              command: run.command,
              store,
              bounds,
              ...(run.reviewer ? { reviewer: run.reviewer } : {}),
              ...(signal ? { signal } : {}),
              // Held effects wait for the user's approval where someone can give it (P14).
              ...(run.effects.onHeld ? { keep: (k) => keepHeld({ ...k, run: end.run, store, workspace: scope.places.workspace, bounds }, discardRun) } : {}),
            });
          },
        },
        { onData, signal, timeout, ...(run.reviewDestination ? { reviewDestination: run.reviewDestination } : {}) },
      );
      run.result = { run: r, durationMs: performance.now() - started };
      if (r.network) run.network = r.network;
      run.failed = r.kind !== "exited" || r.exitCode !== 0;
      switch (r.kind) {
        case "exited":
          if (r.effects) run.report = r.effects;
          return { exitCode: r.exitCode };
        case "stopped":
          throw new Error(`Auto mode's sandbox stopped the command: ${r.reason}. None of its changes to the workspace were applied.`);
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

type ToolResult = Awaited<ReturnType<ToolDefinition["execute"]>>;

/** The result with a note after its last text (the network's, P17's effects below). */
function withNote(result: ToolResult, note: string): ToolResult {
  if (!note) return result;
  const content = [...(result.content ?? [])];
  const last = content.findLastIndex((c) => c.type === "text");
  if (last >= 0) {
    const c = content[last] as { type: "text"; text: string };
    content[last] = { ...c, text: `${c.text}\n\n${note}` };
  } else content.push({ type: "text", text: note });
  return { ...result, content };
}

/** The command's own result with what became of its changes next to its output (P17). */
function withEffects(result: ToolResult, text: string, report: EffectReport): ToolResult {
  if (!text) return result;
  const { content } = withNote(result, text);
  // Changes that were not applied make the call a failure the model must notice.
  const failed = report.outcome === "discarded" || (report.outcome === "applied" && report.result.conflicts.length + report.judgement.conflicts.length > 0);
  return { ...result, content, ...(failed ? { isError: true } : {}), details: { ...(result.details as object | undefined), autoModeEffects: report.outcome } };
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
    description: `${base.description} By default the command runs in an OS sandbox (network only to allowlisted hosts through a proxy; writes only in the workspace and $TMPDIR).`,
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
      if (taken.kind === "missing") throw new Error(ticketDenial("missing"));
      if (taken.kind === "conflict") throw new Error(ticketDenial("conflict"));
      const a = taken.ticket;
      // The input is frozen after the gate; this only catches a bug that would run something unjudged.
      if (a.command !== p.command) throw new Error(ticketDenial("changed"));
      const settings = deps.settings();
      const sandboxRun: SandboxRun | undefined =
        a.placement === "sandbox"
          ? {
              ticket: a,
              command: p.command,
              effects: deps.effects,
              reviewer: deps.effects.reviewer?.({ toolCallId, ctx }),
              ...(a.scope.network?.reviewUnlisted ? { reviewDestination: deps.destinations?.({ toolCallId, ctx }) } : {}),
            }
          : undefined;
      const operations = sandboxRun ? sandboxOperations(deps.controller(), sandboxRun, getShellConfig(settings.shellPath).shell) : local(settings.shellPath);
      const run = createBashToolDefinition(ctx.cwd || cwd, { operations, commandPrefix: settings.shellCommandPrefix, shellPath: settings.shellPath });
      const workspace = a.placement === "sandbox" ? a.scope.places.workspace : ctx.cwd;
      let recorded = false;
      const recordNetwork = () => {
        if (recorded || !sandboxRun?.network) return;
        recorded = true;
        deps.onNetwork?.({ toolCallId }, sandboxRun.network);
      };
      const recordRun = () => {
        const ended = sandboxRun?.result;
        if (!ended || !deps.onRun) return;
        sandboxRun.result = undefined;
        try {
          deps.onRun({ toolCallId }, ended.run, ended.durationMs);
        } catch {
          // An observer of the run never changes its result.
        }
      };
      const netNote = () =>
        sandboxRun && a.placement === "sandbox"
          ? networkNote({
              report: sandboxRun.network,
              networkOn: wantsNetwork(a.scope.network) && a.workspace === "staged",
              failed: sandboxRun.failed === true,
              needsNetwork: a.scope.needsNetwork === true,
            })
          : "";
      try {
        const executed = await run.execute(toolCallId, { command: p.command, timeout: p.timeout }, signal, onUpdate, ctx);
        recordNetwork();
        recordRun();
        const result = withNote(executed, netNote());
        if (!sandboxRun?.report) return result;
        const report = sandboxRun.report;
        if (report.outcome === "discarded" && report.kept) await deps.effects.onHeld?.({ toolCallId, ctx, command: p.command }, report.kept);
        const { reportText } = await import("../sandbox/effects/report.ts");
        return withEffects(result, reportText(sandboxRun.report, workspace), sandboxRun.report);
      } catch (e) {
        recordNetwork();
        recordRun();
        // Pi throws for aborts and timeouts; a staged command's changes were not applied then.
        const staged =
          sandboxRun && a.placement === "sandbox" && a.workspace === "staged" && sandboxRun.report === undefined
            ? "\n\n[auto mode] None of the command's changes to the workspace were applied."
            : "";
        const net = netNote();
        const note = `${net ? `\n\n${net}` : ""}${staged}`;
        if (note && e instanceof Error) throw new Error(`${e.message}${note}`);
        throw e;
      }
    },
  } as ToolDefinition;
}
