/**
 * Logins and passwords under the PRECIS profiles of RFC 8265 (src/domain/precis.ts, logins.ts):
 * what can be created, what logs in, and how users and hashes made before keep working.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import type { AuthService, ValidateUserInput } from '../../src/domain/auth-service.js';
import { legacyLoginKey } from '../../src/domain/logins.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { createTestStack, type TestStack } from '../support/start-app.js';
import { counterRandom, ctx, fakeClock, fakeHasher, type FakeHasher } from '../support/domain-fakes.js';

interface World {
  store: Store;
  hasher: FakeHasher;
  admin: AdminService;
  service: AuthService;
}

const gps = (login: string | null, password: string | null): ValidateUserInput => ({ login, password, appId: 2, ipAddress: null });

describe('logins and passwords under RFC 8265', () => {
  let w: World;
  beforeEach(async () => {
    const store = await openStore('sqlite::memory:');
    const hasher = fakeHasher();
    const clock = fakeClock();
    w = { store, hasher, admin: createAdminService({ store, hasher, clock }), service: createAuthService({ store, hasher, clock, random: counterRandom() }) };
  });
  afterEach(async () => {
    await w.store.close();
  });

  /** A user as a database written before the profiles were applied has it: login and hash as they came, legacy key. */
  async function olderUser(login: string, passwordHash: string): Promise<void> {
    const r = await w.store.insertUser({ login, loginKey: legacyLoginKey(login), passwordHash, enabled: true, appIds: [2], createdAt: new Date(0) });
    expect(r.ok).toBe(true);
  }

  const logsIn = async (login: string, password: string): Promise<boolean> => (await w.service.validateUser(gps(login, password), ctx)).ok;

  it('refuses to create logins with invisible, bidi or control characters, spaces or symbols', async () => {
    for (const login of ['\u202ealice', 'ali\u200bce', 'alice\u2066', 'al\u00adice', 'bob smith', '\u265aking', 'a\u0301\u200d']) {
      const r = await w.admin.addUser({ login, password: 'pw', appIds: [2] });
      expect(r.ok, JSON.stringify(login)).toBe(false);
      if (!r.ok) expect(r.code).toBe('invalid');
    }
    expect(await w.store.listUsers()).toEqual([]);
  });

  it('matches fullwidth and decomposed forms of a login to the user, and stores the login in its width-mapped NFC form', async () => {
    const added = await w.admin.addUser({ login: '\uff2aose\u0301', password: 'pw', appIds: [2] });
    expect(added.ok && added.value.login).toBe('Jos\u00e9');
    for (const typed of ['jos\u00e9', 'JOSE\u0301', '\uff4a\uff4f\uff53\u00e9']) expect(await logsIn(typed, 'pw'), typed).toBe(true);
    expect((await w.admin.addUser({ login: 'JOS\u00c9', password: 'pw', appIds: [2] })).ok).toBe(false); // the same login
  });

  it('a user whose login the profile refuses, created before, still logs in (and nobody else does with it)', async () => {
    await olderUser('Bob Smith', 'fake$pw');
    await olderUser('ali\u200bce', 'fake$pw2');
    expect(await logsIn('bob smith', 'pw')).toBe(true);
    expect(await logsIn('ali\u200bce', 'pw2')).toBe(true);
    expect(await logsIn('alice', 'pw2')).toBe(false);
    expect((await w.admin.getUser('BOB SMITH')).ok).toBe(true); // the admin tools find it too
  });

  it('a user whose fullwidth login was stored under the legacy key still logs in, and blocks the same login being created again', async () => {
    await olderUser('\uff41\uff4c\uff49', 'fake$pw');
    expect(await logsIn('\uff41\uff4c\uff49', 'pw')).toBe(true);
    expect((await w.admin.addUser({ login: '\uff21\uff2c\uff29', password: 'pw', appIds: [2] })).ok).toBe(false);
  });

  it('gives the ordinary failure, after the usual verification, for a login the profile refuses and nobody has', async () => {
    w.hasher.verifyCalls = 0;
    expect(await w.service.validateUser(gps('\u202eadmin', 'pw'), ctx)).toStrictEqual({ ok: false });
    expect(w.hasher.verifyCalls).toBe(1);
  });

  it('sets passwords in their OpaqueString form: NFC, non-ASCII spaces as U+0020', async () => {
    await w.admin.addUser({ login: 'dana', password: 'cafe\u0301 au\u00a0lait', appIds: [2] });
    const user = await w.store.findUserByLoginKey('dana');
    expect(user?.passwordHash).toBe('fake$caf\u00e9 au lait');
    for (const typed of ['caf\u00e9 au lait', 'cafe\u0301 au lait', 'caf\u00e9\u2003au\u3000lait']) expect(await logsIn('dana', typed), typed).toBe(true);
    expect(await logsIn('dana', 'CAF\u00c9 au lait')).toBe(false); // no case mapping for passwords
  });

  it('refuses to set a password the profile refuses (controls, invisible characters)', async () => {
    await w.admin.addUser({ login: 'erin', password: 'pw', appIds: [2] });
    for (const password of ['pass\tword', 'pass\u200bword', '\u202epassword']) {
      const r = await w.admin.changePassword('erin', password);
      expect(r.ok, JSON.stringify(password)).toBe(false);
      expect((await w.admin.addUser({ login: 'frank', password, appIds: [2] })).ok).toBe(false);
    }
  });

  it('a non-ASCII password hashed as it came (before the profile) still logs in, and its hash is redone in the prepared form', async () => {
    await olderUser('gina', 'fake$cafe\u0301'); // hashed decomposed, as the client sent it then
    w.hasher.verifyCalls = 0;
    expect(await logsIn('gina', 'cafe\u0301')).toBe(true);
    expect(w.hasher.verifyCalls).toBe(2); // prepared form first, then the text as sent
    expect((await w.store.findUserByLoginKey('gina'))?.passwordHash).toBe('fake$caf\u00e9');
    w.hasher.verifyCalls = 0;
    expect(await logsIn('gina', 'caf\u00e9')).toBe(true); // now both forms, at one verification
    expect(w.hasher.verifyCalls).toBe(1);
  });

  it('an ASCII password hashed before keeps verifying at one verification; a password with a control character hashed before still logs in', async () => {
    await olderUser('hank', 'fake$plain pw');
    await olderUser('ivy', 'fake$tab\there');
    w.hasher.verifyCalls = 0;
    expect(await logsIn('hank', 'plain pw')).toBe(true);
    expect(w.hasher.verifyCalls).toBe(1);
    expect(await logsIn('ivy', 'tab\there')).toBe(true);
    expect((await w.store.findUserByLoginKey('ivy'))?.passwordHash).toBe('fake$tab\there'); // nothing to prepare it into
  });

  it('makes as many verifications for an unknown login as for a known one with the same password', async () => {
    await w.admin.addUser({ login: 'jack', password: 'pw', appIds: [2] });
    const calls = async (login: string): Promise<number> => {
      w.hasher.verifyCalls = 0;
      await w.service.validateUser(gps(login, 'wrong\u00a0caf\u00e9'), ctx);
      return w.hasher.verifyCalls;
    };
    expect(await calls('jack')).toBe(2);
    expect(await calls('nobody')).toBe(2);
  });
});

describe('ValidateUser over HTTP with a login the profile refuses', () => {
  let stack: TestStack;
  beforeEach(async () => {
    stack = await createTestStack({ throttle: false });
    await stack.admin.addUser({ login: 'alice', password: 'alice-pw', appIds: [2] });
  });
  afterEach(async () => {
    await stack.close();
  });

  it('answers the ordinary failure on every binding, never an error', async () => {
    const login = '\u202ealice\u200b\u0000';
    const post = await stack.app.inject({
      method: 'POST', url: '/Authentication.asmx/ValidateUser', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ login, password: 'alice-pw', AppId: '2', IPAddress: '' }).toString(),
    });
    expect(post.statusCode).toBe(200);
    expect(post.body).toContain('<string xmlns="SVCAPI" />');
    const soapLogin = '\u202ealice\u200b';
    const soap = await stack.app.inject({
      method: 'POST', url: '/Authentication.asmx', headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"SVCAPI/ValidateUser"' },
      payload: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ValidateUser xmlns="SVCAPI"><login>${soapLogin}</login><password>alice-pw</password><AppId>2</AppId><IPAddress></IPAddress></ValidateUser></soap:Body></soap:Envelope>`,
    });
    expect(soap.statusCode).toBe(200);
    expect(soap.body).toContain('<ValidateUserResult />');
  });
});
