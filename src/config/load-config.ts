/**
 * Reads the configuration once, at start-up: for each setting its default, then the config file,
 * then the environment, then the command-line flag (setting-layers.ts), each value checked
 * (setting-values.ts: a bad one stops the process with a message naming it), the whole frozen.
 * Settings are read in the order of docs/configuration.md; the file's unknown keys are refused
 * last, once every setting has taken its key.
 */
import { CompatProfileError, readCompatProfile } from '../compat-profile-file.js';
import { DEFAULT_COMPAT_PROFILE } from '../contract/compat-profile.js';
import { defaultHashingLimits } from '../domain/bounded-hasher.js';
import { DEFAULT_THROTTLE_POLICY } from '../domain/login-throttle.js';
import { DEFAULT_POOL_MAX, parseDatabaseUrl } from '../store/database-url.js';
import { DEFAULT_DATABASE_URL, LOG_LEVELS, type Config, type LoadConfigInput } from './config.js';
import { ConfigError } from './config-error.js';
import { readLegacySettings } from './legacy-settings.js';
import { openSettingLayers, type SettingLayers } from './setting-layers.js';
import { boolean, choice, hostSetting, httpGetSetting, integer, pathSetting, proxyList, timeZoneSetting } from './setting-values.js';

export function loadConfig(input: LoadConfigInput = {}): Config {
  const layers = openSettingLayers(input);
  const number = (key: string, envName: string, fallback: number, min: number, max: number): number => integer(layers.read(key, envName), fallback, min, max);
  const bool = (key: string, envName: string, fallback: boolean): boolean => boolean(layers.read(key, envName), fallback);

  const host = hostSetting(layers.read('host', 'SVCAPI_HOST', 'host'), '127.0.0.1', 'host');
  // 0 asks the OS for a free port (tests); `serve` prints the one it got.
  const port = integer(layers.read('port', 'SVCAPI_PORT', 'port'), 8080, 0, 65535);
  const databaseUrl = databaseUrlSetting(layers);
  const http = {
    maxRequestBytes: number('http.maxRequestBytes', 'SVCAPI_MAX_REQUEST_BYTES', 1_048_576, 1024, 1024 * 1024 * 1024),
    bodyTimeoutMs: number('http.bodyTimeoutMs', 'SVCAPI_BODY_TIMEOUT_MS', 10_000, 100, 600_000),
    httpGet: httpGetSetting(layers.read('http.httpGet', 'SVCAPI_HTTP_GET')),
  };
  const hashingDefaults = defaultHashingLimits(input.workers ?? 1);
  const hashing = {
    maxConcurrent: number('hashing.maxConcurrent', 'SVCAPI_HASHING_MAX_CONCURRENT', hashingDefaults.maxConcurrent, 1, 256),
    maxQueued: number('hashing.maxQueued', 'SVCAPI_HASHING_MAX_QUEUED', hashingDefaults.maxQueued, 0, 100_000),
    // 0: as the process. The deployment files set 10 (ops/hashing-priority.ts; docs/operations.md, "Hashing threads").
    nice: number('hashing.nice', 'SVCAPI_HASHING_NICE', 0, 0, 19),
  };
  const timeZone = timeZoneSetting(layers.read('timeZone', 'SVCAPI_TIME_ZONE', 'timeZone'));
  const tickets = { ttlSeconds: number('tickets.ttlSeconds', 'SVCAPI_TICKET_TTL_SECONDS', 120, 1, 86_400) };
  const logLevel = choice(layers.read('logLevel', 'SVCAPI_LOG_LEVEL', 'logLevel'), 'info', LOG_LEVELS, 'logLevel', `one of ${LOG_LEVELS.join(', ')}`);

  // --- operations: logs, proxies, management listener, shutdown, housekeeping ---
  const logPretty = boolean(layers.read('logPretty', 'SVCAPI_LOG_PRETTY', 'logPretty'), false);
  const logFile = pathSetting(layers.read('logFile', 'SVCAPI_LOG_FILE', 'logFile'));
  const accessLogFast = bool('accessLogFast', 'SVCAPI_ACCESS_LOG_FAST', true);
  const logFlushMs = number('logFlushMs', 'SVCAPI_LOG_FLUSH_MS', 250, 0, 10_000);
  const trustedProxies = proxyList(layers.read('trustedProxies', 'SVCAPI_TRUSTED_PROXIES', 'trustedProxies'));
  const management = managementSettings(layers, port);
  const adminConsole = {
    enabled: bool('console.enabled', 'SVCAPI_CONSOLE', true),
    idleTimeoutMs: number('console.idleTimeoutMs', 'SVCAPI_CONSOLE_IDLE_TIMEOUT_MS', 30 * 60_000, 60_000, 86_400_000),
    absoluteTimeoutMs: number('console.absoluteTimeoutMs', 'SVCAPI_CONSOLE_ABSOLUTE_TIMEOUT_MS', 12 * 3_600_000, 60_000, 7 * 86_400_000),
  };
  const shutdown = {
    drainDelayMs: number('shutdown.drainDelayMs', 'SVCAPI_SHUTDOWN_DRAIN_DELAY_MS', 5000, 0, 600_000),
    timeoutMs: number('shutdown.timeoutMs', 'SVCAPI_SHUTDOWN_TIMEOUT_MS', 30_000, 100, 3_600_000),
  };
  const housekeeping = {
    intervalMs: number('housekeeping.intervalMs', 'SVCAPI_HOUSEKEEPING_INTERVAL_MS', 300_000, 1000, 86_400_000),
    batchSize: number('housekeeping.batchSize', 'SVCAPI_HOUSEKEEPING_BATCH_SIZE', 500, 1, 100_000),
    // ops/housekeeping.ts: a batch's rows are scaled to take about this long; 0 keeps batchSize rows.
    batchBudgetMs: number('housekeeping.batchBudgetMs', 'SVCAPI_HOUSEKEEPING_BATCH_BUDGET_MS', 5, 0, 10_000),
    tokenRetentionMs: number('housekeeping.tokenRetentionMs', 'SVCAPI_TOKEN_RETENTION_MS', 86_400_000, 0, 400 * 86_400_000),
  };

  const legacy = readLegacySettings(layers);
  const audit = { retentionDays: integer(layers.read('audit.retentionDays', 'SVCAPI_AUDIT_RETENTION_DAYS', 'auditRetentionDays'), 90, 0, 36_500) };
  const tls = tlsSettings(layers);

  // --- brute-force protection (docs/security.md#brute-force-protection) ---
  const bf = DEFAULT_THROTTLE_POLICY;
  const bruteForce = {
    enabled: bool('bruteForce.enabled', 'SVCAPI_BRUTE_FORCE_ENABLED', true),
    windowMs: number('bruteForce.windowMs', 'SVCAPI_BRUTE_FORCE_WINDOW_MS', bf.windowMs, 1000, 86_400_000),
    maxDelayMs: number('bruteForce.maxDelayMs', 'SVCAPI_BRUTE_FORCE_MAX_DELAY_MS', bf.maxDelayMs, 1000, 86_400_000),
    pair: {
      maxAttempts: number('bruteForce.pair.maxAttempts', 'SVCAPI_BRUTE_FORCE_PAIR_MAX_ATTEMPTS', bf.pair.maxAttempts, 1, 1000),
      baseDelayMs: number('bruteForce.pair.baseDelayMs', 'SVCAPI_BRUTE_FORCE_PAIR_BASE_DELAY_MS', bf.pair.baseDelayMs, 1, 86_400_000),
    },
    login: { maxAttempts: number('bruteForce.login.maxAttempts', 'SVCAPI_BRUTE_FORCE_LOGIN_MAX_ATTEMPTS', bf.login.maxAttempts, 1, 1_000_000) },
    source: { maxFailures: number('bruteForce.source.maxFailures', 'SVCAPI_BRUTE_FORCE_SOURCE_MAX_FAILURES', bf.source.maxFailures, 1, 1_000_000) },
    knownSourceDays: number('bruteForce.knownSourceDays', 'SVCAPI_BRUTE_FORCE_KNOWN_SOURCE_DAYS', bf.knownSourceDays, 0, 3650),
  };

  // --- speed-ups with an off switch (docs/architecture.md) ---
  const performance = {
    tokenCacheEntries: number('performance.tokenCacheEntries', 'SVCAPI_TOKEN_CACHE_ENTRIES', 50_000, 0, 10_000_000),
    // A fleet's sessions remembered compactly, 22 bytes each (domain/session-memory.ts).
    sessionMemoryEntries: number('performance.sessionMemoryEntries', 'SVCAPI_SESSION_MEMORY_ENTRIES', 1_500_000, 0, 10_000_000),
    // A token not in memory is read with the turn's revisions, in one snapshot (domain/revision-gate.ts).
    tokenReadWithRevisions: bool('performance.tokenReadWithRevisions', 'SVCAPI_TOKEN_READ_WITH_REVISIONS', true),
    newsCacheEntries: number('performance.newsCacheEntries', 'SVCAPI_NEWS_CACHE_ENTRIES', 1000, 0, 1_000_000),
    shapeMemo: bool('performance.shapeMemo', 'SVCAPI_SHAPE_MEMO', true),
    tableMemo: bool('performance.tableMemo', 'SVCAPI_TABLE_MEMO', true),
    shadowPipelining: bool('performance.shadowPipelining', 'SVCAPI_SHADOW_PIPELINING', true),
    shadowByteCompare: bool('performance.shadowByteCompare', 'SVCAPI_SHADOW_BYTE_COMPARE', true),
    shadowBatching: bool('performance.shadowBatching', 'SVCAPI_SHADOW_BATCHING', true),
    groupCommit: bool('performance.groupCommit', 'SVCAPI_GROUP_COMMIT', true),
    // GetUserLoginURL's tickets carry their issue time and are appended to a table in that order (domain/ordered-ticket.ts).
    orderedTickets: bool('performance.orderedTickets', 'SVCAPI_ORDERED_TICKETS', true),
    // SQLite: group commits and audit appends commit at NORMAL and wait for the WAL's fsync on a
    // pool thread, not on the event loop (store/sqlite/wal-sync.ts); false: FULL inside COMMIT.
    sqliteAsyncSync: bool('performance.sqliteAsyncSync', 'SVCAPI_SQLITE_ASYNC_SYNC', true),
    sqliteCheckpointThread: bool('performance.sqliteCheckpointThread', 'SVCAPI_SQLITE_CHECKPOINT_THREAD', true),
    // SQLite's memory map of the database file for `serve` (sqlite-store.ts): 0 (none) by default,
    // every page the cache lacks read with a system call; at most 2047 MiB is mapped
    // (better-sqlite3's SQLITE_MAX_MMAP_SIZE). Not by default since the session memory: a mapped
    // page the process touched counts in its RSS (docs/fast-paths.md "SQLite file memory-mapped").
    sqliteMmapMiB: number('performance.sqliteMmapMiB', 'SVCAPI_SQLITE_MMAP_MIB', 0, 0, 1_048_576),
    // `serve` checks a SQLite file (quick_check) in the background instead of before it listens (store/sqlite/background-check.ts).
    sqliteCheckInBackground: bool('performance.sqliteCheckInBackground', 'SVCAPI_SQLITE_CHECK_IN_BACKGROUND', true),
    // `serve --workers`: the workers start while the primary opens, checks and migrates the database (cli/cluster.ts).
    workersFirst: bool('performance.workersFirst', 'SVCAPI_WORKERS_FIRST', true),
    // `serve --workers`: the first worker starts alone, the others once it has loaded its modules (cli/cluster.ts).
    workersStaggered: bool('performance.workersStaggered', 'SVCAPI_WORKERS_STAGGERED', true),
    // PostgreSQL: the token reads on connections of their own that plan them once (store/postgres/postgres-store.ts TOKEN_READ_SETTING).
    pgGenericTokenPlans: bool('performance.pgGenericTokenPlans', 'SVCAPI_PG_GENERIC_TOKEN_PLANS', true),
    // `serve` keeps one of process.nextTick's tick objects alive, so V8 keeps their hidden class (ops/tick-shape.ts).
    keepTickShape: bool('performance.keepTickShape', 'SVCAPI_KEEP_TICK_SHAPE', true),
  };

  const compat = compatSettings(layers);
  legacy.checkAdoption(compat.profile, compat.file !== null);
  layers.refuseUnknownKeys();

  return deepFreeze({
    host, port, databaseUrl, postgresPoolMax: postgresPoolShare(input.workers ?? 1), http, hashing, timeZone, tickets, logLevel, logPretty, logFile, logFlushMs, accessLogFast,
    trustedProxies, management, console: adminConsole, shutdown, housekeeping, configFile: layers.configFile, legacy: legacy.legacy,
    audit, bruteForce, tls, compat, performance,
  });
}

/** A PostgreSQL pool's connections per process by default (Config.postgresPoolMax): a process's 10 shared out among the workers, at least 2 each. */
export function postgresPoolShare(workers: number): number {
  return workers <= 1 ? DEFAULT_POOL_MAX : Math.max(2, Math.ceil(DEFAULT_POOL_MAX / workers));
}

function databaseUrlSetting(layers: SettingLayers): string {
  const source = layers.read('databaseUrl', 'DATABASE_URL', 'db');
  const url = (source?.value ?? DEFAULT_DATABASE_URL).trim();
  try {
    parseDatabaseUrl(url);
  } catch (error) {
    throw new ConfigError(source?.key ?? 'databaseUrl', (error as Error).message);
  }
  return url;
}

/** The health and metrics listener: `off` turns it off; never on the service's own port. */
function managementSettings(layers: SettingLayers, port: number): Config['management'] {
  const host = hostSetting(layers.read('management.host', 'SVCAPI_MANAGEMENT_HOST', 'managementHost'), '127.0.0.1', 'management.host');
  const portSource = layers.read('management.port', 'SVCAPI_MANAGEMENT_PORT', 'managementPort');
  const off = portSource !== undefined && ['off', 'false', 'no', 'none'].includes(portSource.value.trim().toLowerCase());
  // An ephemeral service port (tests, several instances side by side) gets an ephemeral management port too.
  const managementPort = off ? null : integer(portSource, port === 0 ? 0 : 9464, 0, 65535);
  if (managementPort !== null && managementPort !== 0 && managementPort === port) {
    throw new ConfigError(portSource?.key ?? 'management.port', `must differ from the service port (${port}): health and metrics are never served on the public listener`);
  }
  return { host, port: managementPort };
}

function tlsSettings(layers: SettingLayers): Config['tls'] {
  const cert = layers.read('tls.certFile', 'SVCAPI_TLS_CERT', 'tlsCert');
  const key = layers.read('tls.keyFile', 'SVCAPI_TLS_KEY', 'tlsKey');
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError((cert ?? key)?.key ?? 'tls', 'HTTPS needs both a certificate and a key (--tls-cert and --tls-key, SVCAPI_TLS_CERT and SVCAPI_TLS_KEY, or tls.certFile and tls.keyFile)');
  }
  return { certFile: cert?.value.trim() ?? null, keyFile: key?.value.trim() ?? null };
}

/** The compatibility profile: what the old service's clients parse (docs/compat-profile.md). */
function compatSettings(layers: SettingLayers): Config['compat'] {
  const source = layers.read('compat.profile', 'SVCAPI_COMPAT', 'compat');
  const file = pathSetting(source);
  if (file === null) return { file, profile: DEFAULT_COMPAT_PROFILE };
  try {
    return { file, profile: readCompatProfile(file) };
  } catch (error) {
    if (!(error instanceof CompatProfileError)) throw error;
    throw new ConfigError(source?.key ?? 'compat.profile', error.message);
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
