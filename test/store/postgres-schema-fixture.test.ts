/**
 * The PostgreSQL side of test/store/schema-fixture.test.ts (the system suite: npm run
 * test:system): the PostgreSQL migrations build the schema of test/fixtures/store-schema.json
 * again, version by version.
 */
import { describe, it } from 'vitest';
import { applyPostgresMigrations, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations/postgres-migrations.js';
import { dropSchemas, newSchemaName, postgresForTests, withAdminClient } from '../support/postgres.js';
import { dumpPostgresSchema, type SchemaDump } from '../support/schema-dump.js';
import { checkSchemaFixture, FIXTURE_VERSIONS } from '../support/schema-fixture.js';

const pgAdmin = await postgresForTests();

describe('store migrations build the schema deployed databases have', () => {
  it.skipIf(pgAdmin === null)('PostgreSQL, after each version', async () => {
    const schemas = FIXTURE_VERSIONS.map(() => newSchemaName());
    try {
      const dumps = new Map<number, SchemaDump>();
      await withAdminClient(async (client) => {
        for (const [i, version] of FIXTURE_VERSIONS.entries()) {
          const schema = schemas[i] ?? '';
          await client.query(`CREATE SCHEMA "${schema}"`);
          await client.query(`SET search_path TO "${schema}"`);
          await applyPostgresMigrations(client, schema, POSTGRES_MIGRATIONS.filter((m) => m.version <= version));
          dumps.set(version, await dumpPostgresSchema(client, schema));
        }
      });
      checkSchemaFixture('postgres', dumps);
    } finally {
      await dropSchemas(schemas);
    }
  }, 60_000);
});
