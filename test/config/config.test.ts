import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';
import { ConfigError } from '../../src/config/config-error.js';
import { loadConfig } from '../../src/config/load-config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ env: {} });
    expect(config).toEqual({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: 'sqlite:./data/svcapi-auth.db',
      postgresPoolMax: 10,
      http: { maxRequestBytes: 1048576, bodyTimeoutMs: 10000, httpGet: true },
      hashing: { maxConcurrent: Math.max(1, availableParallelism() - 1), maxQueued: 64, nice: 0 },
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      tickets: { ttlSeconds: 120 },
      logLevel: 'info',
      logPretty: false,
      logFile: null,
      logFlushMs: 250,
      accessLogFast: true,
      trustedProxies: [],
      management: { host: '127.0.0.1', port: 9464 },
      console: { enabled: true, idleTimeoutMs: 1800000, absoluteTimeoutMs: 43200000 },
      shutdown: { drainDelayMs: 5000, timeoutMs: 30000 },
      housekeeping: { intervalMs: 300000, batchSize: 500, batchBudgetMs: 5, tokenRetentionMs: 86400000 },
      configFile: null,
      legacy: { url: null, timeoutMs: 3000, allowInsecure: false, tokenPassthroughUntil: null, caFile: null, passthroughCacheSeconds: 60, passthroughNegativeCacheSeconds: 10, adoptTokens: false, maxConcurrent: 16, tokenTimeoutMs: 1000, circuitFailures: 5, circuitCooldownMs: 30000, mode: 'serve', frontOperations: [], shadow: { rate: 0, queue: 256, concurrency: 64, keep: 100, stateful: false, maxResponseBytes: 1048576, cpuShare: 0 } },
      audit: { retentionDays: 90 },
      tls: { certFile: null, keyFile: null },
      compat: { file: null, profile: DEFAULT_COMPAT_PROFILE },
      performance: { tokenCacheEntries: 50_000, sessionMemoryEntries: 1_500_000, tokenReadWithRevisions: true, newsCacheEntries: 1000, shapeMemo: true, tableMemo: true, shadowPipelining: true, shadowByteCompare: true, shadowBatching: true, groupCommit: true, orderedTickets: true, sqliteAsyncSync: true, sqliteCheckpointThread: true, sqliteMmapMiB: 0, sqliteCheckInBackground: true, workersFirst: true, workersStaggered: true, pgGenericTokenPlans: true, keepTickShape: true },
      bruteForce: {
        enabled: true, windowMs: 900000, maxDelayMs: 900000, pair: { maxAttempts: 5, baseDelayMs: 30000 },
        login: { maxAttempts: 100 }, source: { maxFailures: 50 }, knownSourceDays: 30,
      },
    });
  });

  it('reads the brute-force settings from the environment, and checks them', () => {
    const env = {
      SVCAPI_BRUTE_FORCE_ENABLED: 'off', SVCAPI_BRUTE_FORCE_WINDOW_MS: '60000', SVCAPI_BRUTE_FORCE_MAX_DELAY_MS: '120000',
      SVCAPI_BRUTE_FORCE_PAIR_MAX_ATTEMPTS: '3', SVCAPI_BRUTE_FORCE_PAIR_BASE_DELAY_MS: '1000', SVCAPI_BRUTE_FORCE_LOGIN_MAX_ATTEMPTS: '20',
      SVCAPI_BRUTE_FORCE_SOURCE_MAX_FAILURES: '10', SVCAPI_BRUTE_FORCE_KNOWN_SOURCE_DAYS: '0',
    };
    expect(loadConfig({ env }).bruteForce).toEqual({
      enabled: false, windowMs: 60000, maxDelayMs: 120000, pair: { maxAttempts: 3, baseDelayMs: 1000 }, login: { maxAttempts: 20 }, source: { maxFailures: 10 }, knownSourceDays: 0,
    });
    expect(() => loadConfig({ env: { SVCAPI_BRUTE_FORCE_PAIR_MAX_ATTEMPTS: '0' } })).toThrow(/SVCAPI_BRUTE_FORCE_PAIR_MAX_ATTEMPTS: expected a whole number from 1/);
    expect(() => loadConfig({ env: { SVCAPI_BRUTE_FORCE_MAX_DELAY_MS: '999999999' } })).toThrow(/SVCAPI_BRUTE_FORCE_MAX_DELAY_MS/);
    expect(() => loadConfig({ env: { SVCAPI_BRUTE_FORCE_ENABLED: 'maybe' } })).toThrow(/SVCAPI_BRUTE_FORCE_ENABLED: expected true or false/);
  });

  it('takes the environment over defaults, and flags over the environment', () => {
    const env = { SVCAPI_HOST: '0.0.0.0', SVCAPI_PORT: '9000', DATABASE_URL: 'sqlite:/tmp/env.db', SVCAPI_TIME_ZONE: 'America/Sao_Paulo', SVCAPI_LOG_LEVEL: 'DEBUG', SVCAPI_TICKET_TTL_SECONDS: '300', SVCAPI_MAX_REQUEST_BYTES: '2048', SVCAPI_BODY_TIMEOUT_MS: '500' };
    expect(loadConfig({ env })).toMatchObject({ host: '0.0.0.0', port: 9000, databaseUrl: 'sqlite:/tmp/env.db', timeZone: 'America/Sao_Paulo', logLevel: 'debug', tickets: { ttlSeconds: 300 }, http: { maxRequestBytes: 2048, bodyTimeoutMs: 500 } });
    expect(loadConfig({ env, flags: { host: '::1', port: '0', db: 'sqlite::memory:', logLevel: 'warn' } })).toMatchObject({ host: '::1', port: 0, databaseUrl: 'sqlite::memory:', logLevel: 'warn' });
  });

  it('ignores empty environment variables', () => {
    expect(loadConfig({ env: { SVCAPI_PORT: '', DATABASE_URL: '' } })).toMatchObject({ port: 8080, databaseUrl: 'sqlite:./data/svcapi-auth.db' });
  });

  it('names the bad key in its message', () => {
    const cases: [Parameters<typeof loadConfig>[0], RegExp][] = [
      [{ env: { SVCAPI_PORT: 'http' } }, /SVCAPI_PORT: expected a whole number from 0 to 65535/],
      [{ env: {}, flags: { port: '70000' } }, /--port/],
      [{ env: { SVCAPI_TIME_ZONE: 'Mars/Olympus' } }, /SVCAPI_TIME_ZONE: not an IANA time zone/],
      [{ env: { SVCAPI_LOG_LEVEL: 'loud' } }, /SVCAPI_LOG_LEVEL: expected one of/],
      [{ env: { SVCAPI_TICKET_TTL_SECONDS: '0' } }, /SVCAPI_TICKET_TTL_SECONDS/],
      [{ env: {}, flags: { host: 'a b' } }, /--host/],
      [{ env: {}, flags: { db: 'mysql://x' } }, /--db: unsupported database URL scheme/],
    ];
    for (const [input, message] of cases) {
      expect(() => loadConfig(input)).toThrow(ConfigError);
      expect(() => loadConfig(input)).toThrow(message);
    }
  });

  it('returns a deeply frozen object', () => {
    const config = loadConfig({ env: {} });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.http)).toBe(true);
    expect(Object.isFrozen(config.tickets)).toBe(true);
  });
});

describe('security settings', () => {
  it('reads the HttpGet switch and the hashing capacity', async () => {
    const { loadConfig } = await import('../../src/config/load-config.js');
    expect(loadConfig({ env: {} }).http.httpGet).toBe(true);
    expect(loadConfig({ env: { SVCAPI_HTTP_GET: 'off' } }).http.httpGet).toBe(false);
    expect(loadConfig({ env: { SVCAPI_HTTP_GET: 'ValidateUserToken, WhatsNew' } }).http.httpGet).toEqual(['ValidateUserToken', 'WhatsNew']);
    expect(() => loadConfig({ env: { SVCAPI_HTTP_GET: 'ValidateUser,Nope' } })).toThrow(/SVCAPI_HTTP_GET.*"Nope"/);
    const c = loadConfig({ env: { SVCAPI_HASHING_MAX_CONCURRENT: '3', SVCAPI_HASHING_MAX_QUEUED: '10' } });
    expect(c.hashing).toEqual({ maxConcurrent: 3, maxQueued: 10, nice: 0 });
    expect(() => loadConfig({ env: { SVCAPI_HASHING_MAX_CONCURRENT: '0' } })).toThrow(/SVCAPI_HASHING_MAX_CONCURRENT/);
    // the hashing threads' nice value, 0 (as the process) to 19 (the lowest priority).
    expect(loadConfig({ env: { SVCAPI_HASHING_NICE: '10' } }).hashing.nice).toBe(10);
    expect(() => loadConfig({ env: { SVCAPI_HASHING_NICE: '20' } })).toThrow(/SVCAPI_HASHING_NICE/);
    expect(() => loadConfig({ env: { SVCAPI_HASHING_NICE: '-5' } })).toThrow(/SVCAPI_HASHING_NICE/);
  });
});

describe('audit trail and TLS settings', () => {
  it('reads the audit retention from flag, environment or file, 0 keeping events forever', () => {
    expect(loadConfig({ env: { SVCAPI_AUDIT_RETENTION_DAYS: '30' } }).audit.retentionDays).toBe(30);
    expect(loadConfig({ env: { SVCAPI_AUDIT_RETENTION_DAYS: '30' }, flags: { auditRetentionDays: '0' } }).audit.retentionDays).toBe(0);
    expect(() => loadConfig({ env: { SVCAPI_AUDIT_RETENTION_DAYS: 'forever' } })).toThrow(/SVCAPI_AUDIT_RETENTION_DAYS: expected a whole number from 0 to 36500/);
  });

  it('takes a TLS certificate and key together, never one alone', () => {
    expect(loadConfig({ env: { SVCAPI_TLS_CERT: '/c.pem', SVCAPI_TLS_KEY: '/k.pem' } }).tls).toEqual({ certFile: '/c.pem', keyFile: '/k.pem' });
    expect(loadConfig({ env: {}, flags: { tlsCert: 'c.pem', tlsKey: 'k.pem' } }).tls).toEqual({ certFile: 'c.pem', keyFile: 'k.pem' });
    expect(() => loadConfig({ env: { SVCAPI_TLS_CERT: '/c.pem' } })).toThrow(/SVCAPI_TLS_CERT: HTTPS needs both a certificate and a key/);
    expect(() => loadConfig({ env: {}, flags: { tlsKey: 'k.pem' } })).toThrow(/--tls-key: HTTPS needs both/);
  });
});
