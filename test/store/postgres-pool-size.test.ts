/**
 * How many connections a PostgreSQL store opens when many reads wait at once: the URL's
 * `pool_max`, else the caller's share (Config.postgresPoolMax: `serve --workers N` gives each
 * worker max(2, ceil(10 / N))), else 10. Counted on the server, by the connections' application_name.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { adminQuery, dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  if (pgAdmin !== null) await dropSchemas(schemas);
});

/** The server's connections of one store after 60 reads were asked at once, while it is still open. */
async function connectionsUnderLoad(params: Record<string, string>, postgresPoolMax?: number): Promise<number> {
  const schema = newSchemaName();
  schemas.push(schema);
  const name = `svcapi_pool_${schema.slice(-10)}`;
  const store = await openStore(schemaUrl(schema, { ...params, application_name: name }), postgresPoolMax === undefined ? {} : { postgresPoolMax });
  try {
    await Promise.all(Array.from({ length: 60 }, (_, i) => store.getUser(i + 1)));
    const rows = await adminQuery<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [name]);
    return Number(rows[0]?.n);
  } finally {
    await store.close();
  }
}

describe.skipIf(pgAdmin === null)('PostgreSQL pool size', () => {
  it('is 10 connections by default, a worker\'s share when serve gives one, and pool_max whenever the URL says', async () => {
    expect(await connectionsUnderLoad({})).toBe(10);
    expect(await connectionsUnderLoad({}, 2)).toBe(2);
    expect(await connectionsUnderLoad({ pool_max: '4' }, 2)).toBe(4);
  });
});
