/**
 * Lazy migration: a second svcapi-auth instance stands in for the legacy
 * Authentication.asmx (it speaks the same contract). Logins unknown to the new service, or
 * whose hash it cannot verify, are checked once by the old one; everything else never reaches it.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LegacyAuthenticator } from '../../src/domain/legacy-guard.js';
import { inspectPasswordHash, needsResetHash } from '../../src/domain/legacy-hashes/stored-hash.js';
import { createPasswordHasher } from '../../src/domain/composite-password-hasher.js';
import { loginKey } from '../../src/domain/logins.js';
import { createSoapLegacyAuthenticator, readValidateUserResult, validateUserEnvelope } from '../../src/legacy/soap-legacy-authenticator.js';
import { buildRequest } from '../support/asmx-client.js';
import { ctx } from '../support/domain-fakes.js';
import { startApp, type StartedApp } from '../support/start-app.js';

let legacy: StartedApp;
let current: StartedApp;
let calls = 0;
let probes = 0;
let legacyUrl: string;

/** The real SOAP client, counting the questions it is asked (the guard's probes apart). */
function counting(inner: LegacyAuthenticator): LegacyAuthenticator {
  return {
    validateUser: async (login, password, appId, ip) => {
      if (/^[0-9a-f]{48}$/.test(password)) probes += 1; // the guard's random password
      else calls += 1;
      return inner.validateUser(login, password, appId, ip);
    },
  };
}

const TRICKY = 'p<a&s>s "w\'o]]>rd\r\n\tnon-ascii: é 日本 🔑';

beforeAll(async () => {
  legacy = await startApp();
  legacyUrl = `${legacy.url}/Authentication.asmx`;
  await legacy.seedUser('OldTimer', 'old-secret', 2);
  // The old service took any password; new ones with control characters are refused now (RFC 8265), so this one is old data.
  await legacy.stack.store.insertUser({ login: 'tricky', loginKey: 'tricky', passwordHash: await createPasswordHasher().hash(TRICKY), enabled: true, appIds: [2], createdAt: new Date() });
  await legacy.seedUser('known', 'legacy-password', 2);
  await legacy.seedUser('waiting', 'waiting-pw', 2);
  await legacy.seedUser('waiting-disabled', 'pw2', 2);
  await legacy.seedUser('later', 'later-pw', 2);
  current = await startApp({ legacy: counting(createSoapLegacyAuthenticator({ url: legacyUrl, timeoutMs: 3000 })) });
  await current.seedUser('known', 'new-password', 2);
});

afterAll(async () => {
  await current.close();
  await legacy.close();
});

afterEach(() => {
  calls = 0;
  probes = 0;
});

const validate = (service: StartedApp, login: string, password: string): ReturnType<StartedApp['service']['validateUser']> =>
  service.service.validateUser({ login, password, appId: 2, ipAddress: '' }, ctx);

async function soapBody(app: StartedApp, login: string, password: string): Promise<string> {
  const req = buildRequest('soap11', 'ValidateUser', { login, password, AppId: 2, IPAddress: '' });
  const res = await fetch(`${app.url}${req.url}`, { method: 'POST', headers: req.headers, body: req.payload ?? null });
  return (await res.text()).replace(/<ValidateUserResult>[^<]*<\/ValidateUserResult>/, '<ValidateUserResult>TOKEN</ValidateUserResult>');
}

describe('lazy migration through the legacy service', () => {
  it('a login unknown here is asked once; on yes the user is created with argon2id, granted, marked migrated', async () => {
    const outcome = await validate(current, 'oldtimer', 'old-secret');
    expect(outcome.ok).toBe(true);
    expect(calls).toBe(1);
    expect(probes).toBe(1); // the old service's "no" was confirmed before the first migration
    const user = await current.stack.store.findUserByLoginKey('oldtimer');
    expect(user).toMatchObject({ login: 'oldtimer', enabled: true, appIds: [2] });
    expect(inspectPasswordHash(user?.passwordHash ?? '').format).toBe('argon2id');
    const rows = await current.stack.store.listPasswordHashes({ afterUserId: 0, limit: 100 });
    expect(rows.find((r) => r.userId === user?.userId)?.legacyMigratedAt).toBeInstanceOf(Date);
    if (outcome.ok) expect((await current.service.validateUserToken(outcome.token, ctx)).valid).toBe(true);

    // From now on the user is known here: the old service is not asked again, right or wrong.
    expect((await validate(current, 'OLDTIMER', 'old-secret')).ok).toBe(true);
    expect((await validate(current, 'oldtimer', 'wrong')).ok).toBe(false);
    expect(calls).toBe(1);
  });

  it('passes the password exactly (XML specials, CR LF, tab, non-ASCII)', async () => {
    expect((await validate(current, 'tricky', TRICKY)).ok).toBe(true);
    expect((await validate(current, 'tricky', TRICKY.replace('\r\n', '\n'))).ok).toBe(false);
  });

  it('when the old service says no, the answer and the work are those of any failure; nothing is created', async () => {
    expect(await validate(current, 'OldTimer2', 'old-secret')).toStrictEqual({ ok: false });
    expect(await validate(current, 'later', 'wrong')).toStrictEqual({ ok: false });
    expect(calls).toBe(2);
    expect(await current.stack.store.findUserByLoginKey('later')).toBeNull();
    // The same bytes on the wire as a failure for a user known here.
    expect(await soapBody(current, 'later', 'wrong')).toBe(await soapBody(current, 'known', 'wrong'));
  });

  it('a user whose hash verifies here is never sent to the old service', async () => {
    expect((await validate(current, 'known', 'legacy-password')).ok).toBe(false); // the old password, changed here since
    expect((await validate(current, 'known', 'new-password')).ok).toBe(true);
    expect(calls).toBe(0);
  });

  it('a user imported without a usable password gets one when the old service vouches; a disabled one is not asked', async () => {
    const store = current.stack.store;
    await store.insertApplication({ appId: 9, name: 'Other', enabled: true, requireIp: false, loginUrl: null, tokenLifetimeSeconds: 3600, idleTimeoutSeconds: null, defaultLanguage: 'en', trustedCallers: [], createdAt: new Date() });
    const created = new Date('2020-01-01T00:00:00Z');
    for (const [name, enabled] of [['waiting', true], ['waiting-disabled', false]] as const) {
      const r = await store.insertUser({ login: name, loginKey: loginKey(name), passwordHash: needsResetHash('aspnet-membership-encrypted'), enabled, appIds: [9], createdAt: created });
      expect(r.ok).toBe(true);
    }
    expect((await validate(current, 'waiting', 'wrong')).ok).toBe(false);
    expect((await store.findUserByLoginKey('waiting'))?.passwordHash).toBe(needsResetHash('aspnet-membership-encrypted'));
    expect((await validate(current, 'waiting', 'waiting-pw')).ok).toBe(true);
    const user = await store.findUserByLoginKey('waiting');
    expect(user).toMatchObject({ enabled: true, appIds: [2, 9], createdAt: created, passwordChangedAt: created });
    expect(inspectPasswordHash(user?.passwordHash ?? '').format).toBe('argon2id');
    expect(calls).toBe(2);

    expect((await validate(current, 'waiting-disabled', 'pw2')).ok).toBe(false);
    expect(calls).toBe(2);
    expect((await store.findUserByLoginKey('waiting-disabled'))?.passwordHash).toBe(needsResetHash('aspnet-membership-encrypted'));
  });

  it('nothing is asked for an unknown application, an empty login, or without a password', async () => {
    expect((await current.service.validateUser({ login: 'later', password: 'later-pw', appId: 77, ipAddress: '' }, ctx)).ok).toBe(false);
    expect((await current.service.validateUser({ login: '', password: 'later-pw', appId: 2, ipAddress: '' }, ctx)).ok).toBe(false);
    expect((await current.service.validateUser({ login: 'later', password: null, appId: 2, ipAddress: '' }, ctx)).ok).toBe(false);
    expect(calls).toBe(0);
  });
});

describe('the old service down or slow', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let silentUrl: string;
  let closedUrl: string;

  beforeAll(async () => {
    // Accepts connections and never answers.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    silentUrl = `http://127.0.0.1:${port}/Authentication.asmx`;
    // A port nothing listens on.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedUrl = `http://127.0.0.1:${(probe.address() as { port: number }).port}/Authentication.asmx`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('a refused connection is a no', async () => {
    const client = createSoapLegacyAuthenticator({ url: closedUrl, timeoutMs: 2000 });
    expect(await client.validateUser('later', 'later-pw', 2, null)).toStrictEqual({ kind: 'unavailable', reason: 'connection failed' });
  });

  it('no answer within legacy.timeoutMs is a no, and the login fails like any other', async () => {
    const client = createSoapLegacyAuthenticator({ url: silentUrl, timeoutMs: 300 });
    // The silent service never answers: only the timeout can end this.
    expect(await client.validateUser('later', 'later-pw', 2, null)).toStrictEqual({ kind: 'unavailable', reason: 'no answer within 300 ms' });

    const app = await startApp({ legacy: client });
    try {
      expect(await validate(app, 'later', 'later-pw')).toStrictEqual({ ok: false });
      expect(await app.stack.store.findUserByLoginKey('later')).toBeNull();
    } finally {
      await app.close();
    }
  });

  it('an error page, a fault, a redirect or something that is not a ValidateUser response is no answer', async () => {
    for (const [status, body] of [
      [500, '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>x</faultstring></soap:Fault></soap:Body></soap:Envelope>'],
      [200, '<html>maintenance</html>'],
      [200, '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><OtherResponse xmlns="SVCAPI" /></soap:Body></soap:Envelope>'],
      [302, ''],
    ] as const) {
      const server = createServer((socket) => {
        socket.once('data', () => socket.end(`HTTP/1.1 ${status} X\r\nContent-Type: text/xml\r\nLocation: ${legacyUrl}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const client = createSoapLegacyAuthenticator({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}/Authentication.asmx`, timeoutMs: 2000 });
        expect((await client.validateUser('later', 'later-pw', 2, null)).kind, `${status} ${body}`).toBe('unavailable');
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });
});

describe('the SOAP client', () => {
  it('writes a ValidateUser envelope the service reads back exactly', () => {
    const envelope = validateUserEnvelope('a&b', TRICKY, 2, '198.51.100.7');
    expect(envelope).toContain('<login>a&amp;b</login>');
    expect(envelope).toContain('&#xD;&#xA;&#x9;');
    expect(envelope).toContain('<AppId>2</AppId><IPAddress>198.51.100.7</IPAddress>');
    expect(validateUserEnvelope('a', 'bad\u0001char', 2, null)).toBeNull();
    expect(validateUserEnvelope('a', 'lone \ud800 surrogate', 2, null)).toBeNull();
  });

  it('reads the result of the old service, and nothing else', () => {
    const wrap = (inner: string): string => `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
    expect(readValidateUserResult(wrap('<ValidateUserResponse xmlns="SVCAPI"><ValidateUserResult>17d7d4f6-900e-cb22-afd9-20ffab79b21a</ValidateUserResult></ValidateUserResponse>'))).toBe('17d7d4f6-900e-cb22-afd9-20ffab79b21a');
    expect(readValidateUserResult(wrap('<ValidateUserResponse xmlns="SVCAPI"><ValidateUserResult /></ValidateUserResponse>'))).toBe('');
    expect(readValidateUserResult(wrap('<ValidateUserResponse xmlns="OTHER"><ValidateUserResult>x</ValidateUserResult></ValidateUserResponse>'))).toBeNull();
    expect(readValidateUserResult('<!DOCTYPE x [<!ENTITY e "x">]><x/>')).toBeNull();
    expect(readValidateUserResult('not xml')).toBeNull();
  });
});
