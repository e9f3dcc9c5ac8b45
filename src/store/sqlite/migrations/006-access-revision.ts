import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Issue 9: the access revision, so token validation can keep the rows it read in memory
 * (src/domain/access-cache.ts) and still see every revocation on the very next request. One
 * row, bumped by triggers on every write that can make a working session stop working or change
 * how it is judged: a token's identity, owner, expiry or revocation; a user's enabled flag or
 * removal; any change to a grant or an application. Every write path (admin service, CLI in
 * another process, import, raw SQL) moves it, with no adapter code to forget.
 *
 * Writes that cannot end a session do not move it, so they keep the cache warm: issuing a token
 * or a ticket (an INSERT), a sliding token's use (last_used_at), a ticket's use (used_at), a
 * login's bookkeeping (last_login_at), a password hash upgrade (same password; a password
 * change also revokes the tokens, which moves it).
 *
 * Same value rule as the news revision (migration 5): at least the clock in microseconds and
 * always one more than before, so it never repeats a value a running process may have seen.
 * SQLite has only row triggers: a statement that revokes or deletes many tokens bumps once per
 * row, all in its own transaction (readers see one new value at commit).
 */
const NOW_MICROS = `CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000`;
const BUMP = `UPDATE access_revision SET revision = MAX(revision + 1, ${NOW_MICROS}) WHERE id = 1;`;

export const accessRevision: SqliteMigration = {
  version: 6,
  name: 'access revision',
  sql: `
CREATE TABLE access_revision (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO access_revision (id, revision) VALUES (1, ${NOW_MICROS});
CREATE TRIGGER access_revision_tokens_update AFTER UPDATE OF token_hash, kind, user_id, app_id, issued_at, expires_at, revoked_at ON tokens BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_tokens_delete AFTER DELETE ON tokens BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_users_update AFTER UPDATE OF user_id, enabled ON users BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_users_delete AFTER DELETE ON users BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_grants_update AFTER UPDATE ON user_applications BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_grants_delete AFTER DELETE ON user_applications BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_applications_update AFTER UPDATE ON applications BEGIN ${BUMP} END;
CREATE TRIGGER access_revision_applications_delete AFTER DELETE ON applications BEGIN ${BUMP} END;
`,
};
