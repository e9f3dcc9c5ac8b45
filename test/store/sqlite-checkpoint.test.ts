/**
 * WAL checkpoints off the event loop: the background thread copies the WAL into the database
 * file when asked (purge-thread.ts checkpoint()), and the pacer asks after commits, one at a
 * time, at most every `everyMs` (checkpoint-pacer.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createCheckpointPacer } from '../../src/store/sqlite/checkpoint-pacer.js';
import { startPurgeThread } from '../../src/store/sqlite/purge-thread.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const require = createRequire(import.meta.url);

describe('checkpoints on the background thread', () => {
  it('copies what the WAL holds into the database file, waiting for no reader or writer', async () => {
    const path = join(dir, 'ckpt.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0'); // only the thread checkpoints here
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    db.transaction(() => {
      for (let i = 0; i < 500; i++) insert.run('x'.repeat(200));
    })();
    const thread = startPurgeThread({ path, sql: 'DELETE FROM t WHERE n < @before AND n < @limit', busyTimeoutMs: 1000, driver: require.resolve('better-sqlite3') });
    try {
      // A reader holding a snapshot does not stop it (PASSIVE): it copies what that reader no longer needs from the WAL.
      const copied = await thread.checkpoint();
      expect(copied).toBeGreaterThan(20);
      const [after] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
      expect(after?.checkpointed).toBe(after?.log); // nothing was left for this connection to copy
    } finally {
      await thread.close();
      db.close();
    }
  });
});

describe('the checkpoint pacer', () => {
  it('asks after a commit, one at a time, at most every everyMs; a failed checkpoint is only tried again later', async () => {
    let clock = 0;
    const started: number[] = [];
    let finish: (() => void) | null = null;
    let fail = false;
    const pacer = createCheckpointPacer(() => {
      started.push(clock);
      if (fail) return Promise.reject(new Error('SQLITE_BUSY'));
      return new Promise<void>((resolve) => {
        finish = resolve;
      });
    }, { everyMs: 100, now: () => clock });
    pacer.committed();
    expect(started).toEqual([0]);
    clock = 500;
    pacer.committed(); // one under way: not another
    expect(started).toEqual([0]);
    (finish as (() => void) | null)?.();
    await new Promise((resolve) => setImmediate(resolve));
    pacer.committed();
    expect(started).toEqual([0, 500]);
    (finish as (() => void) | null)?.();
    await new Promise((resolve) => setImmediate(resolve));
    clock = 550;
    pacer.committed(); // too soon after the last began
    expect(started).toEqual([0, 500]);
    clock = 600;
    fail = true;
    pacer.committed();
    await new Promise((resolve) => setImmediate(resolve));
    clock = 700;
    pacer.committed(); // after a failure, at the next commit once the interval has passed
    expect(started).toEqual([0, 500, 600, 700]);
    await pacer.close();
    clock = 10_000;
    pacer.committed(); // closed: never again
    expect(started).toEqual([0, 500, 600, 700]);
  });
});
