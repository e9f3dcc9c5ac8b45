/** legacy.url / legacy.timeoutMs: off by default, checked at start. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { loadConfig } from '../../src/config/load-config.js';

/** The shadow and front modes' settings, at their defaults (off). */
const MODES = { mode: 'serve', frontOperations: [], shadow: { rate: 0, queue: 256, concurrency: 64, keep: 100, stateful: false, maxResponseBytes: 1048576, cpuShare: 0 } } as const;

/** The token passthrough settings' defaults (off). */
const PASSTHROUGH_DEFAULTS = { tokenPassthroughUntil: null, caFile: null, passthroughCacheSeconds: 60, passthroughNegativeCacheSeconds: 10, adoptTokens: false, maxConcurrent: 16, tokenTimeoutMs: 1000, circuitFailures: 5, circuitCooldownMs: 30000 };

describe('legacy configuration', () => {
  it('is off by default, with a 3 s timeout', () => {
    expect(loadConfig({ env: {} }).legacy).toEqual({ url: null, timeoutMs: 3000, allowInsecure: false, ...PASSTHROUGH_DEFAULTS, ...MODES });
  });

  it('reads SVCAPI_LEGACY_URL and SVCAPI_LEGACY_TIMEOUT_MS', () => {
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: ' https://old.example/Authentication.asmx ', SVCAPI_LEGACY_TIMEOUT_MS: '1500' } }).legacy)
      .toEqual({ url: 'https://old.example/Authentication.asmx', timeoutMs: 1500, allowInsecure: false, ...PASSTHROUGH_DEFAULTS, ...MODES });
  });

  it('refuses what is not an http(s) URL, or a timeout out of range, naming the variable', () => {
    for (const url of ['old.example/Authentication.asmx', 'ftp://old.example/x', 'http//x']) {
      expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url } })).toThrow(ConfigError);
      expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url } })).toThrow(/SVCAPI_LEGACY_URL/);
    }
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_TIMEOUT_MS: '10' } })).toThrow(/SVCAPI_LEGACY_TIMEOUT_MS/);
  });

  it('refuses plain http to another host unless legacy.allowInsecure; the same machine is allowed', () => {
    for (const url of ['http://10.0.0.5/Authentication.asmx', 'http://old.example/Authentication.asmx', 'http://[2001:db8::1]/x', 'http://127.0.0.1.example/x']) {
      expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url } }), url).toThrow(/passwords in clear.*legacy\.allowInsecure/);
      expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_ALLOW_INSECURE: 'true' } }).legacy.url).toBe(url);
    }
    for (const url of ['http://127.0.0.1:8081/Authentication.asmx', 'http://localhost/x', 'http://[::1]:9000/x', 'http://127.5.6.7/x', 'https://old.example/x']) {
      expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url } }).legacy.url, url).toBe(url);
    }
  });

  it('can be set in the config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-config-'));
    try {
      const path = join(dir, 'svcapi-auth.yaml');
      writeFileSync(path, 'legacy:\n  url: http://10.0.0.5/Authentication.asmx\n  timeoutMs: 2000\n  allowInsecure: true\n');
      expect(loadConfig({ flags: { config: path }, env: {} }).legacy).toEqual({ url: 'http://10.0.0.5/Authentication.asmx', timeoutMs: 2000, allowInsecure: true, ...PASSTHROUGH_DEFAULTS, ...MODES });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('token passthrough: off by default; an end date with its offset, normalised to UTC; needs legacy.url', () => {
    const url = 'https://old.example/Authentication.asmx';
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url } }).legacy.tokenPassthroughUntil).toBeNull();
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: 'OFF' } }).legacy.tokenPassthroughUntil).toBeNull();
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: '2027-03-31T23:59:59Z' } }).legacy.tokenPassthroughUntil).toBe('2027-03-31T23:59:59.000Z');
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: '2027-03-31T23:59+02:00' } }).legacy.tokenPassthroughUntil).toBe('2027-03-31T21:59:00.000Z');
    for (const bad of ['2027-03-31', '2027-03-31T23:59:59', 'tomorrow', 'on', '2027-02-30T00:00:00Z', '2027-03-31T24:00:00Z', '2027-13-01T00:00:00Z']) {
      expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: bad } }), bad).toThrow(/SVCAPI_LEGACY_TOKEN_PASSTHROUGH/);
    }
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_TOKEN_PASSTHROUGH: '2027-03-31T23:59:59Z' } })).toThrow(/SVCAPI_LEGACY_TOKEN_PASSTHROUGH: token passthrough asks the old service: set SVCAPI_LEGACY_URL/);
  });

  it('token passthrough\'s limits and the CA file, from the environment or the file, checked', () => {
    const env = {
      SVCAPI_LEGACY_URL: 'https://old.example/Authentication.asmx', SVCAPI_LEGACY_PASSTHROUGH_CACHE_SECONDS: '30', SVCAPI_LEGACY_PASSTHROUGH_NEGATIVE_CACHE_SECONDS: '0',
      SVCAPI_LEGACY_MAX_CONCURRENT: '4', SVCAPI_LEGACY_TOKEN_TIMEOUT_MS: '500', SVCAPI_LEGACY_CIRCUIT_FAILURES: '3', SVCAPI_LEGACY_CIRCUIT_COOLDOWN_MS: '10000', SVCAPI_LEGACY_CA_FILE: 'ca.pem',
    };
    expect(loadConfig({ env }).legacy).toMatchObject({
      passthroughCacheSeconds: 30, passthroughNegativeCacheSeconds: 0, maxConcurrent: 4, tokenTimeoutMs: 500, circuitFailures: 3, circuitCooldownMs: 10000, caFile: join(process.cwd(), 'ca.pem'),
    });
    for (const [name, value] of [['SVCAPI_LEGACY_PASSTHROUGH_CACHE_SECONDS', '3601'], ['SVCAPI_LEGACY_MAX_CONCURRENT', '0'], ['SVCAPI_LEGACY_TOKEN_TIMEOUT_MS', '50'], ['SVCAPI_LEGACY_CIRCUIT_FAILURES', 'x'], ['SVCAPI_LEGACY_CIRCUIT_COOLDOWN_MS', '10']] as const) {
      expect(() => loadConfig({ env: { ...env, [name]: value } }), name).toThrow(new RegExp(name));
    }
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_CA_FILE: 'ca.pem' } })).toThrow(/SVCAPI_LEGACY_CA_FILE: a CA file is for an https legacy\.url/);
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: 'http://127.0.0.1:8081/x', SVCAPI_LEGACY_CA_FILE: 'ca.pem' } })).toThrow(/SVCAPI_LEGACY_CA_FILE/);
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-config-'));
    try {
      const path = join(dir, 'svcapi-auth.yaml');
      writeFileSync(path, 'legacy:\n  url: https://old.example/x\n  tokenPassthrough: 2027-03-31T23:59:59Z\n  maxConcurrent: 8\n  caFile: /etc/ssl/old-ca.pem\n');
      expect(loadConfig({ flags: { config: path }, env: {} }).legacy).toMatchObject({ tokenPassthroughUntil: '2027-03-31T23:59:59.000Z', maxConcurrent: 8, caFile: '/etc/ssl/old-ca.pem' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('token adoption: off by default; on only with passthrough and a profile whose token answer names owner and expiry', () => {
    const url = 'https://old.example/Authentication.asmx';
    const on = { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_TOKEN_PASSTHROUGH: '2027-03-31T23:59:59Z' };
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-adopt-'));
    const profile = (success: unknown[]): string => {
      const path = join(dir, `profile-${success.length}-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(path, JSON.stringify({ json: { validateUserToken: { success } } }));
      return path;
    };
    const valid = { key: 'valid', value: { field: 'valid' } };
    const login = { key: 'user', value: { field: 'login' } };
    const expires = { key: 'until', value: { field: 'expiresAt' } };
    try {
      expect(loadConfig({ env: on }).legacy.adoptTokens).toBe(false);
      const full = profile([valid, login, expires]);
      expect(loadConfig({ env: { ...on, SVCAPI_COMPAT: full, SVCAPI_LEGACY_ADOPT_TOKENS: 'true' } }).legacy.adoptTokens).toBe(true);
      const yaml = join(dir, 'svcapi-auth.yaml');
      writeFileSync(yaml, `compat:\n  profile: ${full}\nlegacy:\n  url: ${url}\n  tokenPassthrough: 2027-03-31T23:59:59Z\n  adoptTokens: true\n`);
      expect(loadConfig({ flags: { config: yaml }, env: {} }).legacy.adoptTokens).toBe(true);
      const refusals: Array<[NodeJS.ProcessEnv, RegExp]> = [
        [{ SVCAPI_LEGACY_URL: url, SVCAPI_COMPAT: full, SVCAPI_LEGACY_ADOPT_TOKENS: 'true' }, /SVCAPI_LEGACY_ADOPT_TOKENS: adoption stores tokens token passthrough vouched for: set SVCAPI_LEGACY_TOKEN_PASSTHROUGH/],
        [{ ...on, SVCAPI_LEGACY_ADOPT_TOKENS: 'true' }, /SVCAPI_LEGACY_ADOPT_TOKENS: .*json\.validateUserToken\.success has no member with \{"field": "login"\} \(no profile is given/],
        [{ ...on, SVCAPI_COMPAT: profile([valid, expires]), SVCAPI_LEGACY_ADOPT_TOKENS: 'true' }, /no member with \{"field": "login"\}$/],
        [{ ...on, SVCAPI_COMPAT: profile([valid, login]), SVCAPI_LEGACY_ADOPT_TOKENS: 'true' }, /no member with \{"field": "expiresAt"\}$/],
        [{ ...on, SVCAPI_COMPAT: profile([valid]), SVCAPI_LEGACY_ADOPT_TOKENS: 'true' }, /no member with \{"field": "login"\} and none with \{"field": "expiresAt"\}$/],
        [{ ...on, SVCAPI_COMPAT: full, SVCAPI_LEGACY_ADOPT_TOKENS: 'maybe' }, /SVCAPI_LEGACY_ADOPT_TOKENS: expected true or false/],
      ];
      for (const [env, message] of refusals) {
        expect(() => loadConfig({ env }), JSON.stringify(env)).toThrow(ConfigError);
        expect(() => loadConfig({ env }), JSON.stringify(env)).toThrow(message);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shadow and front modes: defaults, the environment, the file; front mode compares every request unless told otherwise', () => {
    const url = 'https://old.example/Authentication.asmx';
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_SHADOW_RATE: '0.05' } }).legacy.shadow.rate).toBe(0.05);
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_SHADOW_CPU_SHARE: '1' } }).legacy.shadow.cpuShare).toBe(1);
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_MODE: 'front' } }).legacy).toMatchObject({ mode: 'front', frontOperations: [], shadow: { rate: 1 } });
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_MODE: 'front', SVCAPI_LEGACY_SHADOW_RATE: '0' } }).legacy.shadow.rate).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-config-'));
    try {
      const path = join(dir, 'svcapi-auth.yaml');
      writeFileSync(path, `legacy:\n  url: ${url}\n  mode: front\n  frontOperations: [ValidateUserToken, WhatsNew]\n  shadow: { rate: 0.5, queue: 10, concurrency: 2, keep: 5, stateful: true, maxResponseBytes: 65536, cpuShare: 0.2 }\n`);
      expect(loadConfig({ flags: { config: path }, env: {} }).legacy).toEqual({
        url, timeoutMs: 3000, allowInsecure: false, ...PASSTHROUGH_DEFAULTS, mode: 'front', frontOperations: ['ValidateUserToken', 'WhatsNew'],
        shadow: { rate: 0.5, queue: 10, concurrency: 2, keep: 5, stateful: true, maxResponseBytes: 65536, cpuShare: 0.2 },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shadow and front modes: bad values are refused, naming the setting', () => {
    const url = 'https://old.example/Authentication.asmx';
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_MODE: 'front' } })).toThrow(/SVCAPI_LEGACY_MODE.*legacy\.url/);
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_SHADOW_RATE: '0.1' } })).toThrow(/SVCAPI_LEGACY_SHADOW_RATE.*legacy\.url/);
    for (const rate of ['1.5', '-0.1', 'half', '5%']) expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_SHADOW_RATE: rate } }), rate).toThrow(/SVCAPI_LEGACY_SHADOW_RATE: expected a share from 0 to 1/);
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_MODE: 'proxy' } })).toThrow(/expected serve or front/);
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_MODE: 'front', SVCAPI_LEGACY_FRONT_OPERATIONS: 'ValidateUser,Nope' } })).toThrow(/SVCAPI_LEGACY_FRONT_OPERATIONS.*"Nope"/);
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_FRONT_OPERATIONS: 'ValidateUser' } })).toThrow(/legacy\.mode to front/);
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url, SVCAPI_LEGACY_SHADOW_QUEUE: '0' } })).toThrow(/SVCAPI_LEGACY_SHADOW_QUEUE/);
  });
});
