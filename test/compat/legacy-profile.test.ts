/**
 * The compatibility profile of one legacy deployment, applied through the whole app: every
 * binding answers byte for byte what that old service did. The old service (described by
 * LEGACY_PROFILE, the example of docs/compat-profile.md) answers failed logins with Guid.Empty,
 * writes tokens as upper-case GUIDs, serialises ValidateUserJSON with JavaScriptSerializer and
 * ValidateUserTokenJSON with DataContractJsonSerializer, and sends the GPS application (AppID 2)
 * to its AutoLogin page with the caller's token.
 */
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compatProfileFromJson } from '../../src/compat-profile-file.js';
import { BINDINGS, buildRequest, type Args, type BindingName } from '../support/asmx-client.js';
import { fakeClock } from '../support/domain-fakes.js';
import { createTestStack, type TestStack } from '../support/start-app.js';

const LEGACY_PROFILE = {
  description: 'GPS legacy service (ASP.NET 4.8): Guid.Empty for no, Guid.ToString().ToUpper() tokens',
  validateUser: { failureValue: '00000000-0000-0000-0000-000000000000' },
  tokens: { form: 'GUID' },
  json: {
    validateUser: {
      inputs: { sources: ['query', 'form', 'header'], names: { login: 'UserName', password: 'Password', appId: 'AppID', ipAddress: 'IPAddress' } },
      success: [
        { key: 'Success', value: { field: 'success' } },
        { key: 'Token', value: { field: 'token' } },
        { key: 'Message', value: { const: 'OK' } },
        { key: 'ExpiresAt', value: { field: 'expiresAt' } },
      ],
      failure: [
        { key: 'Success', value: { const: false } },
        { key: 'Token', value: { const: null } },
        { key: 'Message', value: { const: 'Invalid credentials' } },
        { key: 'ExpiresAt', value: { const: null } },
      ],
      dates: 'ms-ajax',
      escaping: 'javascript-serializer',
    },
    validateUserToken: {
      inputs: { sources: ['header', 'query', 'form'], names: { token: 'AuthToken' } },
      success: [
        { key: 'IsValid', value: { field: 'valid' } },
        { key: 'ValidUntil', value: { field: 'expiresAt' } },
      ],
      failure: [
        { key: 'IsValid', value: { const: false } },
        { key: 'ValidUntil', value: { const: null } },
      ],
      dates: 'wcf',
      escaping: 'data-contract',
    },
  },
  loginUrl: { apps: { 2: 'https://gps.example/AutoLogin.aspx?app={appId}&token={token}' } },
};

const GUID_EMPTY = '00000000-0000-0000-0000-000000000000';
const UPPER_GUID = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/;
const NOW = '2024-11-24T12:06:40.000Z'; // 1732450000000 ms
const LIFETIME_MS = 24 * 3600 * 1000; // the default token lifetime
const EXPIRES_MS = Date.parse(NOW) + LIFETIME_MS;

function xmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The whole response body the old ASMX service (.NET: CRLF after the declaration) writes for a result. */
function body(binding: BindingName, operation: string, result: string | boolean): string {
  const text = xmlText(String(result));
  if (binding === 'soap11' || binding === 'soap12') {
    const ns = binding === 'soap11' ? 'http://schemas.xmlsoap.org/soap/envelope/' : 'http://www.w3.org/2003/05/soap-envelope';
    const value = text === '' ? `<${operation}Result />` : `<${operation}Result>${text}</${operation}Result>`;
    return `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${ns}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><${operation}Response xmlns="SVCAPI">${value}</${operation}Response></soap:Body></soap:Envelope>`;
  }
  const element = typeof result === 'boolean' ? 'boolean' : 'string';
  return `<?xml version="1.0" encoding="utf-8"?>\r\n${text === '' ? `<${element} xmlns="SVCAPI" />` : `<${element} xmlns="SVCAPI">${text}</${element}>`}`;
}

const USER_JSON_FAILURE = '{"Success":false,"Token":null,"Message":"Invalid credentials","ExpiresAt":null}';
const TOKEN_JSON_FAILURE = '{"IsValid":false,"ValidUntil":null}';

it('is the example of docs/compat-profile.md, which reads as a valid profile', () => {
  const doc = readFileSync(new URL('../../docs/compat-profile.md', import.meta.url), 'utf8');
  const example = /## Example[^\n]*\n[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc)?.[1] ?? '';
  expect(compatProfileFromJson(JSON.parse(example))).toStrictEqual(compatProfileFromJson(LEGACY_PROFILE));
});

describe('a legacy deployment\'s profile, through the app', () => {
  let stack: TestStack;

  /** The raw response body of a call; `query`, `headers` and a form `payload` as the client sends them. */
  async function send(binding: BindingName, operation: string, args: Args, options: { query?: string; headers?: Record<string, string>; payload?: string } = {}): Promise<string> {
    const req = buildRequest(binding, operation, args, options.query);
    const payload = options.payload ?? req.payload;
    const res = await stack.app.inject({ method: req.method, url: req.url, headers: { ...req.headers, ...options.headers }, ...(payload !== undefined && { payload }) });
    expect(res.statusCode, res.body).toBe(200);
    return res.body;
  }

  /** The token the old service hands out on this binding (checked to be an upper-case GUID). */
  async function login(binding: BindingName): Promise<string> {
    const raw = await send(binding, 'ValidateUser', { login: 'demo', password: 'demo-pass', AppId: 2, IPAddress: '' });
    const token = /([0-9A-Fa-f-]{36})<\/(?:ValidateUserResult|string)>/.exec(raw)?.[1] ?? '';
    expect(token).toMatch(UPPER_GUID);
    expect(raw).toBe(body(binding, 'ValidateUser', token));
    return token;
  }

  function ticketRows(): number {
    const db = new Database(stack.dbPath, { readonly: true });
    try {
      // Tickets in issue order (the tickets table, migration 17) and any in the tokens table.
      return (db.prepare("SELECT (SELECT count(*) FROM tokens WHERE kind = 'ticket') + (SELECT count(*) FROM tickets) AS n").get() as { n: number }).n;
    } finally {
      db.close();
    }
  }

  beforeAll(async () => {
    stack = await createTestStack({ profile: compatProfileFromJson(LEGACY_PROFILE), clock: fakeClock(NOW), throttle: false });
    const must = (r: { ok: boolean }): void => expect(r.ok).toBe(true);
    must(await stack.admin.updateApplication(2, { loginUrl: 'http://gps.example/login' }));
    must(await stack.admin.addApplication({ appId: 7, name: 'Portal', loginUrl: 'https://portal.example/sso?from=gps' }));
    must(await stack.admin.addUser({ login: 'demo', password: 'demo-pass', appIds: [2, 7] }));
  });
  afterAll(async () => stack.close());

  describe.each(BINDINGS)('over %s', (binding) => {
    it('ValidateUser: an upper-case GUID token, Guid.Empty for every failure; the token validates in any case', async () => {
      const token = await login(binding);
      const failure = body(binding, 'ValidateUser', GUID_EMPTY);
      for (const args of [
        { login: 'demo', password: 'wrong', AppId: 2, IPAddress: '' },
        { login: 'nobody', password: 'demo-pass', AppId: 2, IPAddress: '' },
        { login: 'demo', password: 'demo-pass', AppId: 99, IPAddress: '' },
      ]) {
        expect(await send(binding, 'ValidateUser', args)).toBe(failure);
      }
      for (const spelling of [token, token.toLowerCase(), `{${token}}`, token.replace(/-/g, '')]) {
        expect(await send(binding, 'ValidateUserToken', { token: spelling })).toBe(body(binding, 'ValidateUserToken', true));
      }
      expect(await send(binding, 'ValidateUserToken', { token: GUID_EMPTY })).toBe(body(binding, 'ValidateUserToken', false));
    });

    it('ValidateUserJSON: JavaScriptSerializer\'s layout and dates, inputs from the query string and the headers', async () => {
      const viaQuery = await send(binding, 'ValidateUserJSON', {}, { query: 'UserName=demo&Password=demo-pass&AppID=2' });
      const token = /"Token":"([^"]*)"/.exec(viaQuery)?.[1] ?? '';
      expect(token).toMatch(UPPER_GUID);
      expect(viaQuery).toBe(body(binding, 'ValidateUserJSON', `{"Success":true,"Token":"${token}","Message":"OK","ExpiresAt":"\\/Date(${EXPIRES_MS})\\/"}`));

      const viaHeaders = await send(binding, 'ValidateUserJSON', {}, { headers: { username: 'demo', password: 'demo-pass', appid: '2' } });
      expect(viaHeaders).toMatch(/^.*\{"Success":true,"Token":"[0-9A-F-]{36}","Message":"OK","ExpiresAt":"\\\/Date\(\d+\)\\\/"\}.*$/s);
      // The query string comes before the headers.
      const failure = body(binding, 'ValidateUserJSON', USER_JSON_FAILURE);
      expect(await send(binding, 'ValidateUserJSON', {}, { query: 'Password=wrong', headers: { username: 'demo', password: 'demo-pass', appid: '2' } })).toBe(failure);
      // One failure text for every reason; svcapi-auth's own input names and Basic are not this legacy's.
      const basic = `Basic ${Buffer.from('demo:demo-pass').toString('base64')}`;
      for (const options of [
        { query: 'UserName=demo&Password=wrong&AppID=2' },
        { query: 'UserName=demo&Password=demo-pass&AppID=abc' },
        { query: 'login=demo&password=demo-pass&AppId=2&AppID=' },
        { query: 'AppID=2', headers: { authorization: basic } },
        {},
      ]) {
        expect(await send(binding, 'ValidateUserJSON', {}, options), JSON.stringify(options)).toBe(failure);
      }
    });

    it('ValidateUserTokenJSON: its own layout (DataContractJsonSerializer), the token from a header or the query string', async () => {
      const token = await login(binding);
      const valid = body(binding, 'ValidateUserTokenJSON', `{"IsValid":true,"ValidUntil":"\\/Date(${EXPIRES_MS}+0000)\\/"}`);
      expect(await send(binding, 'ValidateUserTokenJSON', {}, { headers: { authtoken: token } })).toBe(valid);
      expect(await send(binding, 'ValidateUserTokenJSON', {}, { query: `AuthToken=${token.toLowerCase()}` })).toBe(valid);
      const invalid = body(binding, 'ValidateUserTokenJSON', TOKEN_JSON_FAILURE);
      expect(await send(binding, 'ValidateUserTokenJSON', {}, { headers: { authtoken: GUID_EMPTY } })).toBe(invalid);
      expect(await send(binding, 'ValidateUserTokenJSON', {}, { headers: { authorization: `Bearer ${token}` } })).toBe(invalid);
      expect(await send(binding, 'ValidateUserTokenJSON', {}, { query: `token=${token}` })).toBe(invalid);
    });

    it('GetUserLoginURL: the AutoLogin page with the caller\'s token for app 2 (no ticket issued), a ticket in upper case elsewhere', async () => {
      const token = await login(binding);
      const tickets = ticketRows();
      expect(await send(binding, 'GetUserLoginURL', { token, AppID: 2 })).toBe(body(binding, 'GetUserLoginURL', `https://gps.example/AutoLogin.aspx?app=2&token=${token}`));
      const lower = token.toLowerCase();
      expect(await send(binding, 'GetUserLoginURL', { token: lower, AppID: 2 })).toBe(body(binding, 'GetUserLoginURL', `https://gps.example/AutoLogin.aspx?app=2&token=${lower}`));
      expect(ticketRows()).toBe(tickets);

      const portal = await send(binding, 'GetUserLoginURL', { token, AppID: 7 });
      const ticket = /ticket=([^<]*)</.exec(portal)?.[1] ?? '';
      expect(ticket).toMatch(UPPER_GUID);
      expect(portal).toBe(body(binding, 'GetUserLoginURL', `https://portal.example/sso?from=gps&ticket=${ticket}`));
      expect(ticketRows()).toBe(tickets + 1);
      expect(await send(binding, 'ValidateUserToken', { token: ticket })).toBe(body(binding, 'ValidateUserToken', true));
      expect(await send(binding, 'ValidateUserToken', { token: ticket })).toBe(body(binding, 'ValidateUserToken', false));

      expect(await send(binding, 'GetUserLoginURL', { token: GUID_EMPTY, AppID: 2 })).toBe(body(binding, 'GetUserLoginURL', ''));
    });
  });

  it('ValidateUserJSON reads a form body (HTTP POST) before the headers', async () => {
    const raw = await send('http-post', 'ValidateUserJSON', {}, { payload: 'UserName=demo&Password=demo-pass&AppID=2', headers: { password: 'wrong' } });
    expect(raw).toMatch(/\{"Success":true,"Token":"[0-9A-F-]{36}","Message":"OK","ExpiresAt":"\\\/Date\(\d+\)\\\/"\}/);
  });
});

describe('a profile whose JSON answer carries the login', () => {
  let stack: TestStack;
  const LOGIN = 'O\'Brien<ops>&"co"/x'; // no spaces: RFC 8265 usernames have none

  beforeAll(async () => {
    const profile = compatProfileFromJson({
      json: {
        validateUser: {
          success: [{ key: 'ok', value: { field: 'success' } }, { key: 'user', value: { field: 'login' } }, { key: 'app', value: { field: 'appId' } }, { key: 'note', value: { const: '</script>' } }],
          escaping: 'javascript-serializer',
        },
        validateUserToken: {
          success: [{ key: 'ok', value: { field: 'valid' } }, { key: 'until', value: { field: 'expiresAt' } }, { key: 'user', value: { field: 'login' } }, { key: 'app', value: { field: 'appId' } }],
          escaping: 'data-contract', dates: 'iso',
        },
      },
    });
    stack = await createTestStack({ profile, clock: fakeClock(NOW), throttle: false });
    expect((await stack.admin.addUser({ login: LOGIN, password: 'pw-of-obrien', appIds: [2] })).ok).toBe(true);
  });
  afterAll(async () => stack.close());

  it('writes the login as the user record has it, escaped as JavaScriptSerializer does; the XML around it escapes what is left', async () => {
    const query = new URLSearchParams({ login: 'o\'brien<OPS>&"CO"/X', password: 'pw-of-obrien', AppId: '2' }).toString();
    const req = buildRequest('http-get', 'ValidateUserJSON', {}, query);
    const res = await stack.app.inject({ method: req.method, url: req.url });
    const json = '{"ok":true,"user":"O\\u0027Brien\\u003cops\\u003e\\u0026\\"co\\"/x","app":2,"note":"\\u003c/script\\u003e"}';
    expect(res.body).toBe(body('http-get', 'ValidateUserJSON', json));
    expect(JSON.parse(json)).toEqual({ ok: true, user: LOGIN, app: 2, note: '</script>' });
  });

  it('the token answer in ISO dates with DataContractJsonSerializer\'s escaping, with its owner', async () => {
    const login = await stack.app.inject({ method: 'GET', url: `/Authentication.asmx/ValidateUser?${new URLSearchParams({ login: LOGIN, password: 'pw-of-obrien', AppId: '2', IPAddress: '' }).toString()}` });
    const token = /<string xmlns="SVCAPI">([^<]+)<\/string>/.exec(login.body)?.[1] ?? '';
    const res = await stack.app.inject({ method: 'GET', url: `/Authentication.asmx/ValidateUserTokenJSON?token=${token}` });
    expect(res.body).toBe(body('http-get', 'ValidateUserTokenJSON', `{"ok":true,"until":"${new Date(EXPIRES_MS).toISOString()}","user":"O'Brien<ops>&\\"co\\"\\/x","app":2}`));
  });
});
