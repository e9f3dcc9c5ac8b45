import pg from 'pg';
import type { Store, StoreLifecycle } from '../store.js';
import { applyPostgresMigrations, LATEST_POSTGRES_VERSION, POSTGRES_MIGRATIONS, postgresSchemaVersion } from './migrations/postgres-migrations.js';
import { DEFAULT_POOL_MAX, parsePostgresUrl, redactPostgresUrl } from './postgres-url.js';
import { DatabaseError } from '../database-errors.js';
import { judgeSchema, type SchemaVerdict } from '../schema-identity.js';
import { createPostgresContext, one } from './postgres-context.js';
import { num } from './postgres-row-mapping.js';
import { postgresAccounts } from './postgres-accounts.js';
import { postgresTokens } from './postgres-tokens.js';
import { postgresNews } from './postgres-news.js';
import { postgresThrottle } from './postgres-throttle.js';
import { postgresAdminConsole } from './postgres-admin-console.js';
import { postgresAudit } from './postgres-audit.js';

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
  /** Connections of the pool when the URL gives no `pool_max` (default DEFAULT_POOL_MAX); the token reads' pool has half as many. */
  readonly defaultPoolMax?: number;
}

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
  const poolMax = location.poolMax ?? options.defaultPoolMax ?? DEFAULT_POOL_MAX;
  const pool = newPool(base, poolMax);
  // The token reads' own connections (TOKEN_READ_SETTING, a startup option: no statement of its own), at most half as many again as the
  // pool's: a turn's read is one short statement, so a few carry a whole load of token checks.
  let tokenReads = pool;
  if (options.genericTokenPlans ?? true) tokenReads = newPool(withSetting(base, TOKEN_READ_SETTING), Math.max(1, Math.floor(poolMax / 2)));

  return createPostgresStore(pool, tokenReads, options);
}

/**
 * The Store from its parts, one per concern (postgres-accounts.ts, postgres-tokens.ts ...), over
 * one shared context (postgres-context.ts); the lifecycle is here.
 */
function createPostgresStore(pool: pg.Pool, tokenReads: pg.Pool, options: Pick<PostgresStoreOptions, 'groupCommit' | 'onGroupCommit'>): Store {
  let closed = false;
  const ctx = createPostgresContext(pool, tokenReads, () => closed);
  const { q } = ctx;
  const tokens = postgresTokens(ctx, options);

  const lifecycle: StoreLifecycle = {
    async schemaVersion() {
      return num(one(await q(null, 'SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations', [], true))?.version);
    },
    async close() {
      if (closed) return;
      await tokens.flushWrites();
      closed = true;
      await Promise.all([pool.end(), tokenReads === pool ? undefined : tokenReads.end()]);
    },
    async ping() {
      await q(null, 'SELECT 1');
    },
    async probeWrite(now) {
      // Adds one to probe_generation, which tells this probe from an older version's (migration
      // 18); the trigger stamped older_probed_at with the server's now(), so the age is too.
      const row = one(await q('probe_write', `INSERT INTO health_probe (id, probed_at, probe_generation) VALUES (1, $1, 1)
        ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at, probe_generation = health_probe.probe_generation + 1
        RETURNING (extract(epoch FROM now() - older_probed_at) * 1000)::float8 AS older_ms_ago`, [now]));
      const older = row?.older_ms_ago;
      return { olderVersionMsAgo: older === null || older === undefined ? null : Math.max(0, num(older)) };
    },
  };

  return {
    ...lifecycle,
    ...postgresAccounts(ctx),
    ...tokens.port,
    ...postgresNews(ctx),
    ...postgresThrottle(ctx),
    ...postgresAdminConsole(ctx),
    ...postgresAudit(ctx),
  };
}
