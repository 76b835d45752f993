// `npm run build`: the JavaScript build an installed package runs (Node strips TypeScript types
// only outside node_modules), plus the data files the code reads at run time rather than imports.

import { execFileSync } from "node:child_process";
import { cpSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const outDir = process.argv[2] ?? join(root, "dist");

/** Files read with readFileSync at run time (JSON imports are emitted by tsc itself). */
const ASSET_DIRS = ["review/data"];

execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.build.json"), "--outDir", outDir], {
  stdio: "inherit",
});
for (const dir of ASSET_DIRS) {
  const from = join(root, "src", dir);
  for (const name of readdirSync(from)) cpSync(join(from, name), join(outDir, dir, name));
}
