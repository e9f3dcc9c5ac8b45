/**
 * Readiness on PostgreSQL that answers reads but refuses writes (a standby, or
 * default_transaction_read_only): /health/ready 503 with the reason. The system suite
 * (npm run test:system); SQLite's side is test/ops/readiness-write.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createReadiness } from '../../src/ops/readiness.js';
import { openStore } from '../../src/store/open-store.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const pgAdmin = await postgresForTests();

describe.skipIf(pgAdmin === null)('PostgreSQL that does not take writes', () => {
  const schemas: string[] = [];
  afterAll(() => dropSchemas(schemas));

  it('makes readiness 503 with the reason (read-only transactions), and the probe writes when it can', async () => {
    const schema = newSchemaName();
    schemas.push(schema);
    const writable = await openStore(schemaUrl(schema));
    try {
      await writable.probeWrite(new Date());
    } finally {
      await writable.close();
    }
    // A standby, or default_transaction_read_only: reads answer, writes do not.
    const store = await openStore(schemaUrl(schema, { options: '-c default_transaction_read_only=on' }), { migrate: false });
    const readiness = createReadiness({ store, expectedSchemaVersion: await store.schemaVersion() });
    readiness.setServing(true);
    readiness.startWriteProbe();
    try {
      expect(await readiness.check()).toMatchObject({ ready: false, checks: { store: 'ok', schema: { ok: true }, write: expect.stringMatching(/read-only transaction/) } });
    } finally {
      await readiness.stopWriteProbe();
      await store.close();
    }
  });
});
