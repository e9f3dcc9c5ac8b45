import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Issue 6: the audit trail, one row per security outcome (logins, tickets, token issue,
 * admin changes; see docs/security.md#audit-trail). Times are INTEGER milliseconds (UTC) as
 * everywhere; `detail` is a small JSON object. No row ever holds a password, a token or a
 * ticket: tokens appear only as `token_fp`, 12 hex digits of their SHA-256. Old rows are purged
 * by housekeeping after audit.retentionDays. (Version 3 belongs to the throttling migration.)
 */
export const auditEvents: SqliteMigration = {
  version: 4,
  name: 'audit events',
  sql: `
CREATE TABLE audit_events (
  id         INTEGER PRIMARY KEY,
  at         INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  reason     TEXT,
  request_id TEXT,
  app_id     INTEGER,
  login      TEXT,
  source_ip  TEXT,
  claimed_ip TEXT,
  token_fp   TEXT,
  detail     TEXT
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_login ON audit_events (lower(login));
`,
};
