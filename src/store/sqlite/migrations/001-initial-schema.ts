import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * The first schema. Times are INTEGER milliseconds since the epoch (UTC); booleans are 0/1.
 * Tokens and tickets share one table keyed by the SHA-256 hex of their text, so validating
 * either is one primary-key lookup.
 */
export const initialSchema: SqliteMigration = {
  version: 1,
  name: 'initial schema',
  sql: `
CREATE TABLE applications (
  app_id                 INTEGER PRIMARY KEY CHECK (app_id BETWEEN 1 AND 2147483647),
  name                   TEXT    NOT NULL,
  enabled                INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  require_ip             INTEGER NOT NULL DEFAULT 1 CHECK (require_ip IN (0, 1)),
  login_url              TEXT,
  token_lifetime_seconds INTEGER NOT NULL DEFAULT 86400 CHECK (token_lifetime_seconds > 0),
  idle_timeout_seconds   INTEGER CHECK (idle_timeout_seconds IS NULL OR idle_timeout_seconds > 0),
  default_language       TEXT    NOT NULL DEFAULT 'en',
  created_at             INTEGER NOT NULL
);

CREATE TABLE users (
  user_id             INTEGER PRIMARY KEY,
  login               TEXT    NOT NULL,
  login_key           TEXT    NOT NULL UNIQUE,
  password_hash       TEXT    NOT NULL,
  enabled             INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  created_at          INTEGER NOT NULL,
  last_login_at       INTEGER,
  password_changed_at INTEGER NOT NULL
);

CREATE TABLE user_applications (
  user_id    INTEGER NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id     INTEGER NOT NULL REFERENCES applications (app_id),
  granted_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, app_id)
) WITHOUT ROWID;
CREATE INDEX user_applications_app ON user_applications (app_id);

CREATE TABLE tokens (
  token_hash   TEXT    NOT NULL PRIMARY KEY CHECK (length(token_hash) = 64),
  kind         TEXT    NOT NULL CHECK (kind IN ('session', 'ticket')),
  user_id      INTEGER NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id       INTEGER NOT NULL REFERENCES applications (app_id),
  client_ip    TEXT,
  source_ip    TEXT,
  issued_at    INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL,
  used_at      INTEGER,
  revoked_at   INTEGER
) WITHOUT ROWID;
-- Revocation by user or application, and housekeeping by expiry.
CREATE INDEX tokens_user ON tokens (user_id);
CREATE INDEX tokens_app ON tokens (app_id);
CREATE INDEX tokens_expires ON tokens (expires_at);

CREATE TABLE news (
  news_id      INTEGER PRIMARY KEY AUTOINCREMENT,
  app_id       INTEGER NOT NULL REFERENCES applications (app_id),
  language     TEXT    NOT NULL,
  title        TEXT    NOT NULL,
  body         TEXT    NOT NULL,
  url          TEXT,
  published_at INTEGER NOT NULL,
  expires_at   INTEGER,
  min_version  TEXT,
  max_version  TEXT,
  members_only INTEGER NOT NULL DEFAULT 0 CHECK (members_only IN (0, 1)),
  created_at   INTEGER NOT NULL
);
CREATE INDEX news_app_language_published ON news (app_id, language, published_at DESC);

-- The GPS application every legacy client knows (AppId 2, no IPAddress required).
INSERT INTO applications (app_id, name, enabled, require_ip, login_url, token_lifetime_seconds, idle_timeout_seconds, default_language, created_at)
VALUES (2, 'GPS', 1, 0, NULL, 86400, NULL, 'en', CAST(strftime('%s', 'now') AS INTEGER) * 1000);
`,
};
