/**
 * How CLI commands open the database, and what they say when the database is the problem: one
 * line naming it and what to do, and an exit code per condition (cli-io.ts), never a stack trace.
 *
 * Only `migrate` and `serve` create a database (`create: true`); every other command refuses a
 * missing one, so a mistyped --db does not leave an empty database (and its directories) behind.
 */
import { classifyDatabaseError, DatabaseError, firstLine, type DatabaseProblem } from '../store/database-errors.js';
import { openStore, redactDatabaseUrl, type OpenStoreOptions } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { CliError, EXIT_DB_DAMAGED, EXIT_DB_FOREIGN, EXIT_DB_MISSING, EXIT_DB_READ_ONLY } from './cli-io.js';

const EXIT_CODES: Record<DatabaseProblem, number> = {
  missing: EXIT_DB_MISSING,
  foreign: EXIT_DB_FOREIGN,
  damaged: EXIT_DB_DAMAGED,
  'read-only': EXIT_DB_READ_ONLY,
};

/**
 * The CliError for an error that is about the database (see database-errors.ts), or null.
 * `databaseUrl` names it in the message (password hidden) when the error does not already.
 */
export function databaseFailure(error: unknown, databaseUrl?: string): CliError | null {
  const problem = classifyDatabaseError(error);
  if (problem === null) return null;
  if (error instanceof DatabaseError) return new CliError(firstLine(error.message, 400), EXIT_CODES[problem]);
  const which = databaseUrl === undefined ? 'the database' : `the database ${redactDatabaseUrl(databaseUrl)}`;
  const detail = firstLine((error as Error).message);
  const message = problem === 'read-only'
    ? `${which} does not accept writes (${detail}); check the file's permissions and its file system, or the server's read-only mode`
    : problem === 'damaged'
      ? `${which} is damaged (${detail}); restore it from a backup`
      : `${which}: ${detail}`;
  return new CliError(message, EXIT_CODES[problem]);
}

/** openStore for a command: a missing database is refused unless `create`; failures become CliErrors. */
export async function openCliStore(databaseUrl: string, options: OpenStoreOptions & { readonly create: boolean }, verb = 'open'): Promise<Store> {
  try {
    return await openStore(databaseUrl, options);
  } catch (error) {
    throw databaseFailure(error, databaseUrl) ?? new CliError(`cannot ${verb} the database ${redactDatabaseUrl(databaseUrl)}: ${firstLine((error as Error).message, 400)}`);
  }
}

/** Opens an existing database, runs `fn`, closes it; database failures inside `fn` are reported as such too. */
export async function withExistingStore<T>(databaseUrl: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openCliStore(databaseUrl, { create: false });
  try {
    return await fn(store);
  } catch (error) {
    throw databaseFailure(error, databaseUrl) ?? error;
  } finally {
    await store.close();
  }
}
