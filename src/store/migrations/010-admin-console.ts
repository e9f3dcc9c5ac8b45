import type { StoreMigration } from './store-migrations.js';

/**
 * The admin console (src/console): its own accounts, apart from the service's users (an editor
 * who posts news is no client of any application), and their browser sessions. A session is
 * known only by the SHA-256 hex of its cookie value, as tokens are; the CSRF token is kept as
 * is, since every form of the session must carry it and it is worthless without the cookie.
 * Names are stored lower-cased (ASCII only, checked by the domain), so they compare byte-wise.
 */
export const adminConsole: StoreMigration = {
  version: 10,
  name: 'admin console',
  sql: (d) => `
CREATE TABLE admin_accounts (
  name                ${d.key} NOT NULL PRIMARY KEY,
  password_hash       ${d.text} NOT NULL,
  role                ${d.text} NOT NULL CHECK (role IN ('editor', 'admin')),
  created_at          ${d.time} NOT NULL,
  password_changed_at ${d.time} NOT NULL,
  last_login_at       ${d.time}
)${d.withoutRowid};

CREATE TABLE admin_sessions (
  session_hash ${d.key} NOT NULL PRIMARY KEY CHECK (length(session_hash) = 64),
  name         ${d.key} NOT NULL REFERENCES admin_accounts (name) ON DELETE CASCADE,
  csrf_token   ${d.text} NOT NULL,
  source_ip    ${d.text},
  created_at   ${d.time} NOT NULL,
  last_used_at ${d.time} NOT NULL,
  expires_at   ${d.time} NOT NULL
)${d.withoutRowid};
CREATE INDEX admin_sessions_name ON admin_sessions (name);
CREATE INDEX admin_sessions_expires ON admin_sessions (expires_at);
`,
};
