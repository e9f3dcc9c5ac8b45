/** The compatibility profile file: defaults for what it leaves out, every bad key named. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compatProfileFromJson, parseTokenFormName, readCompatProfile, tokenFormName } from '../../src/compat-profile-file.js';
import { ConfigError } from '../../src/config/config-error.js';
import { loadConfig } from '../../src/config/load-config.js';
import { DEFAULT_COMPAT_PROFILE } from '../../src/contract/compat-profile.js';

describe('compatibility profile file', () => {
  it('an empty profile is the default one; a partial one keeps the defaults it does not name', () => {
    expect(compatProfileFromJson({})).toStrictEqual(DEFAULT_COMPAT_PROFILE);
    const p = compatProfileFromJson({ validateUser: { failureValue: '00000000-0000-0000-0000-000000000000' }, tokens: { form: 'GUID' }, whatsNew: { tableName: 'Noticias' } });
    expect(p.validateUser.failureValue).toBe('00000000-0000-0000-0000-000000000000');
    expect(p.tokens.form).toStrictEqual({ kind: 'guid', case: 'upper', dashes: true, braces: false });
    expect(p.whatsNew.tableName).toBe('Noticias');
    expect(p.whatsNew.columns).toStrictEqual(DEFAULT_COMPAT_PROFILE.whatsNew.columns);
    expect(p.json).toStrictEqual(DEFAULT_COMPAT_PROFILE.json);
    expect(Object.isFrozen(p.whatsNew.columns[0])).toBe(true);
  });

  it('names token forms as .NET writes GUIDs, and reads back what it names', () => {
    for (const name of ['guid', 'GUID', 'guid-n', 'GUID-N', '{guid}', '{GUID}', 'hex32', 'HEX40', 'hex128']) {
      const form = parseTokenFormName(name);
      expect(form, name).not.toBeNull();
      if (form !== null) expect(tokenFormName(form)).toBe(name);
    }
    for (const bad of ['uuid', 'hex31', 'hex129', '{guid', '{guid-n}', 'Guid', 'hex']) expect(parseTokenFormName(bad), bad).toBeNull();
  });

  it('names the bad key: unknown keys, wrong types, bad names, bad templates', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ validateUsr: {} }, /: unknown key "validateUsr"/],
      [{ tokens: { form: 'uuid' } }, /tokens\.form: unknown token form "uuid"/],
      [{ tokens: { form: { kind: 'hex', length: 16, case: 'lower' } } }, /tokens\.form/],
      [{ whatsNew: { columns: [{ name: 'Título', type: 'string', from: { field: 'title' } }] } }, /whatsNew\.columns\[0\]\.name: must be an XML name/],
      [{ whatsNew: { columns: [{ name: 'A', type: 'str', from: { field: 'title' } }] } }, /whatsNew\.columns\[0\]\.type/],
      [{ whatsNew: { columns: [{ name: 'A', type: 'string', from: { field: 'title' } }, { name: 'A', type: 'int', from: { const: 1 } }] } }, /whatsNew\.columns\[1\]\.name: column "A" appears twice/],
      [{ whatsNew: { columns: [{ name: 'A', type: 'int', from: { const: 'abc' } }] } }, /whatsNew\.columns\[0\]\.from\.const: "abc" is not a value of type int/],
      [{ whatsNew: { columns: [{ name: 'A', type: 'boolean', from: { const: 'yes' } }] } }, /whatsNew\.columns\[0\]\.from\.const: "yes" is not a value of type boolean/],
      [{ whatsNew: { columns: [{ name: 'A', type: 'dateTime', from: { const: 5 } }] } }, /whatsNew\.columns\[0\]\.from\.const: 5 is not a value of type dateTime/],
      [{ loginUrl: { apps: { 2: 'https://gps.example/AutoLogin.aspx?app={appId}&token={tokn}' } } }, /loginUrl\.apps\.2: unknown placeholder \{tokn\}/],
      [{ loginUrl: { default: '/relative?t={ticket}' } }, /loginUrl\.default: must be an absolute http\(s\) URL/],
      [{ json: { validateUser: { inputs: { sources: ['query', 'bearer'] } } } }, /json\.validateUser\.inputs\.sources\[1\]/],
      [{ json: { validateUser: { success: [{ key: 'a', value: { field: 'token' } }, { key: 'a', value: { const: 1 } }] } } }, /json\.validateUser\.success\[1\]\.key: key "a" appears twice/],
      [{ validateUser: { failureValue: '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b' } }, /validateUser\.failureValue: must not look like a token/],
      [{ json: { validateUser: { failure: [{ key: 'Login', value: { field: 'login' } }] } } }, /json\.validateUser\.failure\[0\]\.value\.field: a failure answer holds constants only/],
      [{ json: { validateUserToken: { failure: [{ key: 'Valid', value: { field: 'valid' } }] } } }, /json\.validateUserToken\.failure\[0\]\.value\.field: a failure answer holds constants only/],
      [{ json: { validateUserToken: { success: [{ key: 'T', value: { field: 'token' } }] } } }, /json\.validateUserToken\.success\[0\]\.value\.field: unknown field "token" here; expected success, valid, expiresAt, login, appId/],
      [{ json: { validateUser: { success: [{ key: 'T', value: { field: 'tokn' } }] } } }, /json\.validateUser\.success\[0\]\.value\.field: unknown field "tokn"/],
    ];
    for (const [data, message] of cases) expect(() => compatProfileFromJson(data), JSON.stringify(data)).toThrow(message);
  });

  it('is read by serve\'s configuration from --compat, SVCAPI_COMPAT or compat.profile, and a bad file stops the start naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-compat-'));
    try {
      const good = join(dir, 'good.json');
      writeFileSync(good, JSON.stringify({ validateUser: { failureValue: 'LOGIN_FAILED' } }));
      expect(loadConfig({ env: {} }).compat).toStrictEqual({ file: null, profile: DEFAULT_COMPAT_PROFILE });
      expect(loadConfig({ env: { SVCAPI_COMPAT: good } }).compat.profile.validateUser.failureValue).toBe('LOGIN_FAILED');
      expect(loadConfig({ flags: { compat: good }, env: {} }).compat.file).toBe(good);
      const yaml = join(dir, 'svcapi-auth.yaml');
      writeFileSync(yaml, `compat:\n  profile: ${good}\n`);
      expect(loadConfig({ flags: { config: yaml }, env: {} }).compat.profile.validateUser.failureValue).toBe('LOGIN_FAILED');
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, '{"whatsNew":{"maxRows":0}}');
      expect(() => loadConfig({ env: { SVCAPI_COMPAT: bad } })).toThrow(ConfigError);
      expect(() => loadConfig({ env: { SVCAPI_COMPAT: bad } })).toThrow(/SVCAPI_COMPAT.*whatsNew\.maxRows/);
      writeFileSync(bad, '{"whatsNew":');
      expect(() => readCompatProfile(bad)).toThrow(/not JSON/);
      expect(() => readCompatProfile(join(dir, 'missing.json'))).toThrow(/cannot read the file \(ENOENT\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
