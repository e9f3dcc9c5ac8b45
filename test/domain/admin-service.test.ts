import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { fakeClock, fakeHasher } from '../support/domain-fakes.js';

describe('admin service', () => {
  let store: Store;
  let admin: AdminService;
  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    admin = createAdminService({ store, hasher: fakeHasher(), clock: fakeClock() });
  });
  afterEach(async () => {
    await store.close();
  });

  it('creates applications with the documented defaults', async () => {
    const r = await admin.addApplication({ appId: 7, name: '  Portal ' });
    expect(r).toEqual({ ok: true, value: expect.objectContaining({
      appId: 7, name: 'Portal', enabled: true, requireIp: true, loginUrl: null, tokenLifetimeSeconds: 86400, idleTimeoutSeconds: null, defaultLanguage: 'en',
    }) });
  });

  it('refuses bad application values with a message naming the problem', async () => {
    const cases: [Parameters<AdminService['addApplication']>[0], RegExp][] = [
      [{ appId: 0, name: 'x' }, /AppID must be an integer from 1/],
      [{ appId: 2 ** 31, name: 'x' }, /AppID/],
      [{ appId: 1.5, name: 'x' }, /AppID/],
      [{ appId: 7, name: ' ' }, /name/],
      [{ appId: 7, name: 'x', loginUrl: 'portal/login' }, /login URL must be an absolute URL/],
      [{ appId: 7, name: 'x', tokenLifetimeSeconds: 0 }, /token lifetime/],
      [{ appId: 7, name: 'x', idleTimeoutSeconds: -1 }, /idle timeout/],
      [{ appId: 7, name: 'x', defaultLanguage: 'english!' }, /not a language tag/],
    ];
    for (const [input, message] of cases) {
      const r = await admin.addApplication(input);
      expect(r.ok, JSON.stringify(input)).toBe(false);
      if (!r.ok) expect(r.message).toMatch(message);
    }
    expect(await admin.addApplication({ appId: 2, name: 'again' })).toMatchObject({ ok: false, code: 'conflict' });
  });

  it('canonicalises the default language', async () => {
    expect(await admin.updateApplication(2, { defaultLanguage: 'pt_br' })).toMatchObject({ ok: true, value: { defaultLanguage: 'pt-BR' } });
    expect(await admin.updateApplication(404, { name: 'x' })).toMatchObject({ ok: false, code: 'not-found' });
  });

  it('refuses bad users: empty or padded login, empty password, no or unknown application, duplicate login', async () => {
    expect(await admin.addUser({ login: '', password: 'pw', appIds: [2] })).toMatchObject({ ok: false, message: /login must not be empty/ });
    expect(await admin.addUser({ login: ' bob', password: 'pw', appIds: [2] })).toMatchObject({ ok: false, message: /whitespace/ });
    expect(await admin.addUser({ login: 'bob', password: '', appIds: [2] })).toMatchObject({ ok: false, message: /password must not be empty/ });
    expect(await admin.addUser({ login: 'bob', password: 'pw', appIds: [] })).toMatchObject({ ok: false, message: /at least one application/ });
    expect(await admin.addUser({ login: 'bob', password: 'pw', appIds: [9] })).toMatchObject({ ok: false, code: 'not-found', message: /no application with AppID 9/ });
    expect(await admin.addUser({ login: 'Bob', password: 'pw', appIds: [2] })).toMatchObject({ ok: true, value: { login: 'Bob' } });
    expect(await admin.addUser({ login: 'BOB', password: 'pw', appIds: [2] })).toMatchObject({ ok: false, code: 'conflict', message: /already exists/ });
  });

  it('never hands out the password hash', async () => {
    await admin.addUser({ login: 'bob', password: 'pw', appIds: [2] });
    const users = await admin.listUsers();
    const one = await admin.getUser('BOB');
    expect(JSON.stringify([users, one])).not.toContain('fake$');
  });

  it('checks news values: versions, order of bounds, dates, language, URL', async () => {
    const base = { appId: 2, title: 't', body: 'b' };
    expect(await admin.addNews({ ...base, minVersion: '1.x' })).toMatchObject({ ok: false, message: /bad minimum version "1.x"/ });
    expect(await admin.addNews({ ...base, maxVersion: 'v2' })).toMatchObject({ ok: false, message: /bad maximum version/ });
    expect(await admin.addNews({ ...base, minVersion: '2.10', maxVersion: '2.9' })).toMatchObject({ ok: false, message: /above the maximum/ });
    expect(await admin.addNews({ ...base, expiresAt: new Date('2000-01-01') })).toMatchObject({ ok: false, message: /after the publication/ });
    expect(await admin.addNews({ ...base, language: '??' })).toMatchObject({ ok: false, message: /language tag/ });
    expect(await admin.addNews({ ...base, url: 'mailto:x@example.com' })).toMatchObject({ ok: false, message: /http/ });
    expect(await admin.addNews({ ...base, appId: 404 })).toMatchObject({ ok: false, code: 'not-found' });
    expect(await admin.addNews({ ...base, title: ' ' })).toMatchObject({ ok: false, message: /title/ });
    expect(await admin.addNews({ ...base, language: 'pt-br', minVersion: '2.9', maxVersion: '2.10' })).toMatchObject({ ok: true, value: { language: 'pt-BR' } });
  });

  it('removes news and says when there is none', async () => {
    const added = await admin.addNews({ appId: 2, title: 't', body: 'b' });
    if (!added.ok) throw new Error(added.message);
    expect(await admin.removeNews(added.value.newsId)).toMatchObject({ ok: true, value: { title: 't' } });
    expect(await admin.removeNews(added.value.newsId)).toMatchObject({ ok: false, code: 'not-found' });
  });

  it('reports a missing grant and an unknown user', async () => {
    await admin.addUser({ login: 'bob', password: 'pw', appIds: [2] });
    expect(await admin.revokeApplication('bob', 7)).toMatchObject({ ok: false, code: 'not-found', message: /no grant for AppID 7/ });
    expect(await admin.setUserEnabled('nobody', false)).toMatchObject({ ok: false, code: 'not-found', message: /no user with login "nobody"/ });
    expect(await admin.grantApplication('bob', 404)).toMatchObject({ ok: false, code: 'not-found' });
  });
});

describe('password length', () => {
  it('refuses a password that could never log in (over 1024 bytes of UTF-8)', async () => {
    const { openStore } = await import('../../src/store/open-store.js');
    const { createAdminService } = await import('../../src/domain/admin-service.js');
    const { fakeHasher } = await import('../support/domain-fakes.js');
    const store = await openStore('sqlite::memory:');
    const admin = createAdminService({ store, hasher: fakeHasher() });
    expect((await admin.addUser({ login: 'ok', password: 'é'.repeat(512), appIds: [2] })).ok).toBe(true);
    const refused = await admin.addUser({ login: 'long', password: 'é'.repeat(512) + 'x', appIds: [2] });
    expect(refused).toMatchObject({ ok: false, code: 'invalid' });
    expect(refused.ok ? '' : refused.message).toContain('at most 1024 bytes');
    expect((await admin.changePassword('ok', 'x'.repeat(1025))).ok).toBe(false);
    await store.close();
  });
});
