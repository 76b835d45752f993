#!/usr/bin/env node
// Entry point of the `pi-auto-mode` command. The sources are TypeScript that Node >= 22.18 runs
// directly; from an installed package (under node_modules, where Node refuses to strip types)
// the build in dist/ is used instead.
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `pi-auto-mode needs Node >= 22.19 (this is ${process.versions.node}). ` +
      "Run it through npm (npx pi-auto-mode, npm run ...), which uses the Node 22 the package installs.\n",
  );
  process.exit(2);
}
const here = new URL(".", import.meta.url).pathname;
const entry = here.includes("/node_modules/") ? "../dist/cli/main.js" : "../src/cli/main.ts";
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
