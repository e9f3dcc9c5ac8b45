import type { SqliteMigration } from './sqlite-migrations.js';

/**
 * Issue 9: the news revision, so WhatsNew can keep its answers in memory (src/domain/news-cache.ts)
 * and still see every change on the very next request. One row, bumped by triggers on every
 * INSERT, UPDATE and DELETE of `news`: every write path (admin service, CLI, import, another
 * process, raw SQL) moves it, with no adapter code to forget.
 *
 * The value is at least the current time in microseconds and always one more than before, so it
 * never returns to a value a running process may have seen, even if the database is restored
 * from a backup or re-created (a counter starting from 1 again could repeat one). Readers
 * compare it for equality only.
 */
const NOW_MICROS = `CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000`;
const BUMP = `UPDATE news_revision SET revision = MAX(revision + 1, ${NOW_MICROS}) WHERE id = 1;`;

export const newsRevision: SqliteMigration = {
  version: 5,
  name: 'news revision',
  sql: `
CREATE TABLE news_revision (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO news_revision (id, revision) VALUES (1, ${NOW_MICROS});
CREATE TRIGGER news_revision_after_insert AFTER INSERT ON news BEGIN ${BUMP} END;
CREATE TRIGGER news_revision_after_update AFTER UPDATE ON news BEGIN ${BUMP} END;
CREATE TRIGGER news_revision_after_delete AFTER DELETE ON news BEGIN ${BUMP} END;
`,
};
