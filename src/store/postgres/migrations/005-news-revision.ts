import type { PostgresMigration } from './postgres-migrations.js';

/**
 * Issue 9 (twin of the SQLite migration 5): the news revision that lets WhatsNew keep its
 * answers in memory (src/domain/news-cache.ts) and still see every change, from any instance, on
 * the very next request. A statement-level trigger bumps it in the writing transaction for every
 * INSERT, UPDATE, DELETE and TRUNCATE of `news` (row triggers would not see TRUNCATE), so the
 * new rows and the new revision become visible together.
 *
 * The value is at least the database clock in microseconds and always one more than before, so
 * it never returns to a value an instance may have seen, even after pg_restore or a re-created
 * schema. The function's search_path is fixed to the schema it was created in, so a write from
 * a session with another search_path (psql with a schema-qualified INSERT) bumps the right row.
 */
const NOW_MICROS = '(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';

export const newsRevision: PostgresMigration = {
  version: 5,
  name: 'news revision',
  sql: `
CREATE TABLE news_revision (
  id       boolean PRIMARY KEY DEFAULT true CHECK (id),
  revision bigint  NOT NULL
);
INSERT INTO news_revision (id, revision) VALUES (true, ${NOW_MICROS});

CREATE FUNCTION news_revision_bump() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE news_revision SET revision = greatest(revision + 1, ${NOW_MICROS});
  RETURN NULL;
END
$$;
CREATE TRIGGER news_revision_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON news
  FOR EACH STATEMENT EXECUTE FUNCTION news_revision_bump();
`,
};
