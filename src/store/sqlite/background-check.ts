/**
 * `PRAGMA quick_check` of a database file that is already serving, in a child process of its
 * own: what `serve` runs instead of checking the whole file before it listens.
 *
 * quick_check reads every page of the file (SQLite documents it as O(N) in the database size:
 * about 25 s for 10 million tokens on this VM), and before it moved here `serve` was not ready
 * until it was done. What it finds is damage from outside SQLite (SQLite's "How To Corrupt An
 * SQLite Database File": a rogue write to the file, broken locking, a disk or memory that lies;
 * not a crash, which WAL and synchronous FULL recover from at the next open), which can happen
 * while the service runs as well as before it starts; a check at start is one look, and it need
 * not hold up readiness. Meanwhile SQLite itself refuses a damaged page a query reads
 * (SQLITE_CORRUPT: that request fails), and the check's verdict ends the service the way the
 * check at start did.
 *
 * A child process rather than a thread: it can be killed at once when the service stops (a
 * worker thread inside one long SQLite call cannot be, and keeps the process from exiting until
 * the call returns), its memory is not the service's, and it runs at a lower CPU priority so
 * that it takes the cores only when requests leave them idle. Its connection reads the file like
 * any other reader of the WAL database, with a small page cache.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { classifyDatabaseError, DatabaseError, firstLine } from '../database-errors.js';

/** What a check in the background found. */
export type IntegrityCheckResult =
  | { readonly kind: 'sound'; readonly ms: number }
  | { readonly kind: 'damaged'; readonly error: DatabaseError; readonly ms: number }
  /** The check could not run to its end (the child could not start, or died): nothing is known. */
  | { readonly kind: 'not-run'; readonly reason: string };

export interface BackgroundCheck {
  /** Settles once, when the check is over; never rejects. Not at all once stopped. */
  readonly result: Promise<IntegrityCheckResult>;
  /**
   * Settles once the child process is gone (its exit and its pipes closed), however the check
   * ended; never rejects. What the store's close() awaits after stop(): a store closed leaves no
   * check running, and nothing is reported after it.
   */
  readonly ended: Promise<void>;
  /** Kills the check (the service is stopping); `ended` settles when the child is gone. */
  stop(): void;
}

/** The child's program: argv holds the driver's path and the database's. */
const CHILD_CODE = `
const [, driver, path] = process.argv;
let out;
try {
  const Database = require(driver);
  const db = new Database(path, { fileMustExist: true });
  db.pragma('cache_size = -4096');
  out = { rows: db.pragma('quick_check').map((r) => String(r.quick_check)) };
  db.close();
} catch (error) {
  out = { error: String(error && error.message), code: error && error.code };
}
process.stdout.write(JSON.stringify(out));
`;

/** The CPU priority of the check (nice): below the service's. */
const CHECK_NICE = 10;

/** The message of a damaged file, the same whether found before serving or in the background. */
export function damagedByQuickCheck(path: string, rows: readonly string[]): DatabaseError {
  const first = rows[0] ?? 'no answer';
  return new DatabaseError('damaged', `the database ${path} is damaged (quick_check: ${firstLine(first)}${rows.length > 1 ? `, and ${rows.length - 1} more problem(s)` : ''}); restore it from a backup`);
}

export function startBackgroundCheck(path: string, driver: string): BackgroundCheck {
  const started = Date.now();
  let stopped = false;
  const child = spawn(process.execPath, ['-e', CHILD_CODE, driver, path], { stdio: ['ignore', 'pipe', 'pipe'] });
  // 'close' (exit and pipes closed) normally; 'error' alone when the child could not be started.
  const ended = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => {
      if (child.pid === undefined) resolve();
    });
  });
  const result = new Promise<IntegrityCheckResult>((resolve) => {
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err = (err + chunk).slice(-2000);
    });
    child.once('error', (error) => {
      if (!stopped) resolve({ kind: 'not-run', reason: firstLine(error.message) });
    });
    child.once('close', (exitCode, signal) => {
      if (stopped) return;
      const ms = Date.now() - started;
      let parsed: { rows?: unknown; error?: unknown; code?: unknown } | null = null;
      try {
        parsed = JSON.parse(out) as { rows?: unknown; error?: unknown; code?: unknown };
      } catch {
        // no answer: below
      }
      if (parsed !== null && Array.isArray(parsed.rows)) {
        const rows = parsed.rows.map(String);
        resolve(rows.length === 1 && rows[0] === 'ok' ? { kind: 'sound', ms } : { kind: 'damaged', error: damagedByQuickCheck(path, rows), ms });
        return;
      }
      if (classifyDatabaseError({ code: parsed?.code }) === 'damaged') {
        resolve({ kind: 'damaged', error: new DatabaseError('damaged', `the database ${path} is damaged (${firstLine(String(parsed?.error))}); restore it from a backup`), ms });
        return;
      }
      const why = parsed !== null ? String(parsed.error) : `the check ended (${signal ?? exitCode ?? 'no code'}) without an answer${err === '' ? '' : `: ${err}`}`;
      resolve({ kind: 'not-run', reason: firstLine(why) });
    });
  });
  if (child.pid !== undefined) {
    try {
      setPriority(child.pid, CHECK_NICE);
    } catch {
      // not allowed here: it runs at the service's priority
    }
  }
  return {
    result,
    ended,
    stop() {
      stopped = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
