import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Issue 6 (twin of the SQLite migration 3): brute-force protection. Trusted callers per
 * application; counters keyed `p:<login hash>|<source>`, `l:<login hash>`, `s:<source>` (rows
 * past `expires_at` mean nothing and are purged); known-good sources per login hash.
 * See docs/security.md#brute-force-protection.
 */
export const bruteForce: PostgresMigration = {
  version: 3,
  name: 'brute-force protection',
  sql: `
ALTER TABLE applications ADD COLUMN trusted_callers text[] NOT NULL DEFAULT '{}';

CREATE TABLE throttle_counters (
  key           text        COLLATE "C" NOT NULL PRIMARY KEY,
  count         integer     NOT NULL CHECK (count >= 0),
  window_start  timestamptz NOT NULL,
  blocked_until timestamptz,
  inflight      integer     NOT NULL DEFAULT 0 CHECK (inflight >= 0),
  inflight_until timestamptz,
  expires_at    timestamptz NOT NULL
);
CREATE INDEX throttle_counters_expires ON throttle_counters (expires_at);

CREATE TABLE known_sources (
  login_hash      text        COLLATE "C" NOT NULL,
  source          text        COLLATE "C" NOT NULL,
  last_success_at timestamptz NOT NULL,
  PRIMARY KEY (login_hash, source)
);
CREATE INDEX known_sources_last_success ON known_sources (last_success_at);
`,
};
