/**
 * Tokens and tickets on SQLite: the hot lookup, inserts checked against their user, application
 * and grant, uses, revocation, listings, import and purge; and the revisions, which the hot path
 * reads together with the tokens it missed.
 */
import type Database from 'better-sqlite3';
import type { NewToken, OrderedTicketKey, RevisionsWithTokens, RevisionStore, RevokeScope, TokenRecord, TokenStore } from '../store.js';
import { LISTED_TICKET_SELECT, LISTED_TOKEN_SELECT, type Row } from '../row-mapping.js';
import { SQL } from '../shared-sql.js';
import { toStoreRevisions } from '../revisions.js';
import type { SqliteContext } from './sqlite-context.js';
import { ms, toListedToken, toToken } from './sqlite-row-mapping.js';

// The conditions under which a token may be created: checked inside the INSERT itself so a
// concurrent disable / password change / grant withdrawal cannot slip in between.
const TOKEN_PRECONDITIONS = `
  EXISTS (SELECT 1 FROM users u WHERE u.user_id = @userId AND u.enabled = 1 AND (@passwordHash IS NULL OR u.password_hash = @passwordHash))
  AND EXISTS (SELECT 1 FROM applications a WHERE a.app_id = @appId AND a.enabled = 1)
  AND EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = @userId AND g.app_id = @appId)`;

/**
 * The hot lookup: TOKEN_SELECT's columns in its order (row-mapping.ts), but the user, the
 * application and the grant read by correlated subqueries of a single-table SELECT instead of
 * joins. This SQLite is built with SQLITE_ENABLE_STAT4, under which a join whose WHERE compares
 * a parameter to an indexed column is planned again at every new value bound (the value could
 * change the best join order): every token not kept in memory cost a full re-parse and re-plan,
 * 14 µs of CPU per joined table (findToken 30 -> 8 µs user CPU per lookup on 10M tokens,
 * bench/README.md). A single-table lookup by its unique key is planned once.
 *
 * A token whose user or application row is missing (possible only with foreign keys off) reads
 * NULL there and is no token at all, as the inner joins made it (findToken).
 */
const findSql = (kind: string, lastUsedAt: string, from: string): string => `SELECT t.token_hash, ${kind}, t.user_id, t.app_id, t.client_ip, t.source_ip, t.issued_at, t.expires_at,
    ${lastUsedAt}, t.used_at, t.revoked_at,
    (SELECT u.enabled FROM users u WHERE u.user_id = t.user_id) AS user_enabled,
    (SELECT a.enabled FROM applications a WHERE a.app_id = t.app_id) AS app_enabled,
    (SELECT a.idle_timeout_seconds FROM applications a WHERE a.app_id = t.app_id) AS idle_timeout_seconds,
    EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id) AS granted,
    (SELECT u.login FROM users u WHERE u.user_id = t.user_id) AS login
  FROM ${from}`;
export const FIND_TOKEN_SQL = findSql('t.kind', 't.last_used_at', 'tokens t WHERE t.token_hash = ?');
/** A ticket of the tickets table (migration 17) by its whole key, in FIND_TOKEN_SQL's columns (row-mapping.ts TICKET_COLUMNS). */
export const FIND_ORDERED_TICKET_SQL = findSql("'ticket'", 't.issued_at', 'tickets t WHERE t.issued_at = ? AND t.token_hash = ?');
/** Housekeeping's batch of expired tokens: on this connection, or on the purge thread's (purge-thread.ts). */
export const PURGE_EXPIRED_SQL = `DELETE FROM tokens WHERE token_hash IN
  (SELECT token_hash FROM tokens WHERE expires_at < @before ORDER BY expires_at LIMIT @limit)`;

/**
 * Housekeeping's batch of expired tickets of the tickets table, oldest first: in its key's order,
 * which is issue order, so the batch is read from the start of the table.
 */
export const PURGE_EXPIRED_TICKETS_SQL = `DELETE FROM tickets WHERE (issued_at, token_hash) IN
  (SELECT issued_at, token_hash FROM tickets WHERE expires_at < @before ORDER BY issued_at LIMIT @limit)`;

/** user_enabled and app_enabled in FIND_TOKEN_SQL's row: NULL when the row they come from is missing. */
const FIND_TOKEN_USER_ENABLED = 11;
const FIND_TOKEN_APP_ENABLED = 12;

/**
 * Session tokens that work at @now among those whose hash is in [@lo, @hi), judged as
 * evaluateToken judges a session (tokens.ts), for the active-tokens gauge. All of them is every
 * token row with a lookup of its user, application and grant: 25 s on 10 million tokens as one
 * scan. So on a file it runs on the purge thread's connection, never on the event loop, in
 * COUNT_RANGES of the hashes, one at a time (about 0.2 s each on 10 million): the thread then
 * answers a close between two of them instead of holding a shutdown for the whole count.
 */
export const COUNT_ACTIVE_SQL = `SELECT COUNT(*) AS n FROM tokens t
      JOIN users u ON u.user_id = t.user_id AND u.enabled = 1
      JOIN applications a ON a.app_id = t.app_id AND a.enabled = 1
      WHERE t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > @now
        AND (a.idle_timeout_seconds IS NULL OR t.last_used_at + a.idle_timeout_seconds * 1000 > @now)
        AND EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id)
        AND t.token_hash >= @lo AND t.token_hash < @hi`;

/** The hashes (SHA-256, lowercase hex) by their first two digits: 256 ranges; 'g' sorts above every hex digit. */
export const COUNT_RANGES: readonly (readonly [string, string])[] = Array.from({ length: 256 }, (_, i) => [
  i.toString(16).padStart(2, '0'), i === 255 ? 'g' : (i + 1).toString(16).padStart(2, '0'),
] as const);

/** Which live tokens a revocation ends (RevokeScope), as the start of its WHERE clause. */
const REVOKE_SCOPES = { user: 'user_id = @userId AND ', all: '', one: 'token_hash = @tokenHash AND ' } as const;
type RevokeScopeName = keyof typeof REVOKE_SCOPES;

export function sqliteTokens({ db, writes, purgeOnThread, countOnThread }: SqliteContext): TokenStore & RevisionStore {
  // Both tables, each scope: the tickets table has no index but its key (migration 17), so its
  // revocations scan the unpurged tickets.
  const revokeLive = (table: 'tokens' | 'tickets'): Record<RevokeScopeName, Database.Statement> => {
    const statement = (scope: RevokeScopeName): Database.Statement => db.prepare(`UPDATE ${table} SET revoked_at = @now
      WHERE ${REVOKE_SCOPES[scope]}revoked_at IS NULL AND used_at IS NULL AND expires_at > @now`);
    return { user: statement('user'), all: statement('all'), one: statement('one') };
  };
  const revoke = { tokens: revokeLive('tokens'), tickets: revokeLive('tickets') };
  const s = {
    insertToken: db.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at)
      SELECT @tokenHash, @kind, @userId, @appId, @clientIp, @sourceIp, @issuedAt, @expiresAt, @issuedAt
      WHERE ${TOKEN_PRECONDITIONS}`),
    insertOrderedTicket: db.prepare(`INSERT INTO tickets (issued_at, token_hash, user_id, app_id, client_ip, source_ip, expires_at)
      SELECT @issuedAt, @tokenHash, @userId, @appId, @clientIp, @sourceIp, @expiresAt
      WHERE ${TOKEN_PRECONDITIONS}`),
    findOrderedTicket: db.prepare(FIND_ORDERED_TICKET_SQL).raw(),
    consumeOrderedTicket: db.prepare(`UPDATE tickets SET used_at = @now
      WHERE issued_at = @issuedAt AND token_hash = @tokenHash AND used_at IS NULL AND revoked_at IS NULL AND expires_at > @now`),
    // A session's insert also records the login and may upgrade the hash, in its transaction.
    setLastLogin: db.prepare('UPDATE users SET last_login_at = @issuedAt WHERE user_id = @userId'),
    upgradePassword: db.prepare(SQL.upgradePassword.sqlite),
    // Array rows (row-mapping.ts TOKEN_COLUMNS): cheaper to build than keyed objects.
    findToken: db.prepare(FIND_TOKEN_SQL).raw(),
    touchToken: db.prepare(`UPDATE tokens SET last_used_at = MAX(last_used_at, @now) WHERE token_hash = @tokenHash AND kind = 'session'`),
    consumeTicket: db.prepare(`UPDATE tokens SET used_at = @now
      WHERE token_hash = @tokenHash AND kind = 'ticket' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > @now`),
    userSessions: db.prepare(`${LISTED_TOKEN_SELECT}
      WHERE t.user_id = @userId AND t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > @now
      ORDER BY t.issued_at DESC, t.token_hash LIMIT @limit`).raw(),
    // A range on the primary key (hex digits sort below 'g'), so the lookup of tokens uses the
    // index; the tickets table, keyed in issue order, is scanned (migration 17).
    tokensByPrefix: db.prepare(`SELECT * FROM (${LISTED_TOKEN_SELECT}
      WHERE t.token_hash >= @prefix AND t.token_hash < @prefix || 'g'
      UNION ALL ${LISTED_TICKET_SELECT}
      WHERE t.token_hash >= @prefix AND t.token_hash < @prefix || 'g') ORDER BY token_hash LIMIT @limit`).raw(),
    deleteExpired: db.prepare('DELETE FROM tokens WHERE expires_at < ?'),
    deleteExpiredTickets: db.prepare('DELETE FROM tickets WHERE expires_at < ?'),
    // In this order: SQLite applies this pragma when its statement is prepared (wal-sync.ts), so
    // the connection is at FULL once both are.
    syncNormal: db.prepare('PRAGMA synchronous = NORMAL'),
    syncFull: db.prepare('PRAGMA synchronous = FULL'),
    purgeExpired: db.prepare(PURGE_EXPIRED_SQL),
    purgeExpiredTickets: db.prepare(PURGE_EXPIRED_TICKETS_SQL),
    countActive: db.prepare(COUNT_ACTIVE_SQL),
    liveTokens: db.prepare(`SELECT * FROM (${LISTED_TOKEN_SELECT}
      WHERE t.token_hash > @afterHash AND t.revoked_at IS NULL AND t.used_at IS NULL AND t.expires_at > @liveAt
      UNION ALL ${LISTED_TICKET_SELECT}
      WHERE t.token_hash > @afterHash AND t.revoked_at IS NULL AND t.used_at IS NULL AND t.expires_at > @liveAt)
      ORDER BY token_hash LIMIT @limit`).raw(),
    importToken: db.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at, used_at, revoked_at, origin)
      VALUES (@tokenHash, @kind, @userId, @appId, @clientIp, @sourceIp, @issuedAt, @expiresAt, @lastUsedAt, @usedAt, @revokedAt, @origin)
      ON CONFLICT (token_hash) DO NOTHING`),
    revisions: db.prepare(`SELECT (SELECT revision FROM news_revision WHERE id = 1),
      (SELECT revision FROM access_revision WHERE id = 1)`).raw(),
  };

  /** A row of FIND_TOKEN_SQL or FIND_ORDERED_TICKET_SQL as a record: none without its user or application. */
  const found = (row: unknown[] | undefined): TokenRecord | null =>
    (row === undefined || row[FIND_TOKEN_USER_ENABLED] === null || row[FIND_TOKEN_APP_ENABLED] === null ? null : toToken(row));
  const findTokenRow = (tokenHash: string): TokenRecord | null => found(s.findToken.get(tokenHash) as unknown[] | undefined);
  // revisionsWithTokens: the revisions and the turn's token lookups in one read transaction (one
  // WAL read lock and snapshot for all; revision-gate.ts).
  const revisionsWithTokensTx = db.transaction((hashes: readonly string[]): RevisionsWithTokens => {
    const row = s.revisions.get() as unknown[];
    const tokens = new Map<string, TokenRecord>();
    for (const hash of hashes) {
      const record = findTokenRow(hash);
      if (record !== null) tokens.set(hash, record);
    }
    return { revisions: toStoreRevisions(row[0], row[1]), tokens };
  });

  // Both tables' revocations in one transaction: one answer, one count.
  const revokeTx = db.transaction((scope: RevokeScope, at: number): number => {
    const [name, params]: [RevokeScopeName, Row] = 'all' in scope ? ['all', { now: at }]
      : 'tokenHash' in scope ? ['one', { tokenHash: scope.tokenHash, now: at }] : ['user', { userId: scope.userId, now: at }];
    return revoke.tokens[name].run(params).changes + revoke.tickets[name].run(params).changes;
  });
  const deleteExpiredTx = db.transaction((before: number): number => s.deleteExpired.run(before).changes + s.deleteExpiredTickets.run(before).changes);

  const tokenParams = (token: NewToken, kind: 'session' | 'ticket', passwordHash: string | null): Row => ({
    tokenHash: token.tokenHash, kind, userId: token.userId, appId: token.appId,
    clientIp: token.clientIp, sourceIp: token.sourceIp,
    issuedAt: ms(token.issuedAt), expiresAt: ms(token.expiresAt), passwordHash,
  });

  const insertSessionTx = db.transaction((token: NewToken, passwordHash: string, newPasswordHash: string | null): boolean => {
    if (s.insertToken.run(tokenParams(token, 'session', passwordHash)).changes !== 1) return false;
    s.setLastLogin.run({ userId: token.userId, issuedAt: ms(token.issuedAt) });
    // The insert just checked the hash is still `passwordHash`, so this upgrade cannot undo a change.
    if (newPasswordHash !== null) s.upgradePassword.run({ userId: token.userId, expectedHash: passwordHash, newHash: newPasswordHash });
    return true;
  });

  return {
    async insertSession(token, expect) {
      return writes.run(() => insertSessionTx.immediate(token, expect.passwordHash, expect.newPasswordHash ?? null));
    },
    async insertTicket(token) {
      return writes.run(() => s.insertToken.run(tokenParams(token, 'ticket', null)).changes === 1);
    },
    async insertOrderedTicket(token) {
      return writes.run(() => s.insertOrderedTicket.run(tokenParams(token, 'ticket', null)).changes === 1);
    },
    async findOrderedTicket(key: OrderedTicketKey) {
      return found(s.findOrderedTicket.get(ms(key.issuedAt), key.tokenHash) as unknown[] | undefined);
    },
    async consumeOrderedTicket(key, now) {
      return writes.run(() => s.consumeOrderedTicket.run({ issuedAt: ms(key.issuedAt), tokenHash: key.tokenHash, now: ms(now) }).changes === 1);
    },
    async findToken(tokenHash) {
      // One lookup at a time: reading a turn's lookups in one read transaction saved 2 µs of
      // system CPU per lookup in a loop, but nothing measurable per fleet check in the server.
      return findTokenRow(tokenHash);
    },
    async touchToken(tokenHash, now) {
      await writes.run(() => s.touchToken.run({ tokenHash, now: ms(now) }));
    },
    async consumeTicket(tokenHash, now) {
      return writes.run(() => s.consumeTicket.run({ tokenHash, now: ms(now) }).changes === 1);
    },
    async revokeTokens(scope: RevokeScope, now) {
      return revokeTx.immediate(scope, ms(now));
    },
    async listUserSessions(userId, now, limit) {
      return (s.userSessions.all({ userId, now: ms(now), limit: Math.max(0, Math.trunc(limit)) }) as unknown[][]).map(toListedToken);
    },
    async findTokensByFingerprint(prefix, limit) {
      return (s.tokensByPrefix.all({ prefix, limit: Math.max(0, Math.trunc(limit)) }) as unknown[][]).map(toListedToken);
    },
    async deleteExpiredTokens(before) {
      return deleteExpiredTx.immediate(ms(before));
    },
    async purgeExpiredTokens(before, limit) {
      // The tickets table first (its expired rows are its oldest), then tokens, `limit` in all.
      const at = ms(before);
      const max = Math.max(0, Math.trunc(limit));
      // A file: on the purge thread (purge-thread.ts), so neither the DELETE nor the checkpoint
      // its commit may set off holds the event loop.
      if (purgeOnThread !== null) {
        const tickets = await purgeOnThread(at, max, 'tickets');
        return tickets >= max ? tickets : tickets + await purgeOnThread(at, max - tickets, 'tokens');
      }
      // Committed without the fsync of synchronous = FULL: a purge lost to a power cut only
      // leaves rows the next run deletes, and the sync held the event loop ~3 ms per batch on
      // 10M tokens (bench/README.md). The next FULL commit (a token) syncs these frames too.
      s.syncNormal.run();
      try {
        const tickets = s.purgeExpiredTickets.run({ before: at, limit: max }).changes;
        return tickets >= max ? tickets : tickets + s.purgeExpired.run({ before: at, limit: max - tickets }).changes;
      } finally {
        s.syncFull.run();
      }
    },
    async countActiveTokens(now) {
      if (countOnThread !== null) return countOnThread(ms(now));
      return Number((s.countActive.get({ now: ms(now), lo: '', hi: 'g' }) as Row).n);
    },
    async listLiveTokens(query) {
      return (s.liveTokens.all({ afterHash: query.afterHash ?? '', liveAt: ms(query.liveAt), limit: query.limit }) as unknown[][]).map(toListedToken);
    },
    async importToken(token) {
      return s.importToken.run({
        tokenHash: token.tokenHash, kind: token.kind, userId: token.userId, appId: token.appId, clientIp: token.clientIp, sourceIp: token.sourceIp,
        issuedAt: ms(token.issuedAt), expiresAt: ms(token.expiresAt), lastUsedAt: ms(token.lastUsedAt),
        usedAt: token.usedAt === null ? null : ms(token.usedAt), revokedAt: token.revokedAt === null ? null : ms(token.revokedAt), origin: token.origin,
      }).changes === 1;
    },

    async revisions() {
      const row = s.revisions.get() as unknown[];
      return toStoreRevisions(row[0], row[1]);
    },
    async revisionsWithTokens(hashes) {
      return revisionsWithTokensTx.deferred(hashes);
    },
  };
}
