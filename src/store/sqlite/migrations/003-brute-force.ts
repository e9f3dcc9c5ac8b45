import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Issue 6: brute-force protection (docs/security.md#brute-force-protection).
 *
 * - applications.trusted_callers: JSON array of addresses / CIDR ranges whose ValidateUser
 *   IPAddress names the end user (canonical text, src/domain/source-address.ts).
 * - throttle_counters: one row per counter, keyed `p:<login hash>|<source>` (pair),
 *   `l:<login hash>` (login) or `s:<source>` (source); the login appears only as the SHA-256 of
 *   its key. Pairs also hold their block and their verifications under way (`inflight`, until
 *   `inflight_until`). A row past `expires_at` means nothing and is purged by housekeeping.
 * - known_sources: the last successful login of a login from a source (the login ceiling does
 *   not apply to it); purged after bruteForce.knownSourceDays.
 *
 * Times are INTEGER milliseconds (UTC) as everywhere.
 */
export const bruteForce: SqliteMigration = {
  version: 3,
  name: 'brute-force protection',
  sql: `
ALTER TABLE applications ADD COLUMN trusted_callers TEXT NOT NULL DEFAULT '[]';

CREATE TABLE throttle_counters (
  key           TEXT    NOT NULL PRIMARY KEY,
  count         INTEGER NOT NULL CHECK (count >= 0),
  window_start  INTEGER NOT NULL,
  blocked_until INTEGER,
  inflight      INTEGER NOT NULL DEFAULT 0 CHECK (inflight >= 0),
  inflight_until INTEGER,
  expires_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX throttle_counters_expires ON throttle_counters (expires_at);

CREATE TABLE known_sources (
  login_hash      TEXT    NOT NULL,
  source          TEXT    NOT NULL,
  last_success_at INTEGER NOT NULL,
  PRIMARY KEY (login_hash, source)
) WITHOUT ROWID;
CREATE INDEX known_sources_last_success ON known_sources (last_success_at);
`,
};
