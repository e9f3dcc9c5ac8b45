import type { StoreMigration } from './store-migrations.js';
import { bumpRevision } from './revision-table.js';
import { SQLITE_DIALECT } from '../sql-dialect.js';

/**
 * Two changes for issuing tokens and tickets cheaply.
 *
 * SQLite: the token table's user and application indexes are ordered by expiry within a user or
 * an application (migration 14 dropped the application index, ordered by hash; it comes back here
 * in the appending order, for the operator's revocations by application, which would otherwise
 * scan the table). In a WITHOUT ROWID table a secondary index entry ends with the primary key,
 * here the token's SHA-256: every new token went to a random place of the application's index
 * (a handful of applications, millions of tokens) and of its user's, one more page written to
 * the WAL, and copied again by the checkpoint, per token. New tokens expire later than the
 * tokens before them (per kind: sessions and tickets have their own lifetimes), so ordered by
 * expiry they are appended at the end of their application's and user's entries. The lookups
 * by user or application are unchanged (a prefix of the index), and those that want the live
 * tokens only (revocation, a user's sessions) read just the range that has not expired.
 * PostgreSQL keeps its indexes: its table is a heap, and a B-tree entry ends with the row's
 * place in it, which grows as rows are added: new entries are appended already.
 *
 * Both: a user's login, now read with each token (the ticket's audit event and login URL, the
 * owner of a JSON token answer), moves the access revision when it changes, as the enabled flag
 * does, so a token kept in memory (src/domain/access-cache.ts) never carries a login the
 * database no longer has. svcapi-auth never renames a user; the trigger covers SQL written by
 * hand.
 */
export const tokenIndexOrder: StoreMigration = {
  version: 15,
  name: 'token index order',
  sql: {
    sqlite: `
DROP INDEX tokens_user;
CREATE INDEX tokens_user ON tokens (user_id, expires_at);
CREATE INDEX tokens_app ON tokens (app_id, expires_at);
DROP TRIGGER access_revision_users_update;
CREATE TRIGGER access_revision_users_update AFTER UPDATE OF user_id, enabled, login ON users BEGIN ${bumpRevision(SQLITE_DIALECT, 'access_revision')} END;
`,
    postgres: `
DROP TRIGGER access_revision_users ON users;
CREATE CONSTRAINT TRIGGER access_revision_users AFTER UPDATE OF user_id, enabled, login OR DELETE ON users
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_revision_bump();
`,
  },
};
