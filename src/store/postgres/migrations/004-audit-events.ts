import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Issue 6 (twin of the SQLite migration 4): the audit trail, one row per security outcome. No
 * row ever holds a password, a token or a ticket: tokens appear only as `token_fp`, 12 hex
 * digits of their SHA-256. (Version 3 belongs to the throttling migration.)
 */
export const auditEvents: PostgresMigration = {
  version: 4,
  name: 'audit events',
  sql: `
CREATE TABLE audit_events (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL,
  type       text        NOT NULL,
  reason     text,
  request_id text,
  app_id     integer,
  login      text,
  source_ip  text,
  claimed_ip text,
  token_fp   text,
  detail     jsonb
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_login ON audit_events (lower(login));
`,
};
