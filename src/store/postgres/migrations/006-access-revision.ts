import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Issue 9 (twin of the SQLite migration 6): the access revision that lets token validation keep
 * the rows it read in memory (src/domain/access-cache.ts) and still see every revocation, from
 * any instance, on the very next request. It moves on every write that can make a working
 * session stop working or change how it is judged: a token's identity, owner, expiry or
 * revocation; a user's enabled flag or removal; any change to a grant or an application
 * (TRUNCATE included). Issuing tokens and tickets, using them and a login's bookkeeping do not
 * move it.
 *
 * The bump runs at COMMIT (deferred constraint triggers), once per transaction. Taken earlier,
 * the lock on the single row would be held while the transaction goes on to lock token rows,
 * and two instances (housekeeping deleting expired tokens here, an operator disabling an
 * application there) could deadlock on it; at commit a transaction holds every row it needs.
 * The new value still commits atomically with the change it announces.
 *
 * Same value rule as the news revision (migration 5): at least the database clock in
 * microseconds and always one more than before; search_path fixed to the schema it was created in.
 */
const NOW_MICROS = '(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';

const deferred = (name: string, events: string, table: string): string =>
  `CREATE CONSTRAINT TRIGGER ${name} AFTER ${events} ON ${table} DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION access_revision_bump();`;

export const accessRevision: PostgresMigration = {
  version: 6,
  name: 'access revision',
  sql: `
CREATE TABLE access_revision (
  id       boolean PRIMARY KEY DEFAULT true CHECK (id),
  revision bigint  NOT NULL
);
INSERT INTO access_revision (id, revision) VALUES (true, ${NOW_MICROS});

-- Row triggers fire per changed row; the transaction-local setting makes all but the first a no-op.
CREATE FUNCTION access_revision_bump() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF current_setting('svcapi.access_revision_bumped', true) IS DISTINCT FROM txid_current()::text THEN
    PERFORM set_config('svcapi.access_revision_bumped', txid_current()::text, true);
    UPDATE access_revision SET revision = greatest(revision + 1, ${NOW_MICROS});
  END IF;
  RETURN NULL;
END
$$;
${deferred('access_revision_tokens', 'UPDATE OF token_hash, kind, user_id, app_id, issued_at, expires_at, revoked_at OR DELETE', 'tokens')}
${deferred('access_revision_users', 'UPDATE OF user_id, enabled OR DELETE', 'users')}
${deferred('access_revision_grants', 'UPDATE OR DELETE', 'user_applications')}
${deferred('access_revision_applications', 'UPDATE OR DELETE', 'applications')}

-- TRUNCATE has no row triggers: a statement trigger, at once (TRUNCATE locks the whole table anyway).
CREATE FUNCTION access_revision_bump_now() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE access_revision SET revision = greatest(revision + 1, ${NOW_MICROS});
  RETURN NULL;
END
$$;
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON tokens FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON user_applications FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
CREATE TRIGGER access_revision_truncate AFTER TRUNCATE ON applications FOR EACH STATEMENT EXECUTE FUNCTION access_revision_bump_now();
`,
};
