import type { StoreMigration } from './store-migrations.js';

/**
 * The first schema. Tokens and tickets share one table keyed by the SHA-256 hex of their text, so
 * validating either is one primary-key lookup. Times, booleans, ids and byte-wise keys in each
 * dialect's words (src/store/sql-dialect.ts).
 */
export const initialSchema: StoreMigration = {
  version: 1,
  name: 'initial schema',
  sql: (d) => `
CREATE TABLE applications (
  app_id                 ${d.int} PRIMARY KEY CHECK (app_id BETWEEN 1 AND 2147483647),
  name                   ${d.text} NOT NULL,
  enabled                ${d.bool('enabled', true)},
  require_ip             ${d.bool('require_ip', true)},
  login_url              ${d.text},
  token_lifetime_seconds ${d.int} NOT NULL DEFAULT 86400 CHECK (token_lifetime_seconds > 0),
  idle_timeout_seconds   ${d.int} CHECK (idle_timeout_seconds IS NULL OR idle_timeout_seconds > 0),
  default_language       ${d.text} NOT NULL DEFAULT 'en',
  created_at             ${d.time} NOT NULL
);

CREATE TABLE users (
  user_id             ${d.rowId},
  login               ${d.text} NOT NULL,
  login_key           ${d.key} NOT NULL UNIQUE,
  password_hash       ${d.text} NOT NULL,
  enabled             ${d.bool('enabled', true)},
  created_at          ${d.time} NOT NULL,
  last_login_at       ${d.time},
  password_changed_at ${d.time} NOT NULL
);

CREATE TABLE user_applications (
  user_id    ${d.bigint} NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id     ${d.int} NOT NULL REFERENCES applications (app_id),
  granted_at ${d.time} NOT NULL,
  PRIMARY KEY (user_id, app_id)
)${d.withoutRowid};
CREATE INDEX user_applications_app ON user_applications (app_id);

CREATE TABLE tokens (
  token_hash   ${d.key} NOT NULL PRIMARY KEY CHECK (length(token_hash) = 64),
  kind         ${d.text} NOT NULL CHECK (kind IN ('session', 'ticket')),
  user_id      ${d.bigint} NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  app_id       ${d.int} NOT NULL REFERENCES applications (app_id),
  client_ip    ${d.text},
  source_ip    ${d.text},
  issued_at    ${d.time} NOT NULL,
  expires_at   ${d.time} NOT NULL,
  last_used_at ${d.time} NOT NULL,
  used_at      ${d.time},
  revoked_at   ${d.time}
)${d.withoutRowid};
-- Revocation by user or application, and housekeeping by expiry.
CREATE INDEX tokens_user ON tokens (user_id);
CREATE INDEX tokens_app ON tokens (app_id);
CREATE INDEX tokens_expires ON tokens (expires_at);

CREATE TABLE news (
  news_id      ${d.serialId},
  app_id       ${d.int} NOT NULL REFERENCES applications (app_id),
  language     ${d.text} NOT NULL,
  title        ${d.text} NOT NULL,
  body         ${d.text} NOT NULL,
  url          ${d.text},
  published_at ${d.time} NOT NULL,
  expires_at   ${d.time},
  min_version  ${d.text},
  max_version  ${d.text},
  members_only ${d.bool('members_only', false)},
  created_at   ${d.time} NOT NULL
);
CREATE INDEX news_app_language_published ON news (app_id, language, published_at DESC);

-- The GPS application every legacy client knows (AppId 2, no IPAddress required).
INSERT INTO applications (app_id, name, enabled, require_ip, login_url, token_lifetime_seconds, idle_timeout_seconds, default_language, created_at)
VALUES (2, 'GPS', ${d.literal(true)}, ${d.literal(false)}, NULL, 86400, NULL, 'en', ${d.nowSeconds});
`,
};
