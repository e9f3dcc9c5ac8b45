/**
 * How CLI commands open the database, and what they say when the database is the problem: one
 * line naming it and what to do, and an exit code per condition (cli-io.ts), never a stack trace.
 *
 * Only `migrate` and `serve` create a database (`create: true`); every other command refuses a
 * missing one, so a mistyped --db does not leave an empty database (and its directories) behind.
 */
import { Option, type Command } from 'commander';
import { DEFAULT_DATABASE_URL, type Config, type ConfigFlags } from '../config/config.js';
import { ConfigError } from '../config/config-error.js';
import { loadConfig } from '../config/load-config.js';
import { classifyDatabaseError, DatabaseError, firstLine, type DatabaseProblem } from '../store/database-errors.js';
import { openStore, redactDatabaseUrl, type OpenStoreOptions } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { CliError, EXIT_DB_DAMAGED, EXIT_DB_FOREIGN, EXIT_DB_MISSING, EXIT_DB_READ_ONLY, EXIT_USAGE, type CliIo } from './cli-io.js';

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

/** `--db <url>`, the same option on every command that uses the database. */
export const dbOption = (): Option => new Option('--db <url>', `database URL (env DATABASE_URL; default ${DEFAULT_DATABASE_URL})`);

/** `--config <path>`, on every command that reads the configuration file. */
export const configFileOption = (): Option => new Option('--config <path>', 'configuration file, JSON or YAML (env SVCAPI_CONFIG); flags and environment override it');

/**
 * Every flag that sets configuration (ConfigFlags), one option each, in the order `serve --help`
 * lists them: `serve` and `config print` take the same ones.
 */
const CONFIG_FLAG_OPTIONS: { readonly [K in keyof Required<ConfigFlags>]: () => Option } = {
  host: () => new Option('--host <host>', 'address to listen on (env SVCAPI_HOST; default 127.0.0.1)'),
  port: () => new Option('--port <port>', 'port to listen on, 0 for any free port (env SVCAPI_PORT; default 8080)'),
  db: dbOption,
  logLevel: () => new Option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env SVCAPI_LOG_LEVEL; default info)'),
  timeZone: () => new Option('--time-zone <zone>', 'IANA zone whose UTC offset WhatsNew DateTimes carry (env SVCAPI_TIME_ZONE; default the machine\'s)'),
  config: configFileOption,
  logPretty: () => new Option('--log-pretty', 'human-readable colourised log lines instead of JSON (env SVCAPI_LOG_PRETTY)'),
  logFile: () => new Option('--log-file <file>', 'write log lines to this file instead of standard output, reopened on SIGHUP (env SVCAPI_LOG_FILE)'),
  trustedProxies: () => new Option('--trusted-proxies <list>', 'comma-separated IPs/CIDRs of reverse proxies whose X-Forwarded-For is believed (env SVCAPI_TRUSTED_PROXIES; default none)'),
  managementHost: () => new Option('--management-host <host>', 'address of the health/metrics listener (env SVCAPI_MANAGEMENT_HOST; default 127.0.0.1)'),
  managementPort: () => new Option('--management-port <port>', 'port of the health/metrics listener, 0 for any free port, off to disable (env SVCAPI_MANAGEMENT_PORT; default 9464)'),
  tlsCert: () => new Option('--tls-cert <file>', 'serve HTTPS (TLS 1.2+) with this PEM certificate chain (env SVCAPI_TLS_CERT; needs --tls-key)'),
  tlsKey: () => new Option('--tls-key <file>', 'the PEM private key of --tls-cert (env SVCAPI_TLS_KEY)'),
  auditRetentionDays: () => new Option('--audit-retention-days <days>', 'purge audit events older than this, 0 to keep them (env SVCAPI_AUDIT_RETENTION_DAYS; default 90)'),
  compat: () => new Option('--compat <file>', 'answer as the legacy service did: a compatibility profile (JSON; env SVCAPI_COMPAT; docs/compat-profile.md)'),
};

/** Adds every configuration flag to `command`. */
export function addConfigFlagOptions(command: Command): Command {
  for (const option of Object.values(CONFIG_FLAG_OPTIONS)) command.addOption(option());
  return command;
}

/** The configuration a command runs with (defaults < file < environment < flags, config/load-config.ts); a bad one is a usage error. */
export function cliConfig(io: CliIo, flags: ConfigFlags): Config {
  try {
    return loadConfig({ flags, env: io.env });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message, EXIT_USAGE);
    throw error;
  }
}

/** Opens the existing database named by --db / DATABASE_URL (withExistingStore), runs `fn` with it and the configuration. */
export async function withStore<T>(io: CliIo, db: string | undefined, fn: (store: Store, config: Config) => Promise<T>): Promise<T> {
  const config = cliConfig(io, { db });
  return withExistingStore(config.databaseUrl, (store) => fn(store, config));
}
