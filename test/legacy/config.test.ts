/** legacy.url / legacy.timeoutMs (issue 7): off by default, checked at start. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('legacy configuration', () => {
  it('is off by default, with a 3 s timeout', () => {
    expect(loadConfig({ env: {} }).legacy).toEqual({ url: null, timeoutMs: 3000, allowInsecure: false });
  });

  it('reads SVCAPI_LEGACY_URL and SVCAPI_LEGACY_TIMEOUT_MS', () => {
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: ' https://old.example/Authentication.asmx ', SVCAPI_LEGACY_TIMEOUT_MS: '1500' } }).legacy)
      .toEqual({ url: 'https://old.example/Authentication.asmx', timeoutMs: 1500, allowInsecure: false });
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
      expect(loadConfig({ flags: { config: path }, env: {} }).legacy).toEqual({ url: 'http://10.0.0.5/Authentication.asmx', timeoutMs: 2000, allowInsecure: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
