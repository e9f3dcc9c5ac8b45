import { parseDatabaseUrl } from './store/open-store.js';

/**
 * The service's configuration: defaults, then the environment, then command-line flags, checked
 * once at start-up (a bad value stops the process with a message naming it) and frozen.
 */

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface Config {
  readonly host: string;
  readonly port: number;
  /** `sqlite:<path>`, `sqlite::memory:` (later `postgres://...`). */
  readonly databaseUrl: string;
  readonly http: {
    /** Largest request body accepted, in bytes. */
    readonly maxRequestBytes: number;
    /** How long a client may take to send its body. */
    readonly bodyTimeoutMs: number;
  };
  /** IANA zone used to write DateTime offsets in WhatsNew, as the legacy server's local time did. */
  readonly timeZone: string;
  readonly tickets: {
    /** Lifetime of a GetUserLoginURL ticket. */
    readonly ttlSeconds: number;
  };
  readonly logLevel: LogLevel;
}

/** Command-line flags as commander hands them over (strings, or numbers once parsed). */
export interface ConfigFlags {
  readonly host?: string;
  readonly port?: string | number;
  /** `--db` */
  readonly db?: string;
  readonly timeZone?: string;
  readonly logLevel?: string;
}

export interface LoadConfigInput {
  readonly flags?: ConfigFlags;
  readonly env?: NodeJS.ProcessEnv;
}

export class ConfigError extends Error {
  constructor(readonly key: string, message: string) {
    super(`invalid configuration ${key}: ${message}`);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/svcapi-auth.db';

function defaultTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** The first value that is set: flag, then environment variable, then default; with its key for messages. */
function pick(flag: string | number | undefined, flagName: string, env: NodeJS.ProcessEnv, envName: string): { value: string; key: string } | undefined {
  if (flag !== undefined) return { value: String(flag), key: flagName };
  const fromEnv = env[envName];
  if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, key: envName };
  return undefined;
}

function integer(source: { value: string; key: string } | undefined, fallback: number, min: number, max: number): number {
  if (source === undefined) return fallback;
  const text = source.value.trim();
  if (!/^\d+$/.test(text)) throw new ConfigError(source.key, `expected a whole number from ${min} to ${max}, got ${JSON.stringify(source.value)}`);
  const n = Number(text);
  if (n < min || n > max) throw new ConfigError(source.key, `expected a whole number from ${min} to ${max}, got ${n}`);
  return n;
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function loadConfig(input: LoadConfigInput = {}): Config {
  const flags = input.flags ?? {};
  const env = input.env ?? {};

  const hostSource = pick(flags.host, '--host', env, 'SVCAPI_HOST');
  const host = (hostSource?.value ?? '127.0.0.1').trim();
  if (host === '' || /\s/.test(host)) throw new ConfigError(hostSource?.key ?? 'host', `expected a host name or address, got ${JSON.stringify(hostSource?.value)}`);

  // 0 asks the OS for a free port (tests); `serve` prints the one it got.
  const port = integer(pick(flags.port, '--port', env, 'SVCAPI_PORT'), 8080, 0, 65535);

  const dbSource = pick(flags.db, '--db', env, 'DATABASE_URL');
  const databaseUrl = (dbSource?.value ?? DEFAULT_DATABASE_URL).trim();
  try {
    parseDatabaseUrl(databaseUrl);
  } catch (error) {
    throw new ConfigError(dbSource?.key ?? 'databaseUrl', (error as Error).message);
  }

  const maxRequestBytes = integer(pick(undefined, '', env, 'SVCAPI_MAX_REQUEST_BYTES'), 1_048_576, 1024, 1024 * 1024 * 1024);
  const bodyTimeoutMs = integer(pick(undefined, '', env, 'SVCAPI_BODY_TIMEOUT_MS'), 10_000, 100, 600_000);

  const zoneSource = pick(flags.timeZone, '--time-zone', env, 'SVCAPI_TIME_ZONE');
  const timeZone = zoneSource?.value.trim() ?? defaultTimeZone();
  if (!isTimeZone(timeZone)) throw new ConfigError(zoneSource?.key ?? 'timeZone', `not an IANA time zone: ${JSON.stringify(timeZone)}`);

  const ttlSeconds = integer(pick(undefined, '', env, 'SVCAPI_TICKET_TTL_SECONDS'), 120, 1, 86_400);

  const levelSource = pick(flags.logLevel, '--log-level', env, 'SVCAPI_LOG_LEVEL');
  const logLevel = (levelSource?.value.trim().toLowerCase() ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(levelSource?.key ?? 'logLevel', `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(levelSource?.value)}`);

  return deepFreeze({
    host,
    port,
    databaseUrl,
    http: { maxRequestBytes, bodyTimeoutMs },
    timeZone,
    tickets: { ttlSeconds },
    logLevel,
  });
}
