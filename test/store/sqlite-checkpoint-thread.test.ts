import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import type * as PurgeThreadModule from '../../src/store/sqlite/purge-thread.js';
import { startPurgeThread, type PurgeThread } from '../../src/store/sqlite/purge-thread.js';
import { CHECKPOINT_INTERVAL_MS, openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { COUNT_ACTIVE_SQL } from '../../src/store/sqlite/sqlite-tokens.js';

/**
 * The WAL's checkpoints on the purge thread (sqlite-store.ts CHECKPOINT_INTERVAL_MS): the
 * serving connection's automatic checkpoints off while the thread runs, back when it ends.
 */

// The threads the store starts, so that a test can end one as a crash would.
const started: PurgeThread[] = [];
vi.mock('../../src/store/sqlite/purge-thread.js', async (importOriginal) => {
  const original = await importOriginal<typeof PurgeThreadModule>();
  return {
    ...original,
    startPurgeThread: (...args: Parameters<typeof original.startPurgeThread>): PurgeThread => {
      const thread = original.startPurgeThread(...args);
      started.push(thread);
      return thread;
    },
  };
});

const dir = mkdtempSync(join(tmpdir(), 'svcapi-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileCounter = 0;
const freshFile = (): string => join(dir, `db-${++fileCounter}`, 'auth.db');

/** Records the pragmas every connection runs until restore(). */
function spyPragmas(): { readonly seen: string[]; restore(): void } {
  const seen: string[] = [];
  const { pragma } = Database.prototype;
  Database.prototype.pragma = function (this: Database.Database, source: string, ...rest: unknown[]) {
    seen.push(source);
    return (pragma as (s: string, ...r: unknown[]) => unknown).call(this, source, ...rest);
  } as typeof pragma;
  return { seen, restore: () => { Database.prototype.pragma = pragma; } };
}

describe('SQLite checkpoints on the purge thread', () => {
  it('with the checkpoint thread, copies committed pages into the database file within moments, off the serving connection; without it, not before 1000 pages of WAL', async () => {
    // Waits up to `patienceMs` for the file to grow.
    const grows = async (checkpointThread: boolean, patienceMs: number): Promise<{ before: number; after: number }> => {
      const path = freshFile();
      const store = openSqliteStore({ path, checkpointThread });
      try {
        const before = statSync(path).size;
        const user = await store.insertUser({ login: 'cp', loginKey: 'cp', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
        if (!user.ok) throw new Error('setup');
        const now = new Date();
        // The schema and a few hundred pages of WAL: under SQLite's 1000-page automatic checkpoint.
        for (let i = 0; i < 60; i++) {
          const tokenHash = createHash('sha256').update(`cp${i}`).digest('hex');
          await store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: now, expiresAt: new Date(now.getTime() + 60_000) }, { passwordHash: 'h' });
        }
        let after = statSync(path).size;
        for (let waited = 0; after === before && waited < patienceMs; waited += 50) {
          await new Promise((r) => setTimeout(r, 50));
          after = statSync(path).size;
        }
        return { before, after };
      } finally {
        await store.close();
      }
    };
    const threaded = await grows(true, 3000);
    expect(threaded.after).toBeGreaterThan(threaded.before);
    const automatic = await grows(false, 5 * CHECKPOINT_INTERVAL_MS);
    expect(automatic.after).toBe(automatic.before);
  });

  it('turns the serving connection\'s automatic checkpoints off only while the checkpoint thread runs', async () => {
    const pragmas = async (checkpointThread: boolean): Promise<string[]> => {
      const spy = spyPragmas();
      try {
        await openSqliteStore({ path: freshFile(), checkpointThread }).close();
      } finally {
        spy.restore();
      }
      return spy.seen.filter((p) => p.startsWith('wal_autocheckpoint'));
    };
    expect(await pragmas(true)).toEqual(['wal_autocheckpoint = 0']);
    expect(await pragmas(false)).toEqual([]);
  });

  it('checkpoints on the purge thread when asked, and reports a thread that ends other than by close(), not one closed', async () => {
    const path = freshFile();
    await (await openStore(`sqlite:${path}`)).close();
    const writer = new Database(path);
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare('CREATE TABLE filler (v TEXT)').run();
    const insert = writer.prepare('INSERT INTO filler (v) VALUES (?)');
    for (let i = 0; i < 50; i++) insert.run('x'.repeat(2000));
    const ended: unknown[] = [];
    const options = { path, sql: 'DELETE FROM tokens WHERE expires_at < @before AND @limit > 0', ticketSql: 'DELETE FROM tickets WHERE expires_at < @before AND @limit > 0', countSql: COUNT_ACTIVE_SQL, busyTimeoutMs: 1000, driver: createRequire(import.meta.url).resolve('better-sqlite3') };
    const thread = startPurgeThread({ ...options, checkpointMs: 20, onEnd: (e) => ended.push(e) });
    try {
      let copied = 0;
      for (let waited = 0; copied === 0 && waited < 3000; waited += 50) {
        await new Promise((r) => setTimeout(r, 50));
        copied = await thread.checkpoints();
      }
      expect(copied).toBeGreaterThan(0);
      await thread.terminate();
      expect(ended).toHaveLength(1);
      await expect(thread.checkpoints()).rejects.toThrow();
    } finally {
      await thread.close();
      writer.close();
    }
    const closed = startPurgeThread({ ...options, checkpointMs: 20, onEnd: (e) => ended.push(e) });
    await closed.close();
    expect(ended).toHaveLength(1);
  });

  it('puts the serving connection\'s automatic checkpoints back when the checkpoint thread ends (a WAL nobody checkpoints only grows)', async () => {
    const spy = spyPragmas();
    started.length = 0;
    const store = openSqliteStore({ path: freshFile(), checkpointThread: true });
    try {
      expect(started).toHaveLength(1);
      await started[0]?.terminate();
      expect(spy.seen.filter((p) => p.startsWith('wal_autocheckpoint'))).toEqual(['wal_autocheckpoint = 0', 'wal_autocheckpoint = 1000']);
    } finally {
      spy.restore();
      await store.close();
    }
  });

  it('starts the WAL over under sustained writes: the -wal file stays bounded while every turn commits, where without the catch-up it grows by every frame written', async () => {
    // The thread's PASSIVE checkpoints never catch up with a writer that commits while they copy,
    // and SQLite starts a WAL over only when a write begins with every frame copied: without the
    // catch-up before a commit (wal-restart-gate.ts) the file grew by every frame ever written
    // (1.7 GB in 22 s of GetUserLoginURL, 2026-11-29).
    const restartFrames = 1000;
    const peakWal = async (walRestartFrames: number): Promise<{ peak: number; frameBytes: number }> => {
      const path = freshFile();
      const store = openSqliteStore({ path, checkpointThread: true, walRestartFrames });
      try {
        const user = await store.insertUser({ login: 'cp', loginKey: 'cp', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
        if (!user.ok) throw new Error('setup');
        const now = new Date();
        const reader = new Database(path, { readonly: true });
        const frameBytes = 24 + Number(reader.pragma('page_size', { simple: true }));
        reader.close();
        let peak = 0;
        const until = Date.now() + 2000;
        for (let turn = 0; Date.now() < until; turn++) {
          await Promise.all(Array.from({ length: 20 }, (_, i) => {
            const tokenHash = createHash('sha256').update(`sustained${turn}.${i}`).digest('hex');
            return store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: now, expiresAt: new Date(now.getTime() + 60_000) }, { passwordHash: 'h' });
          }));
          peak = Math.max(peak, statSync(`${path}-wal`).size);
          // A steady load, not a burst: the thread looks at the WAL every CHECKPOINT_INTERVAL_MS, and
          // what is written between two looks comes on top of the threshold.
          await new Promise((r) => setTimeout(r, 2));
        }
        return { peak, frameBytes };
      } finally {
        await store.close();
      }
    };
    // The threshold plus what is written between two of the thread's looks (about 2,000 frames
    // here; 3,200 in all at most seen against 36,000 without the catch-up).
    const bound = (frameBytes: number): number => 6 * restartFrames * frameBytes;
    const gated = await peakWal(restartFrames);
    expect(gated.peak).toBeLessThan(bound(gated.frameBytes));
    // The same writes with a threshold never reached: the load is sustained enough to outgrow the bound.
    const ungated = await peakWal(2 ** 30);
    expect(ungated.peak).toBeGreaterThan(bound(ungated.frameBytes));
  });

  it('keeps the WAL bounded with two serving connections writing to one file (--workers), where each one\'s catch-up can miss', async () => {
    // Each connection's commits do not wait for the other's thread: past four times the threshold
    // the serving connections checkpoint at their own commits again (wal-restart-gate.ts).
    const restartFrames = 1000;
    const path = freshFile();
    // What the runaway switch reports (serve logs it): [on or off, the WAL's size then].
    const reported: [boolean, number][] = [];
    const onWalRunaway = (runaway: boolean, walBytes: number): void => {
      reported.push([runaway, walBytes]);
    };
    const first = openSqliteStore({ path, checkpointThread: true, walRestartFrames: restartFrames, onWalRunaway });
    const user = await first.insertUser({ login: 'cp', loginKey: 'cp', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
    if (!user.ok) throw new Error('setup');
    const second = openSqliteStore({ path, checkpointThread: true, walRestartFrames: restartFrames, onWalRunaway });
    try {
      const now = new Date();
      const until = Date.now() + 2000;
      let peak = 0;
      const writer = async (store: typeof first, tag: string): Promise<void> => {
        for (let turn = 0; Date.now() < until; turn++) {
          await Promise.all(Array.from({ length: 20 }, (_, i) => {
            const tokenHash = createHash('sha256').update(`${tag}${turn}.${i}`).digest('hex');
            return store.insertSession({ tokenHash, userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: now, expiresAt: new Date(now.getTime() + 60_000) }, { passwordHash: 'h' });
          }));
          peak = Math.max(peak, statSync(`${path}-wal`).size);
          await new Promise((r) => setTimeout(r, 2));
        }
      };
      await Promise.all([writer(first, 'a'), writer(second, 'b')]);
      // 8,000 frames seen at most here, against 160,000 with neither catch-up nor fallback.
      expect(peak).toBeLessThan(16 * restartFrames * (4096 + 24));
      // The catch-ups missed (31,000 frames without the fallback): the switch went on, at a WAL past four times the threshold.
      const on = reported.find(([runaway]) => runaway);
      expect(on?.[1]).toBeGreaterThanOrEqual(4 * restartFrames * (4096 + 24));
    } finally {
      await first.close();
      await second.close();
    }
  });
});
