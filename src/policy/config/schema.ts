// The user's and the project's auto-mode configuration, as typebox schemas. The project file
// has no `allow` rules, no `tmpRoot` and no network allow entries: it can only tighten what the
// user configured (P15).

import { Type, type Static } from "typebox";
import { MAX_AUDIT_RETENTION_DAYS, MIN_AUDIT_RETENTION_DAYS } from "./audit-settings.ts";

const Rule = Type.Object(
  {
    tool: Type.Optional(Type.String({ minLength: 1, description: "Tool name glob, e.g. 'bash', 'mcp__github__*'" })),
    command: Type.Optional(Type.String({ minLength: 1, description: "Shell command pattern, e.g. 'git push *'" })),
    path: Type.Optional(Type.String({ minLength: 1, description: "Path glob, e.g. '~/.config/app/**'" })),
    reason: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const RuleList = Type.Array(Rule, { maxItems: 1000 });

// An allow rule spares a review; what it may not spare without saying so (a protected path, an
// identity secret, a place outside the writable roots, a run on the host) it names here. Only the
// user's file has allow rules (P15).
const AllowRule = Type.Object(
  {
    ...Rule.properties,
    paths: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        maxItems: 100,
        description: "Protected or outside places this rule opens, each with everything below it, e.g. '.git/hooks', '~/.config/app'",
      }),
    ),
    unsandboxed: Type.Optional(Type.Boolean({ description: "The rule approves running what it covers outside the OS sandbox, when the call asks for it" })),
  },
  { additionalProperties: false },
);

const RetentionDays = Type.Integer({
  minimum: MIN_AUDIT_RETENTION_DAYS,
  maximum: MAX_AUDIT_RETENTION_DAYS,
  description: "Days the local audit keeps its daily counts",
});

// Network entries (grammar in src/policy/network/entries.ts, checked when the file is layered).
const NetworkEntries = Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: 1000 });

export const UserConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(1),
    tmpRoot: Type.Optional(Type.String({ minLength: 1 })),
    // Only the user's file: a project must not be able to widen what is sent to the reviewer.
    review: Type.Optional(
      Type.Object(
        {
          maxInputTokens: Type.Optional(Type.Integer({ minimum: 2048, maximum: 32768 })),
          deadlineMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 600000 })),
          // The classifier engine's bands and its one exception to "no dialog" (P4): the user's
          // file only, since a project that could loosen a threshold or open a dialog would widen
          // what the user allowed (P15).
          classifier: Type.Optional(
            Type.Object(
              {
                thresholds: Type.Optional(
                  Type.Record(
                    Type.String({ pattern: "^[a-z][a-z0-9_]{1,63}$" }),
                    Type.Object(
                      { satisfied: Type.Number({ minimum: 0, maximum: 1 }), rejected: Type.Number({ minimum: 0, maximum: 1 }) },
                      { additionalProperties: false },
                    ),
                    { maxProperties: 32 },
                  ),
                ),
                confirmUncertain: Type.Optional(Type.Boolean()),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    protectedPaths: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 1000 })),
    /** Whether /perm-break-glass may override a reviewer's critical denial (on unless false). */
    breakGlass: Type.Optional(Type.Boolean()),
    rules: Type.Optional(
      Type.Object(
        { allow: Type.Optional(Type.Array(AllowRule, { maxItems: 1000 })), review: Type.Optional(RuleList), deny: Type.Optional(RuleList) },
        { additionalProperties: false },
      ),
    ),
    // Where sandboxed commands may connect, through the host-side proxy. Without `allow` the
    // default list (src/policy/data/network.json) applies; `"allow": []` is no network.
    sandbox: Type.Optional(
      Type.Object(
        {
          network: Type.Optional(
            Type.Object(
              { allow: Type.Optional(NetworkEntries), deny: Type.Optional(NetworkEntries), reviewUnlisted: Type.Optional(Type.Boolean()) },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    // What /perm-undo can restore: the pre-images of the last applied commands, per workspace.
    undo: Type.Optional(
      Type.Object(
        {
          maxCommands: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
          maxBytes: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 40 })),
        },
        { additionalProperties: false },
      ),
    ),
    // The local audit of the gate's decisions (src/audit/store.ts): on unless false.
    audit: Type.Optional(Type.Object({ enabled: Type.Optional(Type.Boolean()), retentionDays: Type.Optional(RetentionDays) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const ProjectConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(1),
    protectedPaths: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 1000 })),
    // A project may turn break glass off for its workspace, never on (P15).
    breakGlass: Type.Optional(Type.Literal(false)),
    rules: Type.Optional(Type.Object({ review: Type.Optional(RuleList), deny: Type.Optional(RuleList) }, { additionalProperties: false })),
    // A project may turn the audit off for its workspace or keep its rows for less time, never
    // turn it on or keep them longer (P15): a longer retention than the user's has no effect.
    audit: Type.Optional(
      Type.Object({ enabled: Type.Optional(Type.Literal(false)), retentionDays: Type.Optional(RetentionDays) }, { additionalProperties: false }),
    ),
    // A project may take entries out of the user's allow list, add denies and turn reviewing
    // unlisted destinations off; it cannot add an allow entry or turn review on (P15).
    sandbox: Type.Optional(
      Type.Object(
        {
          network: Type.Optional(
            Type.Object(
              { remove: Type.Optional(NetworkEntries), deny: Type.Optional(NetworkEntries), reviewUnlisted: Type.Optional(Type.Literal(false)) },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export type RuleSpec = Static<typeof Rule>;
export type AllowRuleSpec = Static<typeof AllowRule>;
export type UserConfig = Static<typeof UserConfigSchema>;
export type ProjectConfig = Static<typeof ProjectConfigSchema>;
