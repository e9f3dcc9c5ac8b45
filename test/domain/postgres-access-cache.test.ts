/**
 * Token validation's memory on PostgreSQL (the system suite: npm run test:system): the same
 * differential check as test/domain/access-cache.test.ts, the writes through another pool.
 */
import { afterAll, describe, it } from 'vitest';
import { accessCacheDifferential, housekeepingBesideMemory } from '../support/access-cache-world.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  if (pgAdmin !== null) await dropSchemas(schemas);
});

describe.skipIf(pgAdmin === null)('ValidateUserToken with and without the memory gives the same answers: PostgreSQL', () => {
  it('over random logins, revocations, disabled users and applications, grants and clock moves, writes through another pool', async () => {
    const schema = newSchemaName();
    schemas.push(schema);
    await accessCacheDifferential(schemaUrl(schema), 120);
  }, 120_000);
});

describe.skipIf(pgAdmin === null)('housekeeping beside the memory: PostgreSQL', () => {
  it('a purge of expired tokens leaves live tokens kept, and a kept token purged after its expiry is unknown, as without memory', async () => {
    await housekeepingBesideMemory(() => {
      const schema = newSchemaName();
      schemas.push(schema);
      return schemaUrl(schema);
    });
  }, 60_000);
});
