// A real Pi AgentSession driven by the faux provider, with this package's extension loaded from
// its own entry file, the way `pi install` would load it. Used by the e2e tests and the demo.

import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fauxProvider, type FauxResponseStep } from "@earendil-works/pi-ai";
import {
  createAgentSession,
  DefaultResourceLoader,
  ModelRuntime,
  SessionManager,
  SettingsManager,
  type AgentSession,
  type ExtensionFactory,
  type ExtensionUIContext,
} from "@earendil-works/pi-coding-agent";

export const EXTENSION_ENTRY = fileURLToPath(new URL("../../src/extension.ts", import.meta.url));

export interface PiHarness {
  readonly session: AgentSession;
  readonly faux: ReturnType<typeof fauxProvider>;
  readonly root: string;
  readonly cwd: string;
  readonly agentDir: string;
  dispose(): Promise<void>;
}

export interface HarnessOptions {
  readonly responses?: FauxResponseStep[];
  readonly tools?: string[];
  readonly extensionFactories?: ExtensionFactory[];
  /** Extensions loaded before ours (paths), e.g. to test load order: the first registration of a tool name wins. */
  readonly extensionPathsBefore?: string[];
  readonly uiContext?: ExtensionUIContext;
  readonly mode?: "print" | "rpc" | "json" | "tui";
  readonly cwd?: string;
  readonly root?: string;
  readonly sessionManager?: SessionManager;
  /** Load auto mode from this entry file instead of the checkout's (a copy elsewhere). */
  readonly extensionEntry?: string;
  /** Load skills from the agent dir and the project's .pi/skills (off by default). */
  readonly skills?: boolean;
  /** Prompt template files or folders to load (none by default). */
  readonly promptTemplates?: string[];
}

/** A fresh agent dir and workspace; PI_CODING_AGENT_DIR points at it so getAgentDir() agrees. */
export function makeRoot(prefix = "pi-auto-mode-e2e-"): { root: string; cwd: string; agentDir: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const cwd = join(root, "work");
  const agentDir = join(root, "agent");
  mkdirSync(cwd, { recursive: true });
  mkdirSync(agentDir, { recursive: true });
  return { root, cwd, agentDir };
}

export async function startPi(opts: HarnessOptions = {}): Promise<PiHarness> {
  process.env.PI_OFFLINE = "1";
  const made = opts.root && opts.cwd ? { root: opts.root, cwd: opts.cwd, agentDir: join(opts.root, "agent") } : makeRoot();
  const { root, cwd, agentDir } = made;
  mkdirSync(agentDir, { recursive: true });
  process.env.PI_CODING_AGENT_DIR = agentDir;
  const faux = fauxProvider();
  faux.setResponses(opts.responses ?? []);
  const modelRuntime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: false,
    refreshOnCreate: false,
  });
  modelRuntime.registerNativeProvider(faux.provider);
  const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } });
  const resourceLoader = new DefaultResourceLoader({
    cwd,
    agentDir,
    settingsManager,
    additionalExtensionPaths: [...(opts.extensionPathsBefore ?? []), opts.extensionEntry ?? EXTENSION_ENTRY],
    extensionFactories: opts.extensionFactories ?? [],
    noSkills: opts.skills !== true,
    ...(opts.promptTemplates ? { additionalPromptTemplatePaths: opts.promptTemplates } : { noPromptTemplates: true }),
    noThemes: true,
    noContextFiles: true,
  });
  await resourceLoader.reload();
  const { session } = await createAgentSession({
    cwd,
    agentDir,
    model: faux.getModel(),
    thinkingLevel: "off",
    modelRuntime,
    resourceLoader,
    settingsManager,
    sessionManager: opts.sessionManager ?? SessionManager.inMemory(cwd),
    tools: opts.tools ?? ["read", "write", "edit", "bash", "ls", "grep", "find"],
  });
  await session.bindExtensions({
    mode: opts.mode ?? "print",
    ...(opts.uiContext ? { uiContext: opts.uiContext } : {}),
    onError: (e) => process.stderr.write(`extension error: ${JSON.stringify(e)}\n`),
  });
  return {
    session,
    faux,
    root,
    cwd,
    agentDir,
    dispose: async () => {
      session.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Tool results the model received, in order. */
export function toolResults(session: AgentSession): Array<{ toolName: string; isError: boolean; text: string }> {
  return session.messages.flatMap((m) =>
    m.role === "toolResult"
      ? [{ toolName: m.toolName, isError: m.isError, text: m.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("") }]
      : [],
  );
}
