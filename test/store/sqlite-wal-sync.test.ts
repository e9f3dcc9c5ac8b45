/**
 * Durable commits off the event loop (src/store/sqlite/wal-sync.ts): the commit runs at
 * synchronous NORMAL, the connection is back at FULL after it, and the caller's promise settles
 * only once an fdatasync of the WAL file, begun after the commit, has ended. Syncs coalesce; a
 * failed one fails its callers and every later write.
 */
import { fstatSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSqliteWrites } from '../../src/store/sqlite/group-commit.js';
import { createWalSync, type WalSyncOptions } from '../../src/store/sqlite/wal-sync.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-wal-sync-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

/** An fdatasync whose calls wait until the test lets them end. */
function heldSyncs(): { fdatasync: NonNullable<WalSyncOptions['fdatasync']>; calls: { fd: number; rowsAtCall: number; end(error?: NodeJS.ErrnoException): void }[]; rows: () => number } {
  const calls: { fd: number; rowsAtCall: number; end(error?: NodeJS.ErrnoException): void }[] = [];
  const holder = {
    rows: (): number => 0,
    calls,
    fdatasync: (fd: number, callback: (error: NodeJS.ErrnoException | null) => void): void => {
      calls.push({ fd, rowsAtCall: holder.rows(), end: (error) => callback(error ?? null) });
    },
  };
  return holder;
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => { done = true; }, () => { done = true; });
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('WAL sync off the event loop', () => {
  let db: Database.Database;
  let path: string;
  afterEach(() => {
    if (db.open) db.close();
  });
  const open = (): void => {
    path = join(dir, `wal-${++counter}.db`);
    db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  };

  it('commits at NORMAL, is back at FULL after, and settles only after an fdatasync of the WAL begun after the commit', async () => {
    open();
    const held = heldSyncs();
    // What another connection sees when each sync is asked for: the commit came first.
    const observer = new Database(path, { readonly: true });
    held.rows = () => (observer.prepare('SELECT COUNT(*) FROM t').pluck().get() as number);
    const sync = createWalSync(db, { walPath: `${path}-wal`, fdatasync: held.fdatasync });
    const levels: number[] = [];
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const pending = sync.commitThenSync(() => {
      levels.push(db.pragma('synchronous', { simple: true }) as number);
      db.transaction(() => insert.run(1)).immediate();
      return 'stored';
    });
    expect(levels).toEqual([1]); // NORMAL inside
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL for everything else
    expect(held.calls).toHaveLength(1);
    expect(held.calls[0]?.rowsAtCall).toBe(1);
    // The descriptor synced is the WAL file's.
    expect(fstatSync(held.calls[0]?.fd ?? -1).ino).toBe(statSync(`${path}-wal`).ino);
    expect(await settled(pending)).toBe(false);
    held.calls[0]?.end();
    await expect(pending).resolves.toBe('stored');
    observer.close();
    await sync.close();
  });

  it('runs no commit before the promise beforeCommit gives has settled, and keeps their order', async () => {
    open();
    let release = (): void => undefined;
    let held: Promise<void> | null = new Promise<void>((resolve) => {
      release = resolve;
    });
    const asked: number[] = [];
    const sync = createWalSync(db, { walPath: `${path}-wal`, beforeCommit: () => {
      asked.push(db.prepare('SELECT COUNT(*) FROM t').pluck().get() as number);
      return held;
    } });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const first = sync.commitThenSync(() => insert.run(1).lastInsertRowid);
    const second = sync.commitThenSync(() => insert.run(2).lastInsertRowid);
    expect(await settled(first)).toBe(false);
    expect(db.prepare('SELECT COUNT(*) FROM t').pluck().get()).toBe(0);
    const gate = held;
    held = null;
    release();
    await gate;
    await expect(Promise.all([first, second])).resolves.toEqual([1, 2]);
    expect(db.prepare('SELECT n FROM t ORDER BY rowid').pluck().all()).toEqual([1, 2]);
    // Asked again before each commit once released: the first ran before the second was asked.
    expect(asked).toEqual([0, 0, 0, 1]);
    await sync.close();
  });

  it('coalesces: commits made while a sync runs wait for one more sync, which covers them all', async () => {
    open();
    const held = heldSyncs();
    const sync = createWalSync(db, { walPath: `${path}-wal`, fdatasync: held.fdatasync });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const first = sync.commitThenSync(() => insert.run(1));
    const second = sync.commitThenSync(() => insert.run(2));
    const third = sync.commitThenSync(() => insert.run(3));
    expect(held.calls).toHaveLength(1);
    held.calls[0]?.end();
    await first;
    // The first sync may have begun before the second and third commits: they are not done yet.
    expect(await settled(second)).toBe(false);
    expect(await settled(third)).toBe(false);
    expect(held.calls).toHaveLength(2);
    held.calls[1]?.end();
    await Promise.all([second, third]);
    expect(held.calls).toHaveLength(2);
    await sync.close();
  });

  it('fails the callers of a failed sync, and refuses every later write without running it', async () => {
    open();
    const held = heldSyncs();
    const sync = createWalSync(db, { walPath: `${path}-wal`, fdatasync: held.fdatasync });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const first = sync.commitThenSync(() => insert.run(1));
    held.calls[0]?.end(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(first).rejects.toThrow(/EIO/);
    let ran = false;
    await expect(sync.commitThenSync(() => {
      ran = true;
      return insert.run(2);
    })).rejects.toThrow(/EIO/);
    expect(ran).toBe(false);
    expect(held.calls).toHaveLength(1);
    await sync.close();
  });

  it('does not sync a commit that threw, and restores FULL', async () => {
    open();
    const held = heldSyncs();
    const sync = createWalSync(db, { walPath: `${path}-wal`, fdatasync: held.fdatasync });
    await expect(sync.commitThenSync(() => {
      throw new Error('constraint');
    })).rejects.toThrow(/constraint/);
    expect(held.calls).toHaveLength(0);
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    await sync.close();
  });

  it('waits for the syncs under way before closing the descriptor', async () => {
    open();
    const held = heldSyncs();
    const sync = createWalSync(db, { walPath: `${path}-wal`, fdatasync: held.fdatasync });
    const write = sync.commitThenSync(() => db.prepare('INSERT INTO t (n) VALUES (1)').run());
    const closed = sync.close();
    expect(await settled(closed)).toBe(false);
    held.calls[0]?.end();
    await write;
    await closed;
  });

  it('settles a group commit\'s writes only after the sync, with the real fdatasync', async () => {
    open();
    let syncs = 0;
    const sync = createWalSync(db, {
      walPath: `${path}-wal`,
      fdatasync: (fd, callback) => {
        syncs++;
        import('node:fs').then((fs) => fs.fdatasync(fd, callback), callback);
      },
    });
    const commits: number[] = [];
    const writes = createSqliteWrites(db, { enabled: true, walSync: sync, onCommit: (n) => commits.push(n) });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const results = await Promise.all([1, 2, 3].map((n) => writes.run(() => insert.run(n).changes)));
    expect(results).toEqual([1, 1, 1]);
    expect(commits).toEqual([3]);
    expect(syncs).toBe(1);
    await sync.close();
  });
});

describe('SQLite store: durable commits off the event loop', () => {
  it('stores a turn\'s tickets and an audit batch with the sync off the event loop (the default) and inside COMMIT (asyncSync: false)', async () => {
    for (const asyncSync of [undefined, false]) {
      const path = join(dir, `store-${++counter}`, 'auth.db');
      const store = openSqliteStore({ path, ...(asyncSync !== undefined && { asyncSync }) });
      const user = await store.insertUser({ login: 'u', loginKey: 'u', passwordHash: 'h', enabled: true, appIds: [2], createdAt: new Date() });
      if (!user.ok) throw new Error('setup');
      const now = Date.now();
      const stored = await Promise.all([1, 2].map((i) => store.insertTicket({
        tokenHash: String(i).repeat(64), userId: user.user.userId, appId: 2, clientIp: null, sourceIp: null, issuedAt: new Date(now), expiresAt: new Date(now + 60_000),
      })));
      expect(stored).toEqual([true, true]);
      await store.appendAudit([{ at: new Date(), type: 'ticket.issued', reason: null, requestId: null, appId: 2, login: 'u', sourceIp: null, claimedIp: null, tokenFp: null, detail: null }]);
      await store.close();
      const check = new Database(path, { readonly: true });
      expect(check.prepare("SELECT COUNT(*) FROM tokens WHERE kind = 'ticket'").pluck().get()).toBe(2);
      expect(check.prepare('SELECT COUNT(*) FROM audit_events').pluck().get()).toBe(1);
      check.close();
    }
  });
});
