import type Database from 'better-sqlite3';
import { createTurnBatch, type WriteOutcome } from '../turn-batch.js';
import type { WalSync } from './wal-sync.js';

/**
 * The small writes of the hot paths (tokens, tickets, their uses, the brute-force counters) on
 * SQLite. With group commit on, those queued during one event-loop turn run one after another
 * inside one BEGIN IMMEDIATE ... COMMIT, so they cost one WAL fsync instead of one each; every
 * caller's promise settles after that fsync: inside COMMIT (synchronous=FULL), or, with a
 * WalSync (the default for a file), after COMMIT on a thread of libuv's pool, the event loop
 * serving other requests meanwhile (wal-sync.ts).
 *
 * A write is a synchronous function that makes its statements and returns its result. Run in
 * the group, each is on its own: a single statement that fails (a constraint) is undone by
 * SQLite alone, and a better-sqlite3 transaction function called inside the group runs as a
 * SAVEPOINT and is rolled back to it; either way the error is that write's outcome and the
 * others commit. Only a failure that ends the whole transaction (a full disk, an I/O error) or
 * of COMMIT itself fails them all: nothing of the group was committed.
 *
 * Off (`performance.groupCommit: false`), each write runs at once in its own transaction, as
 * the functions given here do when called outside one.
 */
export interface SqliteWrites {
  run<T>(write: () => T): Promise<T>;
  /** Commits what is queued now (before closing the connection). */
  flush(): Promise<void>;
}

export interface SqliteWritesOptions {
  readonly enabled: boolean;
  /** Called after each group transaction committed, with how many writes it held (metrics, tests). */
  readonly onCommit?: (writes: number) => void;
  /** Commits at NORMAL and syncs the WAL off the event loop before the writes settle (wal-sync.ts); absent: FULL. */
  readonly walSync?: WalSync;
}

export function createSqliteWrites(db: Database.Database, options: SqliteWritesOptions): SqliteWrites {
  if (!options.enabled) {
    return {
      run<T>(write: () => T): Promise<T> {
        try {
          return Promise.resolve(write());
        } catch (error) {
          return Promise.reject(error);
        }
      },
      flush: () => Promise.resolve(),
    };
  }
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');

  const commitGroup = (writes: readonly (() => unknown)[]): WriteOutcome<unknown>[] => {
    begin.run();
    const outcomes: WriteOutcome<unknown>[] = [];
    try {
      for (const write of writes) {
        try {
          outcomes.push({ ok: true, value: write() });
        } catch (error) {
          // SQLite ended the transaction itself: what ran before is gone too.
          if (!db.inTransaction) throw error;
          outcomes.push({ ok: false, error });
        }
      }
      commit.run();
    } catch (error) {
      if (db.inTransaction) rollback.run();
      throw error;
    }
    options.onCommit?.(writes.length);
    return outcomes;
  };
  const { walSync } = options;
  const batch = createTurnBatch<() => unknown, unknown>((writes) => (walSync === undefined ? commitGroup(writes) : walSync.commitThenSync(() => commitGroup(writes))));
  return {
    run: <T>(write: () => T): Promise<T> => batch.add(write) as Promise<T>,
    flush: () => batch.flushNow(),
  };
}
