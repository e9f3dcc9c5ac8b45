/**
 * A SQLite store file damaged where opening and migrating it do not look: a leaf page of the
 * news table overwritten with garbage. Only a whole-file check (quick_check) or a query reading
 * news finds it. Shared by the store test of the background check and the CLI's.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';

/** Adds news rows to the migrated store file at `path` and overwrites one of the news table's leaf pages. */
export function damageNewsPage(path: string): void {
  const db = new Database(path);
  let page: number;
  let pageSize: number;
  try {
    const insert = db.prepare(`INSERT INTO news (app_id, language, title, body, url, published_at, expires_at, min_version, max_version, members_only, attributes, created_at)
      VALUES (2, 'en', ?, ?, NULL, 0, NULL, NULL, NULL, 0, '{}', 0)`);
    for (let i = 0; i < 200; i++) insert.run(`title ${i}`, `body ${i} `.repeat(20));
    db.pragma('wal_checkpoint(TRUNCATE)');
    pageSize = Number(db.pragma('page_size', { simple: true }));
    const leaf = db.prepare("SELECT pageno FROM dbstat WHERE name = 'news' AND pagetype = 'leaf' ORDER BY pageno DESC LIMIT 1").get() as { pageno: number } | undefined;
    if (leaf === undefined) throw new Error('the news table has no leaf page of its own');
    page = leaf.pageno;
  } finally {
    db.close();
  }
  const fd = openSync(path, 'r+');
  try {
    const garbage = Buffer.alloc(pageSize, 0xa5);
    writeSync(fd, garbage, 0, garbage.length, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}
