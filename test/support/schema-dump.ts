/**
 * The schema a database holds, as comparable data: what the store migrations made, read back
 * from the database itself (not from the migration text). Used by test/store/schema-fixture.test.ts
 * to prove that the migrations, however they are written, still build exactly the schema that
 * deployed databases already have.
 *
 * - SQLite: every sqlite_master entry with its SQL (white space folded: SQLite keeps the text as
 *   written, and the column alignment of a CREATE TABLE means nothing), the header's
 *   application_id, and the rows the migrations insert.
 * - PostgreSQL: columns (information_schema), constraints, indexes, triggers, functions and
 *   sequences (pg_catalog, definitions as PostgreSQL prints them back), and the rows the
 *   migrations insert. The schema's name is replaced by `<schema>`.
 *
 * Rows are without their times of creation (created_at) and revisions (taken from the clock).
 */
import { createHash } from 'node:crypto';
import type { Database } from 'better-sqlite3';
import type pg from 'pg';

export type SchemaDump = Readonly<Record<string, unknown>>;

const fold = (sql: string | null): string | null => (sql === null ? null : sql.replace(/\s+/g, ' ').trim());

/** Rows of a seeded table, without the columns whose value comes from the clock. */
const seedRows = (rows: readonly Record<string, unknown>[]): Record<string, unknown>[] =>
  rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'created_at' && k !== 'revision')));

const SEEDED = ['applications', 'health_probe', 'news_revision', 'access_revision'] as const;

export function dumpSqliteSchema(db: Database): SchemaDump {
  const objects = (db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name').all() as
    { type: string; name: string; tbl_name: string; sql: string | null }[]).map((o) => ({ ...o, sql: fold(o.sql) }));
  const tables = new Set(objects.filter((o) => o.type === 'table').map((o) => o.name));
  const rows: Record<string, unknown> = {};
  for (const table of SEEDED) {
    if (tables.has(table)) rows[table] = seedRows(db.prepare(`SELECT * FROM ${table} ORDER BY 1`).all() as Record<string, unknown>[]);
  }
  return { objects, applicationId: Number(db.pragma('application_id', { simple: true })), rows };
}

export async function dumpPostgresSchema(client: pg.ClientBase, schema: string): Promise<SchemaDump> {
  const anon = (text: unknown): string => String(text).split(`"${schema}"`).join('<schema>').split(schema).join('<schema>');
  const q = async (sql: string): Promise<Record<string, unknown>[]> => (await client.query(sql, [schema])).rows as Record<string, unknown>[];
  const columns = await q(`SELECT table_name, column_name, ordinal_position, data_type, udt_name, is_nullable, column_default,
      collation_name, is_identity, identity_generation, identity_start, identity_increment, is_generated
    FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`);
  const constraints = await q(`SELECT c.relname AS table_name, k.conname, k.contype, pg_get_constraintdef(k.oid, true) AS definition,
      k.condeferrable, k.condeferred
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1 ORDER BY c.relname, k.conname`);
  const indexes = (await q('SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY tablename, indexname'))
    .map((r) => ({ ...r, indexdef: anon(r.indexdef) }));
  const triggers = (await q(`SELECT c.relname AS table_name, t.tgname, pg_get_triggerdef(t.oid, true) AS definition, t.tgenabled, t.tgdeferrable, t.tginitdeferred
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY c.relname, t.tgname`)).map((r) => ({ ...r, definition: anon(r.definition) }));
  const functions = (await q(`SELECT p.proname, pg_get_functiondef(p.oid) AS definition
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY p.proname`))
    .map((r) => ({ ...r, definition: anon(r.definition) }));
  const sequences = await q(`SELECT sequencename, data_type::text, start_value::text, increment_by::text, min_value::text, max_value::text, cycle
    FROM pg_sequences WHERE schemaname = $1 ORDER BY sequencename`);
  const tables = new Set(columns.map((c) => String(c.table_name)));
  const rows: Record<string, unknown> = {};
  for (const table of SEEDED) {
    if (tables.has(table)) rows[table] = seedRows(JSON.parse(JSON.stringify((await client.query(`SELECT * FROM "${schema}".${table} ORDER BY 1`)).rows)) as Record<string, unknown>[]);
  }
  return { columns, constraints, indexes, triggers, functions, sequences, rows };
}

/** A short fingerprint of a dump, for the intermediate versions of the fixture. */
export function dumpDigest(dump: SchemaDump): string {
  return createHash('sha256').update(JSON.stringify(dump)).digest('hex').slice(0, 16);
}
