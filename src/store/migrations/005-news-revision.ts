import type { StoreMigration } from './store-migrations.js';
import { bumpRevision, postgresBumpFunction, revisionTable } from './revision-table.js';

/**
 * The news revision, so WhatsNew can keep its answers in memory (src/domain/news-cache.ts) and
 * still see every change, from any process or instance, on the very next request. One row
 * (revision-table.ts), bumped by triggers on every write of `news`: every write path (admin
 * service, CLI, import, another process, raw SQL) moves it, with no adapter code to forget.
 *
 * SQLite: a row trigger per INSERT, UPDATE and DELETE. PostgreSQL: one statement-level trigger
 * for INSERT, UPDATE, DELETE and TRUNCATE (row triggers would not see TRUNCATE), in the writing
 * transaction, so the new rows and the new revision become visible together.
 */
export const newsRevision: StoreMigration = {
  version: 5,
  name: 'news revision',
  sql: (d) => `${revisionTable(d, 'news_revision')}
${d.pick({
    sqlite: `CREATE TRIGGER news_revision_after_insert AFTER INSERT ON news BEGIN ${bumpRevision(d, 'news_revision')} END;
CREATE TRIGGER news_revision_after_update AFTER UPDATE ON news BEGIN ${bumpRevision(d, 'news_revision')} END;
CREATE TRIGGER news_revision_after_delete AFTER DELETE ON news BEGIN ${bumpRevision(d, 'news_revision')} END;`,
    postgres: `
${postgresBumpFunction(d, 'news_revision_bump', 'news_revision')}
CREATE TRIGGER news_revision_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON news
  FOR EACH STATEMENT EXECUTE FUNCTION news_revision_bump();`,
  })}
`,
};
