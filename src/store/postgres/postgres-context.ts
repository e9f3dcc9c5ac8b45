/**
 * What every concern of the PostgreSQL store shares (postgres-accounts.ts, postgres-tokens.ts
 * ...): the two pools, the one retry policy and the ways a statement is sent.
 */
import type pg from 'pg';
import type { Row } from '../row-mapping.js';
import { postgresValues, type SharedSql } from '../shared-sql.js';
import { inTransaction } from './transaction.js';
import { FAST_TIMESTAMPS } from './timestamp-parser.js';

export type Queryable = pg.Pool | pg.PoolClient;

export const one = (result: pg.QueryResult<Row>): Row | undefined => result.rows[0];

/** The connections and the ways a statement is sent, made once per store (createPostgresContext). */
export interface PostgresContext {
  readonly pool: pg.Pool;
  /** The token reads' own connections (postgres-store.ts TOKEN_READ_SETTING), or `pool`. */
  readonly tokenReads: pg.Pool;
  checkOpen(): void;
  onPool<T>(read: boolean, send: () => Promise<T>): Promise<T>;
  q(name: string | null, text: string, values?: readonly unknown[], read?: boolean): Promise<pg.QueryResult<Row>>;
  run(name: string | null, statement: SharedSql, params: Row, read?: boolean): Promise<pg.QueryResult<Row>>;
  runOn(c: Queryable, statement: SharedSql, params: Row, name?: string): Promise<pg.QueryResult<Row>>;
  readArrays(name: string | null, text: string, values: readonly unknown[], on?: pg.Pool): Promise<unknown[][]>;
  tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T>;
}

/** Errors after which the same read may simply be sent again on a fresh connection. */
function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (code === '57P01' || code === '57P02' || code === 'ECONNRESET' || code === 'EPIPE') return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated unexpectedly|not queryable/i.test(message);
}

/** The store's statement helpers over its pools; `isClosed` is the store's lifecycle (postgres-store.ts close). */
export function createPostgresContext(pool: pg.Pool, tokenReads: pg.Pool, isClosed: () => boolean): PostgresContext {
  const checkOpen = (): void => {
    if (isClosed()) throw new Error('the store is closed');
  };

  /**
   * The retry policy, the only one: a read that failed because its pooled connection was lost
   * (the server restarted, pg_terminate_backend) is sent once more, on another connection. A
   * write never is: it may have committed before the connection went.
   */
  async function onPool<T>(read: boolean, send: () => Promise<T>): Promise<T> {
    checkOpen();
    try {
      return await send();
    } catch (error) {
      if (!read || !isConnectionLoss(error) || isClosed()) throw error;
      return send();
    }
  }

  /** One statement on a pooled connection; `read` statements are retried (onPool). */
  async function q(name: string | null, text: string, values: readonly unknown[] = [], read = false): Promise<pg.QueryResult<Row>> {
    const config: pg.QueryConfig = name === null ? { text, values: [...values] } : { name, text, values: [...values] };
    return onPool(read, () => pool.query<Row>(config));
  }

  /** A shared statement (shared-sql.ts), as q sends it. */
  async function run(name: string | null, statement: SharedSql, params: Row, read = false): Promise<pg.QueryResult<Row>> {
    return q(name, statement.postgres, postgresValues(statement, params), read);
  }

  /** A shared statement on a transaction's connection. */
  async function runOn(c: Queryable, statement: SharedSql, params: Row, name?: string): Promise<pg.QueryResult<Row>> {
    const values = postgresValues(statement, params);
    return c.query<Row>(name === undefined ? { text: statement.postgres, values } : { name, text: statement.postgres, values });
  }

  /**
   * A read like q's, with its rows as arrays (the token select: row-mapping.ts TOKEN_COLUMNS),
   * and its timestamps read by timestamp-parser.ts (three or more per token row).
   */
  async function readArrays(name: string | null, text: string, values: readonly unknown[], on: pg.Pool = pool): Promise<unknown[][]> {
    const config: pg.QueryArrayConfig = { ...(name !== null && { name }), text, values: [...values], rowMode: 'array', types: FAST_TIMESTAMPS };
    return (await onPool(true, () => on.query<unknown[]>(config))).rows;
  }

  /** `fn` inside BEGIN ... COMMIT on one connection (transaction.ts). */
  async function tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    checkOpen();
    return inTransaction(pool, fn);
  }

  return { pool, tokenReads, checkOpen, onPool, q, run, runOn, readArrays, tx };
}
