// `pi-auto-mode check`: judge one tool call the way the extension would, without running it.

import { realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { type Backend, BACKENDS } from "../policy/types.ts";
import { defaultTmpRootPath } from "../state/locations.ts";
import { TempSession } from "../state/temp-root.ts";
import { oneOf, type ParsedArgs, parseArgs, type CommandSpec } from "./args.ts";
import { CliError, EXIT, type Io } from "./io.ts";
import { REVIEW_FLAGS, REVIEW_OPTIONS_HELP, reviewOptions } from "./review.ts";

export const CHECK_HELP = `Usage:
  pi-auto-mode check --tool NAME --input JSON [options]
  pi-auto-mode check [options] -- COMMAND...

Judge one tool call with the deterministic gate and print its route (allow, sandbox,
review or deny), a stable reason code and a sentence. Nothing is executed. The words
after -- are joined with single spaces into the command of a bash call; your shell has
already removed their quotes, so quote the whole command to keep quoting, pipes and
redirections:  pi-auto-mode check -- 'grep -r "a b" src > out.txt'.

Options:
  --tool NAME        the Pi tool name (bash, read, write, edit, grep, find, ls, or any other)
  --input JSON       the tool's input object, as the model would send it
  --cwd DIR          the session's working directory (default: the current directory)
  --tmp-root DIR     the temporary writable root (default: a session's private folder in
                     ${defaultTmpRootPath()}, or in the user config's tmpRoot)
  --backend NAME     sandboxed, sandboxed-unstaged, review-only or unavailable (default:
                     the one the extension gates with on this machine, from the sandbox
                     probe)
  --json             print one JSON object on the last line: tool, backend, route, reason,
                     message, hash (null when the input could not be canonicalized), cwd;
                     with --review also decision (allow or deny, the final outcome), run,
                     reviewer, verdict (null when the review failed), failure (the class,
                     or null), detail, usage, attempts, inputTokens, durationMs
${REVIEW_OPTIONS_HELP}
  --user TEXT        with --review: the user's latest message, the reviewer's authorization
                     anchor (default: none)
  -h, --help         show this help

The configuration is read from $PI_CODING_AGENT_DIR/auto-mode.json (default
~/.pi/agent/auto-mode.json) and DIR/.pi/auto-mode.json.

Exit status: 0 when a decision was printed, whatever the route; 2 on bad input.

Examples:
  pi-auto-mode check --tool read --input '{"path":"src/index.ts"}'
  pi-auto-mode check --json -- rm -rf ~
  pi-auto-mode check --review --user 'push my branch' -- git push origin feature/x
`;

const SPEC: CommandSpec = {
  flags: { tool: "string", input: "string", cwd: "string", "tmp-root": "string", backend: "string", json: "boolean", user: "string", ...REVIEW_FLAGS },
  positionals: [],
  rest: true,
};

export interface CheckRequest {
  readonly tool: string;
  readonly input: unknown;
}

function readRequest(tool: string | undefined, inputText: string | undefined, rest: readonly string[] | undefined): CheckRequest {
  if (rest !== undefined) {
    if (inputText !== undefined) throw new CliError("check: give either --input JSON or -- COMMAND, not both");
    if (tool !== undefined && tool !== "bash") throw new CliError(`check: -- COMMAND is for bash calls, not --tool ${tool}`);
    if (rest.length === 0) throw new CliError("check: no command after --");
    return { tool: "bash", input: { command: rest.join(" ") } };
  }
  if (tool === undefined) throw new CliError("check: missing --tool NAME (or -- COMMAND for a bash call)");
  if (tool === "") throw new CliError("check: --tool needs a non-empty name");
  if (inputText === undefined) throw new CliError("check: missing --input JSON");
  try {
    // Any JSON value is accepted: a malformed input is exactly what the gate must judge.
    return { tool, input: JSON.parse(inputText) as unknown };
  } catch (e) {
    throw new CliError(`check: --input is not valid JSON (${(e as Error).message})`);
  }
}

function directory(flag: string, base: string, value: string): string {
  if (value === "") throw new CliError(`check: ${flag} needs a directory`);
  const abs = resolve(base, value);
  let isDir: boolean;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new CliError(`check: ${flag} ${value}: no such directory`);
  }
  if (!isDir) throw new CliError(`check: ${flag} ${value}: not a directory`);
  // Pi's cwd is process.cwd(), which the OS reports with symlinks resolved.
  return realpathSync(abs);
}

export async function runCheck(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs("check", argv, SPEC);
  if (args.help) {
    io.out(CHECK_HELP);
    return EXIT.ok;
  }
  const request = readRequest(args.strings.get("tool"), args.strings.get("input"), args.rest);
  const review = reviewOptions("check", args);
  if (!review && args.strings.has("user")) throw new CliError("check: --user needs --review");
  const backendFlag = args.strings.get("backend");
  const backend = backendFlag === undefined ? await (await import("./sandbox.ts")).machineBackend() : oneOf("check", "backend", backendFlag, BACKENDS);
  const cwdFlag = args.strings.get("cwd");
  const cwd = cwdFlag === undefined ? io.cwd : directory("--cwd", io.cwd, cwdFlag);
  const tmpFlag = args.strings.get("tmp-root");
  if (tmpFlag === "") throw new CliError("check: --tmp-root needs a directory");
  // The tmp root need not exist yet: the path policy resolves through its nearest existing ancestor.
  const tmpRoot = tmpFlag === undefined ? undefined : resolve(io.cwd, tmpFlag);
  // Without the flag, judged as a session would be: in a private folder of its own, made in the checked temp root (and removed after).
  const temp = tmpRoot === undefined ? new TempSession() : undefined;
  try {
    return await checkIn(io, args, { request, review, backend, cwd, tmpRoot, temp });
  } finally {
    temp?.close();
  }
}

async function checkIn(
  io: Io,
  args: ParsedArgs,
  a: {
    readonly request: CheckRequest;
    readonly review: ReturnType<typeof reviewOptions>;
    readonly backend: Backend;
    readonly cwd: string;
    readonly tmpRoot: string | undefined;
    readonly temp: TempSession | undefined;
  },
): Promise<number> {
  const { request, review, backend, cwd, tmpRoot, temp } = a;
  // Loaded only now: the gate takes a few hundred milliseconds to load, which help and usage
  // errors should not pay.
  const { decide, prepareGate } = await import("../policy/gate.ts");
  const { agentDirFromEnv, selfPaths } = await import("../state/locations.ts");
  const home = homedir();
  const agentDir = agentDirFromEnv(io.env, home);

  const gate = prepareGate({
    cwd,
    home,
    agentDir,
    defaultTmpRoot: tmpRoot ?? defaultTmpRootPath(),
    ...(temp ? { tempFolder: (configured: string | undefined) => temp.folder(configured) } : {}),
    selfPaths: selfPaths(agentDir),
  });
  const { request: canonical, decision } = decide(request.tool, request.input, gate, backend);
  const effectiveTmpRoot = gate.judge.places.tmpRoot;
  let reviewed: import("./review.ts").ReviewReport | undefined;
  if (review) {
    const r = await import("./review.ts");
    const { transcriptFromUserMessages } = await import("../review/transcript.ts");
    const setup = await r.openReviewer("check", io.env, review);
    const user = args.strings.get("user");
    reviewed =
      decision.route === "review" && canonical
        ? await r.reviewRequest(setup, {
            request: canonical,
            decision,
            transcript: transcriptFromUserMessages(user === undefined ? [] : [user]),
            backend,
            id: "check",
          })
        : r.unreviewed(decision.route, backend);
  }

  if (args.booleans.has("json")) {
    const out = {
      tool: request.tool,
      backend,
      route: decision.route,
      reason: decision.reason,
      message: decision.message,
      hash: canonical?.hash ?? null,
      cwd,
      tmpRoot: effectiveTmpRoot,
      ...reviewed,
    };
    io.out(JSON.stringify(out) + "\n");
    return EXIT.ok;
  }
  const rows: Array<[string, string]> = [
    ["route", decision.route],
    ["reason", decision.reason],
    ["message", decision.message],
    ["tool", request.tool],
    ["backend", backend],
    ["cwd", cwd],
    ["tmp root", effectiveTmpRoot],
    ["hash", canonical?.hash ?? "(none: the input could not be canonicalized)"],
  ];
  if (reviewed) rows.push(...(await import("./review.ts")).reviewRows(reviewed));
  io.out(rows.map(([k, v]) => `${(k + ":").padEnd(9)} ${v}`).join("\n") + "\n");
  return EXIT.ok;
}
