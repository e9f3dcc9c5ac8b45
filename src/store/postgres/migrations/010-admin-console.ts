import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Twin of the SQLite migration 10: the admin console's accounts (apart from the service's users)
 * and their browser sessions, known only by the SHA-256 hex of the cookie value. Names are
 * stored lower-cased (ASCII, checked by the domain) and compared byte-wise.
 */
export const adminConsole: PostgresMigration = {
  version: 10,
  name: 'admin console',
  sql: `
CREATE TABLE admin_accounts (
  name                text        COLLATE "C" NOT NULL PRIMARY KEY,
  password_hash       text        NOT NULL,
  role                text        NOT NULL CHECK (role IN ('editor', 'admin')),
  created_at          timestamptz NOT NULL,
  password_changed_at timestamptz NOT NULL,
  last_login_at       timestamptz
);

CREATE TABLE admin_sessions (
  session_hash text        COLLATE "C" NOT NULL PRIMARY KEY CHECK (length(session_hash) = 64),
  name         text        COLLATE "C" NOT NULL REFERENCES admin_accounts (name) ON DELETE CASCADE,
  csrf_token   text        NOT NULL,
  source_ip    text,
  created_at   timestamptz NOT NULL,
  last_used_at timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX admin_sessions_name ON admin_sessions (name);
CREATE INDEX admin_sessions_expires ON admin_sessions (expires_at);
`,
};
