/**
 * Housekeeping's token purge on a SQLite file, run on a thread of its own with its own
 * connection, so that neither the DELETE nor what its commit sets off holds the event loop. The
 * active-tokens gauge's count, a scan of every token, runs there too (sqlite-tokens.ts), and,
 * with `checkpointMs`, the WAL checkpoints of the serving connection (below).
 *
 * On 10 million tokens each expired row sits on its own pages of the token table and of two of
 * its indexes: the purge writes ~3.5 pages per row to the WAL, and every ~1000 pages the commit
 * that crosses SQLite's auto-checkpoint copies them into the database file and syncs it: 20-28
 * ms at once on this VM (50-row batches: median 1.6 ms, p90 21 ms, against a 5.5 ms maximum with
 * the checkpoint off; bench/README.md). On the event loop that stall was the token checks' p99
 * (x7 during a purge of a million rows); on this thread it is no one's. Token checks read on the
 * main connection meanwhile (WAL: readers never wait for a writer); a write of the main
 * connection waits for the thread's DELETE only (busy_timeout), never for its checkpoint.
 *
 * The thread's code is a string (eval): it must run the same from the TypeScript sources
 * (tests) and the build. Its connection commits without the fsync of synchronous FULL: a purge
 * lost to a power cut only leaves rows for the next run.
 */
import { Worker } from 'node:worker_threads';

/** The statements of sqlite-tokens.ts's purgeExpired and purgeExpiredTickets, on the thread's connection. */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = ' + workerData.busyTimeoutMs);
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -' + workerData.cacheKiB);
const purge = db.prepare(workerData.sql);
const purgeTickets = db.prepare(workerData.ticketSql);
const count = db.prepare(workerData.countSql);
let checkpoints = 0;
let lastLog = 0;
let lastCopied = 0;
// [frames in the WAL, checkpoints run on the timer], read by the serving connection (wal-restart-gate.ts).
const walState = workerData.walState ? new Int32Array(workerData.walState) : null;
const checkpoint = (onTimer) => {
  // PASSIVE: copies what no reader still needs, never waits for or blocks a writer or a reader.
  const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
  if (!r) return null;
  // Counted when the frames copied so far changed (a WAL begun again counts anew).
  if (r.checkpointed > 0 && (r.checkpointed !== lastCopied || r.log !== lastLog)) checkpoints++;
  lastLog = r.log;
  lastCopied = r.checkpointed;
  if (walState !== null && onTimer) {
    Atomics.store(walState, 0, r.log);
    Atomics.add(walState, 1, 1);
  }
  return r;
};
const checkpointTimer = workerData.checkpointMs > 0 ? setInterval(() => {
  try {
    checkpoint(true);
  } catch {
    // Busy (another process's checkpoint) or an I/O error the serving connection meets too: the next tick tries again.
  }
}, workerData.checkpointMs) : null;
parentPort.on('message', (m) => {
  if (m.close) { if (checkpointTimer !== null) clearInterval(checkpointTimer); db.close(); parentPort.close(); return; }
  try {
    if (m.settings) parentPort.postMessage({ id: m.id, changes: -db.pragma('cache_size', { simple: true }) });
    else if (m.checkpoints) parentPort.postMessage({ id: m.id, changes: checkpoints });
    else if (m.catchUp) {
      const r = checkpoint(false);
      parentPort.postMessage({ id: m.id, changes: r === null ? -1 : r.log - r.checkpointed });
    }
    else if (m.count) parentPort.postMessage({ id: m.id, changes: Number(count.get({ now: m.now, lo: m.lo, hi: m.hi }).n) });
    else parentPort.postMessage({ id: m.id, changes: (m.table === 'tickets' ? purgeTickets : purge).run({ before: m.before, limit: m.limit }).changes });
  } catch (error) {
    parentPort.postMessage({ id: m.id, error: { message: String(error && error.message), code: error && error.code } });
  }
});
`;

/**
 * The page cache of the thread's connection, in KiB. This SQLite's default is 16 MB, which the
 * DELETEs fill with the random pages of the token table and its indexes that they touch: the
 * thread took 25 MB of RssAnon for a purge of 60,000 rows on 10M tokens, 11 MB with 2 MiB, at the
 * same rate (5.8 against 5.9 s). What it writes goes to the WAL at each commit anyway.
 */
export const PURGE_THREAD_CACHE_KIB = 2048;

export interface PurgeThread {
  /** Deletes up to `limit` rows of the table expired before `before` (epoch ms); resolves with how many. */
  purge(before: number, limit: number, table: PurgedTable): Promise<number>;
  /** Runs `countSql` (a COUNT(*) AS n with @now, @lo and @hi) on the thread's connection. */
  count(now: number, lo: string, hi: string): Promise<number>;
  /** The page cache of the thread's connection, in KiB, as SQLite reports it (tests). */
  cacheKiB(): Promise<number>;
  /** How many of the thread's checkpoints copied frames into the database file (tests). */
  checkpoints(): Promise<number>;
  /** Checkpoints now (PASSIVE); resolves with the frames it left uncopied (wal-restart-gate.ts). */
  catchUp(): Promise<number>;
  /** For tests: ends the thread as a crash would (onEnd is called). */
  terminate(): Promise<void>;
  close(): Promise<void>;
}

/** The tokens table, or the tickets table (migration 17). */
export type PurgedTable = 'tokens' | 'tickets';

export interface PurgeThreadOptions {
  readonly path: string;
  readonly sql: string;
  /** The same for the tickets table. */
  readonly ticketSql: string;
  readonly countSql: string;
  readonly busyTimeoutMs: number;
  readonly driver: string;
  /**
   * Checkpoints the WAL every this many milliseconds (PASSIVE), for a serving connection whose
   * own automatic checkpoints are off (sqlite-store.ts); 0 or absent: none.
   */
  readonly checkpointMs?: number;
  /** Where the timer's checkpoints report the WAL (wal-restart-gate.ts WAL_STATE_LENGTH Int32 slots). */
  readonly walState?: SharedArrayBuffer;
  /** Called once if the thread ends other than by close() (an error, a crash). */
  readonly onEnd?: (error: unknown) => void;
}

export function startPurgeThread(options: PurgeThreadOptions): PurgeThread {
  const { onEnd, ...settings } = options;
  const worker = new Worker(THREAD_CODE, { eval: true, workerData: { ...settings, checkpointMs: settings.checkpointMs ?? 0, cacheKiB: PURGE_THREAD_CACHE_KIB } });
  worker.unref(); // an idle purge thread never keeps the process alive
  const waiting = new Map<number, { resolve(n: number): void; reject(e: unknown): void }>();
  let next = 0;
  let failed: unknown = null;
  let closing = false;
  const failAll = (error: unknown): void => {
    if (failed === null && !closing) onEnd?.(error);
    failed ??= error;
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
  };
  worker.on('message', (m: { id: number; changes?: number; error?: { message: string; code?: string } }) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (w === undefined) return;
    if (m.error !== undefined) w.reject(Object.assign(new Error(m.error.message), m.error.code === undefined ? {} : { code: m.error.code }));
    else w.resolve(m.changes ?? 0);
  });
  worker.on('error', failAll);
  worker.on('exit', () => failAll(new Error('the purge thread ended')));
  const ask = (message: Record<string, unknown>): Promise<number> => {
    if (failed !== null) return Promise.reject(failed);
    return new Promise<number>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      worker.ref(); // a purge in progress keeps the process alive until it answers
      worker.postMessage({ id, ...message });
    }).finally(() => {
      // Not once close() began: an answer arriving after it (a count's range, a purge batch)
      // unref'd the thread that close() waits for, and with nothing else pending the process
      // ended with the shutdown unfinished (exit code 13) and the buffered log lines lost.
      if (waiting.size === 0 && !closing) worker.unref();
    });
  };
  return {
    purge: (before, limit, table) => ask({ before, limit, table }),
    count: (now, lo, hi) => ask({ count: true, now, lo, hi }),
    cacheKiB: () => ask({ settings: true }),
    checkpoints: () => ask({ checkpoints: true }),
    catchUp: () => ask({ catchUp: true }),
    async terminate() {
      await worker.terminate();
    },
    async close() {
      if (failed !== null) return;
      closing = true;
      const gone = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.ref(); // the process waits for the thread to close its connection and end
      worker.postMessage({ close: true });
      await gone;
    },
  };
}
