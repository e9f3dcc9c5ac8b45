/**
 * Token passthrough's tallies with two instances on one PostgreSQL database: their counts sum
 * in the migration report (passthrough-tally-world.ts). The store's own contract runs on
 * PostgreSQL in test/store/postgres-store.test.ts.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { adminQuery, dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';
import { refusedUrl, startLegacyStandIn, type LegacyStandIn } from './legacy-stand-in.js';
import { twoInstancesSum } from './passthrough-tally-world.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
let legacy: LegacyStandIn;
beforeAll(async () => {
  legacy = await startLegacyStandIn();
});
afterAll(async () => {
  await legacy.close();
  if (pgAdmin !== null) await dropSchemas(schemas);
});

describe.skipIf(pgAdmin === null)('token passthrough tallies on PostgreSQL', () => {
  it('two instances on one database: the report shows the sum of their checks, equal to their metrics; no secret in the table', async () => {
    const schema = newSchemaName();
    schemas.push(schema);
    await twoInstancesSum(schemaUrl(schema), legacy, await refusedUrl(), async () => {
      const rows = await adminQuery(`SELECT * FROM "${schema}".legacy_token_tallies`);
      return rows.map((r) => ({ ...r }));
    });
  });
});
