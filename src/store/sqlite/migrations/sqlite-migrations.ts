import type { Database } from 'better-sqlite3';
import { renderMigrations, type DialectMigration } from '../../migrations/store-migrations.js';

/** A store migration (src/store/migrations/) rendered for SQLite. */
export type SqliteMigration = DialectMigration;

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = renderMigrations('sqlite');

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
