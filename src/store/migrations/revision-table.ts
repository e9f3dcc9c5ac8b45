import type { SqlDialect } from '../sql-dialect.js';

/**
 * The single-row tables of the news and access revisions (migrations 5 and 6). A revision is at
 * least the clock in microseconds and always one more than before, so it never returns to a value
 * a running process may have seen, even if the database is restored from a backup or re-created
 * (a counter starting from 1 again could repeat one). Readers compare it for equality only.
 */
export const nowMicros = (d: SqlDialect): string => d.pick({
  sqlite: "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000",
  postgres: '(extract(epoch FROM clock_timestamp()) * 1000000)::bigint',
});

/** The table and its one row. */
export const revisionTable = (d: SqlDialect, table: string): string => d.pick({
  sqlite: `
CREATE TABLE ${table} (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO ${table} (id, revision) VALUES (1, ${nowMicros(d)});`,
  postgres: `
CREATE TABLE ${table} (
  id       boolean PRIMARY KEY DEFAULT true CHECK (id),
  revision bigint  NOT NULL
);
INSERT INTO ${table} (id, revision) VALUES (true, ${nowMicros(d)});`,
});

/** The statement that moves the revision (inside a trigger). */
export const bumpRevision = (d: SqlDialect, table: string): string => d.pick({
  sqlite: `UPDATE ${table} SET revision = MAX(revision + 1, ${nowMicros(d)}) WHERE id = 1;`,
  postgres: `UPDATE ${table} SET revision = greatest(revision + 1, ${nowMicros(d)});`,
});

/**
 * PostgreSQL: a trigger function that moves the revision at once. Its search_path is fixed to the
 * schema it was created in, so a write from a session with another search_path (psql with a
 * schema-qualified statement) bumps the right row.
 */
export const postgresBumpFunction = (d: SqlDialect, name: string, table: string): string => `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  ${bumpRevision(d, table)}
  RETURN NULL;
END
$$;`;
