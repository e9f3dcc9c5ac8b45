/**
 * End to end through the app on a real SQLite file, every operation on every binding:
 * ValidateUser -> ValidateUserToken -> GetUserLoginURL -> the ticket validates once -> WhatsNew,
 * plus the JSON operations' three ways of receiving credentials.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINDINGS, buildRequest, call, parseResult, type TableRows } from '../support/asmx-client.js';
import { createTestStack, type TestStack } from '../support/start-app.js';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function must<T>(result: { ok: true; value: T } | { ok: false; message: string }): T {
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

describe.each(BINDINGS)('every operation over %s', (binding) => {
  let stack: TestStack;

  beforeAll(async () => {
    // Five failures of one login from one address, then its success: brute-force protection (test/security) would refuse that.
    stack = await createTestStack({ timeZone: 'America/Sao_Paulo', throttle: false });
    const { admin } = stack;
    must(await admin.updateApplication(2, { loginUrl: 'https://gps.example/login?from=asmx' }));
    must(await admin.addApplication({ appId: 7, name: 'Web portal', requireIp: true }));
    must(await admin.addUser({ login: 'Alice', password: 'pa ss:wörd', appIds: [2, 7] }));
    must(await admin.addNews({ appId: 2, title: 'Old', body: 'a < b & c', language: 'pt', publishedAt: new Date('2024-01-15T12:00:00Z') }));
    must(await admin.addNews({ appId: 2, title: 'New', body: 'newest', language: 'pt', publishedAt: new Date('2024-07-01T12:00:00.250Z'), url: 'https://gps.example/n' }));
    must(await admin.addNews({ appId: 2, title: 'Members', body: 'for members', language: 'pt', membersOnly: true, publishedAt: new Date('2024-03-01T00:00:00Z') }));
    must(await admin.addNews({ appId: 2, title: 'English', body: 'en only', language: 'en', publishedAt: new Date('2024-02-01T00:00:00Z') }));
  });
  afterAll(async () => stack.close());

  it('issues a token, validates it, hands out a login URL whose ticket works once', async () => {
    const token = String(await call(stack.app, binding, 'ValidateUser', { login: 'alice', password: 'pa ss:wörd', AppId: 2, IPAddress: '' }));
    expect(token).toMatch(GUID);
    expect(await call(stack.app, binding, 'ValidateUserToken', { token })).toBe(true);

    const url = String(await call(stack.app, binding, 'GetUserLoginURL', { token, AppID: 2 }));
    expect(url).toMatch(/^https:\/\/gps\.example\/login\?from=asmx&ticket=[0-9a-f-]{36}$/);
    const ticket = String(url).split('ticket=')[1];
    expect(ticket).not.toBe(token);
    expect(await call(stack.app, binding, 'ValidateUserToken', { token: ticket ?? '' })).toBe(true);
    expect(await call(stack.app, binding, 'ValidateUserToken', { token: ticket ?? '' })).toBe(false);
    // The session token itself stays valid.
    expect(await call(stack.app, binding, 'ValidateUserToken', { token })).toBe(true);
  });

  it('answers every failure of ValidateUser with the same empty string', async () => {
    const failures = [
      { login: 'alice', password: 'PA SS:WÖRD', AppId: 2, IPAddress: '' },
      { login: 'alice', password: 'pa ss:wörd ', AppId: 2, IPAddress: '' },
      { login: 'nobody', password: 'pa ss:wörd', AppId: 2, IPAddress: '' },
      { login: 'alice', password: 'pa ss:wörd', AppId: 99, IPAddress: '' },
      { login: 'alice', password: 'pa ss:wörd', AppId: 7, IPAddress: '' },
      { login: 'alice', password: 'pa ss:wörd', AppId: 7, IPAddress: 'not-an-ip' },
    ];
    for (const args of failures) expect(await call(stack.app, binding, 'ValidateUser', args)).toBe('');
    expect(await call(stack.app, binding, 'ValidateUser', { login: 'alice', password: 'pa ss:wörd', AppId: 7, IPAddress: '2001:db8::1' })).toMatch(GUID);
    expect(await call(stack.app, binding, 'ValidateUserToken', { token: 'garbage' })).toBe(false);
    expect(await call(stack.app, binding, 'GetUserLoginURL', { token: 'garbage', AppID: 2 })).toBe('');
  });

  it('serves the news newest first, members-only rows only with a valid token, DateTimes with the zone offset', async () => {
    const anonymous = (await call(stack.app, binding, 'WhatsNew', { AppToken: '', AppID: 2, AppVersion: '', Language: 'pt-BR', qtyNews: 10 })) as TableRows;
    expect(anonymous.map((r) => r.Title)).toEqual(['New', 'Old']);
    expect(anonymous[0]).toMatchObject({ AppID: '2', Language: 'pt', Url: 'https://gps.example/n', PublishedAt: '2024-07-01T09:00:00.25-03:00' });
    expect(anonymous[1]).toMatchObject({ Body: 'a < b & c', Url: '', PublishedAt: '2024-01-15T09:00:00-03:00' });

    const token = String(await call(stack.app, binding, 'ValidateUser', { login: 'ALICE', password: 'pa ss:wörd', AppId: 2, IPAddress: '' }));
    const members = (await call(stack.app, binding, 'WhatsNew', { AppToken: token, AppID: 2, AppVersion: '1.0', Language: 'pt-BR', qtyNews: 2 })) as TableRows;
    expect(members.map((r) => r.Title)).toEqual(['New', 'Members']);
    expect(await call(stack.app, binding, 'WhatsNew', { AppToken: '', AppID: 2, AppVersion: '', Language: 'en', qtyNews: 0 })).toEqual([]);
  });

  it('ValidateUserJSON and ValidateUserTokenJSON read the query string, the form and the Authorization header', async () => {
    const viaQuery = JSON.parse(String(await call(stack.app, binding, 'ValidateUserJSON', {}, { query: 'login=alice&password=pa+ss%3Aw%C3%B6rd&AppId=2' }))) as { success: boolean; token: string; expires: string };
    expect(viaQuery.success).toBe(true);
    expect(viaQuery.token).toMatch(GUID);
    expect(new Date(viaQuery.expires).getTime()).toBeGreaterThan(Date.now());

    const basic = `Basic ${Buffer.from('alice:pa ss:wörd').toString('base64')}`;
    const viaBasic = JSON.parse(String(await call(stack.app, binding, 'ValidateUserJSON', {}, { query: 'AppId=2', headers: { authorization: basic } }))) as { success: boolean; token: string };
    expect(viaBasic.success).toBe(true);
    expect(JSON.parse(String(await call(stack.app, binding, 'ValidateUserJSON', {}, { query: 'login=alice&password=nope&AppId=2' })))).toEqual({ success: false, token: '' });
    expect(JSON.parse(String(await call(stack.app, binding, 'ValidateUserJSON', {})))).toEqual({ success: false, token: '' });

    const viaTokenQuery = JSON.parse(String(await call(stack.app, binding, 'ValidateUserTokenJSON', {}, { query: `token=${viaQuery.token}` }))) as { valid: boolean; expires: string };
    expect(viaTokenQuery).toEqual({ valid: true, expires: viaQuery.expires });
    const viaBearer = JSON.parse(String(await call(stack.app, binding, 'ValidateUserTokenJSON', {}, { headers: { authorization: `Bearer ${viaBasic.token}` } }))) as { valid: boolean };
    expect(viaBearer.valid).toBe(true);
    expect(JSON.parse(String(await call(stack.app, binding, 'ValidateUserTokenJSON', {}, { query: 'token=nope' })))).toEqual({ valid: false });
  });

  if (binding === 'http-post') {
    it('the JSON operations read credentials from the form body too', async () => {
      const req = buildRequest('http-post', 'ValidateUserJSON', {});
      const res = await stack.app.inject({ method: 'POST', url: req.url, headers: req.headers, payload: 'login=alice&password=pa+ss%3Aw%C3%B6rd&AppId=2' });
      const parsed = JSON.parse(String(parseResult('http-post', 'ValidateUserJSON', res.body))) as { success: boolean };
      expect(parsed.success).toBe(true);
    });
  }

  it('a revoked user\'s tokens stop validating at once', async () => {
    must(await stack.admin.addUser({ login: 'bob', password: 'bob-password', appIds: [2] }));
    const token = String(await call(stack.app, binding, 'ValidateUser', { login: 'bob', password: 'bob-password', AppId: 2, IPAddress: '' }));
    expect(await call(stack.app, binding, 'ValidateUserToken', { token })).toBe(true);
    must(await stack.admin.setUserEnabled('bob', false));
    expect(await call(stack.app, binding, 'ValidateUserToken', { token })).toBe(false);
    expect(await call(stack.app, binding, 'ValidateUser', { login: 'bob', password: 'bob-password', AppId: 2, IPAddress: '' })).toBe('');
  });
});
