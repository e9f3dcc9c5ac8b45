/**
 * A PostgreSQL schema of its own for a benchmark's run: whether the server answers, the URL
 * that names the schema, and dropping it afterwards. bench.mjs and profile.mjs share these.
 */
import process from 'node:process';
import { URL } from 'node:url';

export const DEFAULT_PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The value of a `--pg [URL]` option: the URL that follows it, else DEFAULT_PG_URL (readArgs' next and peek). */
export function pgUrlArg(next, peek) {
  return peek() !== undefined && /^postgres(ql)?:\/\//.test(peek()) ? next() : DEFAULT_PG_URL;
}

/** Whether a PostgreSQL server answers at `url` (a connection and `SELECT 1` within 3 s). */
export async function pgAnswers(url) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A database URL without its password, for the output. */
export function redactUrl(url) {
  const u = new URL(url);
  if (u.password !== '') u.password = '***';
  return u.toString();
}

/** A new schema's name for this process (`prefix_pid_time`) and the URL that names it. */
export function runSchema(baseUrl, prefix) {
  const schema = `${prefix}_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(baseUrl);
  url.searchParams.set('schema', schema);
  return { schema, url: url.toString() };
}

export async function dropPgSchema(baseUrl, schema, log) {
  const { default: pg } = await import('pg');
  const url = new URL(baseUrl);
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    log(`dropped PostgreSQL schema ${schema}`);
  } finally {
    await client.end();
  }
}
