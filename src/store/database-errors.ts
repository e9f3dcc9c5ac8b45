/**
 * Database conditions an operator must act on, told apart from bugs: the database is missing,
 * is not ours, is damaged, or cannot be written. Opening a store throws a DatabaseError for the
 * first three (the file or schema is refused untouched); classifyDatabaseError recognises the
 * same conditions in the errors the drivers raise later (a write to a read-only file, a page
 * found damaged by a query), so the CLI can answer them with one line and a distinct exit code.
 */

export type DatabaseProblem =
  /** No database there, or one without the svcapi-auth schema (only `migrate` and `serve` create it). */
  | 'missing'
  /** Another application's database or schema: never written to. */
  | 'foreign'
  /** Corrupt pages, or not a database file at all (or one whose header is destroyed). */
  | 'damaged'
  /** The database answers reads but refuses writes. */
  | 'read-only';

export class DatabaseError extends Error {
  constructor(readonly problem: DatabaseProblem, message: string) {
    super(message);
    this.name = 'DatabaseError';
  }
}

/**
 * The problem behind an error from better-sqlite3 or node-postgres, or null when it is none of
 * those (a lost connection, a timeout, a constraint, a bug).
 */
export function classifyDatabaseError(error: unknown): DatabaseProblem | null {
  if (error instanceof DatabaseError) return error.problem;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  // SQLite extended codes: SQLITE_READONLY_DIRECTORY, SQLITE_READONLY_DBMOVED, SQLITE_CORRUPT_INDEX...
  if (code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_')) return 'read-only';
  if (code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_') || code === 'SQLITE_NOTADB') return 'damaged';
  // PostgreSQL SQLSTATEs: 25006 read_only_sql_transaction (a standby, default_transaction_read_only);
  // XX001 data_corrupted, XX002 index_corrupted.
  if (code === '25006') return 'read-only';
  if (code === 'XX001' || code === 'XX002') return 'damaged';
  return null;
}

/** The first line of a driver message, bounded: quick_check and friends can return many lines. */
export function firstLine(text: string, max = 200): string {
  const line = text.split('\n', 1)[0]?.trim() ?? '';
  return line.length > max ? `${line.slice(0, max)}...` : line;
}
