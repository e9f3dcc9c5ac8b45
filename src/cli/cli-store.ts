/**
 * What every CLI command shares: `--db` and the configuration flags, the configuration it runs
 * with, and `withStore`. How a command opens the database and what it says when the database is
 * the problem is in open-cli-store.ts (re-exported here).
 */
import { Option, type Command } from 'commander';
import { DEFAULT_DATABASE_URL, type Config, type ConfigFlags } from '../config/config.js';
import { ConfigError } from '../config/config-error.js';
import { loadConfig } from '../config/load-config.js';
import type { Store } from '../store/store.js';
import { CliError, EXIT_USAGE, type CliIo } from './cli-io.js';
import { withExistingStore } from './open-cli-store.js';

// Where a command opens the database, apart so that a `serve --workers` worker, which gets its
// configuration from the primary, loads neither commander nor the configuration's loader.
export { databaseFailure, openCliStore, withExistingStore } from './open-cli-store.js';

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
export function cliConfig(io: CliIo, flags: ConfigFlags, workers?: number): Config {
  try {
    return loadConfig({ flags, env: io.env, ...(workers !== undefined && { workers }) });
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
