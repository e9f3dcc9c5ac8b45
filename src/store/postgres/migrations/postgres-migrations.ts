import type pg from 'pg';
import { renderMigrations, type DialectMigration } from '../../migrations/store-migrations.js';

/** A store migration (src/store/migrations/) rendered for PostgreSQL: same versions, same schema, other dialect. */
export type PostgresMigration = DialectMigration;

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = renderMigrations('postgres');

export const LATEST_POSTGRES_VERSION = POSTGRES_MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/** Identifier quoting for a schema name already checked against SCHEMA_NAME. */
const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * Brings the schema up to the newest version; returns the resulting version. Everything runs in
 * one transaction (PostgreSQL DDL is transactional) behind a transaction-scoped advisory lock
 * keyed by the schema, so instances starting together apply each migration exactly once: the
 * others wait, then find nothing left to do.
 *
 * `schema` is the one named by the URL's `?schema=` (created if missing), or null for whatever
 * the connection's search_path selects.
 */
export async function applyPostgresMigrations(
  client: pg.ClientBase,
  schema: string | null,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
): Promise<number> {
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  await client.query('BEGIN');
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('svcapi-auth migrate ' || COALESCE($1::text, current_schema(), ''), 0))", [schema]);
    // Only when missing: a role without CREATE on the database can use a schema a DBA made for it.
    if (schema !== null && (await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount === 0) {
      await client.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    }
    const target = (await client.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s ?? null;
    if (target === null) throw new Error('no schema to create tables in: the search_path names no existing schema (add ?schema=<name> to the URL)');
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer     PRIMARY KEY,
      name       text        NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const current = await currentVersion(client);
    if (current > latest) {
      throw new Error(`the database schema is at version ${current}, newer than this svcapi-auth knows (${latest}); upgrade svcapi-auth`);
    }
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (m.version <= current) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
    await client.query('COMMIT');
    return latest;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** The highest applied version; 0 when the schema has never been migrated. */
export async function postgresSchemaVersion(client: pg.ClientBase): Promise<number> {
  const exists = (await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t")).rows[0]?.t ?? null;
  return exists === null ? 0 : currentVersion(client);
}

async function currentVersion(client: pg.ClientBase): Promise<number> {
  const row = (await client.query<{ version: number }>('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations')).rows[0];
  return Number(row?.version ?? 0);
}
