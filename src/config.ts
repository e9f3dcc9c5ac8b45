import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { CompatProfileError, readCompatProfile } from './compat-profile-file.js';
import { DEFAULT_COMPAT_PROFILE, type CompatProfile } from './contract/compat-profile.js';
import { ConfigFileError, readConfigFile, type ConfigFileLayer, type SettingSource } from './config-file.js';
import { OPERATIONS } from './contract/operations.js';
import { defaultHashingLimits } from './domain/bounded-hasher.js';
import { parseDatabaseUrl } from './store/database-url.js';
import { DEFAULT_THROTTLE_POLICY, type ThrottlePolicy } from './domain/login-throttle.js';

/**
 * The service's configuration: defaults, then a config file (`--config` / SVCAPI_CONFIG, JSON or
 * YAML: config-file.ts), then the environment, then command-line flags, checked once at start-up
 * (a bad value stops the process with a message naming it) and frozen. Every setting is listed
 * in docs/configuration.md.
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
    /** Operations offered over HTTP GET (it puts passwords in URLs): all, none, or a list. */
    readonly httpGet: boolean | readonly string[];
  };
  /**
   * Password hashing capacity: more concurrent work than this fails fast with "Server
   * too busy". `nice`: the CPU priority of the threads that hash (Linux; 0 = as the process),
   * so that logins hold back token checks less (src/ops/hashing-priority.ts).
   */
  readonly hashing: { readonly maxConcurrent: number; readonly maxQueued: number; readonly nice: number };
  /** IANA zone used to write DateTime offsets in WhatsNew, as the legacy server's local time did. */
  readonly timeZone: string;
  readonly tickets: {
    /** Lifetime of a GetUserLoginURL ticket. */
    readonly ttlSeconds: number;
  };
  readonly logLevel: LogLevel;
  /** Human-readable colourised logs instead of JSON lines (for a terminal). */
  readonly logPretty: boolean;
  /** Log lines go to this file instead of standard output (`--log-file`; reopened on SIGHUP). */
  readonly logFile: string | null;
  /** The log buffer is written out this often (ms); 0 writes every line at once. */
  readonly logFlushMs: number;
  /** The access line from a template (ops/access-log.ts); false writes it through logger.info. */
  readonly accessLogFast: boolean;
  /**
   * Speed-ups that can be switched off (docs/architecture.md, "Caches and fast paths"): session
   * tokens and WhatsNew answers kept in memory (entries; 0 reads the store every time), and the
   * SOAP request shape memo.
   */
  readonly performance: { readonly tokenCacheEntries: number; readonly newsCacheEntries: number; readonly shapeMemo: boolean; readonly shadowPipelining: boolean; readonly shadowByteCompare: boolean; readonly shadowBatching: boolean; readonly groupCommit: boolean; readonly sqliteMmapMiB: number };
  /**
   * Addresses / CIDRs (or proxy-addr's names loopback, linklocal, uniquelocal) of reverse proxies
   * whose X-Forwarded-For / X-Forwarded-Proto are believed; empty: none, the socket peer is the source.
   */
  readonly trustedProxies: readonly string[];
  /** The health and metrics listener, never the public one; `port: null` turns it off. */
  readonly management: { readonly host: string; readonly port: number | null };
  /** The admin console under /admin/ on the management listener (src/console). */
  readonly console: { readonly enabled: boolean; readonly idleTimeoutMs: number; readonly absoluteTimeoutMs: number };
  readonly shutdown: {
    /** On SIGTERM, how long readiness reports 503 while still serving, so a load balancer drains. */
    readonly drainDelayMs: number;
    /** How long requests in flight may take to finish before connections are cut. */
    readonly timeoutMs: number;
  };
  readonly housekeeping: {
    readonly intervalMs: number;
    /** Rows deleted per short transaction, at most. */
    readonly batchSize: number;
    /** How long one batch should take (ms): its rows are scaled to fit; 0 always deletes batchSize rows. */
    readonly batchBudgetMs: number;
    /** Expired tokens and tickets are kept this long after expiry (for investigation), then deleted. */
    readonly tokenRetentionMs: number;
  };
  /** The config file that was read (absolute path), if any. */
  readonly configFile: string | null;
  /**
   * The old Authentication.asmx: lazy migration asks it about logins unknown here; url
   * null: off. The shadow and front modes (docs/cutover.md "Front and shadow") compare its
   * answers with ours, or let it answer.
   */
  readonly legacy: {
    readonly url: string | null;
    readonly timeoutMs: number;
    readonly allowInsecure: boolean;
    /** PEM file of the certificate(s) trusted for an https legacy.url instead of Node's bundled roots. */
    readonly caFile: string | null;
    /**
     * Token passthrough (docs/cutover.md#passthrough): tokens unknown here are asked of the old
     * service until this instant (ISO 8601, UTC); null: off.
     */
    readonly tokenPassthroughUntil: string | null;
    readonly passthroughCacheSeconds: number;
    readonly passthroughNegativeCacheSeconds: number;
    /**
     * Token adoption (docs/cutover.md#adoption): a token passthrough vouched for is stored here
     * when the old service's ValidateUserTokenJSON names its owner and expiry; false: never.
     */
    readonly adoptTokens: boolean;
    /** Calls to the old service's token operations in flight at most. */
    readonly maxConcurrent: number;
    /** Whole ValidateUserToken / GetUserLoginURL call to the old service. */
    readonly tokenTimeoutMs: number;
    /** Consecutive failures that open the circuit breaker, and how long it stays open. */
    readonly circuitFailures: number;
    readonly circuitCooldownMs: number;
    /** `serve`: svcapi-auth answers; `front`: the old service answers (all operations, or `frontOperations`). */
    readonly mode: 'serve' | 'front';
    /** Front mode: the operations the old service answers; empty: every request. */
    readonly frontOperations: readonly string[];
    readonly shadow: {
      /** Share of requests compared with the old service, 0 to 1 (default 0 in serve mode, 1 in front mode). */
      readonly rate: number;
      /** Comparisons waiting at most; one more is dropped and counted. */
      readonly queue: number;
      /** Comparisons (and requests to the old service for them) at a time. */
      readonly concurrency: number;
      /** Differences kept in the store for `compat shadow-report`. */
      readonly keep: number;
      /** Serve mode: ValidateUser(JSON) and GetUserLoginURL are sent to the old service too (they change its state). */
      readonly stateful: boolean;
      /** Largest answer of the old service read, in bytes. */
      readonly maxResponseBytes: number;
      /** Share of the event loop shadow work may use over the last second (src/compat/shadow-budget.ts); 1: no limit. */
      readonly cpuShare: number;
    };
  };
  /** Brute-force protection of ValidateUser (docs/security.md#brute-force-protection); `enabled: false` turns it off. */
  readonly bruteForce: ThrottlePolicy & { readonly enabled: boolean };
  /** Audit trail: events older than this many days are purged by housekeeping; 0 keeps them. */
  readonly audit: { readonly retentionDays: number };
  /** HTTPS on the public listener: PEM certificate chain and key files; both null: plain HTTP. */
  readonly tls: { readonly certFile: string | null; readonly keyFile: string | null };
  /**
   * The compatibility profile (`--compat FILE`, SVCAPI_COMPAT, `compat.profile`;
   * docs/compat-profile.md): the default profile unless a file is given, read and checked here.
   */
  readonly compat: { readonly file: string | null; readonly profile: CompatProfile };
}

/** Command-line flags as commander hands them over (strings, or numbers once parsed). */
export interface ConfigFlags {
  readonly host?: string;
  readonly port?: string | number;
  /** `--db` */
  readonly db?: string;
  readonly timeZone?: string;
  readonly logLevel?: string;
  /** `--config <path>` */
  readonly config?: string;
  readonly logPretty?: boolean;
  readonly logFile?: string;
  readonly trustedProxies?: string;
  readonly managementHost?: string;
  readonly managementPort?: string | number;
  readonly auditRetentionDays?: string | number;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly compat?: string;
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

/** The first value that is set: flag, then environment variable, then config file, then default; with its key for messages. */
/** localhost, 127.0.0.0/8 or ::1 (a URL's hostname, IPv6 in brackets). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function pick(flag: string | number | boolean | undefined, flagName: string, env: NodeJS.ProcessEnv, envName: string, fromFile?: SettingSource): SettingSource | undefined {
  if (flag !== undefined) return { value: String(flag), key: flagName };
  const fromEnv = env[envName];
  if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, key: envName };
  if (fromFile !== undefined && fromFile.value.trim() !== '') return fromFile;
  return undefined;
}

function boolean(source: SettingSource | undefined, fallback: boolean): boolean {
  if (source === undefined) return fallback;
  const text = source.value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(text)) return true;
  if (['false', '0', 'no', 'off'].includes(text)) return false;
  throw new ConfigError(source.key, `expected true or false, got ${JSON.stringify(source.value)}`);
}

function hostSetting(source: SettingSource | undefined, fallback: string, name: string): string {
  const host = (source?.value ?? fallback).trim();
  if (host === '' || /\s/.test(host)) throw new ConfigError(source?.key ?? name, `expected a host name or address, got ${JSON.stringify(source?.value)}`);
  return host;
}

/** proxy-addr's names (@fastify/proxy-addr, used by src/http/app.ts) for address ranges. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** A comma- or space-separated list of IP addresses and CIDR ranges, checked one by one. */
function proxyList(source: SettingSource | undefined): string[] {
  if (source === undefined) return [];
  const entries = source.value.split(/[\s,]+/).filter((e) => e !== '');
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.includes(entry) || isIP(entry) !== 0) continue;
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const valid = family !== 0 && rest.length === 0 && bits !== undefined && /^\d{1,3}$/.test(bits) && Number(bits) <= max;
    if (valid) continue;
    throw new ConfigError(source.key, `expected IP addresses or CIDR ranges (like 10.0.0.5 or 10.0.0.0/8), got ${JSON.stringify(entry)}`);
  }
  return entries;
}

/** `true`/`false` (also on/off, yes/no), or a comma-separated list of operation names. */
function httpGetSetting(source: SettingSource | undefined): boolean | string[] {
  if (source === undefined) return true;
  const text = source.value.trim();
  const lower = text.toLowerCase();
  if (['true', 'on', 'yes', '1'].includes(lower)) return true;
  if (['false', 'off', 'no', '0', ''].includes(lower)) return false;
  const names = text.split(/[\s,]+/).filter((n) => n !== '');
  const known: readonly string[] = OPERATIONS.map((op) => op.name);
  const bad = names.find((n) => !known.includes(n));
  if (bad !== undefined) throw new ConfigError(source.key, `expected true, false or operation names (${known.join(', ')}), got ${JSON.stringify(bad)}`);
  return names;
}

function integer(source: { value: string; key: string } | undefined, fallback: number, min: number, max: number): number {
  if (source === undefined) return fallback;
  const text = source.value.trim();
  if (!/^\d+$/.test(text)) throw new ConfigError(source.key, `expected a whole number from ${min} to ${max}, got ${JSON.stringify(source.value)}`);
  const n = Number(text);
  if (n < min || n > max) throw new ConfigError(source.key, `expected a whole number from ${min} to ${max}, got ${n}`);
  return n;
}

/** A decimal from 0 to 1 (a share), e.g. 0.05. */
function fraction(source: SettingSource | undefined, fallback: number): number {
  if (source === undefined) return fallback;
  const text = source.value.trim();
  const n = /^(0|1|0?\.\d+|1\.0*)$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 1)) throw new ConfigError(source.key, `expected a share from 0 to 1 (like 0.05), got ${JSON.stringify(source.value)}`);
  return n;
}

/**
 * `off` (also false, no), or the instant passthrough ends: an ISO 8601 date and time with its
 * offset (`2027-03-31T23:59:59Z`, `2027-03-31T23:59:59+02:00`). A date alone or a time without
 * an offset is refused: whose midnight, which zone, would be a guess.
 */
export function passthroughUntil(source: SettingSource | undefined): string | null {
  if (source === undefined) return null;
  const text = source.value.trim();
  if (['off', 'false', 'no', '0'].includes(text.toLowerCase())) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.exec(text);
  const expected = 'expected off, or the end of passthrough as an ISO 8601 date and time with its offset, like 2027-03-31T23:59:59Z';
  if (m === null) throw new ConfigError(source.key, `${expected}, got ${JSON.stringify(source.value)}`);
  const [year, month, day, hour, minute, second = '00'] = m.slice(1, 7).map((v) => v ?? '00') as [string, string, string, string, string, string];
  // Date.parse rolls 2027-02-30 over into March: the fields must survive the round trip.
  const probe = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)));
  const exists = probe.getUTCFullYear() === Number(year) && probe.getUTCMonth() === Number(month) - 1 && probe.getUTCDate() === Number(day)
    && probe.getUTCHours() === Number(hour) && probe.getUTCMinutes() === Number(minute) && probe.getUTCSeconds() === Number(second);
  const ms = Date.parse(text);
  if (!exists || !Number.isFinite(ms)) throw new ConfigError(source.key, `no such date and time: ${JSON.stringify(source.value)}`);
  return new Date(ms).toISOString();
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

  const configSource = pick(flags.config, '--config', env, 'SVCAPI_CONFIG');
  let file: ConfigFileLayer | undefined;
  if (configSource !== undefined) {
    try {
      file = readConfigFile(configSource.value.trim());
    } catch (error) {
      if (error instanceof ConfigFileError) throw new ConfigError(error.key ?? configSource.key, error.reason);
      throw error;
    }
  }
  /** The file's value for a dotted key (marking it as a known key). */
  const fromFile = (key: string): SettingSource | undefined => {
    try {
      return file?.take(key);
    } catch (error) {
      if (error instanceof ConfigFileError) throw new ConfigError(error.key ?? key, error.reason);
      throw error;
    }
  };

  const hostSource = pick(flags.host, '--host', env, 'SVCAPI_HOST', fromFile('host'));
  const host = (hostSource?.value ?? '127.0.0.1').trim();
  if (host === '' || /\s/.test(host)) throw new ConfigError(hostSource?.key ?? 'host', `expected a host name or address, got ${JSON.stringify(hostSource?.value)}`);

  // 0 asks the OS for a free port (tests); `serve` prints the one it got.
  const port = integer(pick(flags.port, '--port', env, 'SVCAPI_PORT', fromFile('port')), 8080, 0, 65535);

  const dbSource = pick(flags.db, '--db', env, 'DATABASE_URL', fromFile('databaseUrl'));
  const databaseUrl = (dbSource?.value ?? DEFAULT_DATABASE_URL).trim();
  try {
    parseDatabaseUrl(databaseUrl);
  } catch (error) {
    throw new ConfigError(dbSource?.key ?? 'databaseUrl', (error as Error).message);
  }

  const maxRequestBytes = integer(pick(undefined, '', env, 'SVCAPI_MAX_REQUEST_BYTES', fromFile('http.maxRequestBytes')), 1_048_576, 1024, 1024 * 1024 * 1024);
  const bodyTimeoutMs = integer(pick(undefined, '', env, 'SVCAPI_BODY_TIMEOUT_MS', fromFile('http.bodyTimeoutMs')), 10_000, 100, 600_000);
  const httpGet = httpGetSetting(pick(undefined, '', env, 'SVCAPI_HTTP_GET', fromFile('http.httpGet')));
  const hashingDefaults = defaultHashingLimits();
  const hashing = {
    maxConcurrent: integer(pick(undefined, '', env, 'SVCAPI_HASHING_MAX_CONCURRENT', fromFile('hashing.maxConcurrent')), hashingDefaults.maxConcurrent, 1, 256),
    maxQueued: integer(pick(undefined, '', env, 'SVCAPI_HASHING_MAX_QUEUED', fromFile('hashing.maxQueued')), hashingDefaults.maxQueued, 0, 100_000),
    nice: integer(pick(undefined, '', env, 'SVCAPI_HASHING_NICE', fromFile('hashing.nice')), 10, 0, 19),
  };

  const zoneSource = pick(flags.timeZone, '--time-zone', env, 'SVCAPI_TIME_ZONE', fromFile('timeZone'));
  const timeZone = zoneSource?.value.trim() ?? defaultTimeZone();
  if (!isTimeZone(timeZone)) throw new ConfigError(zoneSource?.key ?? 'timeZone', `not an IANA time zone: ${JSON.stringify(timeZone)}`);

  const ttlSeconds = integer(pick(undefined, '', env, 'SVCAPI_TICKET_TTL_SECONDS', fromFile('tickets.ttlSeconds')), 120, 1, 86_400);

  const levelSource = pick(flags.logLevel, '--log-level', env, 'SVCAPI_LOG_LEVEL', fromFile('logLevel'));
  const logLevel = (levelSource?.value.trim().toLowerCase() ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(levelSource?.key ?? 'logLevel', `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(levelSource?.value)}`);

  // --- operations: logs, proxies, management listener, shutdown, housekeeping ---
  const logPretty = boolean(pick(flags.logPretty, '--log-pretty', env, 'SVCAPI_LOG_PRETTY', fromFile('logPretty')), false);
  const logFileSource = pick(flags.logFile, '--log-file', env, 'SVCAPI_LOG_FILE', fromFile('logFile'));
  const logFile = logFileSource === undefined ? null : resolve(logFileSource.value.trim());
  const accessLogFast = boolean(pick(undefined, '', env, 'SVCAPI_ACCESS_LOG_FAST', fromFile('accessLogFast')), true);
  const logFlushMs = integer(pick(undefined, '', env, 'SVCAPI_LOG_FLUSH_MS', fromFile('logFlushMs')), 250, 0, 10_000);
  const trustedProxies = proxyList(pick(flags.trustedProxies, '--trusted-proxies', env, 'SVCAPI_TRUSTED_PROXIES', fromFile('trustedProxies')));
  const managementHost = hostSetting(pick(flags.managementHost, '--management-host', env, 'SVCAPI_MANAGEMENT_HOST', fromFile('management.host')), '127.0.0.1', 'management.host');
  const managementPortSource = pick(flags.managementPort, '--management-port', env, 'SVCAPI_MANAGEMENT_PORT', fromFile('management.port'));
  const managementOff = managementPortSource !== undefined && ['off', 'false', 'no', 'none'].includes(managementPortSource.value.trim().toLowerCase());
  // An ephemeral service port (tests, several instances side by side) gets an ephemeral management port too.
  const managementPort = managementOff ? null : integer(managementPortSource, port === 0 ? 0 : 9464, 0, 65535);
  if (managementPort !== null && managementPort !== 0 && managementPort === port) {
    throw new ConfigError(managementPortSource?.key ?? 'management.port', `must differ from the service port (${port}): health and metrics are never served on the public listener`);
  }
  const consoleEnabled = boolean(pick(undefined, '', env, 'SVCAPI_CONSOLE', fromFile('console.enabled')), true);
  const consoleIdleTimeoutMs = integer(pick(undefined, '', env, 'SVCAPI_CONSOLE_IDLE_TIMEOUT_MS', fromFile('console.idleTimeoutMs')), 30 * 60_000, 60_000, 86_400_000);
  const consoleAbsoluteTimeoutMs = integer(pick(undefined, '', env, 'SVCAPI_CONSOLE_ABSOLUTE_TIMEOUT_MS', fromFile('console.absoluteTimeoutMs')), 12 * 3_600_000, 60_000, 7 * 86_400_000);
  const drainDelayMs = integer(pick(undefined, '', env, 'SVCAPI_SHUTDOWN_DRAIN_DELAY_MS', fromFile('shutdown.drainDelayMs')), 5000, 0, 600_000);
  const shutdownTimeoutMs = integer(pick(undefined, '', env, 'SVCAPI_SHUTDOWN_TIMEOUT_MS', fromFile('shutdown.timeoutMs')), 30_000, 100, 3_600_000);
  const housekeepingIntervalMs = integer(pick(undefined, '', env, 'SVCAPI_HOUSEKEEPING_INTERVAL_MS', fromFile('housekeeping.intervalMs')), 300_000, 1000, 86_400_000);
  const housekeepingBatchSize = integer(pick(undefined, '', env, 'SVCAPI_HOUSEKEEPING_BATCH_SIZE', fromFile('housekeeping.batchSize')), 500, 1, 100_000);
  // ops/housekeeping.ts: a batch's rows are scaled to take about this long; 0 keeps batchSize rows.
  const housekeepingBatchBudgetMs = integer(pick(undefined, '', env, 'SVCAPI_HOUSEKEEPING_BATCH_BUDGET_MS', fromFile('housekeeping.batchBudgetMs')), 5, 0, 10_000);
  const tokenRetentionMs = integer(pick(undefined, '', env, 'SVCAPI_TOKEN_RETENTION_MS', fromFile('housekeeping.tokenRetentionMs')), 86_400_000, 0, 400 * 86_400_000);

  // --- lazy migration from the legacy service ---
  const legacySource = pick(undefined, '', env, 'SVCAPI_LEGACY_URL', fromFile('legacy.url'));
  const legacyUrl = legacySource?.value.trim() ?? null;
  if (legacyUrl !== null && !/^https?:$/.test(URL.canParse(legacyUrl) ? new URL(legacyUrl).protocol : '')) {
    throw new ConfigError(legacySource?.key ?? 'legacy.url', `expected the old service's http(s) URL, like https://old.example/Authentication.asmx, got ${JSON.stringify(legacyUrl)}`);
  }
  const legacyTimeoutMs = integer(pick(undefined, '', env, 'SVCAPI_LEGACY_TIMEOUT_MS', fromFile('legacy.timeoutMs')), 3000, 100, 60_000);
  // Lazy migration sends the passwords of logins unknown here to the old service: in clear over
  // plain http. Allowed to the same machine (a local proxy or tunnel); elsewhere only when the
  // operator says so, and serve still warns at start.
  const legacyAllowInsecure = boolean(pick(undefined, '', env, 'SVCAPI_LEGACY_ALLOW_INSECURE', fromFile('legacy.allowInsecure')), false);
  if (legacyUrl !== null && new URL(legacyUrl).protocol === 'http:' && !isLoopbackHost(new URL(legacyUrl).hostname) && !legacyAllowInsecure) {
    throw new ConfigError(legacySource?.key ?? 'legacy.url', `plain http to another host would send passwords in clear; use https, or set legacy.allowInsecure (SVCAPI_LEGACY_ALLOW_INSECURE=true) to accept that risk`);
  }
  const caSource = pick(undefined, '', env, 'SVCAPI_LEGACY_CA_FILE', fromFile('legacy.caFile'));
  const legacyCaFile = caSource === undefined ? null : resolve(caSource.value.trim());
  if (legacyCaFile !== null && (legacyUrl === null || new URL(legacyUrl).protocol !== 'https:')) {
    throw new ConfigError(caSource?.key ?? 'legacy.caFile', 'a CA file is for an https legacy.url; set SVCAPI_LEGACY_URL (legacy.url) to the old service\'s https address');
  }
  // --- token passthrough (docs/cutover.md#passthrough) ---
  const passthroughSource = pick(undefined, '', env, 'SVCAPI_LEGACY_TOKEN_PASSTHROUGH', fromFile('legacy.tokenPassthrough'));
  const tokenPassthroughUntil = passthroughUntil(passthroughSource);
  if (tokenPassthroughUntil !== null && legacyUrl === null) {
    throw new ConfigError(passthroughSource?.key ?? 'legacy.tokenPassthrough', 'token passthrough asks the old service: set SVCAPI_LEGACY_URL (legacy.url) too');
  }
  const legacySetting = (variable: string, key: string, fallback: number, min: number, max: number): number =>
    integer(pick(undefined, '', env, variable, fromFile(`legacy.${key}`)), fallback, min, max);
  const passthroughCacheSeconds = legacySetting('SVCAPI_LEGACY_PASSTHROUGH_CACHE_SECONDS', 'passthroughCacheSeconds', 60, 0, 3600);
  const passthroughNegativeCacheSeconds = legacySetting('SVCAPI_LEGACY_PASSTHROUGH_NEGATIVE_CACHE_SECONDS', 'passthroughNegativeCacheSeconds', 10, 0, 3600);
  const adoptSource = pick(undefined, '', env, 'SVCAPI_LEGACY_ADOPT_TOKENS', fromFile('legacy.adoptTokens'));
  const adoptTokens = boolean(adoptSource, false);
  if (adoptTokens && tokenPassthroughUntil === null) {
    throw new ConfigError(adoptSource?.key ?? 'legacy.adoptTokens', 'adoption stores tokens token passthrough vouched for: set SVCAPI_LEGACY_TOKEN_PASSTHROUGH (legacy.tokenPassthrough) to its end date too');
  }
  const legacyMaxConcurrent = legacySetting('SVCAPI_LEGACY_MAX_CONCURRENT', 'maxConcurrent', 16, 1, 1024);
  const legacyTokenTimeoutMs = legacySetting('SVCAPI_LEGACY_TOKEN_TIMEOUT_MS', 'tokenTimeoutMs', 1000, 100, 60_000);
  const circuitFailures = legacySetting('SVCAPI_LEGACY_CIRCUIT_FAILURES', 'circuitFailures', 5, 1, 1000);
  const circuitCooldownMs = legacySetting('SVCAPI_LEGACY_CIRCUIT_COOLDOWN_MS', 'circuitCooldownMs', 30_000, 1000, 3_600_000);

  // --- shadow and front modes (docs/cutover.md "Front and shadow") ---
  const modeSource = pick(undefined, '', env, 'SVCAPI_LEGACY_MODE', fromFile('legacy.mode'));
  const legacyMode = (modeSource?.value.trim().toLowerCase() ?? 'serve');
  if (legacyMode !== 'serve' && legacyMode !== 'front') throw new ConfigError(modeSource?.key ?? 'legacy.mode', `expected serve or front, got ${JSON.stringify(modeSource?.value)}`);
  const frontSource = pick(undefined, '', env, 'SVCAPI_LEGACY_FRONT_OPERATIONS', fromFile('legacy.frontOperations'));
  const frontOperations = frontSource === undefined ? [] : frontSource.value.split(/[\s,]+/).filter((n) => n !== '');
  const knownOperations: readonly string[] = OPERATIONS.map((op) => op.name);
  const unknownOperation = frontOperations.find((n) => !knownOperations.includes(n));
  if (unknownOperation !== undefined) throw new ConfigError(frontSource?.key ?? 'legacy.frontOperations', `expected operation names (${knownOperations.join(', ')}), got ${JSON.stringify(unknownOperation)}`);
  if (frontOperations.length > 0 && legacyMode !== 'front') throw new ConfigError(frontSource?.key ?? 'legacy.frontOperations', 'names the operations the old service answers in front mode: set legacy.mode to front too');
  const shadowRateSource = pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_RATE', fromFile('legacy.shadow.rate'));
  // Front mode compares every request unless told otherwise: that is what it is for.
  const shadowRate = fraction(shadowRateSource, legacyMode === 'front' ? 1 : 0);
  if ((legacyMode === 'front' || shadowRate > 0) && legacyUrl === null) {
    throw new ConfigError(legacyMode === 'front' ? (modeSource?.key ?? 'legacy.mode') : (shadowRateSource?.key ?? 'legacy.shadow.rate'), 'needs the old service\'s URL in legacy.url (SVCAPI_LEGACY_URL)');
  }
  const shadow = {
    rate: shadowRate,
    queue: integer(pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_QUEUE', fromFile('legacy.shadow.queue')), 256, 1, 100_000),
    concurrency: integer(pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_CONCURRENCY', fromFile('legacy.shadow.concurrency')), 64, 1, 256),
    keep: integer(pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_KEEP', fromFile('legacy.shadow.keep')), 100, 1, 100_000),
    stateful: boolean(pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_STATEFUL', fromFile('legacy.shadow.stateful')), false),
    maxResponseBytes: integer(pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_MAX_RESPONSE_BYTES', fromFile('legacy.shadow.maxResponseBytes')), 1_048_576, 1024, 64 * 1_048_576),
    cpuShare: fraction(pick(undefined, '', env, 'SVCAPI_LEGACY_SHADOW_CPU_SHARE', fromFile('legacy.shadow.cpuShare')), 0.03),
  };

  // --- audit trail and TLS ---
  const auditRetentionDays = integer(pick(flags.auditRetentionDays, '--audit-retention-days', env, 'SVCAPI_AUDIT_RETENTION_DAYS', fromFile('audit.retentionDays')), 90, 0, 36_500);
  const tlsCertSource = pick(flags.tlsCert, '--tls-cert', env, 'SVCAPI_TLS_CERT', fromFile('tls.certFile'));
  const tlsKeySource = pick(flags.tlsKey, '--tls-key', env, 'SVCAPI_TLS_KEY', fromFile('tls.keyFile'));
  if ((tlsCertSource === undefined) !== (tlsKeySource === undefined)) {
    const given = tlsCertSource ?? tlsKeySource;
    throw new ConfigError(given?.key ?? 'tls', 'HTTPS needs both a certificate and a key (--tls-cert and --tls-key, SVCAPI_TLS_CERT and SVCAPI_TLS_KEY, or tls.certFile and tls.keyFile)');
  }
  const tls = { certFile: tlsCertSource?.value.trim() ?? null, keyFile: tlsKeySource?.value.trim() ?? null };

  // --- brute-force protection (docs/security.md#brute-force-protection) ---
  const bf = DEFAULT_THROTTLE_POLICY;
  const bfSetting = (variable: string, key: string, fallback: number, min: number, max: number): number =>
    integer(pick(undefined, '', env, variable, fromFile(`bruteForce.${key}`)), fallback, min, max);
  const bruteForce = {
    enabled: boolean(pick(undefined, '', env, 'SVCAPI_BRUTE_FORCE_ENABLED', fromFile('bruteForce.enabled')), true),
    windowMs: bfSetting('SVCAPI_BRUTE_FORCE_WINDOW_MS', 'windowMs', bf.windowMs, 1000, 86_400_000),
    maxDelayMs: bfSetting('SVCAPI_BRUTE_FORCE_MAX_DELAY_MS', 'maxDelayMs', bf.maxDelayMs, 1000, 86_400_000),
    pair: {
      maxAttempts: bfSetting('SVCAPI_BRUTE_FORCE_PAIR_MAX_ATTEMPTS', 'pair.maxAttempts', bf.pair.maxAttempts, 1, 1000),
      baseDelayMs: bfSetting('SVCAPI_BRUTE_FORCE_PAIR_BASE_DELAY_MS', 'pair.baseDelayMs', bf.pair.baseDelayMs, 1, 86_400_000),
    },
    login: { maxAttempts: bfSetting('SVCAPI_BRUTE_FORCE_LOGIN_MAX_ATTEMPTS', 'login.maxAttempts', bf.login.maxAttempts, 1, 1_000_000) },
    source: { maxFailures: bfSetting('SVCAPI_BRUTE_FORCE_SOURCE_MAX_FAILURES', 'source.maxFailures', bf.source.maxFailures, 1, 1_000_000) },
    knownSourceDays: bfSetting('SVCAPI_BRUTE_FORCE_KNOWN_SOURCE_DAYS', 'knownSourceDays', bf.knownSourceDays, 0, 3650),
  };

  // --- speed-ups with an off switch (docs/architecture.md) ---
  const performance = {
    tokenCacheEntries: integer(pick(undefined, '', env, 'SVCAPI_TOKEN_CACHE_ENTRIES', fromFile('performance.tokenCacheEntries')), 50_000, 0, 10_000_000),
    newsCacheEntries: integer(pick(undefined, '', env, 'SVCAPI_NEWS_CACHE_ENTRIES', fromFile('performance.newsCacheEntries')), 1000, 0, 1_000_000),
    shapeMemo: boolean(pick(undefined, '', env, 'SVCAPI_SHAPE_MEMO', fromFile('performance.shapeMemo')), true),
    shadowPipelining: boolean(pick(undefined, '', env, 'SVCAPI_SHADOW_PIPELINING', fromFile('performance.shadowPipelining')), true),
    shadowByteCompare: boolean(pick(undefined, '', env, 'SVCAPI_SHADOW_BYTE_COMPARE', fromFile('performance.shadowByteCompare')), true),
    shadowBatching: boolean(pick(undefined, '', env, 'SVCAPI_SHADOW_BATCHING', fromFile('performance.shadowBatching')), true),
    groupCommit: boolean(pick(undefined, '', env, 'SVCAPI_GROUP_COMMIT', fromFile('performance.groupCommit')), true),
    // SQLite's memory map of the database file for `serve` (sqlite-store.ts): 2047 MiB is the most this
    // better-sqlite3 build maps (SQLITE_MAX_MMAP_SIZE); 0 reads every page with a system call.
    sqliteMmapMiB: integer(pick(undefined, '', env, 'SVCAPI_SQLITE_MMAP_MIB', fromFile('performance.sqliteMmapMiB')), 2047, 0, 1_048_576),
  };

  // --- the compatibility profile: what the old service's clients parse ---
  const compatSource = pick(flags.compat, '--compat', env, 'SVCAPI_COMPAT', fromFile('compat.profile'));
  const compatFile = compatSource === undefined ? null : resolve(compatSource.value.trim());
  let compatProfile = DEFAULT_COMPAT_PROFILE;
  if (compatFile !== null) {
    try {
      compatProfile = readCompatProfile(compatFile);
    } catch (error) {
      if (!(error instanceof CompatProfileError)) throw error;
      throw new ConfigError(compatSource?.key ?? 'compat.profile', error.message);
    }
  }

  // Adoption reads the old ValidateUserTokenJSON's owner and expiry through the profile's token
  // layout: without a member for each, there is nothing honest to store.
  if (adoptTokens) {
    const fields = new Set(compatProfile.json.validateUserToken.success.flatMap((m) => ('field' in m.value ? [m.value.field] : [])));
    const missing = (['login', 'expiresAt'] as const).filter((f) => !fields.has(f));
    if (missing.length > 0) {
      throw new ConfigError(adoptSource?.key ?? 'legacy.adoptTokens', `adoption needs the old service's ValidateUserTokenJSON to tell the token's owner and expiry, but the compatibility profile's json.validateUserToken.success has no member with ${missing.map((f) => `{"field": "${f}"}`).join(' and none with ')}${compatFile === null ? ' (no profile is given: set compat.profile, SVCAPI_COMPAT, to the old service\'s; docs/compat-profile.md)' : ''}`);
    }
  }

  // Last, once every setting above has taken its key: whatever is left in the file is unknown.
  const unknown = file?.unknownKeys()[0];
  if (unknown !== undefined) throw new ConfigError(unknown.label, unknown.reason);

  return deepFreeze({
    host,
    port,
    databaseUrl,
    http: { maxRequestBytes, bodyTimeoutMs, httpGet },
    hashing,
    timeZone,
    tickets: { ttlSeconds },
    logLevel,
    logPretty,
    logFile,
    logFlushMs,
    accessLogFast,
    trustedProxies,
    management: { host: managementHost, port: managementPort },
    console: { enabled: consoleEnabled, idleTimeoutMs: consoleIdleTimeoutMs, absoluteTimeoutMs: consoleAbsoluteTimeoutMs },
    shutdown: { drainDelayMs, timeoutMs: shutdownTimeoutMs },
    housekeeping: { intervalMs: housekeepingIntervalMs, batchSize: housekeepingBatchSize, batchBudgetMs: housekeepingBatchBudgetMs, tokenRetentionMs },
    configFile: file?.path ?? null,
    legacy: {
      url: legacyUrl,
      timeoutMs: legacyTimeoutMs,
      allowInsecure: legacyAllowInsecure,
      caFile: legacyCaFile,
      tokenPassthroughUntil,
      passthroughCacheSeconds,
      passthroughNegativeCacheSeconds,
      adoptTokens,
      maxConcurrent: legacyMaxConcurrent,
      tokenTimeoutMs: legacyTokenTimeoutMs,
      circuitFailures,
      circuitCooldownMs,
      mode: legacyMode,
      frontOperations,
      shadow,
    },
    audit: { retentionDays: auditRetentionDays },
    bruteForce,
    tls,
    compat: { file: compatFile, profile: compatProfile },
    performance,
  });
}
