import type { StoreMigration } from './store-migrations.js';

/**
 * Deleting a token that expired more than an hour ago (by the database's clock) no longer moves
 * the access revision of migration 6. Housekeeping deletes such rows all day long (a fleet's
 * tokens expire continuously, `housekeeping.tokenRetentionMs` after their expiry), and every
 * move of the revision makes each process re-read every token it keeps in memory
 * (src/domain/access-cache.ts): a purge emptied the memory of the live tokens it never touched.
 *
 * Why that is safe: the memory answers only for a token that has not expired by the process's
 * own clock (access-cache.ts reads the store again for one that has), so deleting an expired row
 * cannot change any answer it gives; the hour covers a process whose clock is behind the
 * database's. Deleting anything else (a live token, one expired less than an hour ago: a
 * retention under an hour) still moves it, as does every other write of migration 6.
 *
 * SQLite: the row trigger gets a WHEN. PostgreSQL: the deferred row trigger of tokens is split,
 * its DELETE half with the same WHEN (now(): the deleting transaction's start), so the rows
 * skipped are not even queued as deferred trigger events until the purge's commit.
 */
const SQLITE_NOW_MS = `CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)`;

export const purgeKeepsAccessRevision: StoreMigration = {
  version: 13,
  name: 'purge keeps access revision',
  sql: {
    sqlite: `
DROP TRIGGER access_revision_tokens_delete;
CREATE TRIGGER access_revision_tokens_delete AFTER DELETE ON tokens
  WHEN OLD.expires_at >= ${SQLITE_NOW_MS} - 3600000
  BEGIN UPDATE access_revision SET revision = MAX(revision + 1, ${SQLITE_NOW_MS} * 1000) WHERE id = 1; END;
`,
    postgres: `
DROP TRIGGER access_revision_tokens ON tokens;
CREATE CONSTRAINT TRIGGER access_revision_tokens AFTER UPDATE OF token_hash, kind, user_id, app_id, issued_at, expires_at, revoked_at ON tokens
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_revision_bump();
CREATE CONSTRAINT TRIGGER access_revision_tokens_delete AFTER DELETE ON tokens
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.expires_at >= now() - interval '1 hour') EXECUTE FUNCTION access_revision_bump();
`,
  },
};
