import type pg from 'pg';

/**
 * `fn` inside BEGIN ... COMMIT on one pooled connection; rolled back, and the connection dropped
 * if it broke, on error.
 *
 * While a client is checked out, pg-pool takes its own 'error' listener off it, and node-postgres
 * emits 'error' on a client whose connection ends while no query is running on it (between two
 * statements here, or while `fn` awaits something else). Without a listener that event ends the
 * process: a PostgreSQL restart or pg_terminate_backend at the wrong moment crashed the service
 * (test/multi-instance/database-outage.test.ts under load). So the client has a listener for as
 * long as it is ours; the lost connection then surfaces as the next statement's rejection, and
 * the client is released as broken so the pool does not hand it out again.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let lost: Error | null = null;
  const onError = (error: Error): void => {
    lost ??= error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    client.off('error', onError);
    client.release(lost ?? undefined);
    return result;
  } catch (error) {
    if (lost === null) await client.query('ROLLBACK').catch(() => undefined);
    client.off('error', onError);
    client.release(lost ?? (error instanceof Error ? error : new Error(String(error))));
    throw error;
  }
}
