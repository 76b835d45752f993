// Stand-ins for the network's real peers, on the host's loopback only: a static file server, an
// npm registry (packuments and tarballs with the integrity npm checks), and a git repository
// served over git's dumb HTTP protocol. Used by the network tests and the network bench.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join, normalize } from "node:path";

export interface FileServer {
  readonly port: number;
  /** Every request path, in order. */
  readonly hits: string[];
  close(): Promise<void>;
}

/** Serve `root` (or, without one, a fixed answer) on 127.0.0.1. */
export function serveFiles(root?: string): Promise<FileServer> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? "");
    if (!root) return void res.end("host says hi\n");
    const rel = normalize(decodeURIComponent((req.url ?? "/").split("?")[0]!)).replace(/^(\.\.(\/|$))+/, "");
    const p = join(root, rel);
    if (!p.startsWith(root) || !existsSync(p) || statSync(p).isDirectory()) {
      res.statusCode = 404;
      return void res.end("not found\n");
    }
    res.setHeader("content-type", rel.startsWith("/registry/") ? "application/json" : "application/octet-stream");
    res.end(readFileSync(p));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as { port: number }).port,
        hits,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    ),
  );
}

function run(cwd: string, cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** npm packages `names` (each exporting its own name) under root/registry and root/tarballs, served at `port`. */
export function buildRegistry(root: string, port: number, names: readonly string[]): void {
  mkdirSync(join(root, "registry"), { recursive: true });
  mkdirSync(join(root, "tarballs"), { recursive: true });
  for (const name of names) {
    const src = join(root, "pkg", name);
    mkdirSync(join(src, "package"), { recursive: true });
    writeFileSync(join(src, "package", "package.json"), JSON.stringify({ name, version: "1.0.0", main: "index.js" }));
    writeFileSync(join(src, "package", "index.js"), `module.exports = ${JSON.stringify(name)};\n`);
    const tgz = join(root, "tarballs", `${name}-1.0.0.tgz`);
    run(src, "tar", ["czf", tgz, "package"]);
    const bytes = readFileSync(tgz);
    const dist = {
      tarball: `http://127.0.0.1:${port}/tarballs/${name}-1.0.0.tgz`,
      shasum: createHash("sha1").update(bytes).digest("hex"),
      integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
    };
    writeFileSync(
      join(root, "registry", name),
      JSON.stringify({ name, "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name, version: "1.0.0", main: "index.js", dist } } }),
    );
  }
}

/** A bare repository root/repo.git with one commit (hello.txt), ready for dumb HTTP. */
export function buildRepository(root: string): void {
  const src = join(root, "src-repo");
  mkdirSync(src, { recursive: true });
  const git = (...a: string[]) => run(src, "git", ["-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main", ...a]);
  git("init", "-q");
  writeFileSync(join(src, "hello.txt"), "from the host's repository\n");
  git("add", "hello.txt");
  git("commit", "-q", "-m", "hello");
  run(root, "git", ["clone", "-q", "--bare", src, join(root, "repo.git")]);
  run(join(root, "repo.git"), "git", ["update-server-info"]);
}
