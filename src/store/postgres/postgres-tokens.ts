/**
 * PostgreSQL's tokens and tickets (TokenStore): found, inserted (one at a time or by group
 * commit, token-batch.ts), touched, consumed, revoked, listed, imported and purged; and the
 * revisions (RevisionStore), which the hot path reads together with a turn's token lookups.
 */
import type { ImportedToken, NewToken, RevisionsWithTokens, RevisionStore, RevokeScope, SessionExpectation, StoreRevisions, TokenRecord, TokenStore } from '../store.js';
import { LISTED_TICKET_SELECT, LISTED_TOKEN_SELECT, TICKET_COLUMNS, TOKEN_SELECT } from '../row-mapping.js';
import { toStoreRevisions } from '../revisions.js';
import { lookupPerTurn } from '../lookup-batch.js';
import { batchableSession, createTokenBatch, type TokenKind } from './token-batch.js';
import { one, type PostgresContext } from './postgres-context.js';
import { num, toListedToken, toToken } from './postgres-row-mapping.js';
import type { PostgresStoreOptions } from './postgres-store.js';

/**
 * The hot path (every client request validates a token): one primary-key lookup, joined to the
 * token's user, application and grant so their state is judged from the same read. Sent as a
 * named prepared statement: parsed and planned once per connection.
 */
export const FIND_TOKEN_SQL = `${TOKEN_SELECT} WHERE t.token_hash = $1`;
/** The lookups of one event-loop turn as one statement (findToken): the same select, one index probe per token. */
export const FIND_TOKENS_SQL = `${TOKEN_SELECT} WHERE t.token_hash = ANY($1::text[])`;
/**
 * The revisions and a turn's token lookups as one statement (revisionsWithTokens): one snapshot
 * and one round trip. The token columns come first, in TOKEN_COLUMNS' order (toToken), the two
 * revisions after them; the outer join gives one row of nulls (token_hash null) when no token
 * matches, so the revisions always come back.
 */
export const REVISIONS_WITH_TOKENS_SQL = `SELECT k.*, r.news, r.access
  FROM (SELECT (SELECT revision FROM news_revision) AS news, (SELECT revision FROM access_revision) AS access) r
  LEFT JOIN LATERAL (${TOKEN_SELECT} WHERE t.token_hash = ANY($1::text[])) k ON true`;
const WITH_TOKENS_NEWS = 16;
const WITH_TOKENS_ACCESS = 17;
/** Tokens per batched lookup at most: one statement's array stays small, and a bigger turn sends several. */
const TOKEN_BATCH_MAX = 256;

/**
 * The conditions under which a token may be created, read with row locks: the user row FOR NO
 * KEY UPDATE (sessions also set last_login_at; tickets only need FOR SHARE), the application and
 * the grant FOR SHARE. A concurrent password change, disable or grant withdrawal either commits
 * first (we wait for it, re-check the row and refuse) or waits for our commit; in the second case
 * its revocation runs as a later statement of its transaction, which sees our token and revokes
 * it. See the comment on Store.insertSession.
 */
const lockPreconditions = (userLock: 'NO KEY UPDATE' | 'SHARE'): string => `SELECT u.user_id FROM users u
  JOIN applications a ON a.app_id = $2 AND a.enabled
  JOIN user_applications g ON g.user_id = u.user_id AND g.app_id = a.app_id
  WHERE u.user_id = $1 AND u.enabled AND ($3::text IS NULL OR u.password_hash = $3::text)
  FOR ${userLock} OF u FOR SHARE OF a, g`;

/** A ticket of the tickets table (migration 17) by its whole key, in TOKEN_SELECT's columns. */
export const FIND_ORDERED_TICKET_SQL = `SELECT ${TICKET_COLUMNS}
  FROM tickets t JOIN users u ON u.user_id = t.user_id JOIN applications a ON a.app_id = t.app_id
  WHERE t.issued_at = $1 AND t.token_hash = $2`;

const INSERT_TOKEN_SQL = `INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at, used_at, revoked_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;

const INSERT_ORDERED_TICKET_SQL = `INSERT INTO tickets (issued_at, token_hash, user_id, app_id, client_ip, source_ip, expires_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7)`;

/** The token port's methods, and what closing the store waits for: the group commits of the current turn. */
export interface PostgresTokens {
  readonly port: TokenStore & RevisionStore;
  flushWrites(): Promise<void>;
}

export function postgresTokens(ctx: PostgresContext, options: Pick<PostgresStoreOptions, 'groupCommit' | 'onGroupCommit'>): PostgresTokens {
  const { tokenReads, checkOpen, q, readArrays, tx } = ctx;

  /**
   * findToken: a turn's lookups as one statement, `token_hash = ANY($1)` (lookup-batch.ts): one
   * parse, one Bind/Execute and one pooled connection for all the checks that missed memory.
   */
  const findTokenBatched = lookupPerTurn<TokenRecord>(async (hashes) => {
    checkOpen();
    const rows = hashes.length === 1
      ? await readArrays('find_token', FIND_TOKEN_SQL, hashes, tokenReads)
      : await readArrays('find_tokens', FIND_TOKENS_SQL, [hashes], tokenReads);
    const found = new Map<string, TokenRecord>();
    for (const row of rows) found.set(String(row[0]), toToken(row));
    return found;
  }, TOKEN_BATCH_MAX);

  /** Bumped by triggers (migrations 5 and 6); read once per event-loop turn (revision-gate.ts). */
  async function readRevisions(): Promise<StoreRevisions> {
    const row = one(await q('revisions', `SELECT (SELECT revision FROM news_revision) AS news,
        (SELECT revision FROM access_revision) AS access`, [], true));
    return toStoreRevisions(row?.news, row?.access);
  }

  async function insertToken(token: NewToken, kind: TokenKind, expect: SessionExpectation | null): Promise<boolean> {
    return tx(async (c) => {
      const allowed = await c.query(
        kind === 'session'
          ? { name: 'lock_for_session', text: lockPreconditions('NO KEY UPDATE'), values: [token.userId, token.appId, expect?.passwordHash ?? null] }
          : { name: 'lock_for_ticket', text: lockPreconditions('SHARE'), values: [token.userId, token.appId, null] },
      );
      if (allowed.rowCount !== 1) return false;
      await c.query(kind === 'ordered-ticket'
        ? {
          name: 'insert_ordered_ticket', text: INSERT_ORDERED_TICKET_SQL,
          values: [token.issuedAt, token.tokenHash, token.userId, token.appId, token.clientIp, token.sourceIp, token.expiresAt],
        }
        : {
          name: 'insert_token', text: INSERT_TOKEN_SQL,
          values: [token.tokenHash, kind, token.userId, token.appId, token.clientIp, token.sourceIp, token.issuedAt, token.expiresAt, token.issuedAt, null, null],
        });
      if (kind === 'session') {
        // The row is locked and was just checked to hold `passwordHash`: the upgrade cannot undo a change.
        await c.query({
          name: 'set_last_login', text: 'UPDATE users SET last_login_at = $2, password_hash = COALESCE($3::text, password_hash) WHERE user_id = $1',
          values: [token.userId, token.issuedAt, expect?.newPasswordHash ?? null],
        });
      }
      return true;
    });
  }

  // Group commit of new tokens and tickets: one statement per kind and event-loop turn (token-batch.ts).
  const batches = (options.groupCommit ?? true) ? (() => {
    const deps = {
      query: (name: string, text: string, values: readonly unknown[]) => q(name, text, values),
      insertOne: (i: { readonly token: NewToken; readonly expectedHash: string | null }, kind: TokenKind) =>
        insertToken(i.token, kind, kind === 'session' ? { passwordHash: i.expectedHash ?? '' } : null),
      ...(options.onGroupCommit !== undefined && { onCommit: options.onGroupCommit }),
    };
    return { session: createTokenBatch('session', deps), ticket: createTokenBatch('ticket', deps), orderedTicket: createTokenBatch('ordered-ticket', deps) };
  })() : null;

  const port: TokenStore & RevisionStore = {
    async insertSession(token, expect) {
      if (batches === null || !batchableSession(expect)) return insertToken(token, 'session', expect);
      checkOpen();
      return batches.session.add({ token, expectedHash: expect.passwordHash });
    },
    async insertTicket(token) {
      if (batches === null) return insertToken(token, 'ticket', null);
      checkOpen();
      return batches.ticket.add({ token, expectedHash: null });
    },
    async insertOrderedTicket(token) {
      if (batches === null) return insertToken(token, 'ordered-ticket', null);
      checkOpen();
      return batches.orderedTicket.add({ token, expectedHash: null });
    },
    async findOrderedTicket(key) {
      checkOpen();
      const rows = await readArrays('find_ordered_ticket', FIND_ORDERED_TICKET_SQL, [key.issuedAt, key.tokenHash], tokenReads);
      const row = rows[0];
      return row === undefined ? null : toToken(row);
    },
    async consumeOrderedTicket(key, now) {
      // As consumeTicket: exactly one caller sees a row.
      const result = await q('consume_ordered_ticket', `UPDATE tickets SET used_at = $3
        WHERE issued_at = $1 AND token_hash = $2 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $3`, [key.issuedAt, key.tokenHash, now]);
      return result.rowCount === 1;
    },
    async findToken(tokenHash) {
      return findTokenBatched(tokenHash);
    },
    async touchToken(tokenHash, now) {
      await q('touch_token', `UPDATE tokens SET last_used_at = GREATEST(last_used_at, $2) WHERE token_hash = $1 AND kind = 'session'`, [tokenHash, now]);
    },
    async consumeTicket(tokenHash, now) {
      // READ COMMITTED: a second updater waits for the first, re-checks used_at on the new row
      // version and matches nothing. Exactly one caller sees a row, across all connections.
      const result = await q('consume_ticket', `UPDATE tokens SET used_at = $2
        WHERE token_hash = $1 AND kind = 'ticket' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $2`, [tokenHash, now]);
      return result.rowCount === 1;
    },
    async revokeTokens(scope: RevokeScope, now) {
      // Both tables in one statement (one snapshot, one answer); the tickets table is scanned (migration 17).
      const [where, values]: [string, unknown[]] = 'all' in scope
        ? ['revoked_at IS NULL AND used_at IS NULL AND expires_at > $1', [now]]
        : 'tokenHash' in scope
          ? ['token_hash = $2 AND revoked_at IS NULL AND used_at IS NULL AND expires_at > $1', [now, scope.tokenHash]]
          : ['user_id = $2 AND revoked_at IS NULL AND used_at IS NULL AND expires_at > $1', [now, scope.userId]];
      const row = one(await q(null, `WITH a AS (UPDATE tokens SET revoked_at = $1 WHERE ${where} RETURNING 1),
        b AS (UPDATE tickets SET revoked_at = $1 WHERE ${where} RETURNING 1)
        SELECT (SELECT COUNT(*) FROM a) + (SELECT COUNT(*) FROM b) AS n`, values));
      return num(row?.n);
    },
    async listUserSessions(userId, now, limit) {
      return (await readArrays(null, `${LISTED_TOKEN_SELECT}
        WHERE t.user_id = $1 AND t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > $2
        ORDER BY t.issued_at DESC, t.token_hash LIMIT $3`, [userId, now, Math.max(0, Math.trunc(limit))])).map(toListedToken);
    },
    async findTokensByFingerprint(prefix, limit) {
      // A range on the "C"-collated primary key (hex digits sort below 'g'): an index scan of the
      // tokens; the tickets table, keyed in issue order, is scanned (migration 17).
      return (await readArrays(null, `SELECT * FROM (${LISTED_TOKEN_SELECT}
        WHERE t.token_hash >= $1 AND t.token_hash < $1 || 'g'
        UNION ALL ${LISTED_TICKET_SELECT}
        WHERE t.token_hash >= $1 AND t.token_hash < $1 || 'g') x ORDER BY token_hash LIMIT $2`, [prefix, Math.max(0, Math.trunc(limit))])).map(toListedToken);
    },
    async deleteExpiredTokens(before) {
      const row = one(await q(null, `WITH a AS (DELETE FROM tokens WHERE expires_at < $1 RETURNING 1), b AS (DELETE FROM tickets WHERE expires_at < $1 RETURNING 1)
        SELECT (SELECT COUNT(*) FROM a) + (SELECT COUNT(*) FROM b) AS n`, [before]));
      return num(row?.n);
    },
    // Housekeeping and metrics; the same semantics as the SQLite adapter, same contract tests.
    async purgeExpiredTokens(before, limit) {
      // The tickets table first (its expired rows are its oldest, in key order), then tokens, `limit` in all.
      const max = Math.max(0, Math.trunc(limit));
      const tickets = (await q(null, `DELETE FROM tickets WHERE (issued_at, token_hash) IN
        (SELECT issued_at, token_hash FROM tickets WHERE expires_at < $1 ORDER BY issued_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, max])).rowCount ?? 0;
      if (tickets >= max) return tickets;
      return tickets + ((await q(null, `DELETE FROM tokens WHERE token_hash IN
        (SELECT token_hash FROM tokens WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, max - tickets])).rowCount ?? 0);
    },
    async countActiveTokens(now) {
      return num(one(await q(null, `SELECT COUNT(*) AS n FROM tokens t
        JOIN users u ON u.user_id = t.user_id AND u.enabled
        JOIN applications a ON a.app_id = t.app_id AND a.enabled
        WHERE t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > $1
          AND (a.idle_timeout_seconds IS NULL OR t.last_used_at + a.idle_timeout_seconds * interval '1 second' > $1)
          AND EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id)`, [now], true))?.n);
    },
    async listLiveTokens(query) {
      return (await readArrays(null, `SELECT * FROM (${LISTED_TOKEN_SELECT}
        WHERE t.token_hash > $1 AND t.revoked_at IS NULL AND t.used_at IS NULL AND t.expires_at > $2
        UNION ALL ${LISTED_TICKET_SELECT}
        WHERE t.token_hash > $1 AND t.revoked_at IS NULL AND t.used_at IS NULL AND t.expires_at > $2) x
        ORDER BY token_hash LIMIT $3`, [query.afterHash ?? '', query.liveAt, query.limit])).map(toListedToken);
    },
    async importToken(token: ImportedToken) {
      const result = await q(null, `INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at, used_at, revoked_at, origin)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (token_hash) DO NOTHING`, [
        token.tokenHash, token.kind, token.userId, token.appId, token.clientIp, token.sourceIp, token.issuedAt, token.expiresAt,
        token.lastUsedAt, token.usedAt, token.revokedAt, token.origin,
      ]);
      return result.rowCount === 1;
    },
    async revisionsWithTokens(hashes) {
      if (hashes.length === 0) return { revisions: await readRevisions(), tokens: new Map() };
      const rows = await readArrays('revisions_with_tokens', REVISIONS_WITH_TOKENS_SQL, [hashes], tokenReads);
      const first = rows[0];
      const tokens = new Map<string, TokenRecord>();
      for (const row of rows) if (row[0] !== null) tokens.set(String(row[0]), toToken(row));
      return { revisions: toStoreRevisions(first?.[WITH_TOKENS_NEWS], first?.[WITH_TOKENS_ACCESS]), tokens } satisfies RevisionsWithTokens;
    },
    revisions: readRevisions,
  };
  return {
    port,
    async flushWrites() {
      await Promise.all([batches?.session.flushNow(), batches?.ticket.flushNow(), batches?.orderedTicket.flushNow()]);
    },
  };
}
