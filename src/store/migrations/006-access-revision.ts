import type { StoreMigration } from './store-migrations.js';
import type { SqlDialect } from '../sql-dialect.js';
import { bumpRevision, postgresBumpFunction, revisionTable } from './revision-table.js';

/**
 * The access revision, so token validation can keep the rows it read in memory
 * (src/domain/access-cache.ts) and still see every revocation, from any process or instance, on
 * the very next request. One row (revision-table.ts), bumped by triggers on every write that can
 * make a working session stop working or change how it is judged: a token's identity, owner,
 * expiry or revocation; a user's enabled flag or removal; any change to a grant or an
 * application. Every write path (admin service, CLI in another process, import, raw SQL) moves
 * it, with no adapter code to forget.
 *
 * Writes that cannot end a session do not move it, so they keep the cache warm: issuing a token
 * or a ticket (an INSERT), a sliding token's use (last_used_at), a ticket's use (used_at), a
 * login's bookkeeping (last_login_at), a password hash upgrade (same password; a password change
 * also revokes the tokens, which moves it).
 *
 * SQLite has only row triggers: a statement that revokes or deletes many tokens bumps once per
 * row, all in its own transaction (readers see one new value at commit).
 *
 * PostgreSQL bumps at COMMIT (deferred constraint triggers), once per transaction. Taken earlier,
 * the lock on the single row would be held while the transaction goes on to lock token rows, and
 * two instances (housekeeping deleting expired tokens here, an operator disabling an application
 * there) could deadlock on it; at commit a transaction holds every row it needs. The new value
 * still commits atomically with the change it announces. TRUNCATE, which has no row triggers,
 * bumps at once by a statement trigger. search_path fixed as for the news revision.
 */
const rowTrigger = (d: SqlDialect, name: string, event: string, table: string): string =>
  `CREATE TRIGGER access_revision_${name} AFTER ${event} ON ${table} BEGIN ${bumpRevision(d, 'access_revision')} END;`;

const deferred = (name: string, events: string, table: string): string =>
  `CREATE CONSTRAINT TRIGGER ${name} AFTER ${events} ON ${table} DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION access_revision_bump();`;

export const accessRevision: StoreMigration = {
  version: 6,
  name: 'access revision',
  sql: (d) => `${revisionTable(d, 'access_revision')}
${d.pick({
    sqlite: [
      rowTrigger(d, 'tokens_update', 'UPDATE OF token_hash, kind, user_id, app_id, issued_at, expires_at, revoked_at', 'tokens'),
      rowTrigger(d, 'tokens_delete', 'DELETE', 'tokens'),
      rowTrigger(d, 'users_update', 'UPDATE OF user_id, enabled', 'users'),
      rowTrigger(d, 'users_delete', 'DELETE', 'users'),
      rowTrigger(d, 'grants_update', 'UPDATE', 'user_applications'),
      rowTrigger(d, 'grants_delete', 'DELETE', 'user_applications'),
      rowTrigger(d, 'applications_update', 'UPDATE', 'applications'),
      rowTrigger(d, 'applications_delete', 'DELETE', 'applications'),
    ].join('\n'),
    postgres: `
-- Row triggers fire per changed row; the transaction-local setting makes all but the first a no-op.
CREATE FUNCTION access_revision_bump() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF current_setting('svcapi.access_revision_bumped', true) IS DISTINCT FROM txid_current()::text THEN
    PERFORM set_config('svcapi.access_revision_bumped', txid_current()::text, true);
    ${bumpRevision(d, 'access_revision')}
  END IF;
  RETURN NULL;
END
$$;
${deferred('access_revision_tokens', 'UPDATE OF token_hash, kind, user_id, app_id, issued_at, expires_at, revoked_at OR DELETE', 'tokens')}
${deferred('access_revision_users', 'UPDATE OF user_id, enabled OR DELETE', 'users')}
${deferred('access_revision_grants', 'UPDATE OR DELETE', 'user_applications')}
${deferred('access_revision_applications', 'UPDATE OR DELETE', 'applications')}

-- TRUNCATE has no row triggers: a statement trigger, at once (TRUNCATE locks the whole table anyway).
${postgresBumpFunction(d, 'access_revision_bump_now', 'access_revision')}
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON tokens FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON user_applications FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON applications FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();`,
  })}
`,
};
