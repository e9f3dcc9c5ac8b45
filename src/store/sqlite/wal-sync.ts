import { closeSync, existsSync, fdatasync as fsFdatasync, fstatSync, openSync, readlinkSync } from 'node:fs';
import type Database from 'better-sqlite3';

/**
 * Durable commits without the event loop waiting for the disk. Under synchronous FULL, SQLite
 * syncs the WAL inside COMMIT: the whole disk flush (2-3 ms on this VM, each group commit and
 * each audit batch) held the event loop, and with it every request in flight, also the ones
 * that write nothing. Here the transaction commits at synchronous NORMAL, which in WAL mode
 * appends the same frames without that one sync (checkpoints and WAL restarts sync exactly as
 * under FULL: NORMAL only drops the sync at commit), and the `-wal` file is then synced on a
 * thread of libuv's pool, through a descriptor of our own (an fdatasync flushes the file,
 * whichever descriptor names it). The caller's promise settles after that sync: what it
 * answers is on disk exactly when FULL would have had it there.
 *
 * The difference is what others see meanwhile: the rows are visible (to this connection, other
 * connections and processes) from COMMIT on, before they are durable. Nothing of theirs has
 * been handed to a client yet, and a power cut in between leaves a state in which the write
 * never happened, which no client was told otherwise. A failed sync fails its callers and
 * every later one (the store stops taking writes of this kind until restarted): after a failed
 * fsync the kernel may have dropped the dirty pages, and a WAL with a hole is cut at the hole
 * on recovery, later commits with it.
 *
 * Syncs coalesce: while one runs, the commits made meanwhile wait for one more, which covers
 * them all.
 */
export interface WalSync {
  /**
   * Runs `commit` (statements ending with COMMIT) at synchronous NORMAL, back at FULL after it
   * (whatever happens), and resolves with its result once the WAL holding it is synced.
   */
  commitThenSync<T>(commit: () => T): Promise<T>;
  /** Waits for the syncs under way, then closes the descriptor. */
  close(): Promise<void>;
}

export interface WalSyncOptions {
  /** The WAL file: the database's path followed by `-wal`. */
  readonly walPath: string;
  /** fs.fdatasync (tests count or fail syncs). */
  readonly fdatasync?: (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void;
  /**
   * Asked before each commit: null to commit now, or a promise to wait for first (it never
   * rejects): the checkpoint thread catching up so that this commit starts the WAL over
   * (wal-restart-gate.ts). Commits that wait keep their order.
   */
  readonly beforeCommit?: () => Promise<void> | null;
  /**
   * Where the descriptors' names are read to tell an unlinked WAL (default /proc/self/fd when the
   * system has it); null: by the link count (fstat), as where there is no /proc (tests).
   */
  readonly fdLinks?: string | null;
}

/** Where Linux names an open descriptor's file; ` (deleted)` ends the name once it is unlinked. */
const FD_LINKS = '/proc/self/fd';
const DEFAULT_FD_LINKS = existsSync(FD_LINKS) ? FD_LINKS : null;

/**
 * Whether the file open at `fd` has been unlinked. Not by fstat where /proc tells: a stat asks
 * for the WAL's times, and on kernels with multigrain timestamps (Linux 6.13 on) the next write
 * after such a query gets a fresh fine-grained time, so every group's frames came with an inode
 * change. On this service's test VMs (ext4 without a journal, Linux 6.18) fdatasync then wrote
 * the inode too, twice as often as without the stat: one more disk write and virtio exit per group
 * commit. Without it GetUserLoginURL at 16 connections did 5% more (8,278-8,319 against
 * 7,861-7,923 req/s, two alternating pairs; the inode writes 0.9% of the core against 2.0%, perf,
 * 2026-11-30). Elsewhere, the link count.
 */
function unlinked(fd: number, fdLinks: string | null): boolean {
  if (fdLinks !== null) {
    try {
      return readlinkSync(`${fdLinks}/${fd}`).endsWith(' (deleted)');
    } catch {
      // A /proc that does not answer for this descriptor: ask the file itself.
    }
  }
  return fstatSync(fd).nlink === 0;
}

export function createWalSync(db: Database.Database, options: WalSyncOptions): WalSync {
  const fdatasync = options.fdatasync ?? fsFdatasync;
  const fdLinks = options.fdLinks === undefined ? DEFAULT_FD_LINKS : options.fdLinks;
  // db.exec, not a prepared statement: SQLite applies this pragma when the statement is
  // prepared, and a prepared one run again applies it only by being prepared again (its first
  // run after preparing changes nothing).
  const syncNormal = (): void => {
    db.exec('PRAGMA synchronous = NORMAL');
  };
  const syncFull = (): void => {
    db.exec('PRAGMA synchronous = FULL');
  };
  let fd: number | null = null;
  let failed: unknown = null;
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  const descriptor = (): number => {
    // SQLite deletes the WAL only when the last connection closes, and ours is open; a WAL
    // unlinked all the same is opened again rather than synced in its place.
    if (fd !== null && !unlinked(fd, fdLinks)) return fd;
    if (fd !== null) closeSync(fd);
    fd = null;
    fd = openSync(options.walPath, 'r+');
    return fd;
  };

  const runOne = (): Promise<void> => {
    const done = new Promise<void>((resolve, reject) => {
      if (failed !== null) {
        reject(failed);
        return;
      }
      let target: number;
      try {
        target = descriptor();
      } catch (error) {
        reject(error);
        return;
      }
      fdatasync(target, (error) => {
        if (error) {
          failed ??= error;
          reject(error);
        } else {
          resolve();
        }
      });
    });
    return done.finally(() => {
      running = null;
    });
  };

  /** Resolves once a sync that began after this call has ended. */
  const sync = (): Promise<void> => {
    if (running === null) {
      running = runOne();
      return running;
    }
    // The sync under way may have begun before the caller's commit: the next one covers it.
    queued ??= running.catch(() => undefined).then(() => {
      queued = null;
      return sync();
    });
    return queued;
  };

  const { beforeCommit } = options;
  const commitThenSync = <T>(commit: () => T): Promise<T> => {
    if (failed !== null) return Promise.reject(failed);
    const wait = beforeCommit?.() ?? null;
    if (wait !== null) return wait.then(() => commitThenSync(commit));
    let result: T;
    syncNormal();
    try {
      result = commit();
    } catch (error) {
      return Promise.reject(error);
    } finally {
      syncFull();
    }
    return sync().then(() => result);
  };

  return {
    commitThenSync,
    async close() {
      while (running !== null || queued !== null) await Promise.allSettled([running, queued]);
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
