import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * The admin console (src/console): its own accounts, apart from the service's users (an editor
 * who posts news is no client of any application), and their browser sessions. A session is
 * known only by the SHA-256 hex of its cookie value, as tokens are; the CSRF token is kept as
 * is, since every form of the session must carry it and it is worthless without the cookie.
 * Names are stored lower-cased (ASCII only, checked by the domain), so they compare byte-wise.
 */
export const adminConsole: SqliteMigration = {
  version: 10,
  name: 'admin console',
  sql: `
CREATE TABLE admin_accounts (
  name                TEXT    NOT NULL PRIMARY KEY,
  password_hash       TEXT    NOT NULL,
  role                TEXT    NOT NULL CHECK (role IN ('editor', 'admin')),
  created_at          INTEGER NOT NULL,
  password_changed_at INTEGER NOT NULL,
  last_login_at       INTEGER
) WITHOUT ROWID;

CREATE TABLE admin_sessions (
  session_hash TEXT    NOT NULL PRIMARY KEY CHECK (length(session_hash) = 64),
  name         TEXT    NOT NULL REFERENCES admin_accounts (name) ON DELETE CASCADE,
  csrf_token   TEXT    NOT NULL,
  source_ip    TEXT,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX admin_sessions_name ON admin_sessions (name);
CREATE INDEX admin_sessions_expires ON admin_sessions (expires_at);
`,
};
