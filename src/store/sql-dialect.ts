/**
 * The words of SQL that differ between SQLite and PostgreSQL. A migration (src/store/migrations/)
 * or a query (shared-sql.ts) is written once with these and rendered for each adapter; what is
 * the same in both dialects is written out as SQL.
 *
 * SQLite keeps times as INTEGER milliseconds since the epoch (UTC) and booleans as 0/1 under a
 * CHECK; PostgreSQL has timestamptz and boolean. Keys compared byte-wise (hashes, login keys,
 * counter keys, console names) use the "C" collation on PostgreSQL, as SQLite's default BINARY
 * collation compares them, so both stores order and match them alike. SQLite words are upper
 * case: it keeps a table's SQL as written (sqlite_master), and the existing tables have them so.
 */
export type DialectName = 'sqlite' | 'postgres';

export interface SqlDialect {
  readonly name: DialectName;
  /** 32-bit integers (application ids, counts, seconds). */
  readonly int: string;
  /** A column that refers to a user id (64-bit on PostgreSQL). */
  readonly bigint: string;
  readonly text: string;
  /** Text compared byte-wise (see above). */
  readonly key: string;
  readonly time: string;
  /** A small JSON object. */
  readonly json: string;
  /** The table's id, assigned by the database; SQLite may hand out the id of a deleted last row again. */
  readonly rowId: string;
  /** The table's id, assigned by the database, never handed out twice (SQLite AUTOINCREMENT). */
  readonly serialId: string;
  /** After the closing parenthesis of a table keyed by its primary key only (SQLite WITHOUT ROWID). */
  readonly withoutRowid: string;
  /** The current time to the second, as a time column holds it. */
  readonly nowSeconds: string;
  /** A NOT NULL boolean column's type, default and (SQLite) the CHECK that keeps it 0 or 1. */
  bool(column: string, byDefault: boolean): string;
  /** The larger of two values (SQLite's scalar MAX, PostgreSQL's GREATEST). */
  readonly greatest: string;
  /**
   * After a SELECT that picks rows for a housekeeping DELETE: PostgreSQL skips the rows another
   * instance's batch holds, so two instances purging together do not wait on each other; SQLite
   * has one writer at a time and nothing to skip.
   */
  readonly skipLocked: string;
  /** A boolean literal. */
  literal(value: boolean): string;
  /** The rare piece with no common word: one text per dialect. */
  pick<T>(choices: { readonly sqlite: T; readonly postgres: T }): T;
}

export const SQLITE_DIALECT: SqlDialect = Object.freeze({
  name: 'sqlite',
  int: 'INTEGER',
  bigint: 'INTEGER',
  text: 'TEXT',
  key: 'TEXT',
  time: 'INTEGER',
  json: 'TEXT',
  rowId: 'INTEGER PRIMARY KEY',
  serialId: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  withoutRowid: ' WITHOUT ROWID',
  nowSeconds: "CAST(strftime('%s', 'now') AS INTEGER) * 1000",
  greatest: 'MAX',
  skipLocked: '',
  bool: (column: string, byDefault: boolean): string => `INTEGER NOT NULL DEFAULT ${byDefault ? 1 : 0} CHECK (${column} IN (0, 1))`,
  literal: (value: boolean): string => (value ? '1' : '0'),
  pick: <T>(choices: { readonly sqlite: T; readonly postgres: T }): T => choices.sqlite,
} as const);

export const POSTGRES_DIALECT: SqlDialect = Object.freeze({
  name: 'postgres',
  int: 'integer',
  bigint: 'bigint',
  text: 'text',
  key: 'text COLLATE "C"',
  time: 'timestamptz',
  json: 'jsonb',
  rowId: 'bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
  serialId: 'bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
  withoutRowid: '',
  nowSeconds: "date_trunc('second', now())",
  greatest: 'GREATEST',
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  bool: (_column: string, byDefault: boolean): string => `boolean NOT NULL DEFAULT ${byDefault ? 'true' : 'false'}`,
  literal: (value: boolean): string => (value ? 'true' : 'false'),
  pick: <T>(choices: { readonly sqlite: T; readonly postgres: T }): T => choices.postgres,
} as const);
