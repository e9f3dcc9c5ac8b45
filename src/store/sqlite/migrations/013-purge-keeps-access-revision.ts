import type { SqliteMigration } from './sqlite-migrations.js';

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
 * retention under an hour) still moves it, as does every other write of migration 6. Per row,
 * as before: an expired row costs the purge no revision update either.
 */
const NOW_MS = `CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)`;
const BUMP = `UPDATE access_revision SET revision = MAX(revision + 1, ${NOW_MS} * 1000) WHERE id = 1;`;

export const purgeKeepsAccessRevision: SqliteMigration = {
  version: 13,
  name: 'purge keeps access revision',
  sql: `
DROP TRIGGER access_revision_tokens_delete;
CREATE TRIGGER access_revision_tokens_delete AFTER DELETE ON tokens
  WHEN OLD.expires_at >= ${NOW_MS} - 3600000
  BEGIN ${BUMP} END;
`,
};
