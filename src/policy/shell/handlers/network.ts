// Programs that reach the network, beyond their class: what curl and wget write (downloads) and
// upload, httpie's request items, rsync to a remote host, netcat and socat relaying a program,
// kubectl printing a cluster's secrets, and database shells whose dot-commands run shell commands.

import { basename } from "node:path";
import { finding, type Finding } from "../finding.ts";
import { hasFlag, operands, optionValues, staticArg, type Handler, type HandlerRegistry } from "../invocation.ts";
import { markDownloaded } from "../locate.ts";
import { isSecretishFile, judgeRead, judgeReadOperands } from "../reads.ts";
import { CLUSTER_SECRET_RESOURCE } from "../table.ts";
import { judgeWrite, redirectWrites } from "../writes.ts";
import { rsyncLocal } from "./operands.ts";

function remoteFileName(url: string): string {
  try {
    return basename(new URL(url).pathname) || "index.html";
  } catch {
    return "index.html";
  }
}

/** curl, wget and friends: network, plus the files they write and upload. */
export const transfer: Handler = (inv, an) => {
  const out: Finding[] = [finding("network", `${inv.name} uses the network`)];
  an.state.network ??= inv.name;
  const outputs =
    inv.name === "wget"
      ? optionValues(inv.args, ["-O", "-P", "-o", "-a"], ["--output-document", "--directory-prefix", "--output-file", "--append-output"])
      : optionValues(
          inv.args,
          ["-o", "-c", "-D", "-K"],
          ["--output", "--output-dir", "--cookie-jar", "--dump-header", "--config", "--trace", "--trace-ascii", "--stderr", "--etag-save", "--hsts"],
        );
  for (const o of outputs) {
    if (o.value === "-" || o.value === "/dev/null") continue;
    out.push(judgeWrite(an.env, an.state, o, `${inv.name} writes`));
    markDownloaded(an.state, o.value);
  }
  // What the command's output is redirected to is a download too, whatever wrappers it runs under
  // (`timeout 60 curl URL > x.sh`, `env curl`, `xargs curl > x.sh`): the handler sees the program
  // the wrappers run, and its source the command whose redirections take the output.
  for (const r of inv.source.redirs) if (redirectWrites(r)) markDownloaded(an.state, r.target!.value);
  // curl -O, and wget without -O, save under the URL's own file name.
  const remoteName = inv.name === "curl" ? hasFlag(inv.args, "O", ["--remote-name", "--remote-name-all"]) : outputs.length === 0;
  if (remoteName) {
    out.push(finding("workspace-write", `${inv.name} saves into the current directory`));
    for (const a of inv.args) if (a.value !== null && /^(https?|ftp):\/\//.test(a.value)) markDownloaded(an.state, remoteFileName(a.value));
  }
  const uploads =
    inv.name === "wget"
      ? optionValues(inv.args, [], ["--post-file", "--body-file"])
      : [
          ...optionValues(
            inv.args,
            ["-d", "-F", "-T"],
            ["--data", "--data-binary", "--data-raw", "--data-urlencode", "--form", "--upload-file", "--json", "--data-ascii"],
          ).map((a) => {
            const v = a.value;
            if (v === null) return a;
            const at = v.indexOf("@");
            const lt = v.indexOf("=<");
            return at >= 0 ? { ...a, value: v.slice(at + 1) } : lt >= 0 ? { ...a, value: v.slice(lt + 2) } : undefined;
          }),
          ...optionValues(inv.args, ["-T"], ["--upload-file"]),
        ];
  for (const u of uploads) {
    if (!u) continue;
    if (u.value === "-") {
      an.state.network = `${inv.name} (uploading standard input)`;
      continue;
    }
    const r = u.value === null ? undefined : judgeRead(an.env, an.state, u, false);
    if (r) out.push(r);
    if (u.value !== null && isSecretishFile(u.value)) out.push(finding("secret-egress", `${inv.name} uploads ${u.value}`));
  }
  return out;
};

/** HTTPie-style request items that send a file: `@file`, `field@file`, `field=@file`, `field:=@file`. */
const REQUEST_ITEM_FILE = /^(?:[^=:@]*:?=)?@(.+)$|^[^=:@/]+@(.+)$/;

const httpie: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  const out: Finding[] = [finding("network", `${inv.name} uses the network`)];
  for (const a of inv.args) {
    const m = a.value === null ? null : REQUEST_ITEM_FILE.exec(a.value);
    const file = m?.[1] ?? m?.[2];
    if (!file) continue;
    const upload = staticArg(file);
    const r = judgeRead(an.env, an.state, upload, false);
    if (r) out.push(r);
    if (isSecretishFile(file)) out.push(finding("secret-egress", `${inv.name} uploads ${file}`));
  }
  return out;
};

const rsync: Handler = (inv, an) => {
  const ops = operands(inv.args, ["-e", "--rsh", "--exclude", "--include", "--filter", "-f"]);
  if (ops.some((a) => a.value === null || /^[^/]*:/.test(a.value))) {
    an.state.network ??= "rsync";
    return [
      finding("network", "rsync copies to or from a remote host"),
      ...ops.slice(0, -1).flatMap((a) => [judgeRead(an.env, an.state, a, true)].filter((f) => f !== undefined)),
    ];
  }
  return rsyncLocal(inv, an);
};

/** nc and friends: network; with -e/-c they hand a program's input and output to the other end. */
const netcat: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  if (hasFlag(inv.args, "ec", ["--exec", "--sh-exec", "--lua-exec"])) return [finding("remote-code", `${inv.name} -e gives the other end a program to drive`)];
  return [
    finding("network", `${inv.name} opens network connections`),
    ...operands(inv.args, ["-p", "-s", "-w", "-i", "-q", "-x", "-X"]).flatMap((a) => [judgeRead(an.env, an.state, a, false)].filter((f) => f !== undefined)),
  ];
};

/** socat addresses: EXEC/SYSTEM run programs for the peer, FILE/OPEN read or write local files. */
const socat: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  const out: Finding[] = [finding("network", "socat relays data between addresses")];
  for (const a of inv.args) {
    if (a.value === null) return [...out, finding("dynamic-command", "socat with an address only known at run time")];
    if (/^(exec|system)[:,]/i.test(a.value)) out.push(finding("remote-code", "socat runs a program for the other end"));
    const file = /^(?:file|open|gopen|create|pipe):([^,]+)/i.exec(a.value)?.[1];
    if (file) {
      const r = judgeRead(an.env, an.state, staticArg(file), false);
      if (r) out.push(r);
      out.push(judgeWrite(an.env, an.state, staticArg(file), "socat may write"));
    }
  }
  return out;
};

/** kubectl and oc: the network, and `get`/`edit` of a cluster's secrets prints credentials. */
const kubectl: Handler = (inv, an) => {
  an.state.network ??= inv.name;
  const words = operands(inv.args, [
    "-n",
    "--namespace",
    "--context",
    "--cluster",
    "--user",
    "-s",
    "--server",
    "--kubeconfig",
    "-l",
    "--selector",
    "-o",
    "--output",
  ]);
  const verb = words.findIndex((w) => w.value === "get" || w.value === "edit");
  const secret = verb >= 0 && words.slice(verb + 1).some((w) => w.value === null || w.value.split(",").some((r) => CLUSTER_SECRET_RESOURCE.test(r)));
  if (secret) return [finding("identity-secret", `${inv.name} ${words[verb]!.value} may print the cluster's secrets`)];
  // `config view` redacts credentials unless asked for them raw (or flattened with their data).
  const configView = words[0]?.value === "config" && words[1]?.value === "view";
  if (configView && hasFlag(inv.args, "", ["--raw", "--flatten"]))
    return [finding("identity-secret", `${inv.name} config view prints the kubeconfig's credentials`)];
  return [finding("network", `${inv.name} reaches outside the workspace (network, other programs or machines)`)];
};

/**
 * Database shells whose dot-commands run shell commands (`sqlite3 db '.shell rm -rf src'`,
 * `.system`): the command is judged as a script, on top of what the client itself does.
 */
export const sqliteShell: Handler = (inv, an) => {
  const out: Finding[] = [
    finding("network", `${inv.name} reaches outside the workspace (network, other programs or machines)`),
    ...judgeReadOperands(inv, an, false),
  ];
  for (const a of inv.args) {
    if (a.value === null) continue;
    for (const m of a.value.matchAll(/^\s*\.(?:shell|system)\s+(.*)$/gm)) out.push(...an.script(m[1]!, `${inv.name} .shell`));
  }
  return out;
};

/** This family's code handlers, by the name commands.json gives them. */
export const NETWORK_HANDLERS: HandlerRegistry = {
  transfer: () => transfer,
  rsync: () => rsync,
  httpie: () => httpie,
  netcat: () => netcat,
  socat: () => socat,
  kubectl: () => kubectl,
  sqlite: () => sqliteShell,
};
