// The effect policy (data/effects.json), checked when it is loaded: its schema, and every example
// it carries classified as it says. A policy that fails either is a bug of ours, so loading throws
// and every staged command's effects are held (the caller turns the throw into a hold).

import { minimatch } from "minimatch";
import { Type, type Static } from "typebox";
import { Value } from "typebox/value";
import data from "./data/effects.json" with { type: "json" };

/** What a path inside a staged git dir is. */
export type GitPathClass = "object" | "ref" | "index" | "log" | "state" | "lock" | "protected";
const GIT_CLASSES = ["object", "ref", "index", "log", "state", "lock", "protected"] as const satisfies readonly GitPathClass[];

const ClassSchema = Type.Union(GIT_CLASSES.map((c) => Type.Literal(c)));

const PolicySchema = Type.Object(
  {
    $comment: Type.Optional(Type.String()),
    version: Type.Literal(1),
    loss: Type.Object(
      {
        maxLostBytes: Type.Integer({ minimum: 0 }),
        maxLostFiles: Type.Integer({ minimum: 0 }),
        windowMs: Type.Integer({ minimum: 0 }),
        maxCompareBytes: Type.Integer({ minimum: 1 }),
        maxHashBytes: Type.Integer({ minimum: 1 }),
      },
      { additionalProperties: false },
    ),
    git: Type.Object(
      {
        paths: Type.Array(Type.Object({ glob: Type.String({ minLength: 1 }), class: ClassSchema }, { additionalProperties: false }), { minItems: 1 }),
        examples: Type.Array(Type.Object({ path: Type.String({ minLength: 1 }), class: ClassSchema }, { additionalProperties: false }), { minItems: 1 }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type EffectPolicyData = Static<typeof PolicySchema>;

export interface EffectPolicy {
  readonly loss: EffectPolicyData["loss"];
  classifyGitPath(rel: string): GitPathClass;
}

export function compilePolicy(raw: unknown): EffectPolicy {
  if (!Value.Check(PolicySchema, raw)) {
    const first = [...Value.Errors(PolicySchema, raw)][0];
    throw new Error(`the effect policy does not match its schema${first ? ` at ${first.instancePath || "/"}: ${first.message}` : ""}`);
  }
  const matchers = raw.git.paths.map((p) => ({ test: minimatch.filter(p.glob, { dot: true }), cls: p.class }));
  const classifyGitPath = (rel: string): GitPathClass => matchers.find((m) => m.test(rel))?.cls ?? "protected";
  for (const ex of raw.git.examples) {
    const got = classifyGitPath(ex.path);
    if (got !== ex.class) throw new Error(`the effect policy's example ${ex.path} is classified ${got}, not ${ex.class}`);
  }
  return { loss: raw.loss, classifyGitPath };
}

let loaded: EffectPolicy | undefined;

/** The shipped policy, compiled once. */
export function effectPolicy(): EffectPolicy {
  // A loader with CommonJS interop (Pi's jiti) hands a JSON module over with a `default` key
  // beside the data (pointing back at it): the data is the rest.
  const { default: _interop, ...raw } = data as typeof data & { default?: unknown };
  loaded ??= compilePolicy(raw);
  return loaded;
}
