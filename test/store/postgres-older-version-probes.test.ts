/** Migration 18 on PostgreSQL (older-version-probes-contract.ts): the stamp and its age on the server's clock. */
import { afterAll, describe } from 'vitest';
import { applyPostgresMigrations, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations/postgres-migrations.js';
import { openStore } from '../../src/store/open-store.js';
import { adminQuery, dropSchemas, newSchemaName, postgresForTests, schemaUrl, withAdminClient } from '../support/postgres.js';
import { describeOlderVersionProbes, OLD_PROBE } from './older-version-probes-contract.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  if (pgAdmin !== null) await dropSchemas(schemas);
});

describe.skipIf(pgAdmin === null)('PostgreSQL', () => {
  describeOlderVersionProbes('PostgreSQL', () => {
    const schema = newSchemaName();
    schemas.push(schema);
    return {
      migrateTo17: async () => {
        await withAdminClient(async (client) => {
          // The migrations create their tables in the search_path's schema (as the store's connections set it).
          await client.query(`CREATE SCHEMA "${schema}"`);
          await client.query(`SET search_path TO "${schema}"`);
          await applyPostgresMigrations(client, schema, POSTGRES_MIGRATIONS.filter((m) => m.version <= 17));
        });
      },
      oldProbe: async (at) => {
        await adminQuery(OLD_PROBE.replace('health_probe', `"${schema}".health_probe`).replace('?', '$1'), [at]);
      },
      olderProbedAt: async () => {
        const rows = await adminQuery<{ t: Date | null }>(`SELECT older_probed_at AS t FROM "${schema}".health_probe`);
        return rows[0]?.t?.getTime() ?? null;
      },
      open: () => openStore(schemaUrl(schema)),
    };
  });
});
