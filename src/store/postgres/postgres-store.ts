import pg from 'pg';
import type {
  ApplicationPatch, ImportedToken, InsertApplicationResult, InsertUserResult, LegacyMigrationInput, NewNews, NewToken, NewUser,
  PasswordHashRow, PublishedNewsQuery, PublishedNewsSnapshot, RevokeScope, SessionExpectation, Store, TokenRecord, User, UserCredentials,
} from '../store.js';
import type { AdminAccountCredentials, RevisionsWithTokens, StoreRevisions } from '../store.js';
import type { LegacyTally, LegacyTallyKind, NewAuditEvent, ShadowDifferenceRecord } from '../store.js';
import type { AttemptReservation, LoginAttempt, LoginThrottleQuery, LoginThrottleRecord, ThrottleCounter, ThrottleLimits } from '../store.js';
import {
  decideAttempt, lockOrder, loginAfterFailure, loginAfterNoFailure, needsKnownSource, pairAfterFailure, pairAfterRelease, pairAfterSuccess,
  throttleKeys, type CounterState,
} from '../login-throttle-rules.js';
import { applyPostgresMigrations, LATEST_POSTGRES_VERSION, POSTGRES_MIGRATIONS, postgresSchemaVersion } from './migrations/postgres-migrations.js';
import { parsePostgresUrl, redactPostgresUrl } from './postgres-url.js';
import { DatabaseError } from '../database-errors.js';
import { judgeSchema, type SchemaVerdict } from '../schema-identity.js';
import { createRowMappers, encodeNewsAttributes, LISTED_TOKEN_SELECT, TOKEN_SELECT, type Row } from '../row-mapping.js';
import { toPublishedNewsSnapshot } from '../news-snapshot.js';
import { revisionValue, toStoreRevisions } from '../revisions.js';
import { inTransaction } from './transaction.js';
import { lookupPerTurn } from '../lookup-batch.js';
import { FAST_TIMESTAMPS } from './timestamp-parser.js';
import { APP_COLUMNS, auditQuerySql, legacyTallyRows, NEWS_COLUMNS, postgresValues, SQL, type SharedSql } from '../shared-sql.js';
import { batchableSession, createTokenBatch } from './token-batch.js';

export interface PostgresStoreOptions {
  /** `postgres://user@host:5432/db?schema=name` (see postgres-url.ts for the parameters). */
  readonly url: string;
  /** Apply pending migrations on open (default true). When false, an out-of-date schema is an error. */
  readonly migrate?: boolean;
  /** How long to wait for a connection, new or from the pool (default 2000 ms). */
  readonly connectionTimeoutMs?: number;
  /** Server-side statement_timeout (default 2000 ms); the client gives up 500 ms later. */
  readonly statementTimeoutMs?: number;
  /** Shown in pg_stat_activity (default "svcapi-auth"); the URL's application_name wins. */
  readonly applicationName?: string;
  /** Idle connections that fail (the server went away) are dropped and reported here. */
  readonly onIdleError?: (error: Error) => void;
  /**
   * May an empty schema be initialised (default true: `serve`, `migrate`)? When false, a schema
   * without the svcapi-auth tables is a DatabaseError('missing'). A schema holding tables that are
   * not svcapi-auth's is refused untouched either way.
   */
  readonly create?: boolean;
  /**
   * Group commit (default true; config `performance.groupCommit`): the new tokens and tickets of
   * one event-loop turn are inserted by one statement (token-batch.ts).
   */
  readonly groupCommit?: boolean;
  /** Observes each group statement after its commit, with how many writes it held. */
  readonly onGroupCommit?: (writes: number) => void;
  /**
   * Token reads on connections of their own that plan them once (default true; config
   * `performance.pgGenericTokenPlans`): see TOKEN_READ_SETTING. False: they share the pool and
   * are planned again at every execution.
   */
  readonly genericTokenPlans?: boolean;
}

type Queryable = pg.Pool | pg.PoolClient;

const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));
const str = (v: unknown): string => String(v);
const num = (v: unknown): number => Number(v);

/** PostgreSQL's side of the row mapping: booleans, Date objects, arrays, jsonb. */
const { toApplication, toUser, toNews, toToken, toListedToken, toAudit } = createRowMappers({
  bool: (v) => v === true,
  date,
  idList: (v) => (Array.isArray(v) ? v.map(Number) : []),
  stringList: (v) => (Array.isArray(v) ? v.map(String) : []),
  json: (v) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : null),
});





/** The named values of the news INSERTs (shared-sql.ts). */
function newsParams(news: NewNews): Row {
  return {
    appId: news.appId, language: news.language, title: news.title, body: news.body, url: news.url, publishedAt: news.publishedAt,
    expiresAt: news.expiresAt, minVersion: news.minVersion, maxVersion: news.maxVersion, membersOnly: news.membersOnly,
    attributes: encodeNewsAttributes(news.attributes), createdAt: news.createdAt,
  };
}



/**
 * The hot path (every client request validates a token): one primary-key lookup, joined to the
 * token's user, application and grant so their state is judged from the same read. Sent as a
 * named prepared statement: parsed and planned once per connection.
 */
function toAdminCredentials(r: Row): AdminAccountCredentials {
  return {
    name: String(r.name), passwordHash: String(r.password_hash), role: r.role === 'admin' ? 'admin' : 'editor',
    createdAt: date(r.created_at), passwordChangedAt: date(r.password_changed_at), lastLoginAt: dateOrNull(r.last_login_at),
  };
}

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
/**
 * The token reads of the hot path (REVISIONS_WITH_TOKENS_SQL, FIND_TOKENS_SQL, FIND_TOKEN_SQL)
 * go through a pool of their own whose connections plan a prepared statement once. With the
 * default plan_cache_mode PostgreSQL plans a named statement with its parameters' values five
 * times, then keeps the generic plan only if its estimate is no worse than theirs: for
 * `token_hash = ANY($1)` the generic plan is costed for 10 hashes, a turn's batch is usually
 * fewer, so every execution was planned again (0.5-1.1 ms of planning against 0.3-0.7 ms of
 * execution for 8 tokens on 10M, EXPLAIN ANALYZE, 2026-11-26). Every plan of these statements is
 * the same (primary-key probes), whatever the hashes. Only these reads: statements with a range
 * and a LIMIT (listings, purges) keep their custom plans on the main pool.
 */
export const TOKEN_READ_SETTING = { name: 'plan_cache_mode', value: 'force_generic_plan' } as const;

/** `config` with one more `-c name=value` in the startup options, where node-postgres reads them (the URL's win). */
function withSetting(config: pg.ClientConfig, setting: { readonly name: string; readonly value: string }): pg.ClientConfig {
  const option = `-c ${setting.name}=${setting.value}`;
  const url = new URL(config.connectionString ?? '');
  const fromUrl = url.searchParams.get('options');
  if (fromUrl !== null) {
    url.searchParams.set('options', `${fromUrl} ${option}`);
    return { ...config, connectionString: url.toString() };
  }
  return { ...config, options: `${config.options ?? ''} ${option}`.trim() };
}
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

const INSERT_TOKEN_SQL = `INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at, used_at, revoked_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;

// --- audit trail ---

/** Events per INSERT statement (10 parameters each, far below PostgreSQL's 65535). */
const AUDIT_CHUNK = 500;


/** Errors after which the same read may simply be sent again on a fresh connection. */
function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (code === '57P01' || code === '57P02' || code === 'ECONNRESET' || code === 'EPIPE') return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated unexpectedly|not queryable/i.test(message);
}

/**
 * What the target schema holds, read before anything is written to it (the same rule as a SQLite
 * file's, src/store/schema-identity.ts). `schema` is the URL's ?schema=, else the search_path's
 * first existing schema; a schema that does not exist yet is empty.
 */
async function inspectSchema(client: pg.ClientBase, schema: string | null): Promise<SchemaVerdict> {
  const target = schema ?? (await client.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s ?? null;
  if (target === null) return { kind: 'empty' };
  const tables = (await client.query<{ name: string }>(`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`, [target])).rows.map((r) => r.name);
  if (!tables.includes('schema_migrations')) return judgeSchema({ tables, applied: null }, POSTGRES_MIGRATIONS);
  try {
    const applied = (await client.query<{ version: number; name: string }>(
      `SELECT version, name FROM "${target.replace(/"/g, '""')}".schema_migrations ORDER BY version`,
    )).rows.map((r) => ({ version: Number(r.version), name: String(r.name) }));
    return judgeSchema({ tables, applied }, POSTGRES_MIGRATIONS);
  } catch (error) {
    // 42703 undefined_column, 42501 insufficient_privilege...: not the table svcapi-auth made.
    if (typeof (error as { code?: unknown }).code === 'string' && /^42/.test((error as { code: string }).code)) {
      return { kind: 'foreign', reason: 'its schema_migrations table is not svcapi-auth\'s' };
    }
    throw error;
  }
}

/**
 * Opens a PostgreSQL database as a Store: a connection pool, with pending migrations applied
 * first (under an advisory lock, so several instances may start at once). Connections, queries
 * and waits for a pooled connection are all bounded, so when the database is unreachable every
 * call rejects within a few seconds instead of hanging; the pool reconnects by itself when it is
 * back.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const location = parsePostgresUrl(options.url);
  const connectionTimeoutMillis = options.connectionTimeoutMs ?? 2000;
  const statementTimeout = options.statementTimeoutMs ?? 2000;
  const base: pg.ClientConfig = {
    application_name: options.applicationName ?? 'svcapi-auth',
    keepAlive: true,
    ...(location.schema !== null && { options: `-c search_path=${location.schema}` }),
    // Parsed from the URL by node-postgres; its parameters override the defaults above.
    connectionString: location.connectionString,
  };
  if (location.schema !== null) {
    // A URL that sets `options` itself keeps them, with the search_path added.
    const fromUrl = new URL(location.connectionString).searchParams.get('options');
    if (fromUrl !== null) {
      const u = new URL(location.connectionString);
      u.searchParams.set('options', `${fromUrl} -c search_path=${location.schema}`);
      base.connectionString = u.toString();
    }
  }

  // Migrations (or the version check) on a dedicated connection without the short timeouts:
  // waiting for another instance's migration, or a long one, is legitimate at start.
  const setup = new pg.Client({ ...base, connectionTimeoutMillis: Math.max(connectionTimeoutMillis, 5000), query_timeout: 300_000 });
  setup.on('error', () => undefined);
  await setup.connect();
  try {
    const verdict = await inspectSchema(setup, location.schema);
    const where = `${redactPostgresUrl(options.url)}${location.schema === null ? '' : ` (schema ${location.schema})`}`;
    if (verdict.kind === 'foreign') throw new DatabaseError('foreign', `${where} is not an svcapi-auth database: ${verdict.reason}; it was left untouched`);
    if (verdict.kind === 'empty' && options.create === false) {
      throw new DatabaseError('missing', `${where} holds no svcapi-auth database yet; create it with "svcapi-auth migrate"`);
    }
    if (options.migrate ?? true) {
      await applyPostgresMigrations(setup, location.schema);
    } else {
      const current = await postgresSchemaVersion(setup);
      if (current !== LATEST_POSTGRES_VERSION) {
        throw new Error(`the database schema is at version ${current}, expected ${LATEST_POSTGRES_VERSION}; run "svcapi-auth migrate"`);
      }
    }
  } finally {
    await setup.end().catch(() => undefined);
  }

  // Both pools' connections: the same timeouts. An idle connection the server closed (restart,
  // pg_terminate_backend) emits 'error'; without a listener that would end the process. The pool
  // drops it and opens a new one when needed.
  const newPool = (config: pg.ClientConfig, max: number): pg.Pool => {
    const created = new pg.Pool({
      ...config,
      max,
      connectionTimeoutMillis,
      idleTimeoutMillis: 10_000,
      statement_timeout: statementTimeout,
      query_timeout: statementTimeout + 500,
      idle_in_transaction_session_timeout: 10_000,
    });
    created.on('error', (error) => options.onIdleError?.(error));
    return created;
  };
  const pool = newPool(base, location.poolMax ?? 10);
  // The token reads' own connections (TOKEN_READ_SETTING, a startup option: no statement of its own), at most half as many again as the
  // pool's: a turn's read is one short statement, so a few carry a whole load of token checks.
  let tokenReads = pool;
  if (options.genericTokenPlans ?? true) tokenReads = newPool(withSetting(base, TOKEN_READ_SETTING), Math.max(1, Math.floor((location.poolMax ?? 10) / 2)));

  return createPostgresStore(pool, tokenReads, options);
}

function createPostgresStore(pool: pg.Pool, tokenReads: pg.Pool, options: Pick<PostgresStoreOptions, 'groupCommit' | 'onGroupCommit'>): Store {
  let closed = false;

  const checkOpen = (): void => {
    if (closed) throw new Error('the store is closed');
  };

  /**
   * The retry policy, the only one: a read that failed because its pooled connection was lost
   * (the server restarted, pg_terminate_backend) is sent once more, on another connection. A
   * write never is: it may have committed before the connection went.
   */
  async function onPool<T>(read: boolean, send: () => Promise<T>): Promise<T> {
    checkOpen();
    try {
      return await send();
    } catch (error) {
      if (!read || !isConnectionLoss(error) || closed) throw error;
      return send();
    }
  }

  /** One statement on a pooled connection; `read` statements are retried (onPool). */
  async function q(name: string | null, text: string, values: readonly unknown[] = [], read = false): Promise<pg.QueryResult<Row>> {
    const config: pg.QueryConfig = name === null ? { text, values: [...values] } : { name, text, values: [...values] };
    return onPool(read, () => pool.query<Row>(config));
  }

  /** A shared statement (shared-sql.ts), as q sends it. */
  async function run(name: string | null, statement: SharedSql, params: Row, read = false): Promise<pg.QueryResult<Row>> {
    return q(name, statement.postgres, postgresValues(statement, params), read);
  }

  /** A shared statement on a transaction's connection. */
  async function runOn(c: Queryable, statement: SharedSql, params: Row, name?: string): Promise<pg.QueryResult<Row>> {
    const values = postgresValues(statement, params);
    return c.query<Row>(name === undefined ? { text: statement.postgres, values } : { name, text: statement.postgres, values });
  }

  /**
   * A read like q's, with its rows as arrays (the token select: row-mapping.ts TOKEN_COLUMNS),
   * and its timestamps read by timestamp-parser.ts (three or more per token row).
   */
  async function readArrays(name: string | null, text: string, values: readonly unknown[], on: pg.Pool = pool): Promise<unknown[][]> {
    const config: pg.QueryArrayConfig = { ...(name !== null && { name }), text, values: [...values], rowMode: 'array', types: FAST_TIMESTAMPS };
    return (await onPool(true, () => on.query<unknown[]>(config))).rows;
  }

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

  /** `fn` inside BEGIN ... COMMIT on one connection (transaction.ts). */
  async function tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    checkOpen();
    return inTransaction(pool, fn);
  }

  const one = (result: pg.QueryResult<Row>): Row | undefined => result.rows[0];

  /**
   * The rows WhatsNew may show (visible) and the scheduled ones, which only say when that set
   * changes (news-snapshot.ts), with the news revision. One statement, so one snapshot: the
   * revision names exactly the state the rows come from. The outer join yields one row of nulls
   * (news_id null) when no news matches, so the revision always comes back.
   */
  async function newsSnapshot(query: PublishedNewsQuery): Promise<PublishedNewsSnapshot> {
    const result = await q('news_snapshot', `SELECT r.revision, n.* FROM news_revision r LEFT JOIN LATERAL (
        SELECT ${NEWS_COLUMNS}, published_at <= $3 AS visible FROM news
        WHERE app_id = $1 AND language = ANY($2::text[]) AND (expires_at IS NULL OR expires_at > $3)
          AND (NOT members_only OR $4::boolean)
      ) n ON true
      ORDER BY n.published_at DESC, n.news_id DESC`, [query.appId, [...query.languages], query.now, query.includeMembersOnly], true);
    const rows = result.rows.filter((r) => r.news_id !== null);
    return toPublishedNewsSnapshot(rows, revisionValue(result.rows[0]?.revision, 'news_revision'), toNews, (v) => v === true);
  }

  async function getUserOn(db: Queryable, userId: number): Promise<User | null> {
    const row = (await runOn(db, SQL.userById, { userId }, 'user_by_id')).rows[0];
    return row === undefined ? null : toUser(row);
  }

  async function insertToken(token: NewToken, kind: 'session' | 'ticket', expect: SessionExpectation | null): Promise<boolean> {
    return tx(async (c) => {
      const allowed = await c.query(
        kind === 'session'
          ? { name: 'lock_for_session', text: lockPreconditions('NO KEY UPDATE'), values: [token.userId, token.appId, expect?.passwordHash ?? null] }
          : { name: 'lock_for_ticket', text: lockPreconditions('SHARE'), values: [token.userId, token.appId, null] },
      );
      if (allowed.rowCount !== 1) return false;
      await c.query({
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
      insertOne: (i: { readonly token: NewToken; readonly expectedHash: string | null }, kind: 'session' | 'ticket') =>
        insertToken(i.token, kind, kind === 'session' ? { passwordHash: i.expectedHash ?? '' } : null),
      ...(options.onGroupCommit !== undefined && { onCommit: options.onGroupCommit }),
    };
    return { session: createTokenBatch('session', deps), ticket: createTokenBatch('ticket', deps) };
  })() : null;

  async function insertUserOn(c: pg.PoolClient, user: NewUser): Promise<InsertUserResult> {
    const inserted = (await runOn(c, SQL.insertUser, {
      login: user.login, loginKey: user.loginKey, passwordHash: user.passwordHash, enabled: user.enabled, createdAt: user.createdAt,
      passwordChangedAt: user.passwordChangedAt ?? user.createdAt, lastLoginAt: user.lastLoginAt ?? null,
    })).rows[0];
    if (inserted === undefined) return { ok: false, reason: 'login-taken' };
    const userId = num(inserted.user_id);
    if (user.appIds.length > 0) {
      await c.query(`INSERT INTO user_applications (user_id, app_id, granted_at) SELECT $1, unnest($2::integer[]), $3
        ON CONFLICT (user_id, app_id) DO NOTHING`, [userId, [...user.appIds], user.createdAt]);
    }
    const created = await getUserOn(c, userId);
    if (created === null) throw new Error('user vanished inside its own transaction');
    return { ok: true, user: created };
  }

  const PATCH_COLUMNS: { readonly [K in keyof ApplicationPatch]-?: string } = {
    name: 'name', enabled: 'enabled', requireIp: 'require_ip', loginUrl: 'login_url', tokenLifetimeSeconds: 'token_lifetime_seconds',
    idleTimeoutSeconds: 'idle_timeout_seconds', defaultLanguage: 'default_language', trustedCallers: 'trusted_callers',
  };

  // --- brute-force counters: the three rows locked in one global order, decided by
  // login-throttle-rules.ts, written back, committed. A row that does not exist yet is inserted
  // (as an expired, empty counter) by the same statement that locks it, so a first attempt races
  // nobody; `inserted` (xmax = 0: no earlier version) says which, to remove them again on a refusal.
  const LOCK_COUNTER = `INSERT INTO throttle_counters (key, count, window_start, blocked_until, expires_at) VALUES ($1, 0, $2, NULL, $2)
    ON CONFLICT (key) DO UPDATE SET count = throttle_counters.count
    RETURNING count, window_start, blocked_until, inflight, inflight_until, expires_at, (xmax = 0) AS inserted`;
  const WRITE_COUNTERS = `UPDATE throttle_counters t
    SET count = v.count, window_start = v.window_start, blocked_until = v.blocked_until, inflight = v.inflight,
      inflight_until = v.inflight_until, expires_at = v.expires_at
    FROM unnest($1::text[], $2::integer[], $3::timestamptz[], $4::timestamptz[], $5::integer[], $6::timestamptz[], $7::timestamptz[])
      AS v (key, count, window_start, blocked_until, inflight, inflight_until, expires_at)
    WHERE t.key = v.key`;
  const toCounter = (r: Row | undefined): CounterState | null => (r === undefined ? null : {
    count: num(r.count), windowStart: date(r.window_start).getTime(), blockedUntil: r.blocked_until === null ? null : date(r.blocked_until).getTime(),
    inflight: num(r.inflight), inflightUntil: r.inflight_until === null ? null : date(r.inflight_until).getTime(), expiresAt: date(r.expires_at).getTime(),
  });
  const orNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
  /** Writes counter rows that the transaction holds locked (they exist: LOCK_COUNTER made them). */
  async function writeCounters(c: pg.PoolClient, rows: readonly (readonly [string, CounterState])[]): Promise<void> {
    await c.query({
      name: 'throttle_write', text: WRITE_COUNTERS,
      values: [rows.map(([key]) => key), rows.map(([, x]) => x.count), rows.map(([, x]) => new Date(x.windowStart)), rows.map(([, x]) => orNull(x.blockedUntil)),
        rows.map(([, x]) => x.inflight), rows.map(([, x]) => orNull(x.inflightUntil)), rows.map(([, x]) => new Date(x.expiresAt))],
    });
  }
  /** A counter's row, locked, if it exists. */
  async function lockedRow(c: pg.PoolClient, key: string): Promise<CounterState | null> {
    return toCounter((await c.query<Row>({
      name: 'throttle_pair', text: 'SELECT count, window_start, blocked_until, inflight, inflight_until, expires_at FROM throttle_counters WHERE key = $1 FOR UPDATE',
      values: [key],
    })).rows[0]);
  }
  /** Locks one counter row (creating it, empty and expired, if missing). */
  async function lockCounter(c: pg.PoolClient, key: string, now: Date): Promise<{ state: CounterState | null; inserted: boolean }> {
    const row = (await c.query<Row>({ name: 'throttle_lock', text: LOCK_COUNTER, values: [key, now] })).rows[0];
    return { state: toCounter(row), inserted: row?.inserted === true };
  }
  const counterOf = (r: Row): ThrottleCounter => ({
    count: num(r.count), windowStart: date(r.window_start), blockedUntil: dateOrNull(r.blocked_until),
    inflight: num(r.inflight), inflightUntil: dateOrNull(r.inflight_until), expiresAt: date(r.expires_at),
  });
  /**
   * The operator's view of one login, in one REPEATABLE READ transaction (one snapshot).
   */
  async function throttleState(query: LoginThrottleQuery): Promise<LoginThrottleRecord> {
    const keys = throttleKeys({ loginHash: query.loginHash, source: '' });
    const limit = Math.max(0, Math.trunc(query.limit));
    return tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const pairs = { prefix: keys.pair, now: query.now };
      const known = { loginHash: query.loginHash, since: query.knownSince };
      const login = (await runOn(c, SQL.counter, { key: keys.login }, 'throttle_state_login')).rows[0];
      const pairRows = (await runOn(c, SQL.loginPairs, { ...pairs, limit }, 'throttle_state_pairs')).rows;
      const pairCount = (await runOn(c, SQL.loginPairCount, pairs, 'throttle_state_pair_count')).rows[0];
      const knownRows = (await runOn(c, SQL.knownSources, { ...known, limit }, 'throttle_state_known')).rows;
      const knownCount = (await runOn(c, SQL.knownSourceCount, known, 'throttle_state_known_count')).rows[0];
      return {
        login: login === undefined ? null : counterOf(login),
        pairs: pairRows.map((r) => ({ source: String(r.source), ...counterOf(r) })),
        pairCount: num(pairCount?.n ?? 0),
        knownSources: knownRows.map((r) => ({ source: String(r.source), lastSuccessAt: date(r.last_success_at) })),
        knownSourceCount: num(knownCount?.n ?? 0),
      };
    });
  }
  /** A verification that did not fail gives the login its slot back (the row locked first). */
  async function loginSlotBack(c: pg.PoolClient, key: string, now: number): Promise<void> {
    const login = loginAfterNoFailure(await lockedRow(c, key), now);
    if (login !== null) await writeCounters(c, [[key, login]]);
  }
  async function reserveAttempt(attempt: LoginAttempt, limits: ThrottleLimits): Promise<AttemptReservation> {
    const keys = throttleKeys(attempt);
    const now = attempt.now.getTime();
    return tx(async (c) => {
      const rows: { pair: CounterState | null; login: CounterState | null; source: CounterState | null } = { pair: null, login: null, source: null };
      const inserted: string[] = [];
      for (const scope of lockOrder(keys)) {
        const locked = await lockCounter(c, keys[scope], attempt.now);
        rows[scope] = locked.state;
        if (locked.inserted) inserted.push(keys[scope]);
      }
      const known = needsKnownSource(rows, now, limits)
        && ((await runOn(c, SQL.knownSource, { loginHash: attempt.loginHash, source: attempt.source, since: new Date(now - limits.knownSourceMs) }, 'throttle_known')).rowCount ?? 0) > 0;
      const decision = decideAttempt(rows, now, limits, known);
      if ('writes' in decision) {
        await writeCounters(c, lockOrder(keys).map((scope) => [keys[scope], decision.writes[scope]] as const));
      } else if (inserted.length > 0) {
        // A refusal changes nothing, as on SQLite: the placeholders go again.
        await c.query({ name: 'throttle_unlock', text: 'DELETE FROM throttle_counters WHERE key = ANY($1::text[])', values: [inserted] });
      }
      return decision.reservation;
    });
  }

  return {
    async schemaVersion() {
      return num(one(await q(null, 'SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations', [], true))?.version);
    },
    async close() {
      if (closed) return;
      await Promise.all([batches?.session.flushNow(), batches?.ticket.flushNow()]);
      closed = true;
      await Promise.all([pool.end(), tokenReads === pool ? undefined : tokenReads.end()]);
    },
    async ping() {
      await q(null, 'SELECT 1');
    },
    async probeWrite(now) {
      await q('probe_write', 'INSERT INTO health_probe (id, probed_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at', [now]);
    },

    async getApplication(appId) {
      const row = one(await run('get_app', SQL.getApp, { appId }, true));
      return row === undefined ? null : toApplication(row);
    },
    async listApplications() {
      return (await run('list_apps', SQL.listApps, {}, true)).rows.map(toApplication);
    },
    async insertApplication(app): Promise<InsertApplicationResult> {
      const row = one(await run('insert_app', SQL.insertApp, {
        appId: app.appId, name: app.name, enabled: app.enabled, requireIp: app.requireIp, loginUrl: app.loginUrl, tokenLifetimeSeconds: app.tokenLifetimeSeconds,
        idleTimeoutSeconds: app.idleTimeoutSeconds, defaultLanguage: app.defaultLanguage, createdAt: app.createdAt, trustedCallers: [...app.trustedCallers],
      }));
      return row === undefined ? { ok: false, reason: 'app-exists' } : { ok: true, application: toApplication(row) };
    },
    async updateApplication(appId, patch, now) {
      const sets: string[] = [];
      const values: unknown[] = [appId];
      for (const [key, column] of Object.entries(PATCH_COLUMNS) as [keyof ApplicationPatch, string][]) {
        if (patch[key] === undefined) continue;
        values.push(patch[key]);
        sets.push(`${column} = $${values.length}`);
      }
      if (sets.length === 0) sets.push('app_id = app_id');
      return tx(async (c) => {
        const row = (await c.query<Row>(`UPDATE applications SET ${sets.join(', ')} WHERE app_id = $1 RETURNING ${APP_COLUMNS}`, values)).rows[0];
        if (row === undefined) return null;
        if (patch.enabled === false) await runOn(c, SQL.revokeAppTokens, { appId, now });
        return toApplication(row);
      });
    },

    async findUserByLoginKey(loginKey): Promise<UserCredentials | null> {
      const row = one(await run('user_by_key', SQL.userByKey, { loginKey }, true));
      return row === undefined ? null : { ...toUser(row), passwordHash: str(row.password_hash) };
    },
    async getUser(userId) {
      return onPool(true, () => getUserOn(pool, userId));
    },
    async listUsers(filter) {
      return (await run('list_users', SQL.listUsers, { appId: filter?.appId ?? null }, true)).rows.map(toUser);
    },
    async insertUser(user: NewUser): Promise<InsertUserResult> {
      return tx((c) => insertUserOn(c, user));
    },
    async setPasswordHash(userId, passwordHash, now) {
      // Two statements: the second sees any token committed by a login that held the row lock.
      await tx(async (c) => {
        await runOn(c, SQL.setPassword, { userId, passwordHash, now });
        await runOn(c, SQL.revokeUserTokens, { userId, now });
      });
    },
    async upgradePasswordHash(userId, expectedHash, newHash) {
      const result = await run('upgrade_password', SQL.upgradePassword, { userId, expectedHash, newHash });
      return result.rowCount === 1;
    },
    async setUserEnabled(userId, enabled, now) {
      await tx(async (c) => {
        await runOn(c, SQL.setUserEnabled, { userId, enabled });
        if (!enabled) await runOn(c, SQL.revokeUserTokens, { userId, now });
      });
    },
    async grantApplication(userId, appId, now) {
      const result = await run(null, SQL.insertGrant, { userId, appId, now });
      return result.rowCount === 1;
    },
    async revokeApplication(userId, appId, now) {
      return tx(async (c) => {
        const deleted = await runOn(c, SQL.deleteGrant, { userId, appId });
        if (deleted.rowCount !== 1) return false;
        await runOn(c, SQL.revokeUserAppTokens, { userId, appId, now });
        return true;
      });
    },

    async migrateLegacyUser(input: LegacyMigrationInput): Promise<UserCredentials | null> {
      return tx(async (c) => {
        let userId: number;
        if (input.expectedHash === null) {
          const created = await insertUserOn(c, {
            login: input.login, loginKey: input.loginKey, passwordHash: input.passwordHash, enabled: true, appIds: [input.appId], createdAt: input.now,
          });
          if (!created.ok) return null;
          userId = created.user.userId;
        } else {
          const upgraded = (await runOn(c, SQL.upgradeLegacyPassword, { loginKey: input.loginKey, expectedHash: input.expectedHash, newHash: input.passwordHash })).rows[0];
          if (upgraded === undefined) return null;
          userId = num(upgraded.user_id);
          await runOn(c, SQL.insertGrant, { userId, appId: input.appId, now: input.now });
        }
        await runOn(c, SQL.markLegacyMigrated, { userId, now: input.now });
        const row = (await runOn(c, SQL.userById, { userId })).rows[0];
        if (row === undefined) throw new Error('user vanished inside its own transaction');
        return { ...toUser(row), passwordHash: str(row.password_hash) };
      });
    },
    async listPasswordHashes(page): Promise<readonly PasswordHashRow[]> {
      return (await run(null, SQL.passwordHashes, { afterUserId: page.afterUserId, limit: Math.max(0, Math.trunc(page.limit)) }, true)).rows.map((r) => ({
        userId: num(r.user_id), passwordHash: str(r.password_hash), legacyMigratedAt: dateOrNull(r.migrated_at),
      }));
    },

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
      const result = 'all' in scope
        ? await q(null, 'UPDATE tokens SET revoked_at = $1 WHERE revoked_at IS NULL AND used_at IS NULL AND expires_at > $1', [now])
        : 'tokenHash' in scope
          ? await q(null, `UPDATE tokens SET revoked_at = $2
            WHERE token_hash = $1 AND revoked_at IS NULL AND used_at IS NULL AND expires_at > $2`, [scope.tokenHash, now])
          : await q(null, `UPDATE tokens SET revoked_at = $2
            WHERE user_id = $1 AND revoked_at IS NULL AND used_at IS NULL AND expires_at > $2`, [scope.userId, now]);
      return result.rowCount ?? 0;
    },
    async listUserSessions(userId, now, limit) {
      return (await readArrays(null, `${LISTED_TOKEN_SELECT}
        WHERE t.user_id = $1 AND t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > $2
        ORDER BY t.issued_at DESC, t.token_hash LIMIT $3`, [userId, now, Math.max(0, Math.trunc(limit))])).map(toListedToken);
    },
    async findTokensByFingerprint(prefix, limit) {
      // A range on the "C"-collated primary key (hex digits sort below 'g'): an index scan.
      return (await readArrays(null, `${LISTED_TOKEN_SELECT}
        WHERE t.token_hash >= $1 AND t.token_hash < $1 || 'g' ORDER BY t.token_hash LIMIT $2`, [prefix, Math.max(0, Math.trunc(limit))])).map(toListedToken);
    },
    async deleteExpiredTokens(before) {
      return (await q(null, 'DELETE FROM tokens WHERE expires_at < $1', [before])).rowCount ?? 0;
    },
    // Housekeeping and metrics; the same semantics as the SQLite adapter, same contract tests.
    async purgeExpiredTokens(before, limit) {
      return (await q(null, `DELETE FROM tokens WHERE token_hash IN
        (SELECT token_hash FROM tokens WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, Math.max(0, Math.trunc(limit))])).rowCount ?? 0;
    },
    async countActiveTokens(now) {
      return num(one(await q(null, `SELECT COUNT(*) AS n FROM tokens t
        JOIN users u ON u.user_id = t.user_id AND u.enabled
        JOIN applications a ON a.app_id = t.app_id AND a.enabled
        WHERE t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > $1
          AND (a.idle_timeout_seconds IS NULL OR t.last_used_at + a.idle_timeout_seconds * interval '1 second' > $1)
          AND EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id)`, [now], true))?.n);
    },
    async countPasswordHashSchemes() {
      return (await q(null, `SELECT CASE WHEN left(password_hash, 1) = '$' THEN split_part(substr(password_hash, 2), '$', 1) ELSE '' END AS scheme,
          COUNT(*) AS n FROM users GROUP BY 1 ORDER BY 1`, [], true)).rows.map((r) => ({ scheme: str(r.scheme), count: num(r.n) }));
    },

    async insertNews(news: NewNews) {
      const row = one(await run('insert_news', SQL.insertNews, newsParams(news)));
      if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
      return toNews(row);
    },
    async insertNewsWithId(newsId: number, news: NewNews) {
      return tx(async (client) => {
        // The identity first moves past the id, so no insertNews from now on can be handed it.
        await client.query(`SELECT setval(s.seq, GREATEST($1::bigint, pg_sequence_last_value(s.seq)))
          FROM (SELECT pg_get_serial_sequence('news', 'news_id')::regclass AS seq) s`, [newsId]);
        const row = one(await client.query<Row>(`INSERT INTO news (news_id, app_id, language, title, body, url, published_at, expires_at, min_version, max_version, members_only, attributes, created_at)
          OVERRIDING SYSTEM VALUE VALUES ($13, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
          ON CONFLICT (news_id) DO NOTHING RETURNING ${NEWS_COLUMNS}`, [...postgresValues(SQL.insertNews, newsParams(news)), newsId])); // insertNews' $1..$12, then the id
        return row === undefined ? null : toNews(row);
      });
    },
    async listNews(filter) {
      return (await run('list_news', SQL.listNews, { appId: filter?.appId ?? null }, true)).rows.map(toNews);
    },
    async findPublishedNews(query: PublishedNewsQuery) {
      return (await newsSnapshot(query)).rows;
    },
    async publishedNewsSnapshot(query: PublishedNewsQuery) {
      return newsSnapshot(query);
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
    async getNews(newsId) {
      const row = one(await run('get_news', SQL.getNews, { newsId }, true));
      return row === undefined ? null : toNews(row);
    },
    async deleteNews(newsId) {
      return (await run(null, SQL.deleteNews, { newsId })).rowCount === 1;
    },
    async updateNews(newsId, u) {
      const row = one(await run(null, SQL.updateNews, {
        newsId, language: u.language, title: u.title, body: u.body, url: u.url, publishedAt: u.publishedAt, expiresAt: u.expiresAt,
        minVersion: u.minVersion, maxVersion: u.maxVersion, membersOnly: u.membersOnly, attributes: encodeNewsAttributes(u.attributes),
      }));
      return row === undefined ? null : toNews(row);
    },

    async insertAdminAccount(a) {
      return (await run(null, SQL.insertAdmin, {
        name: a.name, passwordHash: a.passwordHash, role: a.role, createdAt: a.createdAt, passwordChangedAt: a.passwordChangedAt, lastLoginAt: a.lastLoginAt,
      })).rowCount === 1;
    },
    async getAdminAccount(name) {
      const row = one(await run('get_admin', SQL.getAdmin, { name }, true));
      return row === undefined ? null : toAdminCredentials(row);
    },
    async listAdminAccounts() {
      return (await run(null, SQL.listAdmins, {}, true)).rows.map((r) => {
        const { passwordHash: _hash, ...account } = toAdminCredentials(r);
        return account;
      });
    },
    async setAdminPassword(name, passwordHash, now) {
      return tx(async (c) => {
        const updated = await runOn(c, SQL.setAdminPassword, { name, passwordHash, now });
        if (updated.rowCount !== 1) return false;
        await runOn(c, SQL.endAdminSessions, { name });
        return true;
      });
    },
    async removeAdminAccount(name) {
      return (await run(null, SQL.removeAdmin, { name })).rowCount === 1;
    },
    async insertAdminSession(session, passwordHash) {
      return tx(async (c) => {
        // The account row is locked, so a password change or removal waits for this or wins before it.
        const account = await c.query('SELECT 1 FROM admin_accounts WHERE name = $1 AND password_hash = $2 FOR UPDATE', [session.name, passwordHash]);
        if (account.rowCount !== 1) return false;
        await c.query(`INSERT INTO admin_sessions (session_hash, name, csrf_token, source_ip, created_at, last_used_at, expires_at)
          VALUES ($1, $2, $3, $4, $5, $5, $6)`, [session.sessionHash, session.name, session.csrfToken, session.sourceIp, session.createdAt, session.expiresAt]);
        await runOn(c, SQL.adminLastLogin, { name: session.name, createdAt: session.createdAt });
        return true;
      });
    },
    async findAdminSession(sessionHash) {
      const r = one(await run('find_admin_session', SQL.findAdminSession, { sessionHash }, true));
      if (r === undefined) return null;
      return {
        sessionHash: str(r.session_hash), name: str(r.name), role: r.role === 'admin' ? 'admin' : 'editor', csrfToken: str(r.csrf_token),
        sourceIp: r.source_ip === null ? null : str(r.source_ip), createdAt: date(r.created_at), lastUsedAt: date(r.last_used_at), expiresAt: date(r.expires_at),
      };
    },
    async touchAdminSession(sessionHash, now) {
      await run('touch_admin_session', SQL.touchAdminSession, { sessionHash, now });
    },
    async deleteAdminSession(sessionHash) {
      return (await run(null, SQL.deleteAdminSession, { sessionHash })).rowCount === 1;
    },
    async purgeAdminSessions(now, idleBefore) {
      return (await run(null, SQL.purgeAdminSessions, { now, idleBefore })).rowCount ?? 0;
    },

    async listLiveTokens(query) {
      return (await readArrays(null, `${LISTED_TOKEN_SELECT}
        WHERE t.token_hash > $1 AND t.revoked_at IS NULL AND t.used_at IS NULL AND t.expires_at > $2
        ORDER BY t.token_hash LIMIT $3`, [query.afterHash ?? '', query.liveAt, query.limit])).map(toListedToken);
    },
    async importToken(token: ImportedToken) {
      const result = await q(null, `INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at, used_at, revoked_at, origin)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (token_hash) DO NOTHING`, [
        token.tokenHash, token.kind, token.userId, token.appId, token.clientIp, token.sourceIp, token.issuedAt, token.expiresAt,
        token.lastUsedAt, token.usedAt, token.revokedAt, token.origin,
      ]);
      return result.rowCount === 1;
    },

    async appendAudit(events: readonly NewAuditEvent[]) {
      if (events.length === 0) return;
      const insertChunk = async (db: Queryable, chunk: readonly NewAuditEvent[]): Promise<void> => {
        const values: unknown[] = [];
        const rows = chunk.map((e) => {
          const first = values.length;
          values.push(e.at, e.type, e.reason, e.requestId, e.appId, e.login, e.sourceIp, e.claimedIp, e.tokenFp, e.detail === null ? null : JSON.stringify(e.detail));
          return `(${Array.from({ length: 10 }, (_, i) => `$${first + i + 1}${i === 9 ? '::jsonb' : ''}`).join(', ')})`;
        });
        await db.query(`INSERT INTO audit_events (at, type, reason, request_id, app_id, login, source_ip, claimed_ip, token_fp, detail)
          VALUES ${rows.join(', ')}`, values);
      };
      if (events.length <= AUDIT_CHUNK) {
        checkOpen();
        await insertChunk(pool, events);
        return;
      }
      await tx(async (c) => {
        for (let i = 0; i < events.length; i += AUDIT_CHUNK) await insertChunk(c, events.slice(i, i + AUDIT_CHUNK));
      });
    },
    async installationSecret(name, candidate) {
      // The row inserted now, or the one another instance inserted first. When that instance
      // committed while this statement waited on the conflict, its row is not in this statement's
      // snapshot: a second statement (a new snapshot) reads it.
      const select = (): Promise<pg.QueryResult<Row>> => q('installation_secret_get', 'SELECT secret FROM installation_secrets WHERE name = $1', [name], true);
      // Read first: once the secret exists, starting needs no write, so a database that only
      // takes reads (a standby) still opens, and readiness says why it is not ready.
      const existing = (await select()).rows[0];
      if (existing !== undefined) return str(existing.secret);
      const row = (await q('installation_secret_add', `WITH added AS (
          INSERT INTO installation_secrets (name, secret, created_at) VALUES ($1, $2, now()) ON CONFLICT (name) DO NOTHING RETURNING secret)
        SELECT secret FROM added UNION ALL SELECT secret FROM installation_secrets WHERE name = $1`, [name, candidate])).rows[0] ?? (await select()).rows[0];
      if (row === undefined) throw new Error(`installation secret ${name} could not be stored`);
      return str(row.secret);
    },
    async queryAudit(query) {
      const { statement, params } = auditQuerySql(query, (d) => d);
      return (await run(null, statement, params, true)).rows.map(toAudit);
    },
    async reserveLoginAttempt(attempt, limits) {
      return reserveAttempt(attempt, limits);
    },
    async recordLoginSuccess(attempt) {
      // In the order of reserveLoginAttempt ('l:' < 'p:' < 's:'): the login's slot back, the pair,
      // then the source's refund and the known source.
      const keys = throttleKeys(attempt);
      await tx(async (c) => {
        await loginSlotBack(c, keys.login, attempt.now.getTime());
        const pair = pairAfterSuccess(await lockedRow(c, keys.pair), attempt.now.getTime());
        if (pair === null) await runOn(c, SQL.forgetCounter, { key: keys.pair }, 'throttle_forget');
        else await writeCounters(c, [[keys.pair, pair]]);
        await c.query({
          name: 'throttle_success', text: `WITH refund AS (UPDATE throttle_counters SET count = count - 1 WHERE key = $1 AND count > 0 AND expires_at > $4)
            INSERT INTO known_sources (login_hash, source, last_success_at) VALUES ($2, $3, $4)
            ON CONFLICT (login_hash, source) DO UPDATE SET last_success_at = GREATEST(known_sources.last_success_at, excluded.last_success_at)`,
          values: [keys.source, attempt.loginHash, attempt.source, attempt.now],
        });
      });
    },
    async releaseLoginAttempt(attempt) {
      const keys = throttleKeys(attempt);
      await tx(async (c) => {
        await loginSlotBack(c, keys.login, attempt.now.getTime());
        const pair = pairAfterRelease(await lockedRow(c, keys.pair), attempt.now.getTime());
        if (pair !== null) await writeCounters(c, [[keys.pair, pair]]);
        await runOn(c, SQL.refundCounter, { key: keys.source, now: attempt.now }, 'throttle_refund');
      });
    },
    async recordLoginFailure(attempt, limits) {
      const keys = throttleKeys(attempt);
      const now = attempt.now.getTime();
      await tx(async (c) => {
        // The login, then the pair ('l:' < 'p:'), as every transaction locks them.
        const login = loginAfterFailure((await lockCounter(c, keys.login, attempt.now)).state, now, limits);
        const pair = pairAfterFailure((await lockCounter(c, keys.pair, attempt.now)).state, now, limits);
        await writeCounters(c, [[keys.login, login], [keys.pair, pair]]);
      });
    },
    async purgeLoginThrottle(now, knownBefore, limit) {
      const max = Math.max(0, Math.trunc(limit));
      const counters = (await run(null, SQL.purgeCounters, { now, limit: max })).rowCount ?? 0;
      if (counters >= max) return counters;
      return counters + ((await run(null, SQL.purgeKnownSources, { before: knownBefore, limit: max - counters })).rowCount ?? 0);
    },
    async loginThrottleState(query) {
      return throttleState(query);
    },
    async resetLoginThrottle(loginHash) {
      const keys = throttleKeys({ loginHash, source: '' });
      return tx(async (c) => {
        // The login's row first, as every throttle transaction locks it before any of its pairs:
        // so the delete cannot wait in a cycle with a reservation of this login.
        await lockedRow(c, keys.login);
        return (await runOn(c, SQL.resetLogin, { login: keys.login, prefix: keys.pair }, 'throttle_reset')).rowCount ?? 0;
      });
    },
    async purgeAudit(before, limit) {
      return (await run(null, SQL.purgeAudit, { before, limit: Math.max(0, Math.trunc(limit)) })).rowCount ?? 0;
    },
    async insertShadowDifference(d, keep) {
      // One statement, so one transaction: the row and the pruning commit together. The DELETE
      // does not see the row being inserted (one snapshot): it keeps the newest keep - 1 others.
      await q('shadow_difference_add', `WITH added AS (
          INSERT INTO shadow_differences (observed_at, mode, operation, binding, request_json, legacy_json, ours_json, diff)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8))
        DELETE FROM shadow_differences WHERE id <= (SELECT id FROM shadow_differences ORDER BY id DESC LIMIT 1 OFFSET $9)`,
      [d.at, d.mode, d.operation, d.binding, d.requestJson, d.legacyJson, d.oursJson, d.diff, Math.max(1, Math.trunc(keep)) - 1]);
    },
    async listShadowDifferences(limit) {
      const rows = (await run('shadow_difference_list', SQL.listShadowDifferences, { limit: Math.max(0, Math.trunc(limit)) }, true)).rows;
      return rows.map((row): ShadowDifferenceRecord => ({
        id: num(row.id), at: date(row.observed_at), mode: row.mode === 'front' ? 'front' : 'shadow', operation: row.operation === null ? null : str(row.operation),
        binding: str(row.binding), requestJson: str(row.request_json), legacyJson: str(row.legacy_json), oursJson: str(row.ours_json), diff: str(row.diff),
      }));
    },
    async addLegacyTallies(rows, keepFrom) {
      const ordered = legacyTallyRows(rows);
      if (ordered.length === 0) return;
      // A few rows a minute per instance. Every writer upserts in the same order (legacyTallyRows),
      // and only the prune touches old days, so concurrent instances never deadlock.
      await tx(async (c) => {
        for (const t of ordered) {
          await runOn(c, SQL.addLegacyTally, { day: t.day, kind: t.kind, result: t.result, count: t.count, lastAt: t.lastAt }, 'legacy_tally_add');
        }
        await runOn(c, SQL.pruneLegacyTallies, { keepFrom }, 'legacy_tally_prune');
      });
    },
    async listLegacyTallies() {
      const rows = (await run('legacy_tally_list', SQL.listLegacyTallies, {}, true)).rows;
      return rows.map((r): LegacyTally => ({
        day: str(r.day), kind: str(r.kind) as LegacyTallyKind, result: str(r.result), count: num(r.count), lastAt: date(r.last_at),
      }));
    },
  };
}
