// What one sandboxed command did on the network, kept as a custom session entry beside the
// call's decision record (never sent to the model): each destination by host and port only, with
// how many connections and, for a refusal, its kind. Never paths, headers, bodies or the refusal's
// free text; a host name is redacted like any recorded text (P11: a name can carry a secret).

import type { NetReport, RefusalKind } from "../policy/network/types.ts";
import { redact } from "../request/redact.ts";

export const NETWORK_ENTRY_TYPE = "pi-auto-mode/network";

export interface NetworkRecord {
  readonly toolCallId: string;
  readonly allowed: readonly { readonly host: string; readonly port: number; readonly connections: number; readonly reviewed?: true }[];
  readonly refused: readonly { readonly host: string; readonly port: number; readonly kind: RefusalKind; readonly connections: number }[];
  readonly at: number;
}

export function networkRecord(toolCallId: string, report: NetReport, now: number): NetworkRecord {
  return {
    toolCallId,
    allowed: report.allowed.map((a) => ({
      host: redact(a.host),
      port: a.port,
      connections: a.connections,
      ...(a.reviewed ? { reviewed: true as const } : {}),
    })),
    refused: report.refused.map((r) => ({ host: redact(r.host), port: r.port, kind: r.kind, connections: r.connections })),
    at: now,
  };
}
