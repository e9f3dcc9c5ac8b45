/**
 * PostgreSQL for tests: the local server (SVCAPI_TEST_POSTGRES_URL, default
 * postgres://postgres@127.0.0.1:5432/test), a fresh schema per use, dropped afterwards.
 *
 * When the server cannot be reached: under CI (env CI set) it is started once with pg_ctlcluster
 * and, if still unreachable, the test file FAILS; on a developer machine without CI the
 * PostgreSQL tests are skipped with a message saying why.
 *
 * Only in the system suite (npm run test:system). Use at the top of a test file:
 *   const pgAdmin = await postgresForTests();            // null: skip
 *   describe.skipIf(pgAdmin === null)('...', () => { ... });
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN_URL = process.env.SVCAPI_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA_PREFIX = 'svcapi_t_';

async function reachable(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function startLocalCluster(): string {
  const r = spawnSync('sh', ['-c', 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start'], { encoding: 'utf8', timeout: 30_000 });
  return `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim();
}

let availability: Promise<string | null> | undefined;

async function checkAvailability(): Promise<string | null> {
  let problem = await reachable(PG_ADMIN_URL);
  if (problem === null) {
    await cleanupStaleSchemas();
    return PG_ADMIN_URL;
  }
  if (!process.env.CI) {
    console.warn(`PostgreSQL tests skipped: cannot reach ${PG_ADMIN_URL} (${problem}). Start PostgreSQL or set SVCAPI_TEST_POSTGRES_URL; under CI these tests fail instead.`);
    return null;
  }
  const output = startLocalCluster();
  for (let i = 0; i < 30 && problem !== null; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    problem = await reachable(PG_ADMIN_URL);
  }
  if (problem !== null) {
    throw new Error(`CI: PostgreSQL at ${PG_ADMIN_URL} is unreachable (${problem}), also after trying to start it:\n${output}`);
  }
  return PG_ADMIN_URL;
}

/**
 * The admin URL when PostgreSQL is usable; null when the tests should be skipped (never under CI).
 * PostgreSQL belongs to the system suite (`npm run test:system`, files named postgres-*.test.ts or
 * in its folders: vitest.config.ts); a test of the fast suite that asks for it is misplaced.
 */
export function postgresForTests(): Promise<string | null> {
  if (process.env.SVCAPI_TEST_SUITE === 'fast') {
    throw new Error('PostgreSQL tests belong to the system suite: name the file postgres-*.test.ts (see vitest.config.ts)');
  }
  availability ??= checkAvailability();
  return availability;
}

/** Runs `fn` with a connection of the admin user. */
export async function withAdminClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs one SQL statement as the admin user. */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<R[]> {
  return withAdminClient(async (client) => (await client.query<R>(sql, values)).rows);
}

/** A schema name no other run uses; its creation time is in the name so stale ones can be found. */
export function newSchemaName(): string {
  return `${SCHEMA_PREFIX}${Math.floor(Date.now() / 1000).toString(36)}_${randomBytes(5).toString('hex')}`;
}

/** A database URL on a fresh, not yet existing schema (the store's migrations create it). */
export function schemaUrl(schema: string, params: Record<string, string> = {}): string {
  const url = new URL(PG_ADMIN_URL);
  url.searchParams.set('schema', schema);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

export async function dropSchemas(schemas: readonly string[]): Promise<void> {
  if (schemas.length === 0) return;
  await withAdminClient(async (client) => {
    for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  });
}

/** Schemas (and roles of the same name, see the outage test) left behind by runs that were killed, older than an hour. */
async function cleanupStaleSchemas(): Promise<void> {
  const cutoff = Date.now() / 1000 - 3600;
  const stale = (names: string[]): string[] => names.filter((name) => {
    const created = parseInt(name.slice(SCHEMA_PREFIX.length).split('_')[0] ?? '', 36);
    return Number.isFinite(created) && created < cutoff;
  });
  const schemas = await adminQuery<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE nspname LIKE $1', [`${SCHEMA_PREFIX}%`]);
  await dropSchemas(stale(schemas.map((r) => r.nspname))).catch(() => undefined);
  const roles = await adminQuery<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname LIKE $1', [`${SCHEMA_PREFIX}%`]);
  for (const role of stale(roles.map((r) => r.rolname))) await adminQuery(`DROP ROLE IF EXISTS "${role}"`).catch(() => undefined);
}
