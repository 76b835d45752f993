// The audit store's settings and their bounds (src/audit/store.ts): here, not in audit/, because the
// configuration that checks them comes first on the path of a call.

export const DEFAULT_AUDIT_RETENTION_DAYS = 180;
export const MIN_AUDIT_RETENTION_DAYS = 1;
export const MAX_AUDIT_RETENTION_DAYS = 3650;

/** The audit's settings for one workspace, after the user's and the project's files. */
export interface AuditSettings {
  /** Neither file turned it off (on by default). */
  readonly enabled: boolean;
  /** The user's retention: how long the store keeps any day. */
  readonly retentionDays: number;
  /** This workspace's rows: the shorter of the user's retention and the project's (a project can only shorten it, P15). */
  readonly workspaceRetentionDays: number;
}

export const DEFAULT_AUDIT_SETTINGS: AuditSettings = {
  enabled: true,
  retentionDays: DEFAULT_AUDIT_RETENTION_DAYS,
  workspaceRetentionDays: DEFAULT_AUDIT_RETENTION_DAYS,
};
