/**
 * A PostgreSQL connection lost in the middle of a transaction, while no statement runs on it
 * (src/store/postgres/transaction.ts): the transaction fails with an error the store can answer
 * with a fault, the process lives on (node-postgres emits 'error' on a checked-out client, which
 * ended the service before), and the pool hands out a working connection next.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/store/postgres/transaction.js';
import { adminQuery, PG_ADMIN_URL, postgresForTests } from '../support/postgres.js';

const pgAdmin = await postgresForTests();

describe.skipIf(pgAdmin === null)('inTransaction (PostgreSQL)', () => {
  const pool = new pg.Pool({ connectionString: PG_ADMIN_URL, max: 1, application_name: 'svcapi-tx-test' });
  pool.on('error', () => undefined); // idle connections, as the store's pool does
  afterAll(() => pool.end());

  it('fails the transaction when its connection is terminated between statements, and the pool recovers', async () => {
    const unexpected: unknown[] = [];
    const onUncaught = (error: unknown): void => void unexpected.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const outcome = inTransaction(pool, async (client) => {
        const pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
        const ended = new Promise((resolve) => client.once('end', resolve));
        await adminQuery('SELECT pg_terminate_backend($1)', [pid]);
        // The connection's end arrives while nothing runs on it: the moment that crashed the service.
        await ended;
        await client.query('SELECT 1');
        return 'committed';
      });
      await expect(outcome).rejects.toThrow();
      expect(unexpected).toEqual([]);
      // The broken connection was dropped, not put back: the next transaction works.
      expect(await inTransaction(pool, async (client) => (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one)).toBe(1);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('rolls back and keeps the connection when fn fails on its own', async () => {
    await expect(inTransaction(pool, async (client) => {
      await client.query('CREATE TEMP TABLE tx_probe (n int)');
      throw new Error('refused');
    })).rejects.toThrow('refused');
    // Rolled back: the temporary table of that transaction does not exist.
    const exists = await pool.query("SELECT to_regclass('pg_temp.tx_probe') IS NOT NULL AS exists");
    expect(exists.rows[0]?.exists).toBe(false);
  });
});
