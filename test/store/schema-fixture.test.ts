/**
 * Deployed databases already ran the store migrations, so the SQL of a migration that has shipped
 * may be rewritten (shared between the dialects, say) only if it still builds exactly the same
 * schema. test/fixtures/store-schema.json holds the schema the migrations built before they were
 * written once for both dialects (read back from the databases: test/support/schema-dump.ts):
 * in full at its last version, and as a digest after each earlier version. Both adapters'
 * migrations must build it again, version by version.
 *
 * The fixture is only ever extended, never regenerated from the code under test: a migration
 * added later is covered by raising FIXTURE_VERSION and writing the new entries with
 * SVCAPI_WRITE_SCHEMA_FIXTURE=1 from a checkout where that migration has shipped.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { applySqliteMigrations, SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations/sqlite-migrations.js';
import { applyPostgresMigrations, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations/postgres-migrations.js';
import { dropSchemas, newSchemaName, postgresForTests, withAdminClient } from '../support/postgres.js';
import { dumpDigest, dumpPostgresSchema, dumpSqliteSchema, type SchemaDump } from '../support/schema-dump.js';

const FIXTURE_PATH = new URL('../fixtures/store-schema.json', import.meta.url);
const FIXTURE_VERSION = 12;
const WRITE = process.env.SVCAPI_WRITE_SCHEMA_FIXTURE === '1';

interface DialectFixture {
  /** dumpDigest of the schema after each version 1..FIXTURE_VERSION. */
  readonly digests: Record<string, string>;
  /** The whole schema at FIXTURE_VERSION. */
  readonly final: SchemaDump;
}
interface Fixture {
  readonly version: number;
  readonly sqlite?: DialectFixture;
  readonly postgres?: DialectFixture;
}

const pgAdmin = await postgresForTests();
const versions = Array.from({ length: FIXTURE_VERSION }, (_, i) => i + 1);
const readFixture = (): Fixture => JSON.parse(readFileSync(FIXTURE_PATH, 'utf8')) as Fixture;
const written: { sqlite?: DialectFixture; postgres?: DialectFixture } = {};

afterAll(() => {
  if (!WRITE) return;
  let previous: Fixture = { version: FIXTURE_VERSION };
  try {
    previous = readFixture();
  } catch {
    // first write
  }
  writeFileSync(FIXTURE_PATH, `${JSON.stringify({ ...previous, ...written, version: FIXTURE_VERSION }, null, 1)}\n`);
});

function check(dialect: 'sqlite' | 'postgres', dumps: ReadonlyMap<number, SchemaDump>): void {
  const digests = Object.fromEntries([...dumps].map(([v, d]) => [String(v), dumpDigest(d)]));
  const final = dumps.get(FIXTURE_VERSION);
  if (final === undefined) throw new Error('no dump of the last version');
  if (WRITE) {
    written[dialect] = { digests, final };
    return;
  }
  const expected = readFixture()[dialect];
  if (expected === undefined) throw new Error(`the fixture has no ${dialect} schema`);
  expect(final).toEqual(expected.final);
  expect(digests).toEqual(expected.digests);
}

describe('store migrations build the schema deployed databases have', () => {
  it('SQLite, after each version', () => {
    const dumps = new Map<number, SchemaDump>();
    for (const version of versions) {
      const db = new Database(':memory:');
      try {
        applySqliteMigrations(db, SQLITE_MIGRATIONS.filter((m) => m.version <= version));
        dumps.set(version, dumpSqliteSchema(db));
      } finally {
        db.close();
      }
    }
    check('sqlite', dumps);
  });

  it.skipIf(pgAdmin === null)('PostgreSQL, after each version', async () => {
    const schemas = versions.map(() => newSchemaName());
    try {
      const dumps = new Map<number, SchemaDump>();
      await withAdminClient(async (client) => {
        for (const [i, version] of versions.entries()) {
          const schema = schemas[i] ?? '';
          await client.query(`CREATE SCHEMA "${schema}"`);
          await client.query(`SET search_path TO "${schema}"`);
          await applyPostgresMigrations(client, schema, POSTGRES_MIGRATIONS.filter((m) => m.version <= version));
          dumps.set(version, await dumpPostgresSchema(client, schema));
        }
      });
      check('postgres', dumps);
    } finally {
      await dropSchemas(schemas);
    }
  }, 60_000);
});
