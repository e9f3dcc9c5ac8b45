import type pg from 'pg';
import { initialSchema } from './001-initial-schema.js';
import { legacyMigrations } from './002-legacy-migrations.js';
import { bruteForce } from './003-brute-force.js';
import { auditEvents } from './004-audit-events.js';
import { newsRevision } from './005-news-revision.js';
import { accessRevision } from './006-access-revision.js';
import { installationSecrets } from './007-installation-secrets.js';
import { healthProbe } from './008-health-probe.js';
import { newsAttributes } from './009-news-attributes.js';
import { adminConsole } from './010-admin-console.js';
import { shadowDifferences } from './011-shadow-differences.js';
import { tokenOrigin } from './012-token-origin.js';
import { purgeKeepsAccessRevision } from './013-purge-keeps-access-revision.js';

export interface PostgresMigration {
  /**
   * Applied in ascending order; never renumber or edit one that has shipped, add a new one. The
   * versions match the SQLite migrations one for one (same schema, other dialect).
   */
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = Object.freeze([initialSchema, legacyMigrations, bruteForce, auditEvents, newsRevision, accessRevision, installationSecrets, healthProbe, newsAttributes, adminConsole, shadowDifferences, tokenOrigin, purgeKeepsAccessRevision]);

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
