// The sandbox's network data (data/network.json), checked against its schema when first asked for.
// A file that does not pass is a bug of ours: networkData() throws, and the configuration loader
// turns the throw into no network at all (doctor reports the fault), so a broken default list can
// never mean "no restriction". Its examples are checked by a test (networkExampleFailures in
// entries.ts), not here: judging them needs the entry parser, which itself reads this data.

import { fileURLToPath } from "node:url";
import { type Static, Type } from "typebox";
import { Value } from "typebox/value";
import data from "../data/network.json" with { type: "json" };
import type { NetworkSpec } from "./types.ts";

/** Where the data lives, for a fault's path. */
export const NETWORK_DATA_PATH = fileURLToPath(new URL("../data/network.json", import.meta.url));

const Comment = Type.Optional(Type.String());
const EntryText = Type.String({ minLength: 1, maxLength: 300 });
const Count = (minimum: number, maximum: number) => Type.Integer({ minimum, maximum });

const CLASS_NAMES = ["public", "loopback", "private", "link-local", "multicast", "unspecified", "reserved", "metadata"] as const;

const NetworkDataSchema = Type.Object(
  {
    $comment: Comment,
    version: Type.Literal(1),
    defaults: Type.Object(
      {
        $comment: Comment,
        allow: Type.Record(Type.String({ minLength: 1 }), Type.Array(EntryText, { minItems: 1, maxItems: 100 })),
        deny: Type.Array(EntryText, { maxItems: 100 }),
        reviewUnlisted: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
    metadataAddresses: Type.Object(
      {
        $comment: Comment,
        addresses: Type.Array(Type.Object({ address: Type.String({ minLength: 2 }), who: Type.String({ minLength: 1 }) }, { additionalProperties: false }), {
          minItems: 1,
          maxItems: 200,
        }),
      },
      { additionalProperties: false },
    ),
    proxy: Type.Object(
      {
        $comment: Comment,
        connectTimeoutMs: Count(100, 600_000),
        idleTimeoutMs: Count(1000, 3_600_000),
        maxConnectionMs: Count(1000, 86_400_000),
        maxBytesPerConnection: Count(1, 2 ** 40),
        maxConnectionsPerRun: Count(1, 4096),
        maxHeaderBytes: Count(1024, 1_048_576),
        headTimeoutMs: Count(100, 600_000),
      },
      { additionalProperties: false },
    ),
    forwarder: Type.Object({ $comment: Comment, port: Count(1, 65535) }, { additionalProperties: false }),
    examples: Type.Object(
      {
        $comment: Comment,
        destinations: Type.Array(
          Type.Object(
            {
              destination: Type.String({ minLength: 1 }),
              verdict: Type.Union([Type.Literal("allow"), Type.Literal("deny"), Type.Literal("unlisted"), Type.Literal("malformed")]),
            },
            { additionalProperties: false },
          ),
          { minItems: 1 },
        ),
        addresses: Type.Array(
          Type.Object({ address: Type.String({ minLength: 1 }), class: Type.Union(CLASS_NAMES.map((c) => Type.Literal(c))) }, { additionalProperties: false }),
          { minItems: 1 },
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type NetworkData = Static<typeof NetworkDataSchema>;

/** The proxy's bounds (network.json `proxy`, without its comment). */
export interface ProxyBounds {
  /** Resolving the name and connecting upstream, per connection. */
  readonly connectTimeoutMs: number;
  /** No bytes in either direction for this long closes the connection. */
  readonly idleTimeoutMs: number;
  /** A connection's whole life. */
  readonly maxConnectionMs: number;
  /** Bytes in both directions together, per connection. */
  readonly maxBytesPerConnection: number;
  /** Connections made (or asked of the reviewer) over one sandboxed run. */
  readonly maxConnectionsPerRun: number;
  /** A request's head: the CONNECT or request line and its headers. */
  readonly maxHeaderBytes: number;
  /** How long a client may take to send that head. */
  readonly headTimeoutMs: number;
}

export interface LoadedNetworkData {
  readonly raw: NetworkData;
  /** The allow list without a user setting, in the file's order, with the ecosystem each entry is for. */
  readonly defaults: NetworkSpec;
  readonly defaultGroups: ReadonlyMap<string, string>;
  readonly proxy: ProxyBounds;
  /** The port the in-sandbox forwarder listens on (the sandbox's own loopback). */
  readonly forwarderPort: number;
}

/** Checks `raw` as network data; throws naming the first problem. */
export function checkNetworkData(raw: unknown): LoadedNetworkData {
  if (!Value.Check(NetworkDataSchema, raw)) {
    const first = [...Value.Errors(NetworkDataSchema, raw)][0];
    const what = first?.message === "schema is false" ? "unknown key" : first?.message;
    throw new Error(`the network data does not match its schema${first ? ` at ${first.instancePath || "/"}: ${what}` : ""}`);
  }
  const groups = new Map<string, string>();
  for (const [group, entries] of Object.entries(raw.defaults.allow)) for (const e of entries) if (!groups.has(e)) groups.set(e, group);
  const { $comment: _p, ...proxy } = raw.proxy;
  return {
    raw,
    defaults: Object.freeze({
      allow: Object.freeze([...groups.keys()]),
      deny: Object.freeze([...raw.defaults.deny]),
      reviewUnlisted: raw.defaults.reviewUnlisted,
    }),
    defaultGroups: groups,
    proxy: Object.freeze(proxy),
    forwarderPort: raw.forwarder.port,
  };
}

let loaded: LoadedNetworkData | undefined;

/** The shipped data, checked once; throws when it does not match its schema. */
export function networkData(): LoadedNetworkData {
  if (loaded) return loaded;
  // A loader with CommonJS interop (Pi's jiti) hands a JSON module over with a `default` key
  // beside the data (pointing back at it): the data is the rest.
  const { default: _interop, ...raw } = data as typeof data & { default?: unknown };
  loaded = checkNetworkData(raw);
  return loaded;
}
