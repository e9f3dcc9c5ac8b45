import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ env: {} });
    expect(config).toEqual({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: 'sqlite:./data/svcapi-auth.db',
      http: { maxRequestBytes: 1048576, bodyTimeoutMs: 10000 },
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      tickets: { ttlSeconds: 120 },
      logLevel: 'info',
      logPretty: false,
      trustedProxies: [],
      management: { host: '127.0.0.1', port: 9464 },
      shutdown: { drainDelayMs: 5000, timeoutMs: 30000 },
      housekeeping: { intervalMs: 300000, batchSize: 500, tokenRetentionMs: 86400000 },
      configFile: null,
      legacy: { url: null, timeoutMs: 3000 },
    });
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
