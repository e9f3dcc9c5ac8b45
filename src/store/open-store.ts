import type { Store } from './store.js';
import type { IntegrityCheckResult } from './sqlite/background-check.js';
import { parseDatabaseUrl } from './database-url.js';

export { parseDatabaseUrl, redactDatabaseUrl, type DatabaseLocation } from './database-url.js';

export interface OpenStoreOptions {
  /** Apply pending migrations (default true). */
  readonly migrate?: boolean;
  /**
   * May a missing database be created, or an empty one initialised (default true)? Only `serve`
   * and `migrate` do; every other command passes false and gets DatabaseError('missing'). A
   * database that is not svcapi-auth's is refused untouched either way (DatabaseError('foreign')).
   */
  readonly create?: boolean;
  /**
   * SQLite: PRAGMA quick_check before use (true, the default; a damaged file is
   * DatabaseError('damaged')), after the store opened in the background (`'background'`: `serve`;
   * the result goes to onIntegrityCheck), or none (false).
   */
  readonly integrityCheck?: boolean | 'background';
  /** SQLite, integrityCheck 'background': what the check found (sqlite/background-check.ts). */
  readonly onIntegrityCheck?: (result: IntegrityCheckResult) => void;
  /** SQLite: bytes of the file read through a memory map (SqliteStoreOptions.mmapBytes; default 0). */
  readonly sqliteMmapBytes?: number;
  /** SQLite: durable commits off the event loop (SqliteStoreOptions.asyncSync; default true). */
  readonly sqliteAsyncSync?: boolean;
  /** SQLite: the WAL's checkpoints on the purge thread (SqliteStoreOptions.checkpointThread; default false, `serve` true). */
  readonly sqliteCheckpointThread?: boolean;
  /** SQLite with the checkpoint thread: its WAL runaway switch (SqliteStoreOptions.onWalRunaway). */
  readonly onSqliteWalRunaway?: (runaway: boolean, walBytes: number) => void;
  /**
   * Group commit (default true; config `performance.groupCommit`): the hot paths' small writes
   * of one event-loop turn share one transaction, and one fsync or WAL flush.
   */
  readonly groupCommit?: boolean;
  /** Observes each group transaction after its commit, with how many writes it held (tests). */
  readonly onGroupCommit?: (writes: number) => void;
  /** PostgreSQL: token reads planned once, on connections of their own (PostgresStoreOptions.genericTokenPlans; default true). */
  readonly postgresGenericTokenPlans?: boolean;
  /** PostgreSQL: the pool's connections when the URL gives no `pool_max` (PostgresStoreOptions.defaultPoolMax; default 10). */
  readonly postgresPoolMax?: number;
}

/**
 * Opens the Store named by a database URL, choosing the adapter from its scheme. Each adapter's
 * modules are loaded when a URL names it: a SQLite `serve` never loads node-postgres (~80 ms of
 * CPU at start, 2026-11-26), nor a PostgreSQL one better-sqlite3.
 */
export async function openStore(dbUrl: string, options: OpenStoreOptions = {}): Promise<Store> {
  const location = parseDatabaseUrl(dbUrl);
  const create = options.create ?? true;
  const group = { groupCommit: options.groupCommit ?? true, ...(options.onGroupCommit !== undefined && { onGroupCommit: options.onGroupCommit }) };
  switch (location.kind) {
    case 'sqlite': {
      const { openSqliteStore } = await import('./sqlite/sqlite-store.js');
      return openSqliteStore({
        path: location.path, migrate: options.migrate ?? true, create, integrityCheck: options.integrityCheck ?? true, ...group,
        ...(options.onIntegrityCheck !== undefined && { onIntegrityCheck: options.onIntegrityCheck }),
        ...(options.sqliteMmapBytes !== undefined && { mmapBytes: options.sqliteMmapBytes }),
        ...(options.sqliteAsyncSync !== undefined && { asyncSync: options.sqliteAsyncSync }),
        ...(options.sqliteCheckpointThread !== undefined && { checkpointThread: options.sqliteCheckpointThread }),
        ...(options.onSqliteWalRunaway !== undefined && { onWalRunaway: options.onSqliteWalRunaway }),
      });
    }
    case 'postgres': {
      const { openPostgresStore } = await import('./postgres/postgres-store.js');
      return openPostgresStore({
        url: location.url, migrate: options.migrate ?? true, create, ...group,
        ...(options.postgresGenericTokenPlans !== undefined && { genericTokenPlans: options.postgresGenericTokenPlans }),
        ...(options.postgresPoolMax !== undefined && { defaultPoolMax: options.postgresPoolMax }),
      });
    }
  }
}
