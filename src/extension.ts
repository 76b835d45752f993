// pi-auto-mode's Pi extension: lifecycle wiring only. Decisions live in policy/, state in state/.

import type { ExtensionAPI, ExtensionContext, ToolCallEvent, ToolCallEventResult } from "@earendil-works/pi-coding-agent";
import { gateLoadDenial } from "./policy/denial.ts";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { DECISION_ENTRY_TYPE } from "./audit/decision-record.ts";
import { registerPermCommands } from "./commands/perm.ts";
import { registerReviewerCommand } from "./commands/reviewer.ts";
import { registerUndoCommand } from "./commands/undo.ts";
import { registerOverrideCommands } from "./commands/overrides.ts";
import { registerAudit } from "./commands/audit.ts";
import { createOverrides } from "./grants/overrides.ts";
import { publishBroker } from "./tools/broker-link.ts";
import { NETWORK_ENTRY_TYPE, networkRecord } from "./audit/network-record.ts";
import { decisionEvent, emitSafely, reviewAttemptEvent, reviewCompleteEvent, sandboxRunEvent, type Emit } from "./audit/telemetry.ts";
import { registerDenialSummary } from "./tools/denial-summary.ts";
import { registerDenialRenderer } from "./tools/denial-render.ts";
import type { ReviewService } from "./review/service.ts";
import type { AuditRecorder } from "./audit/recorder.ts";
import { addUsage } from "./review/types.ts";
import { createUsageLedger } from "./review/usage-ledger.ts";
import type { heldEffectsReviewer as HeldEffectsReviewer, ReviewHook } from "./tools/review-call.ts";
import { effectStore } from "./sandbox/effects/store-paths.ts";
import { undoBounds } from "./policy/config/load.ts";
import { loadPolicyConfig } from "./policy/config/load.ts";
import { followingGlobalState } from "./state/global.ts";
import { createRuntimeState } from "./state/runtime-state.ts";
import { modeHandoff, restoredMode } from "./state/session.ts";
import { createCallsInFlight } from "./grants/concurrent-calls.ts";
import { showStatus } from "./ui/status.ts";
import { createCheckWidget } from "./ui/check-widget.ts";
import { createSandboxedBashTool, isActiveBash } from "./tools/bash.ts";
import { createTicketBook } from "./grants/tickets.ts";
import { deferredController } from "./sandbox/deferred-controller.ts";
import { homedir } from "node:os";
import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { installLine, installTrust, type InstallTrust } from "./policy/install-trust.ts";
import { TempSession } from "./state/temp-root.ts";
import { createUserProvenanceBook } from "./tools/user-provenance.ts";
import { commandOrigins } from "./tools/command-origin.ts";

/** The real path of this copy of the package (src/..), or the path itself when it cannot be resolved. */
function packageRoot(): string {
  const root = fileURLToPath(new URL("..", import.meta.url)).replace(/\/+$/, "");
  try {
    return realpathSync(root);
  } catch {
    return root;
  }
}

const realOr = (p: string) => {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
};

/** How long a headless session waits before loading the sandbox on its own. */
const IDLE_LOAD_MS = 200;
/** How long a session with a screen waits for the probe before it draws the footer. */
const UI_PROBE_WAIT_MS = 300;

export default function autoMode(pi: ExtensionAPI): void {
  // The OS sandbox: one controller per process, whose probe picks the backend (P5, P16).
  // Global state is the durable, cross-process store under Pi's agent dir (P12).
  // Loaded (with its probe) at the first shell command, or once Pi has been idle a moment after
  // the session starts: a start-up never waits for it (deferred-controller.ts).
  const sandbox = deferredController(async () => (await import("./sandbox/controller.ts")).sharedController());
  const sandboxOwner = `session-${randomUUID()}`;
  // This session's private temporary folder (the sandbox's TMPDIR and caches), removed at its end (P18).
  const temp = new TempSession();
  // Read once: the environment Pi started with is the user's, not the model's (install-trust.ts).
  const install = { root: packageRoot(), env: { ...process.env } };
  const admissions = createTicketBook();
  // This process's overridable denials and one-shot grants, per session (P14).
  const overrides = createOverrides();
  // Denials counted for a headless run's summary, and drawn under a "Blocked by auto mode" head in the TUI.
  const denials = registerDenialSummary(pi);
  registerDenialRenderer(pi);
  // The reviewer for held effects and the gate's review hook share one service, ledger and record.
  // The gate, the reviewer and the effects are loaded at the first tool call, not with Pi (start-up).
  let reviews: ReviewService | undefined;
  const ledger = createUsageLedger();
  let reviewHook: ReviewHook | undefined;
  // The broker's reviews: a service of their own, so another extension's denied requests never
  // pause the agent's reviews (its breaker) and the agent's never pause the broker's.
  let brokerReviews: ReviewService | undefined;
  let brokerHook: ReviewHook | undefined;
  let heldReviewer: typeof HeldEffectsReviewer | undefined;
  // Content-free telemetry on Pi's event bus (README "Telemetry events"); a listener never affects a decision.
  const emit: Emit = (channel, data) => pi.events.emit(channel, data);
  // When each tool call reached the gate, for the decision event's duration.
  const callStarts = new Map<string, number>();
  // The local audit (README "Configuration"): loaded with the gate; a decision pays one in-memory push.
  let audit: AuditRecorder | undefined;
  // Its one warning (the audit turned itself off) goes where the session's other warnings go.
  const auditWarning = (text: string) => {
    try {
      if (lastCtx?.hasUI) lastCtx.ui.notify(`auto mode: ${text}`, "warning");
      else process.stderr.write(`auto mode: ${text}\n`);
    } catch {
      // A stale context: the audit is off either way.
    }
  };
  const bashTool = createSandboxedBashTool({
    controller: () => sandbox,
    admissions,
    settings: () => pi.getSettings(),
    effects: {
      store: () => effectStore(getAgentDir()),
      bounds: () => undoBounds(loadPolicyConfig({ agentDir: getAgentDir(), cwd: process.cwd(), home: homedir() })),
      // Held effects go to the reviewer only while auto mode gates with one configured.
      reviewer: ({ toolCallId, ctx }) =>
        reviewHook && heldReviewer && runtime.effective("ok") === "auto" ? heldReviewer(reviewHook, { toolCallId, ctx, home: homedir() }) : undefined,
      // Held changes the user may still approve, as they were (P14).
      // Loaded when first needed: it brings the request's canonical form and the admission texts, which Pi's start need not pay for.
      onHeld: async ({ toolCallId, ctx, command }, kept) => {
        denials.held();
        audit?.held(toolCallId, command, ctx.cwd);
        const { rememberHeld } = await import("./tools/held-effects.ts");
        rememberHeld(overrides, { toolCallId, ctx, command, home: homedir() }, kept);
      },
    },
    // An unlisted destination, when the user opted in (sandbox.network.reviewUnlisted): the broker decides, once per connection.
    destinations:
      ({ ctx }) =>
      async (dest) =>
        (await import("./grants/broker.ts")).connectionReviewer(broker, ctx.sessionManager.getSessionId(), ctx.cwd)(dest),
    onNetwork: ({ toolCallId }, report) => {
      denials.network(report);
      pi.appendEntry(NETWORK_ENTRY_TYPE, networkRecord(toolCallId, report, Date.now()));
    },
    onRun: (_call, result, durationMs) => emitSafely(emit, "auto-mode:sandbox_run", () => sandboxRunEvent(result, durationMs)),
  });
  pi.registerTool(bashTool);
  // Whether another extension's bash replaced ours: it would run contained commands bare (P5).
  // Asked at every use, not once at session_start: a tool can be registered at any time (from a
  // command, an event, a server that connects late), and the first registration of a name wins.
  const REPLACED = "another extension's bash tool replaced auto mode's, so shell commands could not be contained";
  const bashReplaced = (): string | undefined => {
    try {
      return isActiveBash(pi.getAllTools(), bashTool) ? undefined : REPLACED;
    } catch {
      // Pi cannot say which bash runs (a stale runtime): assume the worst.
      return REPLACED;
    }
  };
  const backendReason = () => bashReplaced() ?? sandbox.status().reason;
  const runtime = createRuntimeState(followingGlobalState(getAgentDir), () => (bashReplaced() ? "unavailable" : sandbox.status().backend));

  let lastCtx: ExtensionContext | undefined;
  /** The configuration, and this session's temp folder in the root it names (or the default root). */
  const settingsFor = (ctx: ExtensionContext) => {
    const config = loadPolicyConfig({ agentDir: getAgentDir(), cwd: ctx.cwd, home: homedir() });
    return { config, temp: config.ok ? temp.folder(config.config.tmpRoot) : undefined };
  };
  const trustIn = (ctx: ExtensionContext, settings = settingsFor(ctx)): InstallTrust => {
    // Against the whole temp root: every session's sandbox writes a folder in it.
    const tmpRoot = settings.temp?.root ?? temp.defaultRoot;
    return installTrust(install.root, { workspace: realOr(ctx.cwd), tmpRoot: realOr(tmpRoot) }, install.env);
  };
  const refresh = (ctx: ExtensionContext) => {
    lastCtx = ctx;
    const settings = settingsFor(ctx);
    // A temp root that cannot be used safely is a fault as an invalid configuration is (the gate denies every call).
    const tempFault = settings.temp && !settings.temp.ok ? settings.temp.reason : undefined;
    const health = settings.config.ok && !tempFault ? "ok" : "fault";
    const label = runtime.label(health);
    const trust = trustIn(ctx, settings);
    // The footer says why the sandbox is unavailable, not only that it is (P16), and why a copy the agent can write gates only reads.
    const why =
      trust.kind === "writable"
        ? installLine(trust)
        : tempFault
          ? tempFault
          : runtime.effective(health) === "auto-sandbox-unavailable"
            ? backendReason()
            : undefined;
    const g = runtime.global.peek();
    showStatus(ctx, { mode: runtime.effective(health), label, why, reviewer: g.kind === "fault" ? undefined : g.snapshot.reviewer });
  };
  // A sandbox failure during a command changes the backend: the footer follows at once.
  const unsubscribe = sandbox.subscribe(() => {
    try {
      if (lastCtx) refresh(lastCtx);
    } catch {
      // a stale context after shutdown: nothing to show it on
    }
  });

  // The check above the editor: a review while it runs, then its outcome, or the last denial.
  const checks = createCheckWidget();

  // The mode a reload hands from this instance to the next (state/session.ts).
  const handoff = modeHandoff();

  // Who wrote each user message: the user typed it, or an extension sent it (P10).
  const provenance = createUserProvenanceBook();
  pi.on("input", (event) => {
    provenance.input(event);
  });
  pi.on("message_start", (event) => {
    if (event.message.role === "user") provenance.userMessage(event.message);
  });

  pi.on("session_start", async (event, ctx) => {
    provenance.clearPending();
    // Only what this runtime's previous instance handed over comes back, and only on a reload (P2).
    const sessionId = ctx.sessionManager.getSessionId();
    runtime.setRequested(restoredMode(event.reason, handoff.take(ctx.sessionManager), sessionId));
    await runtime.global.read();
    // What this session starts with needs no notice; a later change by another Pi gets one (at a tool call).
    runtime.acknowledgeGlobal();
    // An apply a crash interrupted is finished (or reported) before any new command runs (P17).
    const { repairStaging } = await import("./sandbox/effects/repair.ts");
    await repairStaging(getAgentDir(), ctx.cwd, (text) => (ctx.hasUI ? ctx.ui.notify(text, "warning") : process.stderr.write(`${text}\n`)));
    sandbox.attach(sandboxOwner);
    // The probe runs in the background; only a shell command waits for it (the gate). Without a
    // screen (pi -p) it starts when Pi is idle waiting for the model, so a run that never reaches
    // a shell command never pays for it. With one, the footer should say what the sandbox is, not
    // that its probe is still running: the session waits briefly (a remembered probe takes a few
    // milliseconds; a slow one finishes behind the footer, which follows).
    if (ctx.hasUI) await Promise.race([sandbox.ready(), new Promise((r) => setTimeout(r, UI_PROBE_WAIT_MS).unref())]);
    else sandbox.loadWhenIdle(IDLE_LOAD_MS);
    checks.clear(ctx);
    refresh(ctx);
    const trust = trustIn(ctx);
    if (trust.kind === "writable" && !trust.optedIn && ctx.hasUI) ctx.ui.notify(`auto mode: ${installLine(trust)}`, "warning");
    void sandbox.settled().then(() => {
      try {
        refresh(ctx);
        if (runtime.backend() === "unavailable" && ctx.hasUI)
          ctx.ui.notify(`auto mode: the OS sandbox is unavailable, so shell commands are denied: ${backendReason()}`, "warning");
        if (runtime.backend() === "sandboxed-unstaged" && ctx.hasUI)
          ctx.ui.notify(
            `auto mode: shell commands run in the sandbox but write the workspace in place, so git writes need review: ${backendReason()}`,
            "warning",
          );
      } catch {
        // the session ended before the probe did
      }
    });
  });

  // Admitted calls that have not finished: the gate never runs a call whose judgement another one may make stale.
  const inFlight = createCallsInFlight();
  pi.on("tool_execution_end", (event) => inFlight.finish(event.toolCallId));
  // A new user turn: the per-turn breaker starts closed again (P13); nothing of the last run still runs.
  pi.on("agent_start", (_e, ctx) => {
    reviews?.newTurn();
    brokerReviews?.newTurn();
    inFlight.clear();
    // The user's new prompt: the last run's check is history (its entry stays in the session).
    checks.clear(ctx);
  });
  // Reviewer usage joins the tool result Pi keeps (also for blocked calls), so session totals stay true.
  pi.on("message_end", (event) => {
    const m = event.message;
    if (m.role !== "toolResult") return undefined;
    const owed = ledger.take(m.toolCallId);
    return owed ? { message: { ...m, usage: addUsage(owed, m.usage) } } : undefined;
  });

  // Lifecycle changes move the session revision, so nothing bound to the old one still matches.
  pi.on("session_shutdown", async (_e, ctx) => {
    // The mode a reload of this runtime continues: handed over in the process, not read back from an entry.
    try {
      handoff.leave(ctx.sessionManager, { sessionId: ctx.sessionManager.getSessionId(), mode: runtime.session().requested });
    } catch {
      // A stale context: the next instance starts in auto.
    }
    runtime.bump();
    reviews?.abortAll("the session is shutting down");
    brokerReviews?.abortAll("the session is shutting down");
    ledger.clear();
    inFlight.clear();
    checks.clear(ctx);
    unsubscribe();
    audit?.flush();
    lastCtx = undefined;
    // The last session of the process drains the sandbox: running commands end, placeholders go.
    await sandbox.detach(sandboxOwner);
    // Then nothing of this session runs any more: its temp folder goes (commands' files and caches).
    try {
      temp.close();
    } catch {
      // what cannot be removed stays until the system clears its temp dir
    }
  });
  pi.on("session_tree", (_e, ctx) => {
    runtime.bump();
    checks.clear(ctx);
  });

  // The gate itself, built at the first tool call (its modules are most of the extension).
  let gate: Promise<(event: ToolCallEvent, ctx: ExtensionContext) => Promise<ToolCallEventResult | undefined>> | undefined;
  const buildGate = async () => {
    const [{ createToolCallGate }, review, { createReviewService }, { createAuditRecorder }] = await Promise.all([
      import("./tools/tool-call-gate.ts"),
      import("./tools/review-call.ts"),
      import("./review/service.ts"),
      import("./audit/recorder.ts"),
    ]);
    audit ??= createAuditRecorder({ agentDir: getAgentDir, home: homedir(), warn: auditWarning });
    reviews ??= createReviewService({ onAttempt: (a) => emitSafely(emit, "auto-mode:review_attempt", () => reviewAttemptEvent(a)) });
    heldReviewer = review.heldEffectsReviewer;
    const hookFor = (service: ReviewService) =>
      review.createReviewHook({
        runtime,
        service,
        ledger,
        checks,
        provenanceOf: provenance.provenanceOf,
        record: (r) => {
          pi.appendEntry(review.REVIEW_ENTRY_TYPE, r);
          audit?.review(r, lastCtx?.cwd ?? process.cwd());
          emitSafely(emit, "auto-mode:review_complete", () => reviewCompleteEvent(r));
        },
      });
    reviewHook = hookFor(reviews);
    brokerReviews ??= createReviewService({ onAttempt: (a) => emitSafely(emit, "auto-mode:review_attempt", () => reviewAttemptEvent(a)) });
    brokerHook = hookFor(brokerReviews);
    return createToolCallGate({
      runtime,
      agentDir: getAgentDir,
      record: (r, ctx, judged) => {
        pi.appendEntry(DECISION_ENTRY_TYPE, r);
        audit?.decision(r, ctx.cwd, judged);
        const started = callStarts.get(r.toolCallId);
        callStarts.delete(r.toolCallId);
        emitSafely(emit, "auto-mode:decision", () => decisionEvent(r, started === undefined ? 0 : performance.now() - started));
        checks.settle(ctx, r);
        refresh(ctx);
      },
      review: reviewHook,
      off: refresh,
      // Where admitted bash calls run; an escalation is reviewed through the same hook as a review route.
      tickets: admissions,
      inFlight,
      // A shell command's route depends on the backend: it waits for the probe.
      ready: () => sandbox.ready(),
      install,
      temp,
      overrides,
      resetBreaker: () => reviews?.newTurn(),
    });
  };
  pi.on("tool_call", async (event, ctx) => {
    checks.noteCall(event.toolCallId, event.toolName, event.input);
    callStarts.set(event.toolCallId, performance.now());
    // A call the gate never records (auto mode off) leaves its start behind: keep only the latest.
    if (callStarts.size > 256) callStarts.delete(callStarts.keys().next().value!);
    let handle: Awaited<ReturnType<typeof buildGate>>;
    try {
      handle = await (gate ??= buildGate());
    } catch (e) {
      gate = undefined;
      // A gate that cannot be built decides nothing: the call does not run (P5).
      return denials.gate({
        block: true,
        reason: gateLoadDenial((e as Error)?.message ?? String(e)),
      });
    }
    audit?.noteCall(event.toolCallId, event.toolName, event.input);
    return denials.gate(await handle(event, ctx));
  });

  // Other extensions ask about their own boundaries through the same layers (P14). The user's
  // overrides are the agent's tool calls': the broker neither spends an approval the user gave a
  // tool call nor lists its own denials among them; its grants are its own tokens.
  const broker = publishBroker({
    session: () => lastCtx,
    reviewHook: async () => {
      await (gate ??= buildGate());
      return brokerHook;
    },
    admitDeps: {
      runtime,
      agentDir: getAgentDir,
      ready: () => sandbox.ready(),
      install,
      temp,
      askerContains: true,
    },
    record: (r, judged) => {
      pi.appendEntry(DECISION_ENTRY_TYPE, r);
      audit?.decision(r, lastCtx?.cwd ?? process.cwd(), judged);
    },
  });

  // Where each slash command came from: only what the user typed loosens anything (commands/authority.ts).
  const origin = commandOrigins();
  const abortReviews = (reason: string) => {
    reviews?.abortAll(reason);
    brokerReviews?.abortAll(reason);
  };
  registerPermCommands(pi, {
    runtime,
    refresh,
    origin,
    onModeChange: abortReviews,
    status: {
      backendReason,
      config: (ctx) => loadPolicyConfig({ agentDir: getAgentDir(), cwd: ctx.cwd, home: homedir() }),
      denials: (ctx) => {
        const id = ctx.sessionManager.getSessionId();
        return overrides.list(id).length + overrides.critical(id).length;
      },
      installNote: (ctx) => {
        const trust = trustIn(ctx);
        return trust.kind === "writable" ? installLine(trust) : undefined;
      },
    },
  });
  // This session's own reviewer change is said by the command; other sessions hear of it at their next call.
  const reviewerChanged = (reason: string) => {
    runtime.acknowledgeGlobal();
    abortReviews(reason);
  };
  registerReviewerCommand(pi, { runtime, refresh, origin, onModeChange: abortReviews, onReviewerChange: reviewerChanged });
  registerUndoCommand(pi);
  registerOverrideCommands(pi, {
    overrides,
    origin,
    sessionId: (ctx) => ctx.sessionManager.getSessionId(),
    breakGlassOff: (ctx) => {
      const config = loadPolicyConfig({ agentDir: getAgentDir(), cwd: ctx.cwd, home: homedir() });
      if (!config.ok) return `the auto-mode configuration ${config.path} is invalid (${config.message})`;
      return config.config.breakGlass ? undefined : "the user's or this project's auto-mode.json sets breakGlass to false";
    },
  });
  registerAudit(pi, {
    agentDir: getAgentDir,
    cwd: () => lastCtx?.cwd ?? process.cwd(),
    flush: () => audit?.flush(),
    // Another extension's broadcast may come before the first gated call: the recorder is made then.
    recorder: async () => {
      const { createAuditRecorder } = await import("./audit/recorder.ts");
      return (audit ??= createAuditRecorder({ agentDir: getAgentDir, home: homedir(), warn: auditWarning }));
    },
  });
}
