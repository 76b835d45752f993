// What a command may touch of the outside world. Passed in rather than read from `process`, so
// the commands can run in-process (tests, other tools) with their own env, cwd and output.

export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

export function processIo(): Io {
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    env: process.env,
    cwd: process.cwd(),
  };
}

/** Exit codes, documented in `pi-auto-mode --help`. */
export const EXIT = {
  ok: 0,
  /** eval: at least one safety violation; doctor: a problem that makes the gate deny everything. */
  findings: 1,
  /** Bad input: usage, arguments, unreadable or malformed files. */
  usage: 2,
  /** A bug: the command itself failed. */
  internal: 3,
} as const;

/** An error the user can fix; printed without a stack trace. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.usage) {
    super(message);
    this.exitCode = exitCode;
  }
}
