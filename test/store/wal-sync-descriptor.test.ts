/**
 * The WAL descriptor of the durable commits (src/store/sqlite/wal-sync.ts): kept open from sync
 * to sync, checked for an unlinked file without a stat on Linux (a stat asks for the file's times,
 * and on kernels with multigrain timestamps the next write then gets a fresh one, which made
 * ext4 write the inode at the syncs), and opened again when the WAL it named was unlinked.
 */
import * as fs from 'node:fs';
import { mkdtempSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createWalSync } from '../../src/store/sqlite/wal-sync.js';

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  return { ...real, fstatSync: vi.fn(real.fstatSync) };
});

const dir = mkdtempSync(join(tmpdir(), 'svcapi-wal-fd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const linux = fs.existsSync('/proc/self/fd');

describe('the WAL descriptor of the durable commits', () => {
  let db: Database.Database;
  let path: string;
  let counter = 0;
  beforeEach(() => {
    path = join(dir, `wal-${++counter}.db`);
    db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
    vi.mocked(fs.fstatSync).mockClear();
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it.runIf(linux)('syncs commit after commit through one descriptor, and never stats the WAL', async () => {
    const fds: number[] = [];
    const sync = createWalSync(db, {
      walPath: `${path}-wal`,
      fdatasync: (fd, callback) => {
        fds.push(fd);
        fs.fdatasync(fd, callback);
      },
    });
    for (let n = 1; n <= 3; n++) await sync.commitThenSync(() => db.prepare('INSERT INTO t (n) VALUES (?)').run(n));
    expect(fds).toHaveLength(3);
    expect(new Set(fds).size).toBe(1);
    expect(fs.fstatSync).not.toHaveBeenCalled();
    await sync.close();
  });

  it.each([
    ['/proc/self/fd', linux ? '/proc/self/fd' : null],
    ['the link count (no /proc)', null],
  ] as const)('opens the WAL again when the file it synced was unlinked and another took its name: by %s', async (_how, fdLinks) => {
    const walPath = `${path}-wal`;
    const synced: bigint[] = [];
    const sync = createWalSync(db, {
      walPath,
      fdLinks,
      fdatasync: (fd, callback) => {
        // The test's own look at which file was synced (the spy hands it to the real fstatSync;
        // this test does not count the calls).
        synced.push(fs.fstatSync(fd, { bigint: true }).ino);
        callback(null);
      },
    });
    await sync.commitThenSync(() => db.prepare('INSERT INTO t (n) VALUES (1)').run());
    unlinkSync(walPath);
    writeFileSync(walPath, '');
    const replacement = statSync(walPath, { bigint: true }).ino;
    await sync.commitThenSync(() => db.prepare('INSERT INTO t (n) VALUES (2)').run());
    expect(synced).toHaveLength(2);
    expect(synced[0]).not.toBe(replacement);
    expect(synced[1]).toBe(replacement);
    await sync.close();
  });
});
