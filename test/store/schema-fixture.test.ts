/**
 * Deployed databases already ran the store migrations, so the SQL of a migration that has shipped
 * may be rewritten (shared between the dialects, say) only if it still builds exactly the same
 * schema. test/fixtures/store-schema.json holds the schema the migrations built before they were
 * written once for both dialects (read back from the databases: test/support/schema-dump.ts):
 * in full at its last version, and as a digest after each earlier version. Both adapters'
 * migrations must build it again, version by version (PostgreSQL's: postgres-schema-fixture.test.ts).
 *
 * The fixture is only ever extended, never regenerated from the code under test: a migration
 * added later is covered by raising FIXTURE_VERSION (test/support/schema-fixture.ts) and writing the new entries with
 * SVCAPI_WRITE_SCHEMA_FIXTURE=1 from a checkout where that migration has shipped.
 */
import Database from 'better-sqlite3';
import { describe, it } from 'vitest';
import { applySqliteMigrations, SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/sqlite-migrations.js';
import { dumpSqliteSchema, type SchemaDump } from '../support/schema-dump.js';
import { checkSchemaFixture, FIXTURE_VERSIONS } from '../support/schema-fixture.js';

describe('store migrations build the schema deployed databases have', () => {
  it('SQLite, after each version', () => {
    const dumps = new Map<number, SchemaDump>();
    for (const version of FIXTURE_VERSIONS) {
      const db = new Database(':memory:');
      try {
        applySqliteMigrations(db, SQLITE_MIGRATIONS.filter((m) => m.version <= version));
        dumps.set(version, dumpSqliteSchema(db));
      } finally {
        db.close();
      }
    }
    checkSchemaFixture('sqlite', dumps);
  });
});
