/**
 * Reading a `postgres://` / `postgresql://` database URL. Everything node-postgres understands
 * (user, password, host, port, database, sslmode, application_name, options, statement_timeout,
 * query_timeout, ...) passes through unchanged; two parameters are ours and are removed first:
 *
 * - `schema=<name>`: the schema the service's tables live in (created by the migrations when
 *   missing); each connection gets `search_path=<name>`. Without it, the URL's search_path (or the
 *   server's default, usually `public`) decides.
 * - `pool_max=<n>`: connections per process (default 10; with `serve --workers N`, each worker's
 *   share of those, Config.postgresPoolMax). Set, each worker has its own pool of that many, so
 *   the database sees up to N times as many.
 */

/** Connections of a process's pool when neither the URL's `pool_max` nor the caller says. */
export const DEFAULT_POOL_MAX = 10;

/** Lower-case letters, digits and underscores, not starting with a digit: no quoting questions anywhere. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface PostgresLocation {
  /** The URL without our own parameters, for node-postgres. */
  readonly connectionString: string;
  readonly schema: string | null;
  readonly poolMax: number | null;
}

export function parsePostgresUrl(url: string): PostgresLocation {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('the PostgreSQL URL is malformed; expected postgres://user[:password]@host[:port]/database[?schema=name]');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new Error(`not a PostgreSQL URL (scheme "${parsed.protocol}")`);
  }
  const schema = parsed.searchParams.get('schema');
  if (schema !== null && !SCHEMA_NAME.test(schema)) {
    throw new Error(`invalid schema name ${JSON.stringify(schema)} in the database URL: use lower-case letters, digits and underscores (at most 63), not starting with a digit`);
  }
  const poolMaxText = parsed.searchParams.get('pool_max');
  let poolMax: number | null = null;
  if (poolMaxText !== null) {
    if (!/^\d+$/.test(poolMaxText) || Number(poolMaxText) < 1 || Number(poolMaxText) > 1000) {
      throw new Error(`invalid pool_max ${JSON.stringify(poolMaxText)} in the database URL: expected a whole number from 1 to 1000`);
    }
    poolMax = Number(poolMaxText);
  }
  parsed.searchParams.delete('schema');
  parsed.searchParams.delete('pool_max');
  return { connectionString: parsed.toString(), schema, poolMax };
}

/** The URL with its password replaced, for messages and logs. */
export function redactPostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(malformed URL)';
  }
}
