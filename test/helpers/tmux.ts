// A real terminal for a test: a program in a private tmux server (its own socket, no user
// configuration), read back with capture-pane and driven with paste-buffer and send-keys. Every
// wait polls the screen until the expected text shows or a deadline passes; a timeout fails with
// what was on the screen, never with a guess.

import { execFile, execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** Why tmux cannot be used here, or undefined when it can. */
export function tmuxUnavailable(): string | undefined {
  try {
    execFileSync("tmux", ["-V"], { stdio: "pipe" });
    return undefined;
  } catch (e) {
    return `tmux is not installed or does not run (${(e as Error).message.split("\n")[0]}); install it (apt-get install tmux), as .ci/run does`;
  }
}

export interface Terminal {
  /** The visible screen as text, one line per row. */
  screen(): Promise<string>;
  /** The visible screen with its SGR escapes (colors and attributes). */
  screenWithEscapes(): Promise<string>;
  /** Waits until `expect` holds for the screen; returns that screen. */
  waitFor(expect: RegExp | ((screen: string) => boolean), what: string, timeoutMs?: number): Promise<string>;
  /** Pastes `text` (bracketed, so no completion menu opens), waits for it to show, then presses Enter. */
  submit(text: string): Promise<void>;
  /** Presses keys by tmux's names (Enter, Escape, Down, C-c). */
  keys(...names: string[]): Promise<void>;
  close(): Promise<void>;
}

export interface TerminalOptions {
  /** A private folder: the socket and the launcher go here. */
  readonly root: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly argv: readonly string[];
  readonly width?: number;
  readonly height?: number;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export async function startTerminal(opts: TerminalOptions): Promise<Terminal> {
  const socket = join(opts.root, "tmux.sock");
  const tmux = (...args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile("tmux", ["-S", socket, "-f", "/dev/null", ...args], { maxBuffer: 8 << 20 }, (err, stdout, stderr) =>
        err ? reject(new Error(`tmux ${args[0]}: ${err.message} ${stderr}`)) : resolve(String(stdout)),
      ),
    );
  // The launcher sets the whole environment itself, so nothing depends on what a tmux server keeps,
  // and keeps the pane after the program exits, so a crash stays readable on the screen.
  const launcher = join(opts.root, "launch.sh");
  const exports = Object.entries(opts.env)
    .filter((e): e is [string, string] => e[1] !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(e[0]))
    .map(([k, v]) => `export ${k}=${shellQuote(v)}`);
  writeFileSync(
    launcher,
    [
      "#!/bin/sh",
      ...exports,
      `cd ${shellQuote(opts.cwd)} || exit 1`,
      `${opts.argv.map(shellQuote).join(" ")}`,
      `echo "[exited with status $?]"`,
      "exec sleep 3600",
      "",
    ].join("\n"),
    { mode: 0o700 },
  );
  const width = String(opts.width ?? 120);
  const height = String(opts.height ?? 40);
  await tmux("new-session", "-d", "-s", "t", "-x", width, "-y", height, `sh ${shellQuote(launcher)}`);

  const screen = () => tmux("capture-pane", "-p", "-t", "t");
  const term: Terminal = {
    screen,
    screenWithEscapes: () => tmux("capture-pane", "-p", "-e", "-t", "t"),
    async waitFor(expect, what, timeoutMs = 15_000) {
      const holds = typeof expect === "function" ? expect : (s: string) => expect.test(s);
      const deadline = Date.now() + timeoutMs;
      let last = "";
      for (;;) {
        last = await screen();
        if (holds(last)) return last;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the screen was:\n${last}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async submit(text) {
      await tmux("set-buffer", "-b", "input", text);
      await tmux("paste-buffer", "-p", "-d", "-b", "input", "-t", "t");
      // The editor shows what was pasted before Enter may submit it.
      const head = text.split("\n")[0]!.slice(0, 40);
      await term.waitFor((s) => s.includes(head), `the editor to show ${JSON.stringify(head)}`, 5_000);
      await tmux("send-keys", "-t", "t", "Enter");
    },
    async keys(...names) {
      await tmux("send-keys", "-t", "t", ...names);
    },
    async close() {
      await tmux("kill-server").catch(() => {});
    },
  };
  return term;
}

/**
 * The lines of a Pi screen right above the editor: what widgets placed there show. The editor is
 * the last pair of rule lines (a row of ─, the top one may carry the working indicator); the
 * widgets end at its top rule and begin after the blank spacer line above them.
 */
export function aboveEditor(screen: string): string[] {
  const lines = screen.split("\n");
  const rules = lines.flatMap((l, i) => (/^─{2}/.test(l) ? [i] : []));
  const top = rules.at(-2);
  if (top === undefined) return [];
  const out: string[] = [];
  for (let i = top - 1; i >= 0 && lines[i]!.trim() !== ""; i--) out.unshift(lines[i]!.trim());
  return out;
}

/** The footer's auto-mode status line: the last line that starts with the prefix. */
export function footerLine(screen: string): string {
  return (
    screen
      .split("\n")
      .filter((l) => l.includes("auto-mode:"))
      .at(-1) ?? ""
  );
}

/**
 * The foreground colour set right before `text` in a screen captured with its escapes (the SGR
 * sequences tmux emits just before it), or undefined when it is drawn in the default colour. With
 * `after`, only a `text` that follows it (escapes between them aside) counts, the last one on the
 * screen; otherwise the first `text`.
 */
export function colourBefore(raw: string, text: string, after = ""): string | undefined {
  const quote = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const found = [...raw.matchAll(new RegExp(`${quote(after)}((?:\x1b\\[[0-9;]*m)*)${quote(text)}`, "g"))];
  const hit = after ? found.at(-1) : found[0];
  if (!hit) return undefined;
  // The escapes before `text`: those in the match, and, without `after`, the run just before it.
  const lead = after ? "" : (/(?:\x1b\[[0-9;]*m)+$/.exec(raw.slice(0, hit.index))?.[0] ?? "");
  let colour: string | undefined;
  for (const m of (lead + hit[1]).matchAll(/\x1b\[([0-9;]*)m/g)) {
    const params = m[1]!.split(";");
    for (let i = 0; i < params.length; i++) {
      const p = Number(params[i] || "0");
      if (p === 0 || p === 39) colour = undefined;
      else if ((p >= 30 && p <= 37) || (p >= 90 && p <= 97)) colour = String(p);
      else if (p === 38) {
        const extended = params[i + 1] === "5" ? params.slice(i, i + 3) : params.slice(i, i + 5);
        colour = extended.join(";");
        i += extended.length - 1;
      }
    }
  }
  return colour;
}
