/** legacy.url / legacy.timeoutMs (issue 7): off by default, checked at start. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('legacy configuration', () => {
  it('is off by default, with a 3 s timeout', () => {
    expect(loadConfig({ env: {} }).legacy).toEqual({ url: null, timeoutMs: 3000 });
  });

  it('reads SVCAPI_LEGACY_URL and SVCAPI_LEGACY_TIMEOUT_MS', () => {
    expect(loadConfig({ env: { SVCAPI_LEGACY_URL: ' https://old.example/Authentication.asmx ', SVCAPI_LEGACY_TIMEOUT_MS: '1500' } }).legacy)
      .toEqual({ url: 'https://old.example/Authentication.asmx', timeoutMs: 1500 });
  });

  it('refuses what is not an http(s) URL, or a timeout out of range, naming the variable', () => {
    for (const url of ['old.example/Authentication.asmx', 'ftp://old.example/x', 'http//x']) {
      expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url } })).toThrow(ConfigError);
      expect(() => loadConfig({ env: { SVCAPI_LEGACY_URL: url } })).toThrow(/SVCAPI_LEGACY_URL/);
    }
    expect(() => loadConfig({ env: { SVCAPI_LEGACY_TIMEOUT_MS: '10' } })).toThrow(/SVCAPI_LEGACY_TIMEOUT_MS/);
  });

  it('can be set in the config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-legacy-config-'));
    try {
      const path = join(dir, 'svcapi-auth.yaml');
      writeFileSync(path, 'legacy:\n  url: http://10.0.0.5/Authentication.asmx\n  timeoutMs: 2000\n');
      expect(loadConfig({ flags: { config: path }, env: {} }).legacy).toEqual({ url: 'http://10.0.0.5/Authentication.asmx', timeoutMs: 2000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
