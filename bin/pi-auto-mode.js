#!/usr/bin/env node
// Entry point of the `pi-auto-mode` command. The sources are TypeScript that Node >= 22.18 runs
// directly; from an installed package (under node_modules, where Node refuses to strip types)
// the build in dist/ is used instead.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// Set for the one re-run below, so a Node 22 that is somehow older than it claims cannot loop.
const REEXEC = "PI_AUTO_MODE_REEXEC";
const reexeced = process.env[REEXEC] === "1";
delete process.env[REEXEC];

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  // A checkout's `npm install` brings Node 22 (the `node` dev dependency): run on it, so the
  // command works from any folder with an older system Node and without npm in between.
  const own = fileURLToPath(new URL("../node_modules/.bin/node", import.meta.url));
  if (!reexeced && existsSync(own)) {
    const child = spawn(own, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit", env: { ...process.env, [REEXEC]: "1" } });
    // Ctrl-C reaches the child from the terminal itself; a second copy would count as a second interrupt.
    process.on("SIGINT", () => {});
    process.on("SIGTERM", () => child.kill("SIGTERM"));
    child.on("error", (e) => {
      process.stderr.write(`pi-auto-mode: cannot start ${own}: ${e.message}\n`);
      process.exit(2);
    });
    child.on("exit", (code, signal) => {
      if (signal) {
        process.removeAllListeners(signal);
        process.kill(process.pid, signal);
      } else process.exit(code ?? 1);
    });
  } else {
    process.stderr.write(
      `pi-auto-mode needs Node >= 22.19 (this is ${process.versions.node}). ` +
        "Run npm install in its folder (it installs Node 22 for it), or run it through npm (npx pi-auto-mode, npm run ...).\n",
    );
    process.exit(2);
  }
} else {
  // The audit reads node:sqlite, which Node 22 still flags experimental on first use: that one
  // notice is noise in a command's output (Pi silences it too). Every other warning prints as Node would.
  process.removeAllListeners("warning");
  process.on("warning", (w) => {
    if (w.name === "ExperimentalWarning" && /SQLite/.test(w.message)) return;
    process.stderr.write(`(node:${process.pid}) ${w.name}: ${w.message}\n`);
  });
  const here = new URL(".", import.meta.url).pathname;
  const entry = here.includes("/node_modules/") ? "../dist/cli/main.js" : "../src/cli/main.ts";
  const { main } = await import(entry);
  process.exitCode = await main(process.argv.slice(2));
}
