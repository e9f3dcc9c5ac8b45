import type { PostgresMigration } from './postgres-migrations.js';

/**
 * The first schema, the PostgreSQL twin of the SQLite migration with the same version: same
 * tables, columns, constraints and the GPS row, in native types (timestamptz, boolean, bigint
 * identities). Keys compared byte-wise (login_key, token_hash) use the "C" collation, as SQLite's
 * BINARY collation does, so ordering is the same on both stores.
 */
export const initialSchema: PostgresMigration = {
  version: 1,
  name: 'initial schema',
  sql: `
CREATE TABLE applications (
  app_id                 integer     PRIMARY KEY CHECK (app_id BETWEEN 1 AND 2147483647),
  name                   text        NOT NULL,
  enabled                boolean     NOT NULL DEFAULT true,
  require_ip             boolean     NOT NULL DEFAULT true,
  login_url              text,
  token_lifetime_seconds integer     NOT NULL DEFAULT 86400 CHECK (token_lifetime_seconds > 0),
  idle_timeout_seconds   integer     CHECK (idle_timeout_seconds IS NULL OR idle_timeout_seconds > 0),
  default_language       text        NOT NULL DEFAULT 'en',
  created_at             timestamptz NOT NULL
);

CREATE TABLE users (
  user_id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  login               text        NOT NULL,
  login_key           text        COLLATE "C" NOT NULL UNIQUE,
  password_hash       text        NOT NULL,
  enabled             boolean     NOT NULL DEFAULT true,
  created_at          timestamptz NOT NULL,
  last_login_at       timestamptz,
  password_changed_at timestamptz NOT NULL
);

CREATE TABLE user_applications (
  user_id    bigint      NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id     integer     NOT NULL REFERENCES applications (app_id),
  granted_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, app_id)
);
CREATE INDEX user_applications_app ON user_applications (app_id);

CREATE TABLE tokens (
  token_hash   text        COLLATE "C" NOT NULL PRIMARY KEY CHECK (length(token_hash) = 64),
  kind         text        NOT NULL CHECK (kind IN ('session', 'ticket')),
  user_id      bigint      NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id       integer     NOT NULL REFERENCES applications (app_id),
  client_ip    text,
  source_ip    text,
  issued_at    timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  last_used_at timestamptz NOT NULL,
  used_at      timestamptz,
  revoked_at   timestamptz
);
-- Revocation by user or application, and housekeeping by expiry.
CREATE INDEX tokens_user ON tokens (user_id);
CREATE INDEX tokens_app ON tokens (app_id);
CREATE INDEX tokens_expires ON tokens (expires_at);

CREATE TABLE news (
  news_id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  app_id       integer     NOT NULL REFERENCES applications (app_id),
  language     text        NOT NULL,
  title        text        NOT NULL,
  body         text        NOT NULL,
  url          text,
  published_at timestamptz NOT NULL,
  expires_at   timestamptz,
  min_version  text,
  max_version  text,
  members_only boolean     NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL
);
CREATE INDEX news_app_language_published ON news (app_id, language, published_at DESC);

-- The GPS application every legacy client knows (AppId 2, no IPAddress required).
INSERT INTO applications (app_id, name, enabled, require_ip, login_url, token_lifetime_seconds, idle_timeout_seconds, default_language, created_at)
VALUES (2, 'GPS', true, false, NULL, 86400, NULL, 'en', date_trunc('second', now()));
`,
};
