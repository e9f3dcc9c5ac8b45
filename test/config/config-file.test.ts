/**
 * Configuration from a file (JSON or YAML), environment and flags: precedence defaults < file <
 * env < flags, validation with messages naming the bad key, and `config print`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';
import { ConfigError } from '../../src/config/config-error.js';
import { loadConfig } from '../../src/config/load-config.js';
import { redactUrl } from '../../src/cli/ops-commands.js';
import { run } from '../ops/support.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function file(content: string, ext = 'yaml'): string {
  const path = join(dir, `config-${++n}.${ext}`);
  writeFileSync(path, content);
  return path;
}

const YAML_FILE = `
# every kind of value a file can hold
host: 0.0.0.0
port: 8081
databaseUrl: sqlite:/srv/auth/file.db
timeZone: America/Sao_Paulo
logLevel: warn
logPretty: true
trustedProxies: [10.0.0.5, 10.1.0.0/16, "2001:db8::/32", loopback]
http:
  maxRequestBytes: 4096
  bodyTimeoutMs: 2000
  httpGet: [ValidateUserToken, WhatsNew]
hashing:
  maxConcurrent: 3
  maxQueued: 7
  nice: 10
tickets:
  ttlSeconds: 60
management:
  host: 127.0.0.2
  port: 9999
console:
  enabled: false
  idleTimeoutMs: 600000
  absoluteTimeoutMs: 3600000
shutdown:
  drainDelayMs: 0
  timeoutMs: 1000
housekeeping:
  intervalMs: 60000
  batchSize: 100
  tokenRetentionMs: 3600000
audit:
  retentionDays: 30
tls:
  certFile: /etc/svcapi-auth/cert.pem
  keyFile: /etc/svcapi-auth/key.pem
bruteForce:
  enabled: true
  windowMs: 600000
  maxDelayMs: 300000
  pair: { maxAttempts: 4, baseDelayMs: 10000 }
  login: { maxAttempts: 50 }
  source: { maxFailures: 20 }
  knownSourceDays: 7
`;

function expectConfigError(fn: () => unknown, message: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  expect((caught as Error).message).toMatch(message);
}

describe('config file', () => {
  it('sets every setting from YAML', () => {
    const path = file(YAML_FILE);
    expect(loadConfig({ env: {}, flags: { config: path } })).toEqual({
      host: '0.0.0.0',
      port: 8081,
      databaseUrl: 'sqlite:/srv/auth/file.db',
      postgresPoolMax: 10,
      http: { maxRequestBytes: 4096, bodyTimeoutMs: 2000, httpGet: ['ValidateUserToken', 'WhatsNew'] },
      hashing: { maxConcurrent: 3, maxQueued: 7, nice: 10 },
      timeZone: 'America/Sao_Paulo',
      tickets: { ttlSeconds: 60 },
      logLevel: 'warn',
      logPretty: true,
      logFile: null,
      logFlushMs: 250,
      accessLogFast: true,
      trustedProxies: ['10.0.0.5', '10.1.0.0/16', '2001:db8::/32', 'loopback'],
      management: { host: '127.0.0.2', port: 9999 },
      console: { enabled: false, idleTimeoutMs: 600000, absoluteTimeoutMs: 3600000 },
      shutdown: { drainDelayMs: 0, timeoutMs: 1000 },
      housekeeping: { intervalMs: 60000, batchSize: 100, batchBudgetMs: 5, tokenRetentionMs: 3600000 },
      configFile: path,
      legacy: { url: null, timeoutMs: 3000, allowInsecure: false, tokenPassthroughUntil: null, caFile: null, passthroughCacheSeconds: 60, passthroughNegativeCacheSeconds: 10, adoptTokens: false, maxConcurrent: 16, tokenTimeoutMs: 1000, circuitFailures: 5, circuitCooldownMs: 30000, mode: 'serve', frontOperations: [], shadow: { rate: 0, queue: 256, concurrency: 64, keep: 100, stateful: false, maxResponseBytes: 1048576, cpuShare: 0 } },
      audit: { retentionDays: 30 },
      tls: { certFile: '/etc/svcapi-auth/cert.pem', keyFile: '/etc/svcapi-auth/key.pem' },
      compat: { file: null, profile: DEFAULT_COMPAT_PROFILE },
      performance: { tokenCacheEntries: 50_000, sessionMemoryEntries: 1_500_000, tokenReadWithRevisions: true, newsCacheEntries: 1000, shapeMemo: true, tableMemo: true, shadowPipelining: true, shadowByteCompare: true, shadowBatching: true, groupCommit: true, orderedTickets: true, sqliteAsyncSync: true, sqliteCheckpointThread: true, sqliteMmapMiB: 0, sqliteCheckInBackground: true, workersFirst: true, workersStaggered: true, pgGenericTokenPlans: true, keepTickShape: true },
      bruteForce: { enabled: true, windowMs: 600000, maxDelayMs: 300000, pair: { maxAttempts: 4, baseDelayMs: 10000 }, login: { maxAttempts: 50 }, source: { maxFailures: 20 }, knownSourceDays: 7 },
    });
  });

  it('reads JSON too, and is found through SVCAPI_CONFIG', () => {
    const path = file(JSON.stringify({ port: 8082, management: { port: 'off' }, trustedProxies: '127.0.0.1' }), 'json');
    expect(loadConfig({ env: { SVCAPI_CONFIG: path } })).toMatchObject({ port: 8082, management: { port: null }, trustedProxies: ['127.0.0.1'], configFile: path });
  });

  it('takes defaults < file < environment < flags', () => {
    const path = file('port: 8081\nhost: 10.0.0.1\nlogLevel: warn\nmanagement: { port: 9001 }\nshutdown: { timeoutMs: 1000 }\ntrustedProxies: [10.0.0.5]\n');
    const otherPath = file('port: 7000\n');
    // File over defaults.
    expect(loadConfig({ env: {}, flags: { config: path } })).toMatchObject({ port: 8081, host: '10.0.0.1', logLevel: 'warn', management: { port: 9001 }, shutdown: { timeoutMs: 1000, drainDelayMs: 5000 } });
    // Environment over file.
    const env = { SVCAPI_PORT: '8090', SVCAPI_MANAGEMENT_PORT: '9002', SVCAPI_SHUTDOWN_TIMEOUT_MS: '2000', SVCAPI_TRUSTED_PROXIES: '10.0.0.6, 10.0.0.7' };
    expect(loadConfig({ env, flags: { config: path } })).toMatchObject({ port: 8090, host: '10.0.0.1', management: { port: 9002 }, shutdown: { timeoutMs: 2000 }, trustedProxies: ['10.0.0.6', '10.0.0.7'] });
    // Flags over environment; --config over SVCAPI_CONFIG.
    expect(loadConfig({ env: { ...env, SVCAPI_CONFIG: path }, flags: { config: otherPath, port: '8095', managementPort: '9003', trustedProxies: '10.0.0.8', logLevel: 'error' } }))
      .toMatchObject({ port: 8095, host: '127.0.0.1', management: { port: 9003 }, trustedProxies: ['10.0.0.8'], logLevel: 'error', configFile: otherPath });
  });

  it('an empty file, or a null value, sets nothing', () => {
    expect(loadConfig({ env: {}, flags: { config: file('') } })).toMatchObject({ port: 8080 });
    expect(loadConfig({ env: {}, flags: { config: file('port:\nhost: ~\n') } })).toMatchObject({ port: 8080, host: '127.0.0.1' });
  });

  it('names the unknown key and the file', () => {
    const path = file('port: 8081\nprot: 8082\n');
    expectConfigError(() => loadConfig({ env: {}, flags: { config: path } }), new RegExp(`invalid configuration prot \\(in ${path.replace(/[.]/g, '\\.')}\\): unknown setting; the known settings are .*management\\.port`));
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('management:\n  prot: 1\n') } }), /management\.prot \(in .*\): unknown setting/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('management: 9464\n') } }), /management \(in .*\): expected a mapping \(a section\), got a single value/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('port:\n  value: 1\n') } }), /port \(in .*\): expected a single value, got a mapping/);
  });

  it('names the key of a bad value in the file', () => {
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('port: http\n') } }), /invalid configuration port \(in .*\): expected a whole number from 0 to 65535, got "http"/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('housekeeping: { batchSize: 0 }\n') } }), /housekeeping\.batchSize \(in .*\): expected a whole number from 1/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('logPretty: maybe\n') } }), /logPretty \(in .*\): expected true or false/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('trustedProxies: [10.0.0.0/33]\n') } }), /trustedProxies \(in .*\): expected IP addresses or CIDR ranges .* got "10\.0\.0\.0\/33"/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('trustedProxies: [{ a: 1 }]\n') } }), /trustedProxies \(in .*\): expected a list of plain values/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('databaseUrl: mysql://x\n') } }), /databaseUrl \(in .*\): unsupported database URL scheme/);
  });

  it('names --config or SVCAPI_CONFIG when the file itself is at fault', () => {
    expectConfigError(() => loadConfig({ env: {}, flags: { config: join(dir, 'missing.yaml') } }), /invalid configuration --config: cannot read .*missing\.yaml: ENOENT/);
    expectConfigError(() => loadConfig({ env: { SVCAPI_CONFIG: join(dir, 'missing.yaml') } }), /invalid configuration SVCAPI_CONFIG: cannot read/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('port: [1\n') } }), /--config: .* is not valid YAML/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('{"port": 1,}', 'json') } }), /--config: .* is not valid JSON/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('- 1\n- 2\n') } }), /--config: .* expected a mapping of settings at the top level/);
    expectConfigError(() => loadConfig({ env: {}, flags: { config: file('port: 1\nport: 2\n') } }), /--config: .* is not valid YAML: .*[Uu]nique/);
  });
});

describe('new settings from the environment and flags', () => {
  it('validates them, naming the variable or flag', () => {
    const cases: [Parameters<typeof loadConfig>[0], RegExp][] = [
      [{ env: { SVCAPI_MANAGEMENT_PORT: '70000' } }, /SVCAPI_MANAGEMENT_PORT: expected a whole number from 0 to 65535/],
      [{ env: { SVCAPI_MANAGEMENT_PORT: '8080' } }, /SVCAPI_MANAGEMENT_PORT: must differ from the service port \(8080\)/],
      [{ env: {}, flags: { port: '9464' } }, /management\.port: must differ from the service port/],
      [{ env: {}, flags: { managementHost: 'a b' } }, /--management-host/],
      [{ env: { SVCAPI_TRUSTED_PROXIES: '10.0.0.1,not-an-ip' } }, /SVCAPI_TRUSTED_PROXIES: .*"not-an-ip"/],
      [{ env: { SVCAPI_LOG_PRETTY: 'sometimes' } }, /SVCAPI_LOG_PRETTY: expected true or false/],
      [{ env: { SVCAPI_SHUTDOWN_TIMEOUT_MS: '10' } }, /SVCAPI_SHUTDOWN_TIMEOUT_MS: expected a whole number from 100/],
      [{ env: { SVCAPI_SHUTDOWN_DRAIN_DELAY_MS: '-1' } }, /SVCAPI_SHUTDOWN_DRAIN_DELAY_MS/],
      [{ env: { SVCAPI_HOUSEKEEPING_INTERVAL_MS: '5' } }, /SVCAPI_HOUSEKEEPING_INTERVAL_MS/],
      [{ env: { SVCAPI_HOUSEKEEPING_BATCH_SIZE: 'lots' } }, /SVCAPI_HOUSEKEEPING_BATCH_SIZE/],
      [{ env: { SVCAPI_TOKEN_RETENTION_MS: '1e9' } }, /SVCAPI_TOKEN_RETENTION_MS/],
    ];
    for (const [input, message] of cases) expectConfigError(() => loadConfig(input), message);
  });

  it('accepts the forms documented', () => {
    expect(loadConfig({ env: { SVCAPI_MANAGEMENT_PORT: 'off', SVCAPI_LOG_PRETTY: '1', SVCAPI_TRUSTED_PROXIES: '127.0.0.1 ::1 10.0.0.0/8 fd00::/8 uniquelocal' } }))
      .toMatchObject({ management: { port: null }, logPretty: true, trustedProxies: ['127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/8', 'uniquelocal'] });
    expect(loadConfig({ env: {}, flags: { logPretty: true, managementPort: '0' } })).toMatchObject({ logPretty: true, management: { port: 0 } });
    // An ephemeral service port gets an ephemeral management port, so instances side by side never collide.
    expect(loadConfig({ env: {}, flags: { port: '0' } })).toMatchObject({ port: 0, management: { port: 0 } });
    expect(loadConfig({ env: { SVCAPI_MANAGEMENT_PORT: '9500' }, flags: { port: '0' } })).toMatchObject({ management: { port: 9500 } });
  });
});

describe('svcapi-auth config print', () => {
  it('prints the effective configuration as JSON, database password hidden', async () => {
    const path = file('port: 8081\nmanagement: { port: 9001 }\ndatabaseUrl: "postgres://svc:s3cr3t-in-file@db.example:5432/auth"\nlegacy: { url: "https://old:s3cr3t-legacy@old.example/Authentication.asmx" }\n');
    const r = await run(['config', 'print', '--config', path, '--management-port', '9002'], { env: { SVCAPI_PORT: '8085' } });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const printed = JSON.parse(r.out) as Record<string, unknown>;
    expect(printed).toMatchObject({ port: 8085, management: { host: '127.0.0.1', port: 9002 }, databaseUrl: 'postgres://svc:***@db.example:5432/auth', configFile: path });
    expect(printed).toMatchObject({ legacy: { url: 'https://old:***@old.example/Authentication.asmx' } });
    expect(r.out).not.toContain('s3cr3t');
  });

  it('takes every flag serve takes that sets configuration', async () => {
    const r = await run(['config', 'print', '--time-zone', 'Asia/Tokyo', '--log-file', join(dir, 'svc.log'), '--tls-cert', 'c.pem', '--tls-key', 'k.pem', '--audit-retention-days', '7']);
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toMatchObject({ timeZone: 'Asia/Tokyo', logFile: join(dir, 'svc.log'), tls: { certFile: 'c.pem', keyFile: 'k.pem' }, audit: { retentionDays: 7 } });
    const flags = (help: string): string[] => [...help.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1] ?? '').filter((f) => f !== '--help' && f !== '--workers');
    const serveHelp = await run(['serve', '--help']);
    const printHelp = await run(['config', 'print', '--help']);
    expect(flags(printHelp.out)).toEqual(flags(serveHelp.out));
    expect(flags(printHelp.out)).toContain('--compat');
  });

  it('stops with exit code 2 and a message naming the bad key', async () => {
    const path = file('housekeeping: { intervalMs: soon }\n');
    const r = await run(['config', 'print', '--config', path]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^error: invalid configuration housekeeping\.intervalMs \(in .*\): expected a whole number/);
  });

  it('hides passwords in every URL form', () => {
    expect(redactUrl('postgres://u:p%40ss@h/db?sslmode=require&password=x')).toBe('postgres://u:***@h/db?sslmode=require&password=***');
    expect(redactUrl('postgresql://u@h/db')).toBe('postgresql://u@h/db');
    expect(redactUrl('sqlite:./data/a.db')).toBe('sqlite:./data/a.db');
  });
});
