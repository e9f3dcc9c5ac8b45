import type { Database } from 'better-sqlite3';
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

export interface SqliteMigration {
  /** Applied in ascending order; never renumber or edit one that has shipped, add a new one. */
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = Object.freeze([initialSchema, legacyMigrations, bruteForce, auditEvents, newsRevision, accessRevision, installationSecrets, healthProbe, newsAttributes, adminConsole, shadowDifferences, tokenOrigin, purgeKeepsAccessRevision]);

/**
 * The SQLite header's application_id of an svcapi-auth database ("SVCA"), set by the migration
 * that creates or upgrades it: `file` and svcapi-auth itself can tell the file apart from
 * another application's (src/store/schema-identity.ts).
 */
export const SVCAPI_APPLICATION_ID = 0x53564341;

/**
 * Brings the database up to the newest schema; returns the resulting version. Runs in one
 * IMMEDIATE transaction so two processes starting together cannot both migrate. Nothing is
 * written when the schema is up to date (a read-only file can still be opened and read).
 */
export function applySqliteMigrations(db: Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number {
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const run = db.transaction((): number => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT    NOT NULL,
      applied_at INTEGER NOT NULL
    )`);
    const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations').get() as { version: number };
    if (row.version > latest) {
      throw new Error(`the database schema is at version ${row.version}, newer than this svcapi-auth knows (${latest}); upgrade svcapi-auth`);
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const pending = [...migrations].sort((a, b) => a.version - b.version).filter((m) => m.version > row.version);
    for (const m of pending) {
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    }
    if (pending.length > 0) db.pragma(`application_id = ${SVCAPI_APPLICATION_ID}`);
    return latest;
  });
  return run.immediate();
}

export function sqliteSchemaVersion(db: Database): number {
  const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations').get() as { version: number };
  return row.version;
}
