import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Twin of the SQLite migration 13: deleting a token that expired more than an hour before the
 * deleting transaction began (the database's clock) no longer moves the access revision of
 * migration 6, so housekeeping's purge of expired rows leaves every process's memory of live
 * tokens (src/domain/access-cache.ts) in place. The memory never answers for a token expired
 * by the process's own clock, so such a delete changes no answer it gives; the hour covers an
 * instance whose clock is behind the database's. Any other delete, and every UPDATE the
 * trigger named before, still moves it. The rows skipped are not even queued as deferred
 * trigger events, so a purge holds no per-row event list until its commit.
 */
export const purgeKeepsAccessRevision: PostgresMigration = {
  version: 13,
  name: 'purge keeps access revision',
  sql: `
DROP TRIGGER access_revision_tokens ON tokens;
CREATE CONSTRAINT TRIGGER access_revision_tokens AFTER UPDATE OF token_hash, kind, user_id, app_id, issued_at, expires_at, revoked_at ON tokens
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_revision_bump();
CREATE CONSTRAINT TRIGGER access_revision_tokens_delete AFTER DELETE ON tokens
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.expires_at >= now() - interval '1 hour') EXECUTE FUNCTION access_revision_bump();
`,
};
