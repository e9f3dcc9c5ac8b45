/**
 * Database URLs: read and redacted, without loading either adapter. config/load-config.ts validates the URL at
 * start-up through this file, so reading the configuration does not pull in pg or better-sqlite3.
 */
import { resolve } from 'node:path';
import { parsePostgresUrl, redactPostgresUrl } from './postgres/postgres-url.js';

export { DEFAULT_POOL_MAX } from './postgres/postgres-url.js';

export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string };

/**
 * Reads a database URL:
 * - `sqlite:./data/x.db`, `sqlite:/abs/x.db`, `sqlite:///abs/x.db` — a SQLite file (relative to the
 *   working directory);
 * - `sqlite::memory:` — a private in-memory database;
 * - a bare path with no scheme — a SQLite file, for convenience on the command line;
 * - `postgres://` / `postgresql://` — PostgreSQL (`?schema=<name>`, `?pool_max=<n>`: see postgres/postgres-url.ts).
 */
export function parseDatabaseUrl(url: string): DatabaseLocation {
  const text = url.trim();
  if (text === '') throw new Error('the database URL is empty; expected sqlite:<path>');
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: 'sqlite', path: resolve(text) };
  if (scheme === 'sqlite') {
    let rest = text.slice('sqlite:'.length);
    if (rest === ':memory:' || rest === '//:memory:') return { kind: 'sqlite', path: ':memory:' };
    if (rest.startsWith('//')) rest = rest.slice(2);
    if (rest === '') throw new Error(`the database URL ${JSON.stringify(url)} names no file; expected sqlite:<path>`);
    return { kind: 'sqlite', path: resolve(rest) };
  }
  if (scheme === 'postgres' || scheme === 'postgresql') {
    parsePostgresUrl(text); // checks our own parameters now, so a bad one stops the start-up with its name
    return { kind: 'postgres', url: text };
  }
  throw new Error(`unsupported database URL scheme "${scheme}:"; expected sqlite:<path> or postgres://...`);
}

/** The URL for messages: a PostgreSQL password is replaced by `***`. */
export function redactDatabaseUrl(url: string): string {
  return /^postgres(ql)?:/i.test(url.trim()) ? redactPostgresUrl(url.trim()) : url;
}
