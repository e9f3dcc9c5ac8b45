/**
 * What each part of the SQLite store (sqlite-accounts.ts, sqlite-tokens.ts, ...) is built from:
 * the connection and the machinery its writes share. sqlite-store.ts makes one per store.
 */
import type Database from 'better-sqlite3';
import type { SqliteWrites } from './group-commit.js';
import type { PurgedTable } from './purge-thread.js';
import type { WalSync } from './wal-sync.js';

export interface SqliteContext {
  readonly db: Database.Database;
  /** The hot paths' small writes: one transaction and one fsync per event-loop turn (group-commit.ts). */
  readonly writes: SqliteWrites;
  /** Commits whose sync waits off the event loop (wal-sync.ts); null: synchronous FULL for every commit. */
  readonly walSync: WalSync | null;
  /**
   * Housekeeping's token purge on the purge thread (purge-thread.ts), started at its first call;
   * null: the purge runs on this connection, on the event loop.
   */
  readonly purgeOnThread: ((before: number, limit: number, table: PurgedTable) => Promise<number>) | null;
  /**
   * The active-tokens count (COUNT_ACTIVE_SQL at `now`, epoch ms) on the same thread; null: on
   * this connection, on the event loop.
   */
  readonly countOnThread: ((now: number) => Promise<number>) | null;
}
