import { readFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAuthService, type AuthServiceDeps } from '../../src/domain/create-auth-service.js';
import { createAdminService, type AdminService, type NewNewsInput } from '../../src/domain/admin-service.js';
import { createArgon2Hasher } from '../../src/domain/password-hasher.js';
import type { AuthService, ValidateUserInput } from '../../src/domain/auth-service.js';
import type { IssueEvent } from '../../src/domain/auth-events.js';
import { canonicalToken, hashToken } from '../../src/domain/tokens.js';
import { newTicketKey, orderedTicketIssuedAt, ticketSeal } from '../../src/domain/ordered-ticket.js';
import { parseTokenFormName } from '../../src/compat-profile-file.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { counterRandom, ctx, fakeClock, fakeHasher, HOUR, MINUTE, SECOND, type FakeClock, type FakeHasher } from '../support/domain-fakes.js';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PORTAL = 5;
const PORTAL_URL = 'https://portal.example/sso?src=auth#top';
const TICKET_KEY = newTicketKey();

interface World {
  store: Store;
  clock: FakeClock;
  hasher: FakeHasher;
  admin: AdminService;
  service: AuthService;
}

async function must<T>(result: Promise<{ ok: true; value: T } | { ok: false; message: string }>): Promise<T> {
  const r = await result;
  if (!r.ok) throw new Error(r.message);
  return r.value;
}

/**
 * GPS (2, no IP needed, 24 h tokens) and Portal (5, IP required, 8 h tokens, 30 min idle timeout,
 * login URL, default language pt-BR); alice may use both, bob only GPS; password "pw" for all.
 */
async function makeWorld(options: Pick<AuthServiceDeps, 'ticketTtlSeconds' | 'tokenForm' | 'loginUrl' | 'orderedTickets' | 'olderVersionServing' | 'legacyTokens' | 'ticketKey'> = {}): Promise<World> {
  const store = await openStore('sqlite::memory:');
  const clock = fakeClock();
  const hasher = fakeHasher();
  const admin = createAdminService({ store, hasher, clock });
  const service = createAuthService({ store, hasher, clock, random: counterRandom(), ...options });
  await must(admin.addApplication({ appId: PORTAL, name: 'Portal', requireIp: true, loginUrl: PORTAL_URL, tokenLifetimeSeconds: 8 * 3600, idleTimeoutSeconds: 30 * 60, defaultLanguage: 'pt-BR' }));
  await must(admin.addUser({ login: 'Alice', password: 'pw', appIds: [2, PORTAL] }));
  await must(admin.addUser({ login: 'bob', password: 'pw', appIds: [2] }));
  return { store, clock, hasher, admin, service };
}

const gps = (login: string | null, password: string | null): ValidateUserInput => ({ login, password, appId: 2, ipAddress: null });
const portal = (login: string | null, password: string | null, ipAddress: string | null = '198.51.100.7'): ValidateUserInput => ({ login, password, appId: PORTAL, ipAddress });

async function login(w: World, input: ValidateUserInput): Promise<string> {
  const outcome = await w.service.validateUser(input, ctx);
  if (!outcome.ok) throw new Error('login failed');
  return outcome.token;
}

const isValid = async (w: World, token: string | null): Promise<boolean> => (await w.service.validateUserToken(token, ctx)).valid;

describe('auth service', () => {
  let w: World;
  beforeEach(async () => {
    w = await makeWorld();
  });
  afterEach(async () => {
    await w.store.close();
  });

  describe('ValidateUser', () => {
    it('returns a new GUID-form token, valid for the application lifetime', async () => {
      const outcome = await w.service.validateUser(gps('Alice', 'pw'), ctx);
      expect(outcome).toEqual({ ok: true, token: expect.stringMatching(GUID), expiresAt: new Date(w.clock.now().getTime() + 24 * HOUR), login: 'Alice' });
    });

    it('tells the login as the user record has it, whatever case the caller typed', async () => {
      expect(await w.service.validateUser(gps('ALICE', 'pw'), ctx)).toMatchObject({ ok: true, login: 'Alice' });
    });

    it('issues a different token on every success, all of them valid', async () => {
      const a = await login(w, gps('Alice', 'pw'));
      const b = await login(w, gps('Alice', 'pw'));
      expect(a).not.toBe(b);
      expect([await isValid(w, a), await isValid(w, b)]).toEqual([true, true]);
    });

    it('matches the login case-insensitively', async () => {
      expect((await w.service.validateUser(gps('ALICE', 'pw'), ctx)).ok).toBe(true);
      expect((await w.service.validateUser(gps('alice', 'pw'), ctx)).ok).toBe(true);
    });

    it('records the login time and keeps the token itself out of the store (only its hash)', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      expect((await must(w.admin.getUser('alice'))).lastLoginAt).toEqual(w.clock.now());
      expect(await w.store.findToken(hashToken(token))).toMatchObject({ kind: 'session', appId: 2, sourceIp: ctx.sourceIp });
    });

    it('requires a valid IPv4 or IPv6 address for an application that asks for it, and stores it', async () => {
      const v4 = await login(w, portal('Alice', 'pw', '198.51.100.7'));
      expect((await w.store.findToken(hashToken(v4)))?.clientIp).toBe('198.51.100.7');
      expect((await w.service.validateUser(portal('Alice', 'pw', '2001:db8::1'), ctx)).ok).toBe(true);
    });

    it('fails the same way, at the same cost, for every reason', async () => {
      await must(w.admin.addUser({ login: 'carol', password: 'pw', appIds: [2], enabled: false }));
      await must(w.admin.addApplication({ appId: 9, name: 'Off', enabled: false, requireIp: false }));
      await must(w.admin.grantApplication('Alice', 9));
      const failures: [string, ValidateUserInput][] = [
        ['unknown login', gps('nobody', 'pw')],
        ['wrong password', gps('Alice', 'pw2')],
        ['password differs in case', gps('Alice', 'PW')],
        ['password with a trailing space', gps('Alice', 'pw ')],
        ['password with a leading space', gps('Alice', ' pw')],
        ['missing password', gps('Alice', null)],
        ['empty password', gps('Alice', '')],
        ['missing login', gps(null, 'pw')],
        ['empty login', gps('', 'pw')],
        ['login with a space', gps('Alice ', 'pw')],
        ['unknown application', { login: 'Alice', password: 'pw', appId: 77, ipAddress: null }],
        ['application 0', { login: 'Alice', password: 'pw', appId: 0, ipAddress: null }],
        ['disabled application', { login: 'Alice', password: 'pw', appId: 9, ipAddress: null }],
        ['disabled user', gps('carol', 'pw')],
        ['application not granted', portal('bob', 'pw')],
        ['IP required but missing', portal('Alice', 'pw', null)],
        ['IP required but empty', portal('Alice', 'pw', '')],
        ['IP not an address', portal('Alice', 'pw', '999.1.1.1')],
        ['IP with spaces', portal('Alice', 'pw', ' 198.51.100.7')],
        ['IP is a host name', portal('Alice', 'pw', 'localhost')],
      ];
      for (const [reason, input] of failures) {
        w.hasher.verifyCalls = 0;
        const outcome = await w.service.validateUser(input, ctx);
        expect(outcome, reason).toStrictEqual({ ok: false });
        // Exactly one password verification on every path: timing does not tell the reasons apart.
        expect(w.hasher.verifyCalls, reason).toBe(1);
      }
      expect((await must(w.admin.getUser('alice'))).lastLoginAt).toBeNull();
    });

    it('refuses the login when the password changes while it is being verified', async () => {
      w.hasher.duringVerify = async () => {
        w.hasher.duringVerify = undefined;
        await must(w.admin.changePassword('Alice', 'new-pw'));
      };
      expect(await w.service.validateUser(gps('Alice', 'pw'), ctx)).toStrictEqual({ ok: false });
      expect((await w.service.validateUser(gps('Alice', 'new-pw'), ctx)).ok).toBe(true);
    });

    it('never logs in with an empty or missing password, even when the stored hash is of the empty password', async () => {
      // A hashed legacy row can hold the hash of "" (ASP.NET never let it log in); a Clear row with
      // an empty password imports as "needs reset". One rule for both: no empty password.
      const alice = await must(w.admin.getUser('Alice'));
      await w.store.setPasswordHash(alice.userId, 'fake$', w.clock.now());
      expect(await w.hasher.verify('fake$', '')).toBe(true);
      for (const password of ['', null]) {
        w.hasher.verifyCalls = 0;
        expect(await w.service.validateUser(gps('Alice', password), ctx)).toStrictEqual({ ok: false });
        expect(w.hasher.verifyCalls).toBe(1);
      }
    });

    it('upgrades a hash that needs it on a successful login, and keeps accepting the password', async () => {
      const alice = await must(w.admin.getUser('Alice'));
      await w.store.upgradePasswordHash(alice.userId, 'fake$pw', 'old$pw');
      const token = await login(w, gps('Alice', 'pw'));
      expect((await w.store.findUserByLoginKey('alice'))?.passwordHash).toBe('fake$pw');
      expect(await isValid(w, token)).toBe(true);
      expect((await w.service.validateUser(gps('Alice', 'pw'), ctx)).ok).toBe(true);
    });

    it('lets a broken database throw rather than answer', async () => {
      await w.store.close();
      await expect(w.service.validateUser(gps('Alice', 'pw'), ctx)).rejects.toThrow();
      w.store = await openStore('sqlite::memory:'); // for afterEach
    });
  });

  describe('ValidateUserToken', () => {
    it('is true until the absolute expiry, then false', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      w.clock.advance(24 * HOUR - 1);
      expect(await w.service.validateUserToken(token, ctx)).toEqual({ valid: true, expiresAt: new Date(w.clock.now().getTime() + 1) });
      w.clock.advance(1);
      expect(await isValid(w, token)).toBe(false);
    });

    it('slides the expiry with the idle timeout, but never past the absolute lifetime', async () => {
      const token = await login(w, portal('Alice', 'pw'));
      const issued = w.clock.now().getTime();
      w.clock.advance(29 * MINUTE);
      expect(await w.service.validateUserToken(token, ctx)).toEqual({ valid: true, expiresAt: new Date(issued + 59 * MINUTE) });
      w.clock.advance(29 * MINUTE); // 58 min after issue, 29 min after last use
      expect(await isValid(w, token)).toBe(true);
      // Used every 29 minutes, it lives until the 8 h lifetime ends.
      while (w.clock.now().getTime() + 29 * MINUTE < issued + 8 * HOUR) {
        w.clock.advance(29 * MINUTE);
        expect(await isValid(w, token)).toBe(true);
      }
      w.clock.set(new Date(issued + 8 * HOUR));
      expect(await isValid(w, token)).toBe(false);
    });

    it('expires a token left idle for the idle timeout', async () => {
      const token = await login(w, portal('Alice', 'pw'));
      w.clock.advance(10 * MINUTE);
      expect(await isValid(w, token)).toBe(true);
      w.clock.advance(30 * MINUTE);
      expect(await isValid(w, token)).toBe(false);
    });

    it('reports the idle expiry from ValidateUser when it comes first', async () => {
      const outcome = await w.service.validateUser(portal('Alice', 'pw'), ctx);
      expect(outcome.ok && outcome.expiresAt).toEqual(new Date(w.clock.now().getTime() + 30 * MINUTE));
    });

    it('accepts other spellings of the same GUID', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      expect(await isValid(w, token.toUpperCase())).toBe(true);
      expect(await isValid(w, `{${token}}`)).toBe(true);
      expect(await isValid(w, token.replace(/-/g, ''))).toBe(true);
    });

    it('is simply false for unknown or malformed input', async () => {
      for (const bad of [null, '', 'token', '00000000-0000-0000-0000-000000000000', "'; DROP TABLE tokens; --", 'ä'.repeat(5000)]) {
        expect(await w.service.validateUserToken(bad, ctx)).toStrictEqual({ valid: false });
      }
    });
  });

  describe('revocation', () => {
    it('disabling a user invalidates its tokens at once, and enabling it does not revive them', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      const bobs = await login(w, gps('bob', 'pw'));
      await must(w.admin.setUserEnabled('alice', false));
      expect(await isValid(w, token)).toBe(false);
      expect(await isValid(w, bobs)).toBe(true);
      await must(w.admin.setUserEnabled('alice', true));
      expect(await isValid(w, token)).toBe(false);
      expect(await isValid(w, await login(w, gps('Alice', 'pw')))).toBe(true);
    });

    it('changing a password invalidates the user\'s tokens at once', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      await must(w.admin.changePassword('Alice', 'pw2'));
      expect(await isValid(w, token)).toBe(false);
      expect((await w.service.validateUser(gps('Alice', 'pw'), ctx)).ok).toBe(false);
      expect((await w.service.validateUser(gps('Alice', 'pw2'), ctx)).ok).toBe(true);
    });

    it('disabling an application invalidates its tokens at once, and only its tokens', async () => {
      const onPortal = await login(w, portal('Alice', 'pw'));
      const onGps = await login(w, gps('Alice', 'pw'));
      await must(w.admin.updateApplication(PORTAL, { enabled: false }));
      expect(await isValid(w, onPortal)).toBe(false);
      expect(await isValid(w, onGps)).toBe(true);
      await must(w.admin.updateApplication(PORTAL, { enabled: true }));
      expect(await isValid(w, onPortal)).toBe(false);
    });

    it('withdrawing an application from a user invalidates the user\'s tokens for it', async () => {
      const onPortal = await login(w, portal('Alice', 'pw'));
      const onGps = await login(w, gps('Alice', 'pw'));
      await must(w.admin.revokeApplication('alice', PORTAL));
      expect(await isValid(w, onPortal)).toBe(false);
      expect(await isValid(w, onGps)).toBe(true);
    });

    it('revokes one user\'s tokens or everybody\'s on request', async () => {
      const a = await login(w, gps('Alice', 'pw'));
      const b = await login(w, gps('bob', 'pw'));
      expect(await must(w.admin.revokeTokens({ login: 'ALICE' }))).toBe(1);
      expect([await isValid(w, a), await isValid(w, b)]).toEqual([false, true]);
      expect(await must(w.admin.revokeTokens({ all: true }))).toBe(1);
      expect(await isValid(w, b)).toBe(false);
    });
  });

  describe('GetUserLoginURL and login tickets', () => {
    async function ticketOf(url: string): Promise<string> {
      const match = /[?&]ticket=([^&#]+)/.exec(url);
      if (!match?.[1]) throw new Error(`no ticket in ${url}`);
      return decodeURIComponent(match[1]);
    }

    it('returns the login URL with a new ticket appended before the fragment', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      const url = await w.service.getUserLoginUrl(token, PORTAL, ctx);
      expect(url).toMatch(/^https:\/\/portal\.example\/sso\?src=auth&ticket=[0-9a-f-]{36}#top$/);
      expect(await ticketOf(url)).toMatch(GUID);
      expect(await ticketOf(url)).not.toBe(token);
    });

    it('accepts the ticket exactly once', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      const ticket = await ticketOf(await w.service.getUserLoginUrl(token, PORTAL, ctx));
      expect(await w.service.validateUserToken(ticket, ctx)).toEqual({ valid: true, expiresAt: new Date(w.clock.now().getTime() + 120 * SECOND) });
      expect(await isValid(w, ticket)).toBe(false);
      // The session token it came from is unaffected.
      expect(await isValid(w, token)).toBe(true);
    });

    it('seals a ticket\'s issue time in it under the ticket key, and finds it from its text alone (ordered-ticket.ts)', async () => {
      const sealed = await makeWorld({ ticketKey: TICKET_KEY });
      try {
        const token = await login(sealed, gps('Alice', 'pw'));
        const first = await ticketOf(await sealed.service.getUserLoginUrl(token, PORTAL, ctx));
        const second = await ticketOf(await sealed.service.getUserLoginUrl(token, PORTAL, ctx)); // the same millisecond
        const now = sealed.clock.now().getTime();
        for (const ticket of [first, second]) {
          expect(ticket).toMatch(GUID);
          expect(orderedTicketIssuedAt(ticket, now, ticketSeal(TICKET_KEY))).toBe(now);
          expect(orderedTicketIssuedAt(ticket, now, ticketSeal(newTicketKey()))).toBeNull();
        }
        expect(first.slice(0, 8)).not.toBe(second.slice(0, 8));
        // Kept in the tickets table under (issue time, hash), not in the tokens table.
        const hash = hashToken(first);
        expect(await sealed.store.findToken(hash)).toBeNull();
        expect(await sealed.store.findOrderedTicket({ issuedAt: sealed.clock.now(), tokenHash: hash })).toMatchObject({ kind: 'ticket', usedAt: null });
        // Redeemed later, from the text: the key is read off it, not off the clock.
        sealed.clock.advance(90 * SECOND);
        expect(await isValid(sealed, first.toUpperCase())).toBe(true);
        expect(await isValid(sealed, first)).toBe(false);
        expect(await isValid(sealed, second)).toBe(true);
      } finally {
        await sealed.store.close();
      }
    });

    it('with performance.orderedTickets off, issues random tickets kept in the tokens table; services with one ticket key redeem either kind', async () => {
      const random = await makeWorld({ orderedTickets: false, ticketKey: TICKET_KEY });
      try {
        const token = await login(random, gps('Alice', 'pw'));
        const ticket = await ticketOf(await random.service.getUserLoginUrl(token, PORTAL, ctx));
        expect(ticket).toMatch(GUID);
        expect(await random.store.findToken(hashToken(ticket))).toMatchObject({ kind: 'ticket' });
        // A service that issues ordered tickets over the same store redeems it, and the other way round.
        const ordered = createAuthService({ store: random.store, hasher: random.hasher, clock: random.clock, random: counterRandom(), ticketKey: TICKET_KEY });
        const orderedTicket = await ticketOf(await ordered.getUserLoginUrl(token, PORTAL, ctx));
        expect(await random.store.findToken(hashToken(orderedTicket))).toBeNull();
        expect(await ordered.validateUserToken(ticket, ctx)).toMatchObject({ valid: true });
        expect(await random.service.validateUserToken(orderedTicket, ctx)).toMatchObject({ valid: true });
        expect(await ordered.validateUserToken(orderedTicket, ctx)).toEqual({ valid: false });
        // Under another key, an ordered ticket is a text nobody issued.
        const elsewhere = createAuthService({ store: random.store, hasher: random.hasher, clock: random.clock, random: counterRandom() });
        const third = await ticketOf(await ordered.getUserLoginUrl(token, PORTAL, ctx));
        expect(await elsewhere.validateUserToken(third, ctx)).toEqual({ valid: false });
        expect(await ordered.validateUserToken(third, ctx)).toMatchObject({ valid: true });
      } finally {
        await random.store.close();
      }
    });

    it('while an older version may be serving from the store, issues random tickets into the tokens table, where it looks; in issue order again once it is gone', async () => {
      let older = true;
      const upgrading = await makeWorld({ ticketKey: TICKET_KEY, olderVersionServing: () => older });
      try {
        const token = await login(upgrading, gps('Alice', 'pw'));
        const during = await ticketOf(await upgrading.service.getUserLoginUrl(token, PORTAL, ctx));
        // What an instance of a version before schema 17 finds: a row of the tokens table, by hash.
        expect(await upgrading.store.findToken(hashToken(during))).toMatchObject({ kind: 'ticket', usedAt: null });
        expect(orderedTicketIssuedAt(during, upgrading.clock.now().getTime(), ticketSeal(TICKET_KEY))).toBeNull();
        older = false;
        const after = await ticketOf(await upgrading.service.getUserLoginUrl(token, PORTAL, ctx));
        expect(await upgrading.store.findToken(hashToken(after))).toBeNull();
        expect(await upgrading.store.findOrderedTicket({ issuedAt: upgrading.clock.now(), tokenHash: hashToken(after) })).toMatchObject({ kind: 'ticket' });
        // Both redeem, once each.
        for (const ticket of [during, after]) {
          expect(await isValid(upgrading, ticket)).toBe(true);
          expect(await isValid(upgrading, ticket)).toBe(false);
        }
      } finally {
        await upgrading.store.close();
      }
    });

    it('never asks the old service about a ticket of ours, nor takes it for a session (token passthrough on)', async () => {
      const asked: string[] = [];
      const legacyTokens = {
        check: async (t: string) => { asked.push(`check ${t}`); return { valid: true, expiresAt: new Date(8.64e15) } as const; },
        loginUrl: async (t: string) => { asked.push(`loginUrl ${t}`); return 'https://old.example/login'; },
        status: () => { throw new Error('not asked'); },
      };
      const other = await makeWorld({ legacyTokens });
      try {
        const token = await login(other, gps('Alice', 'pw'));
        const ticket = await ticketOf(await other.service.getUserLoginUrl(token, PORTAL, ctx));
        expect(await other.service.getUserLoginUrl(ticket, PORTAL, ctx)).toBe('');
        expect(await other.service.whatsNew({ appId: PORTAL, appToken: ticket, language: null, appVersion: null, qtyNews: 10 }, ctx)).toEqual([]);
        expect(asked).toEqual([]);
        expect(await isValid(other, ticket)).toBe(true);
        expect(await isValid(other, ticket)).toBe(false); // used: still ours, still not asked
        expect(asked).toEqual([]);
        // A text the store does not know is the old service's to judge.
        expect(await isValid(other, '3f2504e0-4f89-11d3-9a0c-0305e82c3301')).toBe(true);
        expect(asked).toEqual(['check 3f2504e0-4f89-11d3-9a0c-0305e82c3301']);
      } finally {
        await other.store.close();
      }
    });

    it('lets the ticket expire after 120 s by default', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      const ticket = await ticketOf(await w.service.getUserLoginUrl(token, PORTAL, ctx));
      w.clock.advance(120 * SECOND);
      expect(await isValid(w, ticket)).toBe(false);
    });

    it('takes the ticket lifetime from configuration', async () => {
      const other = await makeWorld({ ticketTtlSeconds: 300 });
      try {
        const token = await login(other, gps('Alice', 'pw'));
        const ticket = await ticketOf(await other.service.getUserLoginUrl(token, PORTAL, ctx));
        other.clock.advance(299 * SECOND);
        expect(await isValid(other, ticket)).toBe(true);
      } finally {
        await other.store.close();
      }
    });

    it('dies with a password change, and stays dead when the user is disabled and enabled again', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      const first = await ticketOf(await w.service.getUserLoginUrl(token, PORTAL, ctx));
      await must(w.admin.changePassword('alice', 'new-pw'));
      expect(await isValid(w, first)).toBe(false);
      const fresh = await login(w, gps('Alice', 'new-pw'));
      const second = await ticketOf(await w.service.getUserLoginUrl(fresh, PORTAL, ctx));
      await must(w.admin.setUserEnabled('alice', false));
      await must(w.admin.setUserEnabled('alice', true));
      expect(await isValid(w, second)).toBe(false);
    });

    it('dies with its user: disabling the user revokes an unused ticket', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      const ticket = await ticketOf(await w.service.getUserLoginUrl(token, PORTAL, ctx));
      await must(w.admin.setUserEnabled('Alice', false));
      expect(await isValid(w, ticket)).toBe(false);
    });

    it('returns the empty string whenever it cannot give a URL', async () => {
      const alice = await login(w, gps('Alice', 'pw'));
      const bob = await login(w, gps('bob', 'pw'));
      const ticket = await ticketOf(await w.service.getUserLoginUrl(alice, PORTAL, ctx));
      await must(w.admin.addApplication({ appId: 6, name: 'No URL', requireIp: false }));
      await must(w.admin.grantApplication('alice', 6));
      const cases: [string, string | null, number][] = [
        ['user not granted the target application', bob, PORTAL],
        ['application without a login URL', alice, 6],
        ['unknown application', alice, 404],
        ['malformed token', 'nope', PORTAL],
        ['missing token', null, PORTAL],
        ['a ticket is not a session token', ticket, PORTAL],
      ];
      for (const [reason, token, appId] of cases) expect(await w.service.getUserLoginUrl(token, appId, ctx), reason).toBe('');
      expect(await isValid(w, ticket)).toBe(true); // and asking with the ticket did not consume it

      w.clock.advance(24 * HOUR);
      expect(await w.service.getUserLoginUrl(alice, PORTAL, ctx)).toBe('');
    });

    it('refuses for a disabled target application', async () => {
      const token = await login(w, gps('Alice', 'pw'));
      await must(w.admin.updateApplication(PORTAL, { enabled: false }));
      expect(await w.service.getUserLoginUrl(token, PORTAL, ctx)).toBe('');
    });

    it('issues a ticket without reading the user: the insert checks user and grant, the login comes with the token', async () => {
      const issued: IssueEvent[] = [];
      const service = createAuthService({ store: w.store, hasher: w.hasher, clock: w.clock, random: counterRandom(), events: { ticketIssued: (e) => issued.push(e) } });
      const token = await login({ ...w, service }, gps('Alice', 'pw'));
      const reads = vi.spyOn(w.store, 'getUser');
      expect(await service.getUserLoginUrl(token, PORTAL, ctx)).toMatch(/ticket=[0-9a-f-]{36}#top$/);
      expect(issued).toMatchObject([{ appId: PORTAL, login: 'Alice' }]);
      expect(reads).not.toHaveBeenCalled();
      // A grant withdrawn after the session was read: the ticket's own insert refuses it.
      await must(w.admin.revokeApplication('alice', PORTAL));
      expect(await isValid(w, token)).toBe(true);
      reads.mockClear();
      expect(await service.getUserLoginUrl(token, PORTAL, ctx)).toBe('');
      expect(issued).toHaveLength(1);
      expect(reads).not.toHaveBeenCalled();
    });

    it('without a ticket in the URL, still refuses a user not granted the application (the user is read)', async () => {
      const other = await makeWorld({ loginUrl: { default: null, apps: { 6: 'https://six.example/?u={login}' }, none: 'NONE' } });
      try {
        await must(other.admin.addApplication({ appId: 6, name: 'Six', requireIp: false }));
        await must(other.admin.grantApplication('alice', 6));
        const reads = vi.spyOn(other.store, 'getUser');
        expect(await other.service.getUserLoginUrl(await login(other, gps('Alice', 'pw')), 6, ctx)).toBe('https://six.example/?u=Alice');
        expect(await other.service.getUserLoginUrl(await login(other, gps('bob', 'pw')), 6, ctx)).toBe('NONE');
        expect(reads).toHaveBeenCalledTimes(2);
      } finally {
        await other.store.close();
      }
    });
  });

  describe('the compatibility profile', () => {
    it('writes tokens and tickets in its form; the store keeps the hash of the canonical text, so any case validates', async () => {
      const other = await makeWorld({ tokenForm: parseTokenFormName('HEX40') ?? undefined, ticketKey: TICKET_KEY });
      try {
        const token = await login(other, gps('Alice', 'pw'));
        expect(token).toMatch(/^[0-9A-F]{40}$/);
        expect(await other.store.findToken(hashToken(token.toLowerCase()))).toMatchObject({ kind: 'session' });
        for (const spelling of [token, token.toLowerCase()]) expect(await isValid(other, spelling)).toBe(true);
        const url = await other.service.getUserLoginUrl(token.toLowerCase(), PORTAL, ctx);
        const ticket = /ticket=([0-9A-F]{40})#top$/.exec(url)?.[1] ?? '';
        // It opens to its issue time: the key of the tickets table, with the hash (ordered-ticket.ts).
        const issuedAt = new Date(orderedTicketIssuedAt(canonicalToken(ticket) ?? '', other.clock.now().getTime(), ticketSeal(TICKET_KEY)) ?? 0);
        expect(issuedAt).toEqual(other.clock.now());
        expect(await other.store.findOrderedTicket({ issuedAt, tokenHash: hashToken(canonicalToken(ticket) ?? '') })).toMatchObject({ kind: 'ticket', issuedAt });
        expect(await isValid(other, ticket.toLowerCase())).toBe(true);
      } finally {
        await other.store.close();
      }
    });

    it('an upper-case GUID token is stored as its lower-case D form', async () => {
      const other = await makeWorld({ tokenForm: parseTokenFormName('GUID') ?? undefined });
      try {
        const token = await login(other, gps('Alice', 'pw'));
        expect(token).toMatch(/^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/);
        expect(await other.store.findToken(hashToken(token.toLowerCase()))).not.toBeNull();
        expect(await other.store.findToken(hashToken(token))).toBeNull();
      } finally {
        await other.store.close();
      }
    });

    it('login URL templates: per application, a ticket only when the template has one, `none` for every refusal', async () => {
      const other = await makeWorld({
        loginUrl: { default: '{loginUrl}&auto={ticket}', apps: { 2: 'https://gps.example/AutoLogin.aspx?app={appId}&token={token}&u={login}' }, none: 'NONE' },
      });
      try {
        await must(other.admin.updateApplication(2, { loginUrl: null }));
        await must(other.admin.addApplication({ appId: 6, name: 'No URL', requireIp: false }));
        await must(other.admin.grantApplication('alice', 6));
        const token = await login(other, gps('Alice', 'pw'));
        const sent = ` ${token.toUpperCase()}`;
        // App 2 has no configured URL, and its template does not need one; nor a ticket.
        expect(await other.service.getUserLoginUrl(sent, 2, ctx)).toBe(`https://gps.example/AutoLogin.aspx?app=2&token=${encodeURIComponent(sent)}&u=Alice`);
        const portal = await other.service.getUserLoginUrl(token, PORTAL, ctx);
        expect(portal).toMatch(/^https:\/\/portal\.example\/sso\?src=auth#top&auto=[0-9a-f-]{36}$/);
        expect(await isValid(other, portal.split('auto=')[1] ?? '')).toBe(true);
        for (const [reason, t, appId] of [['no URL configured for {loginUrl}', token, 6], ['unknown application', token, 404], ['bad token', 'nope', 2]] as const) {
          expect(await other.service.getUserLoginUrl(t, appId, ctx), reason).toBe('NONE');
        }
      } finally {
        await other.store.close();
      }
    });
  });

  describe('WhatsNew', () => {
    const ask = (overrides: Partial<{ appToken: string | null; appId: number; appVersion: string | null; language: string | null; qtyNews: number }> = {}) =>
      w.service.whatsNew({ appToken: null, appId: 2, appVersion: null, language: null, qtyNews: 10, ...overrides }, ctx);
    const titles = async (overrides: Parameters<typeof ask>[0] = {}): Promise<string[]> => (await ask(overrides)).map((n) => n.title);
    const news = async (input: Partial<NewNewsInput> & { title: string }): Promise<void> => {
      await must(w.admin.addNews({ appId: 2, body: `${input.title} body`, ...input }));
      w.clock.advance(SECOND); // distinct publication times: newest first is observable
    };

    it('returns the rows of the application, newest first, with every column', async () => {
      await news({ title: 'first', url: 'https://news.example/1' });
      await news({ title: 'second' });
      await news({ title: 'portal only', appId: PORTAL });
      const items = await ask();
      expect(items.map((n) => n.title)).toEqual(['second', 'first']);
      expect(items[1]).toEqual({
        newsId: expect.any(Number), appId: 2, title: 'first', body: 'first body', language: 'en',
        url: 'https://news.example/1', publishedAt: new Date(w.clock.now().getTime() - 3 * SECOND),
        expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, attributes: {},
      });
      expect(items[0]?.url).toBe('');
    });

    it('returns at most min(qtyNews, 100) rows, and none for 0 or less', async () => {
      for (let i = 0; i < 105; i++) await must(w.admin.addNews({ appId: 2, title: `n${i}`, body: '', publishedAt: new Date(w.clock.now().getTime() - i * SECOND) }));
      expect(await titles({ qtyNews: 3 })).toEqual(['n0', 'n1', 'n2']);
      expect(await ask({ qtyNews: 1000 })).toHaveLength(100);
      expect(await ask({ qtyNews: 0 })).toEqual([]);
      expect(await ask({ qtyNews: -5 })).toEqual([]);
    });

    it('leaves out scheduled and expired rows', async () => {
      const now = w.clock.now().getTime();
      await news({ title: 'scheduled', publishedAt: new Date(now + HOUR) });
      await news({ title: 'expired', publishedAt: new Date(now - 2 * HOUR), expiresAt: new Date(now - HOUR) });
      await news({ title: 'live', publishedAt: new Date(now - 2 * HOUR), expiresAt: new Date(now + 10 * HOUR) });
      expect(await titles()).toEqual(['live']);
      w.clock.set(new Date(now + HOUR));
      expect(await titles()).toEqual(['scheduled', 'live']);
    });

    it('falls back from the exact language to its primary subtag to the application default', async () => {
      await news({ title: 'en', language: 'en' });
      await news({ title: 'pt', language: 'pt' });
      await news({ title: 'pt-BR', language: 'pt-BR' });
      expect(await titles({ language: 'pt-BR' })).toEqual(['pt-BR']);
      expect(await titles({ language: 'pt-br' })).toEqual(['pt-BR']);
      expect(await titles({ language: 'pt-PT' })).toEqual(['pt']);
      expect(await titles({ language: 'pt' })).toEqual(['pt']);
      expect(await titles({ language: 'fr-CA' })).toEqual(['en']);
      expect(await titles({ language: '' })).toEqual(['en']);
      expect(await titles({ language: null })).toEqual(['en']);
      expect(await titles({ language: '@@' })).toEqual(['en']);
    });

    it('uses the application\'s own default language', async () => {
      await news({ title: 'portal pt-BR', appId: PORTAL }); // default language of Portal
      await news({ title: 'portal en', appId: PORTAL, language: 'en' });
      expect(await titles({ appId: PORTAL, language: 'de' })).toEqual(['portal pt-BR']);
      expect(await titles({ appId: PORTAL, language: 'en-GB' })).toEqual(['portal en']);
    });

    it('falls back when the exact language has rows, but none for this version', async () => {
      await news({ title: 'pt-BR for 3.x', language: 'pt-BR', minVersion: '3' });
      await news({ title: 'pt for all', language: 'pt' });
      expect(await titles({ language: 'pt-BR', appVersion: '2.0' })).toEqual(['pt for all']);
      expect(await titles({ language: 'pt-BR', appVersion: '3.1' })).toEqual(['pt-BR for 3.x']);
    });

    it('filters by the version range, numerically, and shows everything for an empty AppVersion', async () => {
      await news({ title: 'all' });
      await news({ title: '>=2.10', minVersion: '2.10' });
      await news({ title: '<=2.9', maxVersion: '2.9' });
      await news({ title: '1.5..2.5', minVersion: '1.5', maxVersion: '2.5' });
      expect(await titles({ appVersion: '2.9' })).toEqual(['<=2.9', 'all']);
      expect(await titles({ appVersion: '2.10' })).toEqual(['>=2.10', 'all']);
      expect(await titles({ appVersion: '2.5.0' })).toEqual(['1.5..2.5', '<=2.9', 'all']);
      expect(await titles({ appVersion: '1.0-beta' })).toEqual(['<=2.9', 'all']);
      expect(await titles({ appVersion: 'unknown' })).toEqual(['all']);
      expect(await titles({ appVersion: '' })).toEqual(['1.5..2.5', '<=2.9', '>=2.10', 'all']);
      expect(await titles({ appVersion: null })).toHaveLength(4);
    });

    it('shows members-only rows only with a valid token for that application', async () => {
      await news({ title: 'public' });
      await news({ title: 'members', membersOnly: true });
      const gpsToken = await login(w, gps('Alice', 'pw'));
      const portalToken = await login(w, portal('Alice', 'pw'));
      expect(await titles()).toEqual(['public']);
      expect(await titles({ appToken: gpsToken })).toEqual(['members', 'public']);
      expect(await titles({ appToken: portalToken })).toEqual(['public']);
      expect(await titles({ appToken: 'garbage' })).toEqual(['public']);
      await must(w.admin.revokeTokens({ login: 'alice' }));
      expect(await titles({ appToken: gpsToken })).toEqual(['public']);
    });

    it('shows members-only rows until the token expires', async () => {
      await news({ title: 'members', membersOnly: true, publishedAt: new Date(w.clock.now().getTime() - HOUR) });
      const token = await login(w, gps('Alice', 'pw'));
      expect(await titles({ appToken: token })).toEqual(['members']);
      w.clock.advance(24 * HOUR);
      expect(await titles({ appToken: token })).toEqual([]);
    });

    it('returns nothing for an unknown or disabled application', async () => {
      await news({ title: 'gps' });
      expect(await ask({ appId: 404 })).toEqual([]);
      await must(w.admin.updateApplication(2, { enabled: false }));
      expect(await ask()).toEqual([]);
    });
  });
});

describe('with real argon2id', () => {
  it('stores an argon2id hash with the OWASP parameters and checks the password exactly', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      const hasher = createArgon2Hasher();
      const admin = createAdminService({ store, hasher });
      const service = createAuthService({ store, hasher });
      await must(admin.addUser({ login: 'dana', password: 'S3cret pass', appIds: [2] }));
      expect((await store.findUserByLoginKey('dana'))?.passwordHash.startsWith('$argon2id$v=19$m=19456,t=2,p=1$')).toBe(true);
      expect((await service.validateUser(gps('Dana', 'S3cret pass'), ctx)).ok).toBe(true);
      expect(await service.validateUser(gps('Dana', 's3cret pass'), ctx)).toStrictEqual({ ok: false });
      expect(await service.validateUser(gps('nobody', 'S3cret pass'), ctx)).toStrictEqual({ ok: false });
    } finally {
      await store.close();
    }
  });
});

describe('on disk', () => {
  it('never writes the token or the ticket text, only their hashes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcapi-ondisk-'));
    const path = join(dir, 'auth.db');
    const store = await openStore(`sqlite:${path}`);
    try {
      const hasher = fakeHasher();
      const admin = createAdminService({ store, hasher });
      const service = createAuthService({ store, hasher });
      await must(admin.addApplication({ appId: 5, name: 'Portal', requireIp: false, loginUrl: 'https://p.example/' }));
      await must(admin.addUser({ login: 'erin', password: 'pw', appIds: [2, 5] }));
      const outcome = await service.validateUser(gps('erin', 'pw'), ctx);
      if (!outcome.ok) throw new Error('login failed');
      const url = await service.getUserLoginUrl(outcome.token, 5, ctx);
      const ticket = url.split('ticket=')[1] ?? '';
      expect(ticket).toMatch(GUID);
      const bytes = ['', '-wal'].filter((s) => existsSync(path + s)).map((s) => readFileSync(path + s).toString('latin1')).join('');
      expect(bytes).toContain(hashToken(outcome.token)); // the check can see what is there
      expect(bytes).not.toContain(outcome.token);
      expect(bytes).not.toContain(ticket);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('equal failures', () => {
  it('counts what a failed verification took toward the padding target, and nothing for a failure that did not hash', async () => {
    const store = await openStore('sqlite::memory:');
    const hasher = fakeHasher();
    let now = 0;
    const verifications: number[] = [];
    const successes: number[] = [];
    const padding = {
      recordSuccess: (ms: number) => successes.push(ms), recordVerification: (ms: number) => verifications.push(ms), recordLegacyCall: () => undefined,
      targetMs: () => 50, now: () => now, pad: async () => undefined,
    };
    const admin = createAdminService({ store, hasher });
    await must(admin.addUser({ login: 'kim', password: 'right', appIds: [2] }));
    const service = createAuthService({ store, hasher, padding });
    await new Promise((resolve) => setImmediate(resolve));
    hasher.duringVerify = async () => {
      now += 40; // one verification on the fake clock
    };
    successes.length = 0;
    verifications.length = 0;
    expect(await service.validateUser(gps('kim', 'wrong'), ctx)).toEqual({ ok: false });
    expect(await service.validateUser(gps('nobody', 'right'), ctx)).toEqual({ ok: false });
    expect(verifications).toEqual([40, 40]);
    expect(await service.validateUser(gps('kim', 'x'.repeat(1025)), ctx)).toEqual({ ok: false });
    expect((await service.validateUser(gps('kim', 'right'), ctx)).ok).toBe(true);
    expect(verifications).toEqual([40, 40]);
    expect(successes).toEqual([40]);
    await store.close();
  });

  it('fails a password over 1024 bytes without hashing it, padded like every failure', async () => {
    const store = await openStore('sqlite::memory:');
    const hasher = fakeHasher();
    const slept: number[] = [];
    const now = 0;
    const padding = { recordSuccess: () => undefined, recordVerification: () => undefined, recordLegacyCall: () => undefined, targetMs: () => 50, now: () => now, pad: async (started: number) => { slept.push(50 - (now - started)); } };
    const admin = createAdminService({ store, hasher });
    await must(admin.addUser({ login: 'long', password: 'é'.repeat(512), appIds: [2] }));
    const service = createAuthService({ store, hasher, padding });
    await new Promise((resolve) => setImmediate(resolve));
    hasher.verifyCalls = 0;
    // 512 two-byte characters are exactly 1024 bytes: still checked.
    expect((await service.validateUser(gps('long', 'é'.repeat(512)), ctx)).ok).toBe(true);
    expect(hasher.verifyCalls).toBe(1);
    expect(await service.validateUser(gps('long', 'é'.repeat(512) + 'x'), ctx)).toEqual({ ok: false });
    expect(hasher.verifyCalls).toBe(1);
    // The failure took no time on the fake clock: it waits the whole 50 ms target.
    expect(slept).toEqual([50]);
    await store.close();
  });
});
