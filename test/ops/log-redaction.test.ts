/**
 * No log line ever contains a password, a token or a ticket: real requests carrying unique
 * secrets, through every binding, success and error paths, at log level trace, against the real
 * `serve` (logging to a captured stream); then everything logged is searched for them.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdminService } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { buildApp } from '../../src/http/app.js';
import { injectable } from '../support/inject.js';
import { createLogger } from '../../src/ops/logger.js';
import { openStore } from '../../src/store/open-store.js';
import { run } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-logs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stream that keeps everything and tells whoever waits when a pattern shows up. */
function capture(): { stream: Writable; text: () => string; waitFor: (re: RegExp) => Promise<RegExpExecArray> } {
  let text = '';
  const waiters: (() => void)[] = [];
  return {
    stream: new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        text += chunk.toString();
        for (const w of waiters.splice(0)) w();
        callback();
      },
    }),
    text: () => text,
    waitFor: (re) => new Promise((resolve) => {
      const check = (): void => {
        const m = re.exec(text);
        if (m !== null) resolve(m);
        else waiters.push(check);
      };
      check();
    }),
  };
}

const secret = (label: string): string => `${label}-${randomUUID()}`;
const soap11 = (op: string, inner: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"SVCAPI/${op}"` },
  body: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="SVCAPI">${inner}</${op}></soap:Body></soap:Envelope>`,
});
const soap12 = (op: string, inner: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': `application/soap+xml; charset=utf-8; action="SVCAPI/${op}"` },
  body: `<?xml version="1.0" encoding="utf-8"?><soap12:Envelope xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:Body><${op} xmlns="SVCAPI">${inner}</${op}></soap12:Body></soap12:Envelope>`,
});
const formPost = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields).toString(),
});
const GUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

describe('logs never contain credentials', () => {
  it('through every binding, successes and failures, at level trace', async () => {
    const db = `sqlite:${join(dir, 'serve.db')}`;
    const password = secret('pw');
    const wrongPassword = secret('wrong');
    const bearer = secret('bearer');
    const basicPassword = secret('basic');
    const cookie = secret('cookie');
    const setup = await openStore(db);
    const admin = createAdminService({ store: setup, hasher: createArgon2Hasher() });
    await admin.updateApplication(2, { loginUrl: 'https://gps.example/login' });
    await admin.addUser({ login: 'alice', password, appIds: [2] });
    await setup.close();

    const out = capture();
    const controller = new AbortController();
    const serving = run(['serve', '--port', '0', '--db', db, '--log-level', 'trace'], { stdout: out.stream, signal: controller.signal });
    const base = (await out.waitFor(/^Service: (http:\/\/\S+)$/m))[1] ?? '';

    const tokens: string[] = [];
    const issued = async (init: Promise<Response>): Promise<string> => {
      const body = await (await init).text();
      const token = GUID.exec(body)?.[0];
      expect(token, body).toBeDefined();
      tokens.push(token ?? '');
      return token ?? '';
    };
    const q = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();
    const login = { login: 'alice', password, AppId: '2', IPAddress: '' };
    const auth = { authorization: `Bearer ${bearer}`, cookie: `session=${cookie}` };

    // Successes, every binding.
    const t1 = await issued(fetch(`${base}/ValidateUser?${q(login)}`, { headers: auth }));
    await issued(fetch(`${base}/ValidateUser`, formPost(login, { authorization: `Basic ${Buffer.from(`alice:${basicPassword}`).toString('base64')}` })));
    await issued(fetch(base, soap11('ValidateUser', `<login>alice</login><password>${password}</password><AppId>2</AppId><IPAddress></IPAddress>`)));
    await issued(fetch(base, soap12('ValidateUser', `<login>alice</login><password>${password}</password><AppId>2</AppId><IPAddress></IPAddress>`)));
    await issued(fetch(`${base}/ValidateUserJSON?${q(login)}`));
    expect(await (await fetch(`${base}/ValidateUserToken?${q({ token: t1 })}`, { headers: auth })).text()).toContain('true');
    expect(await (await fetch(`${base}/ValidateUserToken`, formPost({ token: t1 }))).text()).toContain('true');
    expect(await (await fetch(base, soap11('ValidateUserToken', `<token>${t1}</token>`))).text()).toContain('true');
    expect(await (await fetch(base, soap12('ValidateUserToken', `<token>${t1}</token>`))).text()).toContain('true');
    await fetch(`${base}/WhatsNew?${q({ AppToken: t1, AppId: '2', AppVersion: '1.0', Language: 'en', QtyNews: '3' })}`);
    const loginUrl = await (await fetch(`${base}/GetUserLoginURL?${q({ Token: t1, AppId: '2' })}`)).text();
    const ticket = /ticket=([0-9a-f-]{36})/.exec(loginUrl)?.[1] ?? '';
    expect(ticket).toMatch(GUID);
    expect(await (await fetch(`${base}/ValidateUserToken?${q({ token: ticket })}`)).text()).toContain('true');

    // Failures and error paths, with the secrets in them.
    await fetch(`${base}/ValidateUser?${q({ ...login, password: wrongPassword })}`);
    await fetch(base, soap11('ValidateUser', `<login>alice</login><password>${wrongPassword}</password><AppId>2</AppId>`));
    await fetch(base, { method: 'POST', headers: { 'content-type': 'text/xml', soapaction: '"SVCAPI/ValidateUser"' }, body: `<broken><password>${password}</password>` });
    await fetch(`${base}/ValidateUser?${q({ ...login, AppId: `x${password}` })}`);
    await fetch(`${base}/NoSuchOp?${q({ password, token: t1 })}`);
    await fetch(`${base}/ValidateUser?${q(login)}&password=${wrongPassword}`);
    await fetch(`${base}/ValidateUser`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `login=alice&password=${password}` });
    await fetch(`${base}/ValidateUser`, formPost({ ...login, padding: 'x'.repeat(2 * 1024 * 1024) }));
    await fetch(`${new URL(base).origin}/elsewhere?password=${password}&ticket=${ticket}`, { headers: auth });
    await fetch(`${base}/ValidateUser?${q(login)}`, { method: 'PUT', headers: auth });

    controller.abort();
    const result = await serving;
    expect(result.code).toBe(0);
    const logged = out.text();

    // The access lines are there: request id, operation, binding, status, duration, source.
    const lines = logged.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.filter((l) => l.msg === 'request');
    expect(access.length).toBe(22); // one line per request above
    for (const line of access) expect(Object.keys(line)).toEqual(expect.arrayContaining(['reqId', 'method', 'path', 'operation', 'binding', 'status', 'durationMs', 'source']));
    expect(access.some((l) => l.operation === 'ValidateUser' && l.binding === 'soap12' && l.status === 200)).toBe(true);
    expect(access.some((l) => l.status === 413 || l.status === 500)).toBe(true);

    // ... and not one secret, anywhere, in any spelling.
    for (const value of [password, wrongPassword, bearer, basicPassword, cookie, ticket, ...tokens]) {
      for (const form of [value, encodeURIComponent(value), value.toUpperCase(), Buffer.from(`alice:${value}`).toString('base64')]) {
        expect(logged.includes(form), `log output contains ${form}`).toBe(false);
      }
    }
    // (The Basic credential is only present base64-encoded in the header.)
    expect(logged).not.toContain(Buffer.from(`alice:${basicPassword}`).toString('base64'));
  });

  it('error lines (a failing store) carry the error, not the request', async () => {
    const store = await openStore(`sqlite:${join(dir, 'broken.db')}`);
    const service = createAuthService({ store, hasher: createArgon2Hasher() });
    const out = capture();
    const logger = createLogger({ level: 'trace', stream: out.stream });
    const app = injectable(await buildApp({ service, config: { http: { maxRequestBytes: 1 << 20, bodyTimeoutMs: 10_000 }, timeZone: 'UTC' }, logger }));
    await store.close(); // every operation now throws
    const password = secret('pw');
    const token = randomUUID();
    const responses = [
      await app.inject({ method: 'GET', url: `/Authentication.asmx/ValidateUser?login=alice&password=${password}&AppId=2&IPAddress=` }),
      await app.inject({ method: 'POST', url: '/Authentication.asmx', headers: { 'content-type': 'text/xml', soapaction: '"SVCAPI/ValidateUserToken"' }, payload: soap11('ValidateUserToken', `<token>${token}</token>`).body as string }),
      await app.inject({ method: 'GET', url: `/Authentication.asmx/ValidateUserToken?token=${token}`, headers: { authorization: `Bearer ${token}` } }),
    ];
    await app.close();
    expect(responses.map((r) => r.statusCode)).toEqual([500, 500, 500]);
    const logged = out.text();
    expect(logged).toContain('"msg":"operation failed"');
    expect(logged).toContain('"level":50');
    expect(logged).toContain('database connection is not open');
    expect(logged).not.toContain(password);
    expect(logged).not.toContain(token);
  });

  it('the logger censors credential fields and query strings whoever logs them', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', stream: out.stream });
    logger.info({ req: { method: 'GET', url: '/x?password=q-secret', headers: { authorization: 'Bearer h-secret', cookie: 'c-secret' } } }, 'a request');
    logger.info({ password: 'p-secret', login: { token: 't-secret' }, ticket: 'k-secret', headers: { authorization: 'a-secret' } }, 'fields');
    logger.error({ err: Object.assign(new Error('boom'), { password: 'e-secret' }) }, 'an error');
    const logged = out.text();
    for (const s of ['q-secret', 'h-secret', 'c-secret', 'p-secret', 't-secret', 'k-secret', 'a-secret', 'e-secret']) expect(logged).not.toContain(s);
    expect(logged).toContain('"url":"/x?[redacted]"');
    expect(logged).toContain('"password":"[redacted]"');
    expect(logged).toContain('boom');
  });

  it('--log-pretty writes readable lines, censored the same way', () => {
    const out = capture();
    const logger = createLogger({ level: 'debug', pretty: true, colorize: false, stream: out.stream });
    logger.debug({ operation: 'ValidateUser', password: 'p-secret' }, 'request');
    const logged = out.text();
    expect(logged).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] DEBUG: request\n/);
    expect(logged).toContain('operation: "ValidateUser"');
    expect(logged).not.toContain('p-secret');
    expect(logged).not.toContain('{"level"');
  });

  it('--log-pretty writes to serve\'s own destination, a bare { write } rather than a Node stream', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', pretty: true, colorize: false, stream: { write: (line: string) => void lines.push(line) } });
    logger.info({ password: 'p-secret' }, 'listening');
    expect(lines.join('')).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening\n/);
    expect(lines.join('')).not.toContain('p-secret');
  });
});
