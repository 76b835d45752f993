// The network vocabulary shared by the allowlist (entries.ts), the host-side proxy (proxy.ts) and
// the sandbox controller: what a destination is, how the policy judges one, what a run reports.
// Pi-free and serializable where it crosses to the spawner process (NetworkSpec, NetReport).

/** A destination as the command named it: a host name or IP literal (lower case, no brackets, no trailing dot) and a port. */
export interface Destination {
  readonly host: string;
  readonly port: number;
}

/** The user's network settings after layering (P15: a project can only remove entries). Plain data: it crosses to the spawner. */
export interface NetworkSpec {
  /** Entry texts: `host`, `*.domain`, `host:port`, `*.domain:port`, `ip:port` (IPv6 as `[addr]:port`). Empty: no network. */
  readonly allow: readonly string[];
  /** Same grammar (entries.ts); a match here wins over allow, and an entry without a port denies every port. */
  readonly deny: readonly string[];
  /** Ask the boundary broker about an unlisted destination, one connection at a time. */
  readonly reviewUnlisted: boolean;
}

export type DestinationVerdict =
  | { readonly kind: "allow"; readonly entry: string }
  | { readonly kind: "deny"; readonly entry: string }
  | { readonly kind: "unlisted" };

/** A compiled NetworkSpec. */
export interface NetworkPolicy {
  readonly spec: NetworkSpec;
  /** Judge a destination by its name as the command gave it, before any resolution. */
  judge(dest: Destination): DestinationVerdict;
  /**
   * Why a resolved address must not be connected to for this port, or undefined when it may:
   * public unicast addresses may; loopback, link-local, private, multicast, unspecified, reserved
   * and cloud metadata addresses only when an `ip:port` allow entry names exactly this address and
   * port (and no deny entry does).
   */
  addressRefusal(address: string, port: number): string | undefined;
}

export type RefusalKind = "unlisted" | "denied" | "address" | "review-denied" | "malformed" | "unresolved" | "unreachable" | "limit";

/** What one sandboxed run did on the network: host and port only, never paths, headers or bodies. */
export interface NetReport {
  readonly allowed: readonly (Destination & { readonly connections: number; readonly reviewed?: boolean })[];
  readonly refused: readonly (Destination & { readonly kind: RefusalKind; readonly detail: string; readonly connections: number })[];
}

export const EMPTY_NET_REPORT: NetReport = { allowed: [], refused: [] };
