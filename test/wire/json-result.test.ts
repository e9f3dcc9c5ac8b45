/** The JSON answers of the compatibility profile: layouts, dates and the three escapings. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPAT_PROFILE, type JsonOperationProfile } from '../../src/contract/compat-profile.js';
import { compileJsonResult, jsonDate, jsonString } from '../../src/wire/json-result.js';

const EXPIRES = new Date(1732450000000);
const TOKEN = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';

describe('the default profile', () => {
  it('writes what svcapi-auth always wrote, byte for byte', () => {
    const user = compileJsonResult(DEFAULT_COMPAT_PROFILE.json.validateUser);
    expect(user.success({ token: TOKEN, expiresAt: EXPIRES, login: 'alice', appId: 2 })).toBe(JSON.stringify({ success: true, token: TOKEN, expires: EXPIRES.toISOString() }));
    expect(user.failure).toBe('{"success":false,"token":""}');
    const token = compileJsonResult(DEFAULT_COMPAT_PROFILE.json.validateUserToken);
    expect(token.success({ token: null, expiresAt: EXPIRES, login: null, appId: null })).toBe(`{"valid":true,"expires":"${EXPIRES.toISOString()}"}`);
    expect(token.failure).toBe('{"valid":false}');
  });
});

describe('a profile\'s layout', () => {
  const base: JsonOperationProfile = { ...DEFAULT_COMPAT_PROFILE.json.validateUser, dates: 'ms-ajax', escaping: 'javascript-serializer' };

  it('members in order, facts and constants of every JSON type, null apart from ""', () => {
    const result = compileJsonResult({
      ...base,
      success: [
        { key: 'd', value: { const: null } },
        { key: 'Token', value: { field: 'token' } },
        { key: 'Empty', value: { const: '' } },
        { key: 'Code', value: { const: 0 } },
        { key: 'Ratio', value: { const: 1.5 } },
        { key: 'IsOk', value: { field: 'success' } },
        { key: 'Valid', value: { field: 'valid' } },
        { key: 'Login', value: { field: 'login' } },
        { key: 'Until', value: { field: 'expiresAt' } },
      ],
      failure: [{ key: 'IsOk', value: { const: false } }, { key: 'Token', value: { const: null } }, { key: 'Message', value: { const: 'Invalid credentials' } }],
    });
    expect(result.success({ token: TOKEN, expiresAt: EXPIRES, login: 'Alice', appId: 2 })).toBe(
      `{"d":null,"Token":"${TOKEN}","Empty":"","Code":0,"Ratio":1.5,"IsOk":true,"Valid":true,"Login":"Alice","Until":"\\/Date(1732450000000)\\/"}`,
    );
    expect(result.success({ token: null, expiresAt: EXPIRES, login: null, appId: null })).toContain('"Token":null');
    expect(result.failure).toBe('{"IsOk":false,"Token":null,"Message":"Invalid credentials"}');
    expect(compileJsonResult({ ...base, success: [], failure: [] }).failure).toBe('{}');
  });

  it('a failure layout holds constants only: one text for every reason', () => {
    expect(() => compileJsonResult({ ...base, failure: [{ key: 'Login', value: { field: 'login' } }] })).toThrow(/constants only/);
  });
});

describe('dates', () => {
  it('ISO 8601, JavaScriptSerializer\'s \\/Date(ms)\\/ and DataContractJsonSerializer\'s \\/Date(ms+0000)\\/', () => {
    expect(jsonDate(EXPIRES, 'iso')).toBe('"2024-11-24T12:06:40.000Z"');
    expect(jsonDate(EXPIRES, 'ms-ajax')).toBe('"\\/Date(1732450000000)\\/"');
    expect(jsonDate(EXPIRES, 'wcf')).toBe('"\\/Date(1732450000000+0000)\\/"');
    // What a JSON parser reads from them: the escaped slash is a slash.
    expect(JSON.parse(jsonDate(EXPIRES, 'ms-ajax'))).toBe('/Date(1732450000000)/');
    expect(JSON.parse(jsonDate(EXPIRES, 'wcf'))).toBe('/Date(1732450000000+0000)/');
  });
});

describe('escaping', () => {
  const nasty = 'a"b\\c/d<e>f&g\'h\n\r\t\b\f\u0001\u001f\u007f\u0085\u2028\u2029é😀';

  it('standard is JSON.stringify', () => {
    expect(jsonString(nasty, 'standard')).toBe(JSON.stringify(nasty));
  });

  it('javascript-serializer: HttpUtility.JavaScriptStringEncode (< > & \' and control characters as \\u00xx, lower-case)', () => {
    expect(jsonString(nasty, 'javascript-serializer')).toBe(
      '"a\\"b\\\\c/d\\u003ce\\u003ef\\u0026g\\u0027h\\n\\r\\t\\b\\f\\u0001\\u001f\u007f\\u0085\\u2028\\u2029é😀"',
    );
  });

  it('data-contract: XmlJsonWriter (/ as \\/, every control character and surrogate as \\uxxxx)', () => {
    expect(jsonString(nasty, 'data-contract')).toBe(
      '"a\\"b\\\\c\\/d<e>f&g\'h\\u000a\\u000d\\u0009\\u0008\\u000c\\u0001\\u001f\u007f\\u0085\\u2028\\u2029é\\ud83d\\ude00"',
    );
  });

  it('every escaping reads back as the same text', () => {
    for (const escaping of ['standard', 'javascript-serializer', 'data-contract'] as const) {
      expect(JSON.parse(jsonString(nasty, escaping)), escaping).toBe(nasty);
    }
  });

  it('keys are escaped like values', () => {
    const result = compileJsonResult({ ...DEFAULT_COMPAT_PROFILE.json.validateUserToken, escaping: 'data-contract', success: [{ key: 'a/b', value: { const: '</x>' } }] });
    expect(result.success({ token: null, expiresAt: EXPIRES, login: null, appId: null })).toBe('{"a\\/b":"<\\/x>"}');
  });
});
