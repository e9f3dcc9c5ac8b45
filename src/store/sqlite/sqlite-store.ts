/**
 * The SQLite adapter: opens and checks the file, sets the connection up, migrates it, and
 * assembles the Store from its parts, one per concern (sqlite-accounts.ts, sqlite-tokens.ts,
 * sqlite-news.ts, sqlite-throttle.ts, sqlite-audit.ts, sqlite-admin-console.ts), which share
 * the connection, the group commit and the WAL sync (sqlite-context.ts).
 */
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { classifyDatabaseError, DatabaseError, firstLine } from '../database-errors.js';
import { judgeSchema, type SchemaVerdict } from '../schema-identity.js';
import type { Store, StoreLifecycle } from '../store.js';
import type { Row } from '../row-mapping.js';
import { applySqliteMigrations, SQLITE_MIGRATIONS, SVCAPI_APPLICATION_ID, sqliteSchemaVersion } from './migrations/sqlite-migrations.js';
import { startPurgeThread, type PurgedTable, type PurgeThread } from './purge-thread.js';
import { damagedByQuickCheck, startBackgroundCheck, type BackgroundCheck, type IntegrityCheckResult } from './background-check.js';
import { createSqliteWrites } from './group-commit.js';
import { createWalSync } from './wal-sync.js';
import { createWalRestartGate, WAL_STATE_LENGTH, type WalRestartGate } from './wal-restart-gate.js';
import type { SqliteContext } from './sqlite-context.js';
import { ms } from './sqlite-row-mapping.js';
import { sqliteAccounts } from './sqlite-accounts.js';
import { COUNT_ACTIVE_SQL, COUNT_RANGES, PURGE_EXPIRED_SQL, PURGE_EXPIRED_TICKETS_SQL, sqliteTokens } from './sqlite-tokens.js';
import { sqliteNews } from './sqlite-news.js';
import { sqliteThrottle } from './sqlite-throttle.js';
import { sqliteAudit } from './sqlite-audit.js';
import { sqliteAdminConsole } from './sqlite-admin-console.js';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:' for a private in-memory database (tests). */
  readonly path: string;
  /** Apply pending migrations on open (default true). When false, an out-of-date schema is an error. */
  readonly migrate?: boolean;
  /** How long a writer waits for another process's write lock before failing (default 5000 ms). */
  readonly busyTimeoutMs?: number;
  /**
   * May a missing file be created, or an empty one initialised (default true: `serve`,
   * `migrate`)? When false, either is a DatabaseError('missing'). A file that is not an
   * svcapi-auth database is refused untouched either way.
   */
  readonly create?: boolean;
  /**
   * PRAGMA quick_check of the file: before anything else (true, the default; a damaged file is
   * refused), after the store opened, in a child process (`'background'`: `serve`,
   * background-check.ts; its result goes to onIntegrityCheck), or not at all (false).
   */
  readonly integrityCheck?: boolean | 'background';
  /**
   * The result of a check in the background (integrityCheck 'background'); not called if the
   * store closed first. close() resolves only once the check's child process is gone.
   */
  readonly onIntegrityCheck?: (result: IntegrityCheckResult) => void;
  /**
   * Group commit of the hot paths' small writes (default true; config `performance.groupCommit`):
   * those of one event-loop turn share one transaction and one fsync (group-commit.ts).
   */
  readonly groupCommit?: boolean;
  /** Observes each group transaction after its commit, with how many writes it held. */
  readonly onGroupCommit?: (writes: number) => void;
  /**
   * Housekeeping's token purge on a thread of its own with its own connection (default true;
   * a file only, purge-thread.ts); false runs it on this connection, on the event loop.
   */
  readonly purgeThread?: boolean;
  /**
   * The WAL's checkpoints on the purge thread's connection instead of this one's COMMITs (a file
   * with the purge thread only; default false, as for the CLI's short-lived stores, which would
   * start a thread for nothing; `serve` passes config `performance.sqliteCheckpointThread`,
   * default true). Needs group commit and the asynchronous sync (the writes that wait while
   * the thread catches up go through them, wal-restart-gate.ts); without either, SQLite's own
   * checkpoints. See CHECKPOINT_INTERVAL_MS.
   */
  readonly checkpointThread?: boolean;
  /** With the checkpoint thread: the WAL frames past which a commit waits for it to start the WAL over (default WAL_RESTART_FRAMES; tests). */
  readonly walRestartFrames?: number;
  /**
   * With the checkpoint thread: told when this connection checkpoints at its own commits again
   * (true: the WAL passed four times the restart size, `walBytes` its size then) and when it
   * stops again (false: the WAL started over); wal-restart-gate.ts. `serve` logs it.
   */
  readonly onWalRunaway?: (runaway: boolean, walBytes: number) => void;
  /**
   * Durable commits off the event loop (default true; a file only; config
   * `performance.sqliteAsyncSync`): group commits and audit appends commit at synchronous NORMAL
   * and their callers wait for the WAL's fdatasync on libuv's pool instead of the event loop
   * waiting inside COMMIT (wal-sync.ts). false: synchronous FULL for every commit.
   */
  readonly asyncSync?: boolean;
  /**
   * How much of the file is read through a memory map (PRAGMA mmap_size; default 0, none). SQLite
   * caps it at its build's SQLITE_MAX_MMAP_SIZE (2 GiB for better-sqlite3).
   */
  readonly mmapBytes?: number;
  /**
   * The memory map is turned off while the purge thread deletes rows and back on once it has
   * been idle for this long (ms; default MAP_RESUME_MS; 0: never turned off, for tests and
   * comparisons). See pauseMapWhilePurging.
   */
  readonly mapResumeMs?: number;
}

/** How long after the purge thread's last batch the memory map comes back (housekeeping pauses between batches for at least four times a batch's time). */
export const MAP_RESUME_MS = 1000;

/**
 * The checkpoints, off the event loop. SQLite checkpoints a WAL from inside the COMMIT that takes
 * it past 1000 pages (wal_autocheckpoint): the connection that serves copies the pages into the
 * database file and syncs both files while every request waits. Writing tickets, that was 10% of
 * the server's CPU (perf, 64 connections, 2026-11-29), and the syncs' wait on top. Here the serving
 * connection's automatic checkpoints are off and the purge thread's connection runs a PASSIVE
 * checkpoint every CHECKPOINT_INTERVAL_MS: it copies the frames no reader still needs and never
 * waits for or blocks a writer or a reader; once it has copied them all, the next writer starts
 * the WAL over, as after an automatic one. A PASSIVE checkpoint with nothing new to copy reads
 * the WAL index and returns. Paired against the automatic checkpoints (bench/cpu-compare.mjs,
 * GetUserLoginURL, 6 rounds), the CPU a ticket fell to x0.92-0.96 and the event loop's share of it
 * by 16% (docs/fast-paths.md); with no checkpoints at all it had risen by a quarter (every read
 * then searches a WAL that only grows), so a thread that ends puts the automatic checkpoints back
 * (onEnd).
 *
 * Durability is unchanged: a checkpoint copies committed frames only, and the WAL keeps them
 * until it has synced the database file.
 */
export const CHECKPOINT_INTERVAL_MS = 100;
/** SQLite's default wal_autocheckpoint, put back if the checkpoint thread ends. */
const AUTO_CHECKPOINT_PAGES = 1000;
/**
 * The WAL's size (frames) at which the next commit waits for the thread to copy the rest, so that
 * the WAL starts over (wal-restart-gate.ts): 64 MiB of 4 KiB pages. Larger, fewer waits (one every
 * 0.7 s at the 25,000 frames a second of GetUserLoginURL at saturation); smaller, a smaller file.
 * The file keeps its size when the WAL starts over (rewriting allocated pages is cheaper than
 * extending the file), cut back to twice this by journal_size_limit after a runaway.
 */
export const WAL_RESTART_FRAMES = 16_384;
/** How long a commit waits for the thread's catch-up at most (ms): a purge batch in progress delays it. */
const WAL_CATCH_UP_TIMEOUT_MS = 50;

/**
 * SQLite drops a connection's whole memory map when another connection has written to the
 * database since its last read (pagerBeginReadTransaction: a WAL that changed unmaps the file),
 * and maps it again page by page as it reads. The purge thread is such a connection: each of
 * its batches, a few milliseconds apart, made the next read here unmap up to 2 GiB and every
 * page of a fleet's working set fault in again. During a purge of a million expired tokens
 * the fleet's checks cost 105-275 µs of CPU against 57, and their p99 was 3.3x its value
 * without the purge; with no map at all 1.3x (bench:scale, 2026-11-28). So the map is off from
 * the purge thread's first batch that deleted rows (that batch would have dropped it anyway) to
 * `resumeMs` after its last one: one unmapping per purge run instead of one per batch, the
 * pages read with pread meanwhile.
 */
function pauseMapWhilePurging(db: Database.Database, mmapBytes: number, resumeMs: number): { deleted(): void; close(): void } {
  // The map is off exactly while a resumption is pending.
  let resume: NodeJS.Timeout | null = null;
  return {
    deleted() {
      if (resume === null) db.pragma('mmap_size = 0');
      else clearTimeout(resume);
      resume = setTimeout(() => {
        resume = null;
        if (db.open) db.pragma(`mmap_size = ${mmapBytes}`);
      }, resumeMs);
      resume.unref();
    },
    close() {
      if (resume !== null) clearTimeout(resume);
      resume = null;
    },
  };
}

/**
 * A new database file, private to its owner: it holds password hashes. SQLite gives the -wal
 * and -shm files the mode of the database file, so they are 0600 too; directories created on
 * the way are 0700.
 */
function createPrivateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    // Another process starting at the same moment made it first: it is inspected as any existing file.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** What the file is, read through `db` without writing anything. */
function inspectConnection(db: Database.Database, path: string, integrityCheck: boolean): SchemaVerdict {
  if (integrityCheck) {
    const rows = (db.pragma('quick_check') as { quick_check: string }[]).map((r) => String(r.quick_check));
    if (rows.length !== 1 || rows[0] !== 'ok') throw damagedByQuickCheck(path, rows);
  }
  const applicationId = Number(db.pragma('application_id', { simple: true }));
  if (applicationId !== 0 && applicationId !== SVCAPI_APPLICATION_ID) {
    return { kind: 'foreign', reason: `its header names another application (application_id 0x${(applicationId >>> 0).toString(16)})` };
  }
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").pluck().all() as string[];
  if (!tables.includes('schema_migrations')) return judgeSchema({ tables, applied: null }, SQLITE_MIGRATIONS);
  let applied: { version: number; name: string }[];
  try {
    applied = (db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as Row[]).map((r) => ({ version: Number(r.version), name: String(r.name) }));
  } catch {
    return { kind: 'foreign', reason: 'its schema_migrations table is not svcapi-auth\'s' };
  }
  return judgeSchema({ tables, applied }, SQLITE_MIGRATIONS);
}

/**
 * Reads the file before anything writes to it (not even the switch to WAL): is it sound, is it
 * ours? Through a read-only connection first, so that refusing a file leaves it as it was; a
 * file that connection cannot read (a WAL left by a crash needs a writer to recover it) is read
 * again through an ordinary one.
 */
export function inspectSqliteFile(path: string, integrityCheck = true): SchemaVerdict {
  for (const readonly of [true, false]) {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { readonly, fileMustExist: true });
      return inspectConnection(db, path, integrityCheck);
    } catch (error) {
      if (error instanceof DatabaseError) throw error;
      if (classifyDatabaseError(error) === 'damaged') {
        const what = (error as { code?: unknown }).code === 'SQLITE_NOTADB' ? 'is not a SQLite database, or its header is damaged' : 'is damaged';
        throw new DatabaseError('damaged', `the database ${path} ${what} (${firstLine((error as Error).message)}); restore it from a backup`);
      }
      if (!readonly) throw error;
    } finally {
      db?.close();
    }
  }
  throw new Error('unreachable');
}

/**
 * Checks the file and refuses one that is damaged, not ours, or (without `create`) missing or
 * empty; creates a missing one (with `create`) private to its owner. Also what backup and
 * restore check their files with.
 */
export function prepareSqliteFile(options: SqliteStoreOptions): void {
  const { path } = options;
  const create = options.create ?? true;
  if (!existsSync(path)) {
    if (!create) throw new DatabaseError('missing', `there is no database at ${path}; create it with "svcapi-auth migrate"`);
    createPrivateFile(path);
  }
  const verdict = inspectSqliteFile(path, (options.integrityCheck ?? true) === true);
  if (verdict.kind === 'foreign') throw new DatabaseError('foreign', `${path} is not an svcapi-auth database: ${verdict.reason}; it was left untouched`);
  if (verdict.kind === 'empty' && !create) throw new DatabaseError('missing', `${path} holds no svcapi-auth database yet; create it with "svcapi-auth migrate"`);
}

/**
 * Opens a SQLite database as a Store: checks the file (prepareSqliteFile), then migrates it. Only a
 * new or empty file is initialised, and only with `create` (the default).
 */
export function openSqliteStore(options: SqliteStoreOptions): Store {
  const inMemory = options.path === ':memory:';
  if (!inMemory) prepareSqliteFile(options);
  const db = new Database(options.path, inMemory ? {} : { fileMustExist: true });
  try {
    return createSqliteStore(db, options, inMemory);
  } catch (error) {
    db.close();
    throw error;
  }
}

const require = createRequire(import.meta.url);

function createSqliteStore(db: Database.Database, options: SqliteStoreOptions, inMemory: boolean): Store {
  let purgeThread: PurgeThread | undefined;
  let check: BackgroundCheck | undefined;
  db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000))}`);
  if (!inMemory) {
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (String(mode).toLowerCase() !== 'wal') throw new Error(`could not put ${options.path} in WAL mode (got ${String(mode)})`);
  }
  // FULL: in WAL mode the log is synced on every commit, so a token is durable before the
  // response carrying it is written (NORMAL could lose the last commits on power loss).
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  // A 16 MiB page cache (SQLite's default is 2 MiB), enough for the upper levels of the token,
  // user and grant B-trees: it is anonymous memory of each process (a cache per worker).
  // The memory map (serve: performance.sqliteMmapMiB, default 0: none) reads a page the cache does
  // not hold by a memory access instead of a pread() system call and a copy: with a million
  // distinct tokens checked in turn over 10 million (bench:scale's fleet), every lookup misses
  // the cache, and the map took findToken from 9 to 2.4 µs of system CPU per lookup (a fleet
  // check in the server: 58 -> 53 µs, as a mapped page is parsed again at every use). Mapped
  // pages are the kernel's page cache, shared and reclaimable: they count in RssFile, not in
  // RssAnon (a 256 MiB map had looked like +150 MB of RSS once, when RSS was read whole).
  // The cost: an I/O error on a mapped page is a SIGBUS rather than an error code, and every
  // page touched stays in the process's RSS. Off by default since the session memory answers a
  // fleet's repeated checks without a lookup: only first checks still read the store, and a
  // login ticket server's growing file took its RSS to 221 MB (docs/fast-paths.md).
  const mmapBytes = inMemory ? 0 : Math.max(0, Math.trunc(options.mmapBytes ?? 0));
  if (!inMemory) {
    db.pragma('cache_size = -16384');
    db.pragma(`mmap_size = ${mmapBytes}`);
  }

  if (options.migrate ?? true) {
    applySqliteMigrations(db);
  } else {
    const latest = SQLITE_MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
    const current = hasTable ? sqliteSchemaVersion(db) : 0;
    if (current !== latest) throw new Error(`the database schema is at version ${current}, expected ${latest}; run "svcapi-auth migrate"`);
  }

  // Every statement is compiled once, here and in the parts.
  const s = {
    schemaVersion: db.prepare('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations'),
    ping: db.prepare('SELECT 1'),
    // Adds one to probe_generation, which tells this probe from an older version's (migration 18).
    probeWrite: db.prepare(`INSERT INTO health_probe (id, probed_at, probe_generation) VALUES (1, ?, 1)
      ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at, probe_generation = health_probe.probe_generation + 1
      RETURNING older_probed_at`),
  };

  // A file: housekeeping's token purge on a thread of its own, started at its first batch
  // (purge-thread.ts), so neither the DELETE nor the checkpoint its commit may set off holds the
  // event loop.
  const mapResumeMs = Math.max(0, Math.trunc(options.mapResumeMs ?? MAP_RESUME_MS));
  const mapPause = mmapBytes > 0 && mapResumeMs > 0 ? pauseMapWhilePurging(db, mmapBytes, mapResumeMs) : null;
  const noThread = inMemory || !(options.purgeThread ?? true);
  const asyncSync = !inMemory && (options.asyncSync ?? true);
  const groupCommit = options.groupCommit ?? true;
  const checkpointOnThread = !noThread && asyncSync && groupCommit && (options.checkpointThread ?? false);
  const walState = checkpointOnThread ? new SharedArrayBuffer(WAL_STATE_LENGTH * Int32Array.BYTES_PER_ELEMENT) : null;
  let closing = false;
  let threadEnded = false;
  const thread = (): PurgeThread => {
    // A count between two ranges, or a purge batch, once close() began: no new thread on a closing store.
    if (closing) throw new Error('the store is closing');
    purgeThread ??= startPurgeThread({
      path: options.path, sql: PURGE_EXPIRED_SQL, ticketSql: PURGE_EXPIRED_TICKETS_SQL, countSql: COUNT_ACTIVE_SQL,
      busyTimeoutMs: Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000)), driver: require.resolve('better-sqlite3'),
      ...(walState !== null && {
        checkpointMs: CHECKPOINT_INTERVAL_MS,
        walState,
        // A WAL nobody checkpoints grows without end: this connection checkpoints again.
        onEnd: () => {
          threadEnded = true;
          if (db.open) db.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
        },
      }),
    });
    return purgeThread;
  };
  let restartGate: WalRestartGate | undefined;
  if (walState !== null) {
    const restartFrames = Math.max(1, Math.trunc(options.walRestartFrames ?? WAL_RESTART_FRAMES));
    const frameBytes = 24 + Number(db.pragma('page_size', { simple: true }));
    db.pragma(`journal_size_limit = ${2 * restartFrames * frameBytes}`);
    restartGate = createWalRestartGate({
      state: new Int32Array(walState), restartFrames, runawayFrames: 4 * restartFrames, timeoutMs: WAL_CATCH_UP_TIMEOUT_MS,
      // A thread that ended has already put the automatic checkpoints back (onEnd): a failed ask only means no restart now.
      catchUp: () => (closing || purgeThread === undefined ? Promise.resolve() : purgeThread.catchUp()),
      // Never off again once the thread has ended: its last report may be of a WAL just started over.
      onRunaway: (runaway, frames) => {
        if (!db.open || threadEnded) return;
        db.pragma(`wal_autocheckpoint = ${runaway ? AUTO_CHECKPOINT_PAGES : 0}`);
        options.onWalRunaway?.(runaway, frames * frameBytes);
      },
    });
    // The thread starts now (not at housekeeping's first purge) and checkpoints from the start.
    thread();
    db.pragma('wal_autocheckpoint = 0');
  }

  // The hot paths' small writes (tokens, tickets, their uses, brute-force counters): one
  // transaction and one fsync per event-loop turn for all of them (group-commit.ts).
  const walSync = !asyncSync ? null : createWalSync(db, { walPath: `${options.path}-wal`, ...(restartGate !== undefined && { beforeCommit: restartGate.beforeCommit }) });
  const writes = createSqliteWrites(db, {
    enabled: groupCommit, ...(options.onGroupCommit !== undefined && { onCommit: options.onGroupCommit }),
    ...(walSync !== null && { walSync }),
  });

  const purgeOnThread = noThread ? null : async (before: number, limit: number, table: PurgedTable): Promise<number> => {
    const deleted = await thread().purge(before, limit, table);
    if (deleted > 0) mapPause?.deleted();
    return deleted;
  };

  // The whole file checked while the store already serves (background-check.ts).
  if (options.integrityCheck === 'background' && !inMemory) {
    const started = startBackgroundCheck(options.path, require.resolve('better-sqlite3'));
    check = started;
    void started.result.then((result) => {
      // A result that settled just as close() began is not reported either (close() clears `check`).
      if (check !== started) return;
      check = undefined;
      options.onIntegrityCheck?.(result);
    });
  }

  const lifecycle: StoreLifecycle = {
    async schemaVersion() {
      return Number((s.schemaVersion.get() as Row).version);
    },
    async close() {
      closing = true;
      // The check's child is killed (SIGKILL: at once, whatever page it reads) and awaited, so
      // that a closed store leaves no process reading its file; a few milliseconds on shutdown.
      const stopping = check;
      check = undefined;
      stopping?.stop();
      await stopping?.ended;
      await purgeThread?.close();
      purgeThread = undefined;
      mapPause?.close();
      if (db.open) await writes.flush();
      await walSync?.close();
      if (db.open) db.close();
    },
    async ping() {
      s.ping.get();
    },
    async probeWrite(now) {
      // Every process of a SQLite database runs on this machine: its clock is the database's.
      const at = ms(now);
      const older = (s.probeWrite.get(at) as Row).older_probed_at;
      return { olderVersionMsAgo: older === null || older === undefined ? null : Math.max(0, at - Number(older)) };
    },
  };

  // The active-tokens gauge's count of every token (25 s on 10 million) on the same thread, range by range.
  const countOnThread = noThread ? null : async (now: number): Promise<number> => {
    let n = 0;
    for (const [lo, hi] of COUNT_RANGES) n += await thread().count(now, lo, hi);
    return n;
  };
  const ctx: SqliteContext = { db, writes, walSync, purgeOnThread, countOnThread };
  return {
    ...lifecycle, ...sqliteAccounts(ctx), ...sqliteTokens(ctx), ...sqliteNews(ctx), ...sqliteThrottle(ctx), ...sqliteAudit(ctx),
    ...sqliteAdminConsole(ctx),
  };
}
