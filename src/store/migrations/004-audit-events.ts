import type { StoreMigration } from './store-migrations.js';

/**
 * The audit trail, one row per security outcome (logins, tickets, token issue, admin changes; see
 * docs/security.md#audit-trail); `detail` is a small JSON object. No row ever holds a password, a
 * token or a ticket: tokens appear only as `token_fp`, 12 hex digits of their SHA-256. Old rows
 * are purged by housekeeping after audit.retentionDays.
 */
export const auditEvents: StoreMigration = {
  version: 4,
  name: 'audit events',
  sql: (d) => `
CREATE TABLE audit_events (
  id         ${d.rowId},
  at         ${d.time} NOT NULL,
  type       ${d.text} NOT NULL,
  reason     ${d.text},
  request_id ${d.text},
  app_id     ${d.int},
  login      ${d.text},
  source_ip  ${d.text},
  claimed_ip ${d.text},
  token_fp   ${d.text},
  detail     ${d.json}
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_login ON audit_events (lower(login));
`,
};
