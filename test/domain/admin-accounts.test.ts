/**
 * The admin console's accounts and sessions (src/domain/admin-accounts.ts): names, password
 * rules, the idle and absolute timeouts, and what ends a session.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAdminAccounts, csrfMatches, hashSessionId, type AdminAccounts } from '../../src/domain/admin-accounts.js';
import type { AuditInput } from '../../src/domain/audit.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { fakeClock, fakeHasher, HOUR, MINUTE, type FakeClock } from '../support/domain-fakes.js';

let store: Store;
let clock: FakeClock;
let accounts: AdminAccounts;
let events: AuditInput[];
const PW = 'a long enough password';

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  clock = fakeClock();
  events = [];
  accounts = createAdminAccounts({
    store, hasher: fakeHasher(), clock, audit: (e) => {
      events.push(e);
    },
    sessions: { idleTimeoutMs: 30 * MINUTE, absoluteTimeoutMs: 12 * HOUR },
  });
});
afterEach(async () => {
  await store.close();
});

async function signIn(name = 'ann'): Promise<string> {
  const r = await accounts.login(name, PW, '127.0.0.1');
  if (!r.ok) throw new Error('login failed');
  return r.sessionId;
}

describe('admin accounts', () => {
  it('checks names and passwords, and names are case-insensitive', async () => {
    expect(await accounts.add('Ann', PW, 'admin')).toMatchObject({ ok: true, value: { name: 'ann', role: 'admin' } });
    expect(await accounts.add('ANN', PW, 'editor')).toMatchObject({ ok: false, code: 'conflict' });
    expect(await accounts.add('bad name', PW, 'admin')).toMatchObject({ ok: false, code: 'invalid' });
    expect(await accounts.add('<x>', PW, 'admin')).toMatchObject({ ok: false, code: 'invalid' });
    expect(await accounts.add('bob', 'short', 'admin')).toMatchObject({ ok: false, code: 'invalid', message: expect.stringContaining('at least 12') });
    expect(await accounts.add('bob', PW, 'root' as 'admin')).toMatchObject({ ok: false, code: 'invalid' });
    expect((await accounts.list()).map((a) => a.name)).toEqual(['ann']);
    expect(events.map((e) => e.type)).toEqual(['admin.account.add']);
    expect(JSON.stringify(events)).not.toContain(PW);
  });

  it('a login makes a new random session, stored only as its hash, with its own CSRF token', async () => {
    await accounts.add('ann', PW, 'editor');
    const first = await accounts.login('ANN', PW, '127.0.0.1');
    const second = await accounts.login('ann', PW, '127.0.0.1');
    if (!first.ok || !second.ok) throw new Error('login failed');
    expect(first.sessionId).not.toBe(second.sessionId);
    expect(first.session.csrfToken).not.toBe(second.session.csrfToken);
    expect(await store.findAdminSession(first.sessionId)).toBeNull();
    expect((await store.findAdminSession(hashSessionId(first.sessionId)))?.name).toBe('ann');
    expect(csrfMatches(first.session, first.session.csrfToken)).toBe(true);
    expect(csrfMatches(first.session, second.session.csrfToken)).toBe(false);
    expect(csrfMatches(first.session, null)).toBe(false);
    expect((await accounts.session(first.sessionId))?.role).toBe('editor');
  });

  it('refuses a wrong password, an unknown name and a malformed one alike, recording why without the password', async () => {
    await accounts.add('ann', PW, 'admin');
    expect(await accounts.login('ann', 'wrong password!!', '127.0.0.1')).toEqual({ ok: false });
    expect(await accounts.login('nobody', PW, '127.0.0.1')).toEqual({ ok: false });
    expect(await accounts.login('a b', PW, '127.0.0.1')).toEqual({ ok: false });
    const failures = events.filter((e) => e.type === 'console.login.failure');
    expect(failures.map((e) => [e.reason, e.login])).toEqual([['bad-password', 'ann'], ['unknown', null], ['malformed', null]]);
    expect(JSON.stringify(events)).not.toContain('wrong password');
  });

  it('ends a session after the idle timeout without use', async () => {
    await accounts.add('ann', PW, 'admin');
    const id = await signIn();
    clock.advance(29 * MINUTE);
    expect(await accounts.session(id)).not.toBeNull();
    clock.advance(29 * MINUTE); // used a moment ago: still live
    expect(await accounts.session(id)).not.toBeNull();
    clock.advance(30 * MINUTE);
    expect(await accounts.session(id)).toBeNull();
    expect(await store.findAdminSession(hashSessionId(id))).toBeNull();
  });

  it('ends a session at the absolute timeout however much it is used', async () => {
    await accounts.add('ann', PW, 'admin');
    const id = await signIn();
    for (let i = 0; i < 24; i += 1) {
      clock.advance(29 * MINUTE);
      if (clock.now().getTime() - new Date('2025-01-15T12:00:00.000Z').getTime() >= 12 * HOUR) break;
      expect(await accounts.session(id)).not.toBeNull();
    }
    clock.set(new Date(new Date('2025-01-15T12:00:00.000Z').getTime() + 12 * HOUR));
    expect(await accounts.session(id)).toBeNull();
  });

  it('a password change or removal ends the account\'s sessions; logout ends one', async () => {
    await accounts.add('ann', PW, 'admin');
    const a = await signIn();
    const b = await signIn();
    const live = await accounts.session(b);
    if (live === null) throw new Error('no session');
    await accounts.logout(live, '127.0.0.1');
    expect(await accounts.session(b)).toBeNull();
    expect(await accounts.session(a)).not.toBeNull();
    expect((await accounts.setPassword('ann', 'another long password')).ok).toBe(true);
    expect(await accounts.session(a)).toBeNull();
    expect((await accounts.login('ann', PW, '127.0.0.1')).ok).toBe(false);
    const c = (await accounts.login('ann', 'another long password', '127.0.0.1'));
    if (!c.ok) throw new Error('login failed');
    expect((await accounts.remove('ann')).ok).toBe(true);
    expect(await accounts.session(c.sessionId)).toBeNull();
    expect(events.map((e) => e.type)).toContain('admin.account.remove');
  });

  it('refuses malformed cookie values without a lookup', async () => {
    expect(await accounts.session('')).toBeNull();
    expect(await accounts.session('x'.repeat(500))).toBeNull();
  });
});
