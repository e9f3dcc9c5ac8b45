import type { StoreMigration } from './store-migrations.js';

/**
 * Brute-force protection (docs/security.md#brute-force-protection).
 *
 * - applications.trusted_callers: the addresses / CIDR ranges whose ValidateUser IPAddress names
 *   the end user (canonical text, src/domain/source-address.ts); a JSON array on SQLite, text[]
 *   on PostgreSQL.
 * - throttle_counters: one row per counter, keyed `p:<login hash>|<source>` (pair),
 *   `l:<login hash>` (login) or `s:<source>` (source); the login appears only as the SHA-256 of
 *   its key. Pairs also hold their block and their verifications under way (`inflight`, until
 *   `inflight_until`). A row past `expires_at` means nothing and is purged by housekeeping.
 * - known_sources: the last successful login of a login from a source (the login ceiling does
 *   not apply to it); purged after bruteForce.knownSourceDays.
 */
export const bruteForce: StoreMigration = {
  version: 3,
  name: 'brute-force protection',
  sql: (d) => `
ALTER TABLE applications ADD COLUMN trusted_callers ${d.pick({ sqlite: "TEXT NOT NULL DEFAULT '[]'", postgres: "text[] NOT NULL DEFAULT '{}'" })};

CREATE TABLE throttle_counters (
  key           ${d.key} NOT NULL PRIMARY KEY,
  count         ${d.int} NOT NULL CHECK (count >= 0),
  window_start  ${d.time} NOT NULL,
  blocked_until ${d.time},
  inflight      ${d.int} NOT NULL DEFAULT 0 CHECK (inflight >= 0),
  inflight_until ${d.time},
  expires_at    ${d.time} NOT NULL
)${d.withoutRowid};
CREATE INDEX throttle_counters_expires ON throttle_counters (expires_at);

CREATE TABLE known_sources (
  login_hash      ${d.key} NOT NULL,
  source          ${d.key} NOT NULL,
  last_success_at ${d.time} NOT NULL,
  PRIMARY KEY (login_hash, source)
)${d.withoutRowid};
CREATE INDEX known_sources_last_success ON known_sources (last_success_at);
`,
};
