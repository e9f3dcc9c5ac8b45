/**
 * Operator commands:
 *   svcapi-auth config print [flags]      the effective configuration as JSON, secrets hidden
 *   svcapi-auth backup <file>             online backup of a SQLite database (PostgreSQL: pg_dump)
 *   svcapi-auth restore <file>            put a backup in place of the database, service stopped
 * (`config print` takes every configuration flag `serve` takes: cli-store.ts addConfigFlagOptions).
 */
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Command } from 'commander';
import type { Config, ConfigFlags } from '../config/config.js';
import { parseDatabaseUrl } from '../store/open-store.js';
import { LATEST_SCHEMA_VERSION } from '../store/migrations/store-migrations.js';
import { DatabaseError } from '../store/database-errors.js';
import { inspectSqliteFile, prepareSqliteFile } from '../store/sqlite/sqlite-store.js';
import { CliError, type CliIo } from './cli-io.js';
import { addConfigFlagOptions, cliConfig, configFileOption, dbOption } from './cli-store.js';

// --- secrets in the printed configuration ---

const SECRET_PARAMS = /^(password|passwd|pass|pwd|secret|token|sslpassword|sslkey)$/i;

/** A database URL with its password (userinfo, and password-like query parameters) replaced by ***. */
export function redactUrl(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  if (scheme === null) return url; // sqlite:path, plain paths: nothing secret
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    for (const name of [...parsed.searchParams.keys()]) if (SECRET_PARAMS.test(name)) parsed.searchParams.set(name, '***');
    return parsed.toString();
  } catch {
    // Not parseable as a URL: hide everything between "://" and "@" to be safe.
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1***@');
  }
}

/**
 * The configuration as `config print` shows it: every URL-valued setting (databaseUrl, legacy.url,
 * any added later) with its password hidden.
 */
export function printableConfig(config: Config): Record<string, unknown> {
  const hide = (value: unknown): unknown => {
    if (typeof value === 'string') return redactUrl(value);
    if (Array.isArray(value)) return value.map(hide);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hide(v)]));
    return value;
  };
  return hide(config) as Record<string, unknown>;
}

// --- SQLite backup and restore ---

function sqlitePath(config: Config, verb: 'backup' | 'restore'): string {
  const location = parseDatabaseUrl(config.databaseUrl);
  if (location.kind === 'postgres') {
    throw new CliError(verb === 'backup'
      ? `backup copies SQLite databases; for PostgreSQL use pg_dump, e.g.\n  pg_dump --format=custom --file=svcapi-auth.dump '${redactUrl(location.url)}'\n(add --schema=<name> if the URL sets ?schema=)`
      : `restore puts back SQLite backups; for PostgreSQL use pg_restore, e.g.\n  pg_restore --clean --if-exists --dbname='${redactUrl(location.url)}' svcapi-auth.dump`);
  }
  if (location.path === ':memory:') throw new CliError(`an in-memory database has nothing to ${verb}`);
  return location.path;
}


/**
 * Checks a SQLite file is sound and is an svcapi-auth database (the rule the store opens files
 * by: PRAGMA quick_check, then schema-identity.ts), reading it only; returns its schema version.
 * A failure is a DatabaseError (exit codes 3-5) naming `what`.
 */
function checkDatabaseFile(path: string, what: string): number {
  try {
    prepareSqliteFile({ path, create: false });
  } catch (error) {
    if (error instanceof DatabaseError) throw new DatabaseError(error.problem, `${what}: ${error.message}`);
    throw new CliError(`cannot read ${what} ${path}: ${(error as Error).message}`);
  }
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return Number((db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number }).v);
  } catch (error) {
    throw new CliError(`cannot read ${what} ${path}: ${(error as Error).message}`);
  } finally {
    db.close();
  }
}

/** An empty file only its owner can read, for a copy of the database (it holds password hashes). */
function createPrivateFile(path: string): void {
  closeSync(openSync(path, 'wx', 0o600));
}

/**
 * Whether another connection (a running `serve`, an admin command) has the database open. In WAL
 * mode every open connection holds a shared lock that stops a switch out of WAL, so the attempt
 * fails at once with SQLITE_BUSY when anybody else is connected. (If nobody is, the switch
 * happens: harmless, the file is about to be replaced and `serve` sets WAL again.)
 */
function assertNotInUse(path: string): void {
  const db = new Database(path, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('journal_mode = DELETE');
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY' || /locked|busy/i.test((error as Error).message)) {
      throw new CliError(`the database ${path} is in use (is svcapi-auth serve running?); stop the service first, then restore`);
    }
    throw error;
  } finally {
    db.close();
  }
}

export async function backupSqlite(config: Config, target: string, options: { readonly force?: boolean } = {}): Promise<{ source: string; target: string; bytes: number; schemaVersion: number }> {
  const source = sqlitePath(config, 'backup');
  const file = resolve(target);
  if (existsSync(file) && options.force !== true) throw new CliError(`${file} exists; choose another name or add --force to overwrite it`);
  if (file === source) throw new CliError('the backup file cannot be the database itself');
  // A mistyped target directory is refused rather than created.
  if (!existsSync(dirname(file))) throw new CliError(`the directory ${dirname(file)} does not exist; create it first (it should be readable by its owner only)`);
  // Missing, damaged or another application's database: refused (exit 3-5) before any copy.
  checkDatabaseFile(source, 'the database to back up');
  const partial = `${file}.partial-${process.pid}`;
  const db = new Database(source, { fileMustExist: true });
  try {
    // 0600 before the first byte: SQLite writes the copy into this file, keeping its mode.
    createPrivateFile(partial);
    // SQLite's online backup: a consistent snapshot while the service keeps serving and writing.
    await db.backup(partial);
  } catch (error) {
    rmSync(partial, { force: true });
    throw new CliError(`backup of ${source} failed: ${(error as Error).message}`);
  } finally {
    db.close();
  }
  try {
    // One self-contained file (rollback journal, not WAL), checked before it takes the final name.
    const copy = new Database(partial, { fileMustExist: true });
    try {
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    const schemaVersion = checkDatabaseFile(partial, 'the backup');
    renameSync(partial, file);
    return { source, target: file, bytes: statSync(file).size, schemaVersion };
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
}

export async function restoreSqlite(config: Config, backupFile: string): Promise<{ target: string; previous: string | null; schemaVersion: number }> {
  const target = sqlitePath(config, 'restore');
  const file = resolve(backupFile);
  if (!existsSync(file)) throw new CliError(`there is no backup file at ${file}`);
  if (file === target) throw new CliError('the backup file is the database itself');
  const schemaVersion = checkDatabaseFile(file, 'the backup');
  if (schemaVersion > LATEST_SCHEMA_VERSION) {
    throw new CliError(`the backup has schema version ${schemaVersion}, newer than this svcapi-auth knows (${LATEST_SCHEMA_VERSION}); restore it with a newer svcapi-auth`);
  }
  let previous: string | null = null;
  if (existsSync(target)) {
    // Replacing a damaged database is what restore is for; replacing another application's is not.
    try {
      const verdict = inspectSqliteFile(target, false);
      if (verdict.kind === 'foreign') throw new DatabaseError('foreign', `${target} is not an svcapi-auth database: ${verdict.reason}; it was left untouched (choose the right --db)`);
    } catch (error) {
      if (!(error instanceof DatabaseError) || error.problem !== 'damaged') throw error;
    }
    assertNotInUse(target);
    // The database being replaced is kept beside it, in case the wrong backup was chosen.
    previous = `${target}.before-restore`;
    rmSync(previous, { force: true });
    createPrivateFile(previous);
    const current = new Database(target, { fileMustExist: true, timeout: 0 });
    try {
      await current.backup(previous);
    } finally {
      current.close();
    }
  } else {
    // Restoring onto a new machine creates the database, private like any other: 0700, 0600.
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    createPrivateFile(target);
  }
  const source = new Database(file, { readonly: true, fileMustExist: true });
  try {
    // Page by page, in one transaction on the destination: a failure leaves the database as it was.
    await source.backup(target);
  } catch (error) {
    throw new CliError(`restore into ${target} failed: ${(error as Error).message}`);
  } finally {
    source.close();
  }
  return { target, previous, schemaVersion: checkDatabaseFile(target, 'the restored database') };
}

// --- commands ---

export function registerOpsCommands(program: Command, io: CliIo): void {
  const config = program.command('config').description('show the configuration');
  addConfigFlagOptions(config.command('print')
    .description('print the effective configuration (defaults < config file < environment < flags) as JSON, secrets hidden'))
    .action((options: ConfigFlags) => {
      io.stdout.write(`${JSON.stringify(printableConfig(cliConfig(io, options)), null, 2)}\n`);
    });

  program.command('backup')
    .description('copy the SQLite database to <file> while the service runs (online backup); for PostgreSQL use pg_dump')
    .argument('<file>', 'backup file to write')
    .option('--force', 'overwrite <file> if it exists')
    .addOption(dbOption())
    .addOption(configFileOption())
    .action(async (target: string, options: { force?: boolean; db?: string; config?: string }) => {
      const done = await backupSqlite(cliConfig(io, { db: options.db, config: options.config }), target, { force: options.force === true });
      io.stdout.write(`Backed up ${done.source} (schema version ${done.schemaVersion}) to ${done.target} (${done.bytes} bytes)\n`);
    });

  program.command('restore')
    .description('replace the SQLite database with a backup; the service must be stopped (refused while the database is in use)')
    .argument('<file>', 'backup file written by svcapi-auth backup')
    .addOption(dbOption())
    .addOption(configFileOption())
    .action(async (file: string, options: { db?: string; config?: string }) => {
      const done = await restoreSqlite(cliConfig(io, { db: options.db, config: options.config }), file);
      io.stdout.write(`Restored ${resolve(file)} into ${done.target} (schema version ${done.schemaVersion})\n`);
      if (done.previous !== null) io.stdout.write(`The database it replaced is kept as ${done.previous}\n`);
      io.stdout.write('Start the service again (it applies any newer schema migrations on start).\n');
    });
}
