/**
 * WhatsNew's memory on PostgreSQL (the system suite: npm run test:system): the same differential
 * check as test/domain/news-cache.test.ts, the writes through another pool.
 */
import { afterAll, describe, it } from 'vitest';
import { newsCacheDifferential } from '../support/news-cache-world.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  if (pgAdmin !== null) await dropSchemas(schemas);
});

describe.skipIf(pgAdmin === null)('WhatsNew with and without the cache give the same answers: PostgreSQL', () => {
  it('over random news, writes, clock moves and requests, writes through another pool', async () => {
    const schema = newSchemaName();
    schemas.push(schema);
    await newsCacheDifferential(schemaUrl(schema), 150);
  }, 120_000);
});
