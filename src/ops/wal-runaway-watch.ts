/**
 * What `serve` logs when its SQLite connection goes back to checkpointing at its own commits
 * (store/sqlite/wal-restart-gate.ts): the checkpoint thread's catch-ups kept missing, because
 * other processes on the same file kept committing meanwhile, and the WAL passed four times the
 * size at which it should have started over. Nothing is lost and every answer stays right; the
 * event loop copies pages again until the WAL starts over, and the operator should know why the
 * `-wal` file and the latency grew. Reports that come before the logger exists are kept until it does.
 * The switch's state and the `-wal` file's size are also metrics (`svcapi_auth_sqlite_wal_runaway`,
 * `svcapi_auth_sqlite_wal_bytes`, read at scrape time: metrics.ts reportSqliteWal).
 */
import { statSync } from 'node:fs';
import type { Logger } from 'pino';

export interface WalRunawayWatch {
  /** From the store: true when its own checkpoints went back on, false when they went off again. */
  report(runaway: boolean, walBytes: number): void;
  /** The logger, once there is one: what was reported before it is written now. */
  log(logger: Logger): void;
  /** Whether the switch is on now (the last report's). */
  runaway(): boolean;
}

/**
 * The size on disk of a SQLite database's `-wal` file (0 while there is none). Its size, not the
 * frames in use: the file is kept at its size when the WAL starts over (journal_size_limit cuts
 * it back after a runaway), and what the disk holds is what an operator watches.
 */
export function walFileBytes(databasePath: string): number {
  return statSync(`${databasePath}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

export function walRunawayWatch(): WalRunawayWatch {
  let logger: Logger | null = null;
  let on = false;
  const waiting: [boolean, number][] = [];
  const write = (l: Logger, runaway: boolean, walBytes: number): void => {
    const walMiB = Math.round(walBytes / (1024 * 1024));
    if (runaway) {
      l.warn({ walMiB }, 'SQLite WAL past its bound: the checkpoint thread could not start it over (other processes kept committing); checkpointing at this process\'s commits until it does');
    } else {
      l.info({ walMiB }, 'SQLite WAL started over: checkpoints back on the checkpoint thread');
    }
  };
  return {
    report(runaway, walBytes) {
      on = runaway;
      if (logger === null) waiting.push([runaway, walBytes]);
      else write(logger, runaway, walBytes);
    },
    log(l) {
      logger = l;
      for (const [runaway, walBytes] of waiting.splice(0)) write(l, runaway, walBytes);
    },
    runaway: () => on,
  };
}
