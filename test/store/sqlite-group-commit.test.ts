/**
 * SQLite's group commit (src/store/sqlite/group-commit.ts) on a bare connection: what makes each
 * write of a batch atomic on its own, and what fails the whole batch.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteWrites } from '../../src/store/sqlite/group-commit.js';

describe('SQLite group commit', () => {
  let db: Database.Database;
  const rows = (): number[] => (db.prepare('SELECT n FROM t ORDER BY n').pluck().all() as number[]);
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  });
  afterEach(() => db.close());

  it('undoes a failing write alone: one statement by itself, several through their SAVEPOINT', async () => {
    const commits: number[] = [];
    const writes = createSqliteWrites(db, { enabled: true, onCommit: (n) => commits.push(n) });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const pair = db.transaction((a: number, b: number) => {
      insert.run(a);
      insert.run(b); // may hit the primary key after the first row went in
    });
    const outcomes = await Promise.allSettled([
      writes.run(() => insert.run(1).changes),
      writes.run(() => pair.immediate(2, 1)), // 2 goes in, then 1 is a duplicate: 2 must be undone too
      writes.run(() => insert.run(1).changes), // a duplicate on its own
      writes.run(() => {
        pair.immediate(3, 4);
        return 'both';
      }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(rows()).toEqual([1, 3, 4]);
    expect(commits).toEqual([4]);
    expect(db.inTransaction).toBe(false);
  });

  it('fails every write of the batch when the transaction itself ends before COMMIT', async () => {
    const writes = createSqliteWrites(db, { enabled: true });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const outcomes = await Promise.allSettled([
      writes.run(() => insert.run(1).changes),
      // What a full disk or an I/O error does: SQLite rolls the whole transaction back.
      writes.run(() => {
        db.prepare('ROLLBACK').run();
        throw new Error('disk I/O error');
      }),
      writes.run(() => insert.run(2).changes),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(rows()).toEqual([]);
    // The next turn starts afresh.
    await expect(writes.run(() => insert.run(3).changes)).resolves.toBe(1);
    expect(rows()).toEqual([3]);
  });

  it('switched off, runs each write at once, in its own transaction', async () => {
    const commits: number[] = [];
    const writes = createSqliteWrites(db, { enabled: false, onCommit: (n) => commits.push(n) });
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const first = writes.run(() => insert.run(1).changes);
    expect(rows()).toEqual([1]); // before any turn ended
    await expect(first).resolves.toBe(1);
    await expect(writes.run(() => insert.run(1).changes)).rejects.toThrow(/UNIQUE/);
    expect(commits).toEqual([]);
  });
});
