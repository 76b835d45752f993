// The variables that point a sandboxed command's tools at the forwarder on its loopback. The
// generic ones (HTTP_PROXY, ...) cover curl, git, pip, cargo and go; some tools read only their
// own. Loopback stays direct (a server the command starts for itself lives in the sandbox), except
// a loopback address an `ip:port` allow entry names: that one means a server on the host.

import data from "../data/sandbox.json" with { type: "json" };
import type { NetworkSpec } from "../../policy/network/types.ts";

/** A spec that gives a run any network at all. */
export function wantsNetwork(spec: NetworkSpec | undefined): spec is NetworkSpec {
  return spec !== undefined && spec.allow.length > 0;
}

const LOOPBACK_ENTRY = /^(?:127(?:\.\d{1,3}){3}|\[::1\]):\d+$/;

export function proxyEnv(spec: NetworkSpec, port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  const out: Record<string, string> = {};
  for (const name of data.proxyEnv.url) out[name] = url;
  for (const [name, value] of Object.entries(data.proxyEnv.set)) out[name] = value;
  const hostLoopback = spec.allow.filter((e) => LOOPBACK_ENTRY.test(e));
  const direct = hostLoopback.length > 0 ? [] : data.proxyEnv.direct;
  for (const name of data.proxyEnv.noProxy) out[name] = direct.join(",");
  return out;
}
