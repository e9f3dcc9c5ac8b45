/**
 * The behaviour every Store adapter must have. Run it against an adapter with
 * `describeStoreContract('name', makeStore)`, where `makeStore` returns a freshly created and
 * migrated, otherwise empty database (it holds only the GPS application, AppID 2).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import type { LoginAttempt, ThrottleLimits } from '../../src/store/store.js';
import type { Application, AuditQuery, LegacyTally, NewAuditEvent, NewShadowDifference, NewToken, OrderedTicketKey, Store, User } from '../../src/store/store.js';

const T0 = new Date('2025-01-15T12:00:00.000Z');
const at = (offsetMs: number): Date => new Date(T0.getTime() + offsetMs);
const HOUR = 3600_000;

let hashCounter = 0;
function newHash(): string {
  hashCounter += 1;
  return createHash('sha256').update(`token-${hashCounter}-${Math.random()}`).digest('hex');
}

function app(appId: number, overrides: Partial<Application> = {}): Application {
  return {
    appId, name: `App ${appId}`, enabled: true, requireIp: true, loginUrl: null, tokenLifetimeSeconds: 86400,
    idleTimeoutSeconds: null, defaultLanguage: 'en', trustedCallers: [], createdAt: T0, ...overrides,
  };
}

export function describeStoreContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await makeStore();
    });
    afterEach(async () => {
      await store.close();
    });

    async function addUser(login: string, appIds: readonly number[] = [2], passwordHash = `hash-of-${login}`): Promise<User> {
      const result = await store.insertUser({ login, loginKey: login.toLowerCase(), passwordHash, enabled: true, appIds, createdAt: T0 });
      if (!result.ok) throw new Error(`could not add ${login}`);
      return result.user;
    }

    function token(user: User, appId: number, overrides: Partial<NewToken> = {}): NewToken {
      return {
        tokenHash: newHash(), userId: user.userId, appId, clientIp: '198.51.100.7', sourceIp: '192.0.2.1',
        issuedAt: T0, expiresAt: at(24 * HOUR), ...overrides,
      };
    }

    async function addSession(user: User, appId = 2, overrides: Partial<NewToken> = {}): Promise<string> {
      const t = token(user, appId, overrides);
      const fresh = await store.findUserByLoginKey(user.login.toLowerCase());
      expect(await store.insertSession(t, { passwordHash: fresh?.passwordHash ?? '' })).toBe(true);
      return t.tokenHash;
    }

    describe('a fresh database', () => {
      it('holds exactly the GPS application, AppID 2, without IP requirement, and no users', async () => {
        const apps = await store.listApplications();
        expect(apps.map((a) => a.appId)).toEqual([2]);
        expect(apps[0]).toMatchObject({ appId: 2, name: 'GPS', enabled: true, requireIp: false, loginUrl: null, tokenLifetimeSeconds: 86400, idleTimeoutSeconds: null, defaultLanguage: 'en' });
        expect(await store.listUsers()).toEqual([]);
        expect(await store.schemaVersion()).toBeGreaterThanOrEqual(1);
      });
    });

    describe('applications', () => {
      it('stores every field and refuses a second application with the same AppID', async () => {
        const a = app(7, { name: 'Portal', requireIp: false, loginUrl: 'https://portal.example/login', tokenLifetimeSeconds: 3600, idleTimeoutSeconds: 600, defaultLanguage: 'pt-BR', enabled: false });
        expect(await store.insertApplication(a)).toEqual({ ok: true, application: a });
        expect(await store.getApplication(7)).toEqual(a);
        expect(await store.insertApplication(app(7, { name: 'Other' }))).toEqual({ ok: false, reason: 'app-exists' });
        expect((await store.getApplication(7))?.name).toBe('Portal');
        expect(await store.getApplication(99)).toBeNull();
      });

      it('stores trusted callers, none by default, and replaces them with a patch', async () => {
        expect((await store.getApplication(2))?.trustedCallers).toEqual([]);
        await store.insertApplication(app(7, { trustedCallers: ['10.0.0.5', '10.1.0.0/16', '2001:db8::/48'] }));
        expect((await store.getApplication(7))?.trustedCallers).toEqual(['10.0.0.5', '10.1.0.0/16', '2001:db8::/48']);
        expect((await store.updateApplication(7, { trustedCallers: ['192.0.2.1'] }, T0))?.trustedCallers).toEqual(['192.0.2.1']);
        expect((await store.updateApplication(7, { name: 'Renamed' }, T0))?.trustedCallers).toEqual(['192.0.2.1']);
        expect((await store.updateApplication(7, { trustedCallers: [] }, T0))?.trustedCallers).toEqual([]);
        expect((await store.listApplications()).map((a) => a.trustedCallers)).toEqual([[], []]);
      });

      it('lists applications by ascending AppID', async () => {
        await store.insertApplication(app(10));
        await store.insertApplication(app(1));
        expect((await store.listApplications()).map((a) => a.appId)).toEqual([1, 2, 10]);
      });

      it('updates only the fields in the patch, including setting nullable ones to null', async () => {
        await store.insertApplication(app(7, { loginUrl: 'https://a.example/', idleTimeoutSeconds: 60 }));
        const updated = await store.updateApplication(7, { name: 'Renamed', loginUrl: null, idleTimeoutSeconds: null }, T0);
        expect(updated).toEqual(app(7, { name: 'Renamed', loginUrl: null, idleTimeoutSeconds: null }));
        const again = await store.updateApplication(7, { requireIp: false, tokenLifetimeSeconds: 60, defaultLanguage: 'de' }, T0);
        expect(again).toEqual(app(7, { name: 'Renamed', requireIp: false, tokenLifetimeSeconds: 60, defaultLanguage: 'de' }));
        expect(await store.updateApplication(99, { name: 'x' }, T0)).toBeNull();
      });

      it('revokes the tokens of an application when it is disabled, and only those', async () => {
        await store.insertApplication(app(7));
        const alice = await addUser('alice', [2, 7]);
        const on7 = await addSession(alice, 7);
        const on2 = await addSession(alice, 2);
        await store.updateApplication(7, { enabled: false }, at(HOUR));
        expect((await store.findToken(on7))?.revokedAt).toEqual(at(HOUR));
        expect((await store.findToken(on7))?.appEnabled).toBe(false);
        expect((await store.findToken(on2))?.revokedAt).toBeNull();
        // Enabling it again does not bring old tokens back.
        await store.updateApplication(7, { enabled: true }, at(2 * HOUR));
        expect((await store.findToken(on7))?.revokedAt).toEqual(at(HOUR));
      });
    });

    describe('users', () => {
      it('stores a user with its grants and finds it by login key, with the hash', async () => {
        await store.insertApplication(app(9));
        const result = await store.insertUser({ login: 'Alice', loginKey: 'alice', passwordHash: '$argon2id$x', enabled: true, appIds: [9, 2], createdAt: T0 });
        expect(result.ok).toBe(true);
        if (!result.ok) return;
        expect(result.user).toEqual({ userId: result.user.userId, login: 'Alice', enabled: true, appIds: [2, 9], createdAt: T0, lastLoginAt: null, passwordChangedAt: T0 });
        expect(await store.findUserByLoginKey('alice')).toEqual({ ...result.user, passwordHash: '$argon2id$x' });
        expect(await store.findUserByLoginKey('Alice')).toBeNull();
        const byId = await store.getUser(result.user.userId);
        expect(byId).toEqual(result.user);
        expect(byId !== null && 'passwordHash' in byId).toBe(false);
        expect(await store.getUser(123456)).toBeNull();
      });

      it('refuses a second user with the same login key', async () => {
        await addUser('alice');
        const again = await store.insertUser({ login: 'ALICE', loginKey: 'alice', passwordHash: 'h', enabled: true, appIds: [2], createdAt: T0 });
        expect(again).toEqual({ ok: false, reason: 'login-taken' });
        expect((await store.listUsers()).map((u) => u.login)).toEqual(['alice']);
      });

      it('rejects a grant for an application that does not exist', async () => {
        await expect(store.insertUser({ login: 'x', loginKey: 'x', passwordHash: 'h', enabled: true, appIds: [404], createdAt: T0 })).rejects.toThrow();
        expect(await store.findUserByLoginKey('x')).toBeNull();
      });

      it('lists users by login key, optionally only those granted an application', async () => {
        await store.insertApplication(app(9));
        await addUser('carol', [9]);
        await addUser('alice', [2]);
        await addUser('bob', [2, 9]);
        expect((await store.listUsers()).map((u) => u.login)).toEqual(['alice', 'bob', 'carol']);
        expect((await store.listUsers({ appId: 9 })).map((u) => u.login)).toEqual(['bob', 'carol']);
      });

      it('grants and withdraws applications, reporting whether anything changed', async () => {
        await store.insertApplication(app(9));
        const alice = await addUser('alice', [2]);
        expect(await store.grantApplication(alice.userId, 9, T0)).toBe(true);
        expect(await store.grantApplication(alice.userId, 9, T0)).toBe(false);
        expect((await store.getUser(alice.userId))?.appIds).toEqual([2, 9]);
        expect(await store.revokeApplication(alice.userId, 9, T0)).toBe(true);
        expect(await store.revokeApplication(alice.userId, 9, T0)).toBe(false);
        expect((await store.getUser(alice.userId))?.appIds).toEqual([2]);
      });

      it('withdrawing an application revokes the user\'s tokens for it only', async () => {
        await store.insertApplication(app(9));
        const alice = await addUser('alice', [2, 9]);
        const on9 = await addSession(alice, 9);
        const on2 = await addSession(alice, 2);
        await store.revokeApplication(alice.userId, 9, at(HOUR));
        expect(await store.findToken(on9)).toMatchObject({ revokedAt: at(HOUR), granted: false });
        expect(await store.findToken(on2)).toMatchObject({ revokedAt: null, granted: true });
      });

      it('a password change replaces the hash and revokes every token of the user', async () => {
        const alice = await addUser('alice');
        const bob = await addUser('bob');
        const a = await addSession(alice);
        const b = await addSession(bob);
        await store.setPasswordHash(alice.userId, 'new-hash', at(HOUR));
        expect(await store.findUserByLoginKey('alice')).toMatchObject({ passwordHash: 'new-hash', passwordChangedAt: at(HOUR) });
        expect((await store.findToken(a))?.revokedAt).toEqual(at(HOUR));
        expect((await store.findToken(b))?.revokedAt).toBeNull();
      });

      it('upgrades a hash only if it is still the expected one, keeping tokens', async () => {
        const alice = await addUser('alice', [2], 'old');
        const a = await addSession(alice);
        expect(await store.upgradePasswordHash(alice.userId, 'something-else', 'new')).toBe(false);
        expect((await store.findUserByLoginKey('alice'))?.passwordHash).toBe('old');
        expect(await store.upgradePasswordHash(alice.userId, 'old', 'new')).toBe(true);
        expect((await store.findUserByLoginKey('alice'))?.passwordHash).toBe('new');
        expect((await store.findToken(a))?.revokedAt).toBeNull();
      });

      it('disabling a user revokes its tokens; enabling it again does not revive them', async () => {
        const alice = await addUser('alice');
        const a = await addSession(alice);
        await store.setUserEnabled(alice.userId, false, at(HOUR));
        expect(await store.findToken(a)).toMatchObject({ revokedAt: at(HOUR), userEnabled: false });
        await store.setUserEnabled(alice.userId, true, at(2 * HOUR));
        expect(await store.findToken(a)).toMatchObject({ revokedAt: at(HOUR), userEnabled: true });
        expect((await store.getUser(alice.userId))?.enabled).toBe(true);
      });
    });

    describe('tokens', () => {
      it('stores a session with everything needed to judge it, found by hash, and records the login', async () => {
        await store.insertApplication(app(7, { idleTimeoutSeconds: 300 }));
        const alice = await addUser('alice', [7]);
        const t = token(alice, 7, { issuedAt: at(5), expiresAt: at(HOUR) });
        expect(await store.insertSession(t, { passwordHash: 'hash-of-alice' })).toBe(true);
        expect(await store.findToken(t.tokenHash)).toEqual({
          tokenHash: t.tokenHash, kind: 'session', userId: alice.userId, appId: 7, clientIp: '198.51.100.7', sourceIp: '192.0.2.1',
          issuedAt: at(5), expiresAt: at(HOUR), lastUsedAt: at(5), usedAt: null, revokedAt: null,
          userEnabled: true, appEnabled: true, granted: true, idleTimeoutSeconds: 300, login: 'alice',
        });
        expect((await store.getUser(alice.userId))?.lastLoginAt).toEqual(at(5));
        expect(await store.findToken(newHash())).toBeNull();
      });

      it('refuses a session when the password hash changed, the user or app is disabled, or there is no grant', async () => {
        await store.insertApplication(app(7));
        await store.insertApplication(app(8, { enabled: false }));
        const alice = await addUser('alice', [2, 8]);
        const bob = await addUser('bob', [2]);
        await store.setUserEnabled(bob.userId, false, T0);
        const refused = [
          await store.insertSession(token(alice, 2), { passwordHash: 'stale-hash' }),
          await store.insertSession(token(alice, 7), { passwordHash: 'hash-of-alice' }), // no grant
          await store.insertSession(token(alice, 8), { passwordHash: 'hash-of-alice' }), // app disabled
          await store.insertSession(token(bob, 2), { passwordHash: 'hash-of-bob' }), // user disabled
        ];
        expect(refused).toEqual([false, false, false, false]);
        expect((await store.getUser(alice.userId))?.lastLoginAt).toBeNull();
      });

      it('stores tickets under the same conditions, without a password check', async () => {
        await store.insertApplication(app(7));
        const alice = await addUser('alice', [2]);
        const ticket = token(alice, 2, { expiresAt: at(120_000) });
        expect(await store.insertTicket(ticket)).toBe(true);
        expect(await store.findToken(ticket.tokenHash)).toMatchObject({ kind: 'ticket', usedAt: null, expiresAt: at(120_000) });
        expect(await store.insertTicket(token(alice, 7))).toBe(false);
        expect((await store.getUser(alice.userId))?.lastLoginAt).toBeNull();
      });

      it('records uses of a session, never moving the last use backwards', async () => {
        const alice = await addUser('alice');
        const a = await addSession(alice);
        await store.touchToken(a, at(10 * 60_000));
        expect((await store.findToken(a))?.lastUsedAt).toEqual(at(10 * 60_000));
        await store.touchToken(a, at(5 * 60_000));
        expect((await store.findToken(a))?.lastUsedAt).toEqual(at(10 * 60_000));
      });

      it('consumes a ticket exactly once, even when asked concurrently', async () => {
        const alice = await addUser('alice');
        const ticket = token(alice, 2, { expiresAt: at(120_000) });
        await store.insertTicket(ticket);
        const results = await Promise.all(Array.from({ length: 10 }, () => store.consumeTicket(ticket.tokenHash, at(1000))));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect((await store.findToken(ticket.tokenHash))?.usedAt).toEqual(at(1000));
        expect(await store.consumeTicket(ticket.tokenHash, at(2000))).toBe(false);
      });

      it('does not consume an expired or revoked ticket, nor a session token', async () => {
        const alice = await addUser('alice');
        const expired = token(alice, 2, { expiresAt: at(120_000) });
        const revoked = token(alice, 2, { expiresAt: at(120_000) });
        await store.insertTicket(expired);
        await store.insertTicket(revoked);
        const session = await addSession(alice);
        expect(await store.consumeTicket(expired.tokenHash, at(120_000))).toBe(false);
        await store.revokeTokens({ userId: alice.userId }, at(1));
        expect(await store.consumeTicket(revoked.tokenHash, at(2))).toBe(false);
        expect(await store.consumeTicket(session, at(2))).toBe(false);
        expect(await store.consumeTicket(newHash(), at(2))).toBe(false);
      });

      describe('tickets in issue order (the tickets table, migration 17)', () => {
        const key = (t: NewToken): OrderedTicketKey => ({ issuedAt: t.issuedAt, tokenHash: t.tokenHash });

        it('come with the installation\'s ticket key, made by the migration: 256 or 244 random bits in hex, one per database', async () => {
          const key = await store.installationSecret('ticket-key', 'not-this-one');
          expect(key).toMatch(/^[0-9a-f]{64}$/);
          expect(await store.installationSecret('ticket-key', 'nor-this-one')).toBe(key);
          const other = await makeStore();
          try {
            expect(await other.installationSecret('ticket-key', 'not-this-one')).not.toBe(key);
          } finally {
            await other.close();
          }
        });

        it('stores them under the same conditions as a ticket, found by their whole key only', async () => {
          await store.insertApplication(app(7));
          await store.insertApplication(app(8, { enabled: false }));
          const alice = await addUser('alice', [2, 8]);
          const bob = await addUser('bob');
          await store.setUserEnabled(bob.userId, false, T0);
          const ticket = token(alice, 2, { issuedAt: at(5), expiresAt: at(120_000) });
          expect(await store.insertOrderedTicket(ticket)).toBe(true);
          expect(await store.findOrderedTicket(key(ticket))).toEqual({
            tokenHash: ticket.tokenHash, kind: 'ticket', userId: alice.userId, appId: 2, clientIp: '198.51.100.7', sourceIp: '192.0.2.1',
            issuedAt: at(5), expiresAt: at(120_000), lastUsedAt: at(5), usedAt: null, revokedAt: null,
            userEnabled: true, appEnabled: true, granted: true, idleTimeoutSeconds: null, login: 'alice',
          });
          // Another issue time, another hash, or the tokens table: not this ticket.
          expect(await store.findOrderedTicket({ issuedAt: at(6), tokenHash: ticket.tokenHash })).toBeNull();
          expect(await store.findOrderedTicket({ issuedAt: at(5), tokenHash: newHash() })).toBeNull();
          expect(await store.findToken(ticket.tokenHash)).toBeNull();
          // No grant, the application disabled, the user disabled: not stored.
          expect(await store.insertOrderedTicket(token(alice, 7))).toBe(false);
          expect(await store.insertOrderedTicket(token(alice, 8))).toBe(false);
          expect(await store.insertOrderedTicket(token(bob, 2))).toBe(false);
          expect((await store.getUser(alice.userId))?.lastLoginAt).toBeNull();
          // Read with the user's state of the moment, as findToken reads a token's.
          await store.setUserEnabled(alice.userId, false, at(10));
          expect(await store.findOrderedTicket(key(ticket))).toMatchObject({ userEnabled: false, granted: true });
        });

        it('stores the tickets of one turn together, each under its own key, the same issue time or not', async () => {
          const alice = await addUser('alice');
          const tickets = Array.from({ length: 30 }, (_, i) => token(alice, 2, { issuedAt: at(i % 3), expiresAt: at(120_000) }));
          expect(await Promise.all(tickets.map((t) => store.insertOrderedTicket(t)))).toEqual(tickets.map(() => true));
          for (const t of tickets) expect((await store.findOrderedTicket(key(t)))?.tokenHash).toBe(t.tokenHash);
          // A hash stored twice under the same key is refused: the second insert fails alone.
          const results = await Promise.allSettled([store.insertOrderedTicket(tickets[0] as NewToken), store.insertOrderedTicket(token(alice, 2, { issuedAt: at(1) }))]);
          expect(results[0]?.status === 'rejected' || (results[0]?.status === 'fulfilled' && results[0].value === false)).toBe(true);
          expect(results[1]).toEqual({ status: 'fulfilled', value: true });
        });

        it('consumes one exactly once, even when asked concurrently; not when expired, revoked or under another key', async () => {
          const alice = await addUser('alice');
          const ticket = token(alice, 2, { expiresAt: at(120_000) });
          expect(await store.insertOrderedTicket(ticket)).toBe(true);
          expect(await store.consumeOrderedTicket({ issuedAt: at(1), tokenHash: ticket.tokenHash }, at(1000))).toBe(false);
          expect(await store.consumeTicket(ticket.tokenHash, at(1000))).toBe(false);
          const results = await Promise.all(Array.from({ length: 10 }, () => store.consumeOrderedTicket(key(ticket), at(1000))));
          expect(results.filter(Boolean)).toHaveLength(1);
          expect((await store.findOrderedTicket(key(ticket)))?.usedAt).toEqual(at(1000));
          expect(await store.consumeOrderedTicket(key(ticket), at(2000))).toBe(false);

          const expired = token(alice, 2, { expiresAt: at(120_000) });
          const revoked = token(alice, 2, { issuedAt: at(1), expiresAt: at(120_000) });
          await store.insertOrderedTicket(expired);
          await store.insertOrderedTicket(revoked);
          expect(await store.consumeOrderedTicket(key(expired), at(120_000))).toBe(false);
          expect(await store.revokeTokens({ tokenHash: revoked.tokenHash }, at(2))).toBe(1);
          expect(await store.consumeOrderedTicket(key(revoked), at(3))).toBe(false);
          expect((await store.findOrderedTicket(key(revoked)))?.revokedAt).toEqual(at(2));
        });

        it('are revoked, found by fingerprint, listed for export, purged and deleted with the tokens', async () => {
          const alice = await addUser('alice');
          const bob = await addUser('bob');
          const session = await addSession(alice);
          const mine = token(alice, 2, { issuedAt: at(1), expiresAt: at(HOUR) });
          const bobs = token(bob, 2, { issuedAt: at(2), expiresAt: at(HOUR) });
          const used = token(alice, 2, { issuedAt: at(3), expiresAt: at(HOUR) });
          for (const t of [mine, bobs, used]) expect(await store.insertOrderedTicket(t)).toBe(true);
          expect(await store.consumeOrderedTicket(key(used), at(4))).toBe(true);

          const found = await store.findTokensByFingerprint(mine.tokenHash.slice(0, 12), 5);
          expect(found).toEqual([{ ...(await store.findOrderedTicket(key(mine))), origin: 'ours' }]);
          const live = await store.listLiveTokens({ liveAt: at(10), afterHash: null, limit: 10 });
          expect(live.map((t) => t.tokenHash)).toEqual([session, mine.tokenHash, bobs.tokenHash].sort());
          const page1 = await store.listLiveTokens({ liveAt: at(10), afterHash: null, limit: 1 });
          const rest = await store.listLiveTokens({ liveAt: at(10), afterHash: page1[0]?.tokenHash ?? null, limit: 10 });
          expect([...page1, ...rest]).toEqual(live);

          // By user: the session and the live ticket (the used one is over); then everybody: bob's.
          expect(await store.revokeTokens({ userId: alice.userId }, at(20))).toBe(2);
          expect((await store.findOrderedTicket(key(mine)))?.revokedAt).toEqual(at(20));
          expect((await store.findOrderedTicket(key(bobs)))?.revokedAt).toBeNull();
          expect(await store.revokeTokens({ all: true }, at(30))).toBe(1);
          expect((await store.findOrderedTicket(key(bobs)))?.revokedAt).toEqual(at(30));

        });

        it('are revoked with their user\'s and application\'s tokens, and stay revoked when what ended them is undone', async () => {
          await store.insertApplication(app(7));
          const alice = await addUser('alice', [2, 7]);
          const bob = await addUser('bob', [2, 7]);
          const live = (): Promise<boolean[]> => Promise.all(tickets.map(async (t) => (await store.findOrderedTicket(key(t)))?.revokedAt === null));
          const tickets = [token(alice, 2), token(alice, 7), token(bob, 2), token(bob, 7)].map((t, i) => ({ ...t, issuedAt: at(i) }));
          for (const t of tickets) expect(await store.insertOrderedTicket(t)).toBe(true);

          await store.setPasswordHash(alice.userId, 'new-hash', at(10));
          expect(await live()).toEqual([false, false, true, true]);
          expect(await store.revokeApplication(bob.userId, 7, at(20))).toBe(true);
          expect(await store.grantApplication(bob.userId, 7, at(21))).toBe(true);
          expect(await live()).toEqual([false, false, true, false]);
          await store.updateApplication(2, { enabled: false }, at(30));
          await store.updateApplication(2, { enabled: true }, at(31));
          expect(await live()).toEqual([false, false, false, false]);

          const more = token(bob, 7, { issuedAt: at(40) });
          expect(await store.insertOrderedTicket(more)).toBe(true);
          await store.setUserEnabled(bob.userId, false, at(50));
          await store.setUserEnabled(bob.userId, true, at(51));
          expect((await store.findOrderedTicket(key(more)))?.revokedAt).toEqual(at(50));
          expect(await store.consumeOrderedTicket(key(more), at(52))).toBe(false);
        });

        it('are purged with the tokens once expired, used or not, the limit counting both tables, live ones kept', async () => {
          const alice = await addUser('alice');
          const expired = Array.from({ length: 3 }, (_, i) => token(alice, 2, { issuedAt: at(i), expiresAt: at(1000 + i) }));
          for (const t of expired) expect(await store.insertOrderedTicket(t)).toBe(true);
          expect(await store.consumeOrderedTicket(key(expired[0] as NewToken), at(10))).toBe(true);
          const expiredSessions = [await addSession(alice, 2, { expiresAt: at(2000) }), await addSession(alice, 2, { expiresAt: at(2001) })];
          const live = token(alice, 2, { issuedAt: at(50), expiresAt: at(3 * HOUR) });
          expect(await store.insertOrderedTicket(live)).toBe(true);
          const liveSession = await addSession(alice, 2, { expiresAt: at(3 * HOUR) });

          expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(2);
          expect(await store.findOrderedTicket(key(expired[0] as NewToken))).toBeNull();
          expect(await store.findOrderedTicket(key(expired[1] as NewToken))).toBeNull();
          expect(await store.findOrderedTicket(key(expired[2] as NewToken))).not.toBeNull();
          expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(2); // the last ticket and a session
          expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(1);
          expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(0);
          for (const hash of expiredSessions) expect(await store.findToken(hash)).toBeNull();
          expect(await store.findOrderedTicket(key(live))).not.toBeNull();
          expect(await store.findToken(liveSession)).not.toBeNull();

          // deleteExpiredTokens: both tables at once.
          const more = token(alice, 2, { issuedAt: at(60), expiresAt: at(HOUR) });
          expect(await store.insertOrderedTicket(more)).toBe(true);
          await addSession(alice, 2, { expiresAt: at(HOUR) });
          expect(await store.deleteExpiredTokens(at(2 * HOUR))).toBe(2);
          expect(await store.findOrderedTicket(key(more))).toBeNull();
          expect(await store.findOrderedTicket(key(live))).not.toBeNull();
        });
      });

      it('revokes the live tokens of one user, or of everybody, and counts them', async () => {
        const alice = await addUser('alice');
        const bob = await addUser('bob');
        const a1 = await addSession(alice);
        await addSession(alice);
        await addSession(alice, 2, { expiresAt: at(1000) }); // already expired at revocation time: not counted
        const b1 = await addSession(bob);
        expect(await store.revokeTokens({ userId: alice.userId }, at(HOUR))).toBe(2);
        expect((await store.findToken(a1))?.revokedAt).toEqual(at(HOUR));
        expect((await store.findToken(b1))?.revokedAt).toBeNull();
        expect(await store.revokeTokens({ userId: alice.userId }, at(HOUR))).toBe(0);
        expect(await store.revokeTokens({ all: true }, at(2 * HOUR))).toBe(1);
        expect((await store.findToken(b1))?.revokedAt).toEqual(at(2 * HOUR));
      });

      it('lists one user\'s live sessions newest first, finds tokens by fingerprint, and revokes one token by hash', async () => {
        const alice = await addUser('alice');
        const bob = await addUser('bob');
        const old = await addSession(alice, 2, { issuedAt: at(1) });
        const recent = await addSession(alice, 2, { issuedAt: at(2) });
        await addSession(alice, 2, { issuedAt: at(3), expiresAt: at(1000) }); // past its absolute expiry at HOUR
        const ticket = token(alice, 2, { issuedAt: at(4) });
        expect(await store.insertTicket(ticket)).toBe(true);
        await addSession(bob);
        expect((await store.listUserSessions(alice.userId, at(HOUR), 10)).map((t) => t.tokenHash)).toEqual([recent, old]);
        expect((await store.listUserSessions(alice.userId, at(HOUR), 1)).map((t) => t.tokenHash)).toEqual([recent]);
        const found = await store.findTokensByFingerprint(recent.slice(0, 12), 5);
        expect(found.map((t) => t.tokenHash)).toEqual([recent]);
        expect(found[0]?.userId).toBe(alice.userId);
        expect(await store.findTokensByFingerprint('fffffffffff0', 5)).toEqual([]);
        expect(await store.revokeTokens({ tokenHash: recent }, at(HOUR))).toBe(1);
        expect(await store.revokeTokens({ tokenHash: recent }, at(HOUR))).toBe(0);
        expect((await store.findToken(old))?.revokedAt).toBeNull();
        expect((await store.listUserSessions(alice.userId, at(HOUR), 10)).map((t) => t.tokenHash)).toEqual([old]);
      });

      it('keeps where a token was issued: ours by default, legacy as imported, in every listing and not in the hot lookup', async () => {
        const alice = await addUser('alice');
        const ours = await addSession(alice, 2, { issuedAt: at(1) });
        const legacy = { ...token(alice, 2, { issuedAt: at(2) }), kind: 'session' as const, lastUsedAt: at(2), usedAt: null, revokedAt: null, origin: 'legacy' as const };
        expect(await store.importToken(legacy)).toBe(true);
        const imported = { ...token(alice, 2, { issuedAt: at(3) }), kind: 'session' as const, lastUsedAt: at(3), usedAt: null, revokedAt: null, origin: 'ours' as const };
        expect(await store.importToken(imported)).toBe(true);
        const origins = (rows: readonly { readonly tokenHash: string; readonly origin: string }[]): Record<string, string> =>
          Object.fromEntries(rows.map((t) => [t.tokenHash, t.origin]));
        const expected = { [ours]: 'ours', [legacy.tokenHash]: 'legacy', [imported.tokenHash]: 'ours' };
        expect(origins(await store.listUserSessions(alice.userId, at(HOUR), 10))).toEqual(expected);
        expect(origins(await store.listLiveTokens({ liveAt: at(HOUR), afterHash: null, limit: 10 }))).toEqual(expected);
        expect((await store.findTokensByFingerprint(legacy.tokenHash.slice(0, 12), 5))[0]?.origin).toBe('legacy');
        expect(await store.findToken(legacy.tokenHash)).not.toHaveProperty('origin');
        await expect(store.importToken({ ...legacy, tokenHash: newHash(), origin: 'theirs' as 'legacy' })).rejects.toThrow();
      });

      it('moves the access revision on every write that can end a session, to a value never seen before, and not on issuing or using tokens', async () => {
        const access = async (): Promise<number> => (await store.revisions()).access;
        const seen = [await access()];
        expect(Number.isSafeInteger(seen[0])).toBe(true);
        // At least the clock in microseconds: a restored or re-created database cannot repeat an old value.
        expect(seen[0]).toBeGreaterThanOrEqual((Date.now() - 60_000) * 1000);
        const moved = async (what: string): Promise<void> => {
          const revision = await access();
          expect(seen, what).not.toContain(revision);
          seen.push(revision);
        };
        const still = async (what: string): Promise<void> => {
          expect(await access(), what).toBe(seen.at(-1));
        };
        // Issuing, using and bookkeeping keep what is in memory current.
        await store.insertApplication(app(9));
        await still('insertApplication');
        const alice = await addUser('alice', [2, 9]);
        const bob = await addUser('bob');
        await still('insertUser');
        const a = await addSession(alice);
        await still('insertSession (and the last login)');
        await store.touchToken(a, at(1000));
        await still('touchToken');
        const ticket = token(alice, 2, { expiresAt: at(120_000) });
        expect(await store.insertTicket(ticket)).toBe(true);
        expect(await store.consumeTicket(ticket.tokenHash, at(1))).toBe(true);
        await still('insertTicket, consumeTicket');
        const ordered = token(alice, 2, { issuedAt: at(2), expiresAt: at(120_000) });
        expect(await store.insertOrderedTicket(ordered)).toBe(true);
        expect(await store.consumeOrderedTicket({ issuedAt: ordered.issuedAt, tokenHash: ordered.tokenHash }, at(3))).toBe(true);
        await still('insertOrderedTicket, consumeOrderedTicket');
        expect(await store.upgradePasswordHash(alice.userId, 'hash-of-alice', 'upgraded')).toBe(true);
        await still('upgradePasswordHash');
        expect(await store.grantApplication(bob.userId, 9, T0)).toBe(true);
        await still('grantApplication');
        expect(await store.importToken({ ...token(bob, 2), kind: 'session', lastUsedAt: T0, usedAt: null, revokedAt: null, origin: 'legacy' })).toBe(true);
        await still('importToken');
        await store.insertNews({ appId: 2, language: 'en', title: 't', body: 'b', url: null, publishedAt: T0, expiresAt: null, minVersion: null, maxVersion: null, membersOnly: false, createdAt: T0 });
        await still('insertNews');
        // Every way a working session can stop working, or be judged differently.
        expect(await store.revokeTokens({ userId: alice.userId }, at(HOUR))).toBe(1);
        await moved('revokeTokens');
        await store.setUserEnabled(bob.userId, false, at(HOUR));
        await moved('setUserEnabled');
        await store.setPasswordHash(alice.userId, 'new-hash', at(HOUR));
        await moved('setPasswordHash');
        expect(await store.revokeApplication(bob.userId, 9, at(HOUR))).toBe(true);
        await moved('revokeApplication');
        await store.updateApplication(9, { idleTimeoutSeconds: 60 }, at(HOUR));
        await moved('updateApplication');
        await addSession(alice, 2, { expiresAt: at(HOUR) });
        await still('insertSession');
        // Housekeeping deletes rows that expired long ago (T0 is in the past): no answer kept in
        // memory can change (migration 13), so the memory of live tokens stays.
        expect(await store.purgeExpiredTokens(at(2 * HOUR), 10)).toBeGreaterThan(0);
        await still('purgeExpiredTokens of rows expired over an hour ago');
        // Deleting a token that still works, or expired less than an hour ago by the database's
        // clock, moves it as before.
        const wall = Date.now();
        const working = await addSession(alice, 2, { issuedAt: new Date(wall - HOUR), expiresAt: new Date(wall + HOUR) });
        expect(await store.deleteExpiredTokens(new Date(wall + 2 * HOUR))).toBeGreaterThan(0);
        expect(await store.findToken(working)).toBeNull();
        await moved('deleting a live token');
        await addSession(alice, 2, { issuedAt: new Date(wall - HOUR), expiresAt: new Date(wall - 60_000) });
        expect(await store.purgeExpiredTokens(new Date(wall), 10)).toBe(1);
        await moved('purgeExpiredTokens of a row expired a minute ago');
        expect(await store.revisions()).toEqual(await store.revisions()); // reading moves nothing
      });

      it('answers many lookups asked at once, each with its own row (PostgreSQL sends a turn\'s lookups as one statement)', async () => {
        const alice = await addUser('alice');
        const bob = await addUser('bob');
        const known: string[] = [];
        for (let i = 0; i < 300; i++) known.push(await addSession(i % 2 === 0 ? alice : bob, 2, { expiresAt: at(HOUR + i) }));
        const unknown = Array.from({ length: 40 }, () => newHash());
        const asked = [...known, ...unknown, ...known.slice(0, 20)]; // more than one batch, repeats, misses
        const answers = await Promise.all(asked.map((hash) => store.findToken(hash)));
        asked.forEach((hash, i) => {
          const answer = answers[i];
          if (unknown.includes(hash)) expect(answer).toBeNull();
          else expect(answer).toMatchObject({ tokenHash: hash, expiresAt: at(HOUR + known.indexOf(hash)), userId: known.indexOf(hash) % 2 === 0 ? alice.userId : bob.userId });
        });
        expect(answers[0]).toEqual(await store.findToken(known[0] ?? ''));
      });

      it('reads the revisions and tokens together: findToken\'s rows, no row for an unknown hash, revisions() as of the same read', async () => {
        const alice = await addUser('alice');
        const known: string[] = [];
        for (let i = 0; i < 300; i++) known.push(await addSession(alice, 2, { expiresAt: at(HOUR + i) }));
        const unknown = Array.from({ length: 40 }, () => newHash());
        const read = await store.revisionsWithTokens([...known, ...unknown]);
        expect(read.revisions).toEqual(await store.revisions());
        expect([...read.tokens.keys()].sort()).toEqual([...known].sort());
        for (const hash of known.slice(0, 30)) expect(read.tokens.get(hash)).toEqual(await store.findToken(hash));
        expect(await store.revisionsWithTokens([])).toEqual({ revisions: await store.revisions(), tokens: new Map() });
        // A write that moves the access revision is seen by the next read, with the row it changed.
        expect(await store.revokeTokens({ tokenHash: known[0] ?? '' }, at(1000))).toBe(1);
        const after = await store.revisionsWithTokens([known[0] ?? '']);
        expect(after.revisions.access).not.toBe(read.revisions.access);
        expect(after.tokens.get(known[0] ?? '')?.revokedAt).toEqual(at(1000));
      });

      it('deletes tokens that expired before a given time', async () => {
        const alice = await addUser('alice');
        const old = await addSession(alice, 2, { expiresAt: at(HOUR) });
        const live = await addSession(alice, 2, { expiresAt: at(3 * HOUR) });
        expect(await store.deleteExpiredTokens(at(2 * HOUR))).toBe(1);
        expect(await store.findToken(old)).toBeNull();
        expect(await store.findToken(live)).not.toBeNull();
      });
    });

    describe('admin console accounts and sessions', () => {
      const account = (name: string, role: 'editor' | 'admin' = 'admin') => ({
        name, role, passwordHash: `hash-of-${name}`, createdAt: T0, passwordChangedAt: T0, lastLoginAt: null,
      });
      const session = (name: string, overrides: Record<string, unknown> = {}) => ({
        sessionHash: newHash(), name, csrfToken: `csrf-${Math.random()}`, sourceIp: '127.0.0.1', createdAt: at(1), expiresAt: at(12 * HOUR), ...overrides,
      });

      it('stores accounts once by name, lists them without hashes, and removes them with their sessions', async () => {
        expect(await store.insertAdminAccount(account('zoe', 'editor'))).toBe(true);
        expect(await store.insertAdminAccount(account('ann'))).toBe(true);
        expect(await store.insertAdminAccount({ ...account('ann'), passwordHash: 'other' })).toBe(false);
        expect(await store.getAdminAccount('ann')).toEqual(account('ann'));
        expect(await store.getAdminAccount('nobody')).toBeNull();
        const listed = await store.listAdminAccounts();
        expect(listed.map((a) => [a.name, a.role])).toEqual([['ann', 'admin'], ['zoe', 'editor']]);
        expect(JSON.stringify(listed)).not.toContain('hash-of');
        const s = session('ann');
        expect(await store.insertAdminSession(s, 'hash-of-ann')).toBe(true);
        expect(await store.removeAdminAccount('ann')).toBe(true);
        expect(await store.removeAdminAccount('ann')).toBe(false);
        expect(await store.findAdminSession(s.sessionHash)).toBeNull();
      });

      it('stores a session only while the account has the checked hash, records the login, and finds it with the role', async () => {
        await store.insertAdminAccount(account('ed', 'editor'));
        const s = session('ed');
        expect(await store.insertAdminSession(session('ed'), 'stale-hash')).toBe(false);
        expect(await store.insertAdminSession(session('ghost'), 'hash-of-ghost')).toBe(false);
        expect(await store.insertAdminSession(s, 'hash-of-ed')).toBe(true);
        expect(await store.findAdminSession(s.sessionHash)).toEqual({ ...s, role: 'editor', lastUsedAt: s.createdAt });
        expect((await store.getAdminAccount('ed'))?.lastLoginAt).toEqual(s.createdAt);
        await store.touchAdminSession(s.sessionHash, at(HOUR));
        await store.touchAdminSession(s.sessionHash, at(10)); // never backwards
        expect((await store.findAdminSession(s.sessionHash))?.lastUsedAt).toEqual(at(HOUR));
        expect(await store.deleteAdminSession(s.sessionHash)).toBe(true);
        expect(await store.deleteAdminSession(s.sessionHash)).toBe(false);
        expect(await store.findAdminSession(s.sessionHash)).toBeNull();
      });

      it('a password change replaces the hash and ends every session of the account only', async () => {
        await store.insertAdminAccount(account('ann'));
        await store.insertAdminAccount(account('bob'));
        const a = session('ann');
        const b = session('bob');
        await store.insertAdminSession(a, 'hash-of-ann');
        await store.insertAdminSession(b, 'hash-of-bob');
        expect(await store.setAdminPassword('ann', 'new-hash', at(HOUR))).toBe(true);
        expect(await store.setAdminPassword('nobody', 'new-hash', at(HOUR))).toBe(false);
        expect(await store.getAdminAccount('ann')).toMatchObject({ passwordHash: 'new-hash', passwordChangedAt: at(HOUR) });
        expect(await store.findAdminSession(a.sessionHash)).toBeNull();
        expect(await store.findAdminSession(b.sessionHash)).not.toBeNull();
      });

      it('purges sessions past their absolute expiry or idle too long, and keeps the others', async () => {
        await store.insertAdminAccount(account('ann'));
        const expired = session('ann', { expiresAt: at(HOUR) });
        const idle = session('ann');
        const live = session('ann');
        for (const s of [expired, idle, live]) await store.insertAdminSession(s, 'hash-of-ann');
        await store.touchAdminSession(live.sessionHash, at(2 * HOUR));
        expect(await store.purgeAdminSessions(at(2 * HOUR), at(HOUR))).toBe(2);
        expect(await store.findAdminSession(live.sessionHash)).not.toBeNull();
        expect(await store.findAdminSession(idle.sessionHash)).toBeNull();
      });
    });

    describe('news', () => {
      const base = {
        appId: 2, language: 'en', title: 'Title', body: 'Body', url: null, publishedAt: T0, expiresAt: null,
        minVersion: null, maxVersion: null, membersOnly: false, createdAt: T0,
      };

      it('stores every field and assigns increasing ids', async () => {
        const first = await store.insertNews({ ...base, url: 'https://news.example/1', expiresAt: at(HOUR), minVersion: '1.2', maxVersion: '2', membersOnly: true, language: 'pt-BR' });
        const second = await store.insertNews(base);
        expect(first).toEqual({ ...base, newsId: first.newsId, url: 'https://news.example/1', expiresAt: at(HOUR), minVersion: '1.2', maxVersion: '2', membersOnly: true, language: 'pt-BR', attributes: {} });
        expect(second.newsId).toBeGreaterThan(first.newsId);
        expect(await store.getNews(first.newsId)).toEqual(first);
        expect(await store.getNews(999_999)).toBeNull();
      });

      it('updates every changeable field of a row, and answers null for a missing one', async () => {
        const row = await store.insertNews(base);
        const update = {
          language: 'de', title: 'Neu', body: 'Text', url: 'https://news.example/2', publishedAt: at(HOUR), expiresAt: at(2 * HOUR),
          minVersion: '1.0', maxVersion: '3', membersOnly: true, attributes: { b: 'zwei', a: 'eins' },
        };
        const updated = await store.updateNews(row.newsId, update);
        expect(updated).toEqual({ ...row, ...update });
        expect(await store.getNews(row.newsId)).toEqual(updated);
        expect(await store.updateNews(999_999, update)).toBeNull();
      });

      it('lists news newest first, optionally of one application', async () => {
        await store.insertApplication(app(7));
        const a = await store.insertNews({ ...base, publishedAt: at(1) });
        const b = await store.insertNews({ ...base, publishedAt: at(3) });
        const c = await store.insertNews({ ...base, appId: 7, publishedAt: at(2) });
        expect((await store.listNews()).map((n) => n.newsId)).toEqual([b.newsId, c.newsId, a.newsId]);
        expect((await store.listNews({ appId: 7 })).map((n) => n.newsId)).toEqual([c.newsId]);
      });

      it('finds the published, unexpired rows of an application in the given languages, newest first', async () => {
        await store.insertApplication(app(7));
        const now = at(10 * HOUR);
        const older = await store.insertNews({ ...base, publishedAt: at(1 * HOUR) });
        const newer = await store.insertNews({ ...base, publishedAt: at(2 * HOUR) });
        const sameTime = await store.insertNews({ ...base, publishedAt: at(2 * HOUR), language: 'pt' });
        await store.insertNews({ ...base, publishedAt: at(11 * HOUR) }); // scheduled
        await store.insertNews({ ...base, expiresAt: now }); // expired at now
        await store.insertNews({ ...base, language: 'de' }); // other language
        await store.insertNews({ ...base, appId: 7 }); // other application
        const stillLive = await store.insertNews({ ...base, expiresAt: at(10 * HOUR + 1) });
        const members = await store.insertNews({ ...base, membersOnly: true });

        const publicRows = await store.findPublishedNews({ appId: 2, languages: ['en', 'pt'], now, includeMembersOnly: false });
        expect(publicRows.map((n) => n.newsId)).toEqual([sameTime.newsId, newer.newsId, older.newsId, stillLive.newsId]);
        const memberRows = await store.findPublishedNews({ appId: 2, languages: ['en'], now, includeMembersOnly: true });
        // Same publication time: the later row (higher id) first.
        expect(memberRows.map((n) => n.newsId)).toEqual([newer.newsId, older.newsId, members.newsId, stillLive.newsId]);
        expect(await store.findPublishedNews({ appId: 2, languages: [], now, includeMembersOnly: true })).toEqual([]);
      });

      it('stores attributes as text by name, keys in order, and gives them back from every read', async () => {
        await store.insertApplication(app(7));
        const attributes = { Destaque: 'true', Categoria: 'Promoção <&> "x"', 'a.b_c-1': '', Zeta: '1,5' };
        const n = await store.insertNews({ ...base, appId: 7, attributes });
        const expected = { Categoria: 'Promoção <&> "x"', Destaque: 'true', Zeta: '1,5', 'a.b_c-1': '' };
        expect(n.attributes).toEqual(expected);
        expect(Object.keys(n.attributes)).toEqual(Object.keys(expected).sort());
        expect((await store.getNews(n.newsId))?.attributes).toEqual(expected);
        expect((await store.listNews({ appId: 7 }))[0]?.attributes).toEqual(expected);
        expect((await store.findPublishedNews({ appId: 7, languages: ['en'], now: at(HOUR), includeMembersOnly: false }))[0]?.attributes).toEqual(expected);
        expect((await store.insertNews(base)).attributes).toEqual({});
      });

      it('inserts a row under a given id once, and later ids continue above it', async () => {
        const before = await store.insertNews(base);
        const kept = await store.insertNewsWithId(before.newsId + 1000, { ...base, title: 'legacy 1000', attributes: { Destaque: 'false' } });
        expect(kept).toEqual({ ...base, newsId: before.newsId + 1000, title: 'legacy 1000', attributes: { Destaque: 'false' } });
        expect(await store.insertNewsWithId(before.newsId + 1000, { ...base, title: 'again' })).toBeNull();
        expect((await store.getNews(before.newsId + 1000))?.title).toBe('legacy 1000');
        // Below the highest id, in a gap: allowed, and it does not pull later ids back.
        expect((await store.insertNewsWithId(before.newsId + 500, base))?.newsId).toBe(before.newsId + 500);
        expect((await store.insertNews(base)).newsId).toBeGreaterThan(before.newsId + 1000);
        expect(await store.insertNewsWithId(before.newsId, base)).toBeNull();
      });

      it('deletes a row, reporting whether it existed', async () => {
        const n = await store.insertNews(base);
        expect(await store.deleteNews(n.newsId)).toBe(true);
        expect(await store.deleteNews(n.newsId)).toBe(false);
        expect(await store.getNews(n.newsId)).toBeNull();
      });

      it('moves the news revision on every news write, to a value never seen before, and not on other writes', async () => {
        const seen = [(await store.revisions()).news];
        expect(Number.isSafeInteger(seen[0])).toBe(true);
        // At least the clock in microseconds: a restored or re-created database cannot repeat an old value.
        expect(seen[0]).toBeGreaterThanOrEqual((Date.now() - 60_000) * 1000);
        const moved = async (what: string): Promise<void> => {
          const revision = (await store.revisions()).news;
          expect(seen, what).not.toContain(revision);
          seen.push(revision);
        };
        const a = await store.insertNews(base);
        await moved('insertNews');
        await store.insertNews({ ...base, membersOnly: true, language: 'pt' });
        await moved('second insertNews');
        await store.insertNewsWithId(a.newsId + 100, base);
        await moved('insertNewsWithId');
        expect(await store.insertNewsWithId(a.newsId + 100, base)).toBeNull();
        expect(await store.deleteNews(a.newsId)).toBe(true);
        await moved('deleteNews');
        const unchanged = (await store.revisions()).news;
        await addUser('alice');
        await store.updateApplication(2, { name: 'GPS 2', defaultLanguage: 'pt' }, T0);
        await store.insertApplication(app(7));
        expect((await store.revisions()).news).toBe(unchanged);
        expect((await store.revisions()).news).toBe(unchanged); // reading does not move it
      });

      it('gives a snapshot: the published rows, the revision they were read at, and when they next change', async () => {
        await store.insertApplication(app(7));
        const now = at(10 * HOUR);
        await store.insertNews({ ...base, publishedAt: at(1 * HOUR) });
        await store.insertNews({ ...base, publishedAt: at(2 * HOUR), expiresAt: at(30 * HOUR) });
        await store.insertNews({ ...base, publishedAt: at(2 * HOUR), language: 'pt' });
        await store.insertNews({ ...base, publishedAt: at(12 * HOUR) }); // scheduled
        await store.insertNews({ ...base, expiresAt: now }); // expired at now: never again
        await store.insertNews({ ...base, publishedAt: at(11 * HOUR), language: 'de' }); // other language
        await store.insertNews({ ...base, publishedAt: at(11 * HOUR), appId: 7 }); // other application
        await store.insertNews({ ...base, publishedAt: at(11 * HOUR), membersOnly: true }); // only for members
        await store.insertNews({ ...base, expiresAt: at(20 * HOUR), membersOnly: true });
        await store.insertNews({ ...base, expiresAt: at(10 * HOUR + 1), language: 'pt' });

        const query = { appId: 2, languages: ['en', 'pt'], now, includeMembersOnly: false };
        const revision = (await store.revisions()).news;
        const snapshot = await store.publishedNewsSnapshot(query);
        expect(snapshot.rows).toEqual(await store.findPublishedNews(query));
        expect(snapshot.rows).toHaveLength(4);
        expect(snapshot.revision).toBe(revision);
        expect(snapshot.changesAt).toEqual(at(10 * HOUR + 1)); // the pt row expiring first
        expect((await store.publishedNewsSnapshot({ ...query, languages: ['en'] })).changesAt).toEqual(at(12 * HOUR)); // the scheduled en row
        const members = await store.publishedNewsSnapshot({ ...query, languages: ['en'], includeMembersOnly: true });
        expect(members.rows).toEqual(await store.findPublishedNews({ ...query, languages: ['en'], includeMembersOnly: true }));
        expect(members.changesAt).toEqual(at(11 * HOUR)); // the scheduled members-only row
        // Just before and at the boundary: the same rows until then, other rows from then.
        const before = await store.publishedNewsSnapshot({ ...query, languages: ['en'], now: at(12 * HOUR - 1) });
        const after = await store.publishedNewsSnapshot({ ...query, languages: ['en'], now: at(12 * HOUR) });
        expect(before.rows.map((n) => n.newsId)).toEqual(snapshot.rows.filter((n) => n.language === 'en').map((n) => n.newsId));
        expect(after.rows).toHaveLength(before.rows.length + 1);
        expect(after.changesAt).toEqual(at(30 * HOUR));
        expect((await store.publishedNewsSnapshot({ ...query, languages: ['en'], now: at(30 * HOUR) })).changesAt).toBeNull();
        expect(await store.publishedNewsSnapshot({ ...query, languages: [] })).toEqual({ rows: [], revision, changesAt: null });
      });
    });

    describe('export / import', () => {
      it('keeps the times of an imported user', async () => {
        const result = await store.insertUser({
          login: 'Imported', loginKey: 'imported', passwordHash: 'h', enabled: false, appIds: [2], createdAt: T0,
          passwordChangedAt: at(HOUR), lastLoginAt: at(2 * HOUR),
        });
        expect(result.ok && result.user).toMatchObject({ enabled: false, createdAt: T0, passwordChangedAt: at(HOUR), lastLoginAt: at(2 * HOUR) });
      });

      it('lists live tokens and tickets in hash order, page by page', async () => {
        const alice = await addUser('alice');
        const live = [await addSession(alice), await addSession(alice), await addSession(alice)];
        await addSession(alice, 2, { expiresAt: at(1000) }); // expired at liveAt
        const ticket = token(alice, 2, { expiresAt: at(HOUR) });
        await store.insertTicket(ticket);
        const used = token(alice, 2, { expiresAt: at(HOUR) });
        await store.insertTicket(used);
        await store.consumeTicket(used.tokenHash, at(1));
        const bob = await addUser('bob');
        await addSession(bob);
        await store.revokeTokens({ userId: bob.userId }, at(1));

        const expected = [...live, ticket.tokenHash].sort();
        const page1 = await store.listLiveTokens({ liveAt: at(2000), afterHash: null, limit: 3 });
        const page2 = await store.listLiveTokens({ liveAt: at(2000), afterHash: page1.at(-1)?.tokenHash ?? null, limit: 3 });
        expect([...page1, ...page2].map((t) => t.tokenHash)).toEqual(expected);
        expect(page1[0]).toEqual({ ...(await store.findToken(expected[0] ?? '')), origin: 'ours' });
      });

      it('imports a token row as it was, once', async () => {
        const alice = await addUser('alice');
        const row = {
          tokenHash: newHash(), kind: 'session' as const, userId: alice.userId, appId: 2, clientIp: null, sourceIp: '192.0.2.9',
          issuedAt: T0, expiresAt: at(24 * HOUR), lastUsedAt: at(HOUR), usedAt: null, revokedAt: null, origin: 'ours' as const,
        };
        expect(await store.importToken(row)).toBe(true);
        expect(await store.importToken({ ...row, lastUsedAt: at(2 * HOUR) })).toBe(false);
        const { origin, ...judged } = row;
        expect(await store.findToken(row.tokenHash)).toEqual({ ...judged, userEnabled: true, appEnabled: true, granted: true, idleTimeoutSeconds: null, login: 'alice' });
        expect((await store.listLiveTokens({ liveAt: T0, afterHash: null, limit: 10 }))[0]?.origin).toBe(origin);
        const usedTicket = { ...row, tokenHash: newHash(), kind: 'ticket' as const, usedAt: at(5) };
        expect(await store.importToken(usedTicket)).toBe(true);
        expect((await store.findToken(usedTicket.tokenHash))?.usedAt).toEqual(at(5));
        await expect(store.importToken({ ...row, tokenHash: newHash(), appId: 404 })).rejects.toThrow();
      });
    });

    describe('housekeeping and metrics', () => {
      it('purges expired tokens and tickets (used or not) in batches, oldest first, keeping live ones', async () => {
        const alice = await addUser('alice');
        const expired = [];
        for (let i = 1; i <= 5; i++) expired.push(await addSession(alice, 2, { expiresAt: at(i * 1000) }));
        const usedTicket = token(alice, 2, { expiresAt: at(6000) });
        expect(await store.insertTicket(usedTicket)).toBe(true);
        expect(await store.consumeTicket(usedTicket.tokenHash, at(1))).toBe(true);
        const live = await addSession(alice, 2, { expiresAt: at(3 * HOUR) });
        const liveTicket = token(alice, 2, { expiresAt: at(3 * HOUR) });
        await store.insertTicket(liveTicket);

        expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(2);
        // Oldest first: the two earliest expiries went.
        expect(await store.findToken(expired[0] ?? '')).toBeNull();
        expect(await store.findToken(expired[1] ?? '')).toBeNull();
        expect(await store.findToken(expired[2] ?? '')).not.toBeNull();
        expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(2);
        expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(2);
        expect(await store.purgeExpiredTokens(at(HOUR), 2)).toBe(0);
        expect(await store.findToken(usedTicket.tokenHash)).toBeNull();
        expect(await store.findToken(live)).not.toBeNull();
        expect(await store.findToken(liveTicket.tokenHash)).not.toBeNull();
        expect(await store.purgeExpiredTokens(at(4 * HOUR), 0)).toBe(0);
      });

      it('purges in batches exactly the rows expired before the cut, whatever their number, and nothing else', async () => {
        const alice = await addUser('alice');
        const expired = new Set<string>();
        for (let i = 0; i < 23; i++) expired.add(await addSession(alice, 2, { expiresAt: at(1000 + (i % 7) * 1000) }));
        const kept = [await addSession(alice, 2, { expiresAt: at(HOUR) }), await addSession(alice, 2, { expiresAt: at(HOUR + 1) })];
        const batches: number[] = [];
        for (let n = -1; n !== 0;) {
          n = await store.purgeExpiredTokens(at(HOUR), 5);
          batches.push(n);
        }
        expect(batches).toEqual([5, 5, 5, 5, 3, 0]);
        for (const hash of expired) expect(await store.findToken(hash)).toBeNull();
        for (const hash of kept) expect(await store.findToken(hash)).not.toBeNull();
      });

      it('counts the session tokens that work now, as findToken + evaluateToken would judge them', async () => {
        expect(await store.countActiveTokens(T0)).toBe(0);
        await store.insertApplication(app(7, { idleTimeoutSeconds: 60 }));
        const alice = await addUser('alice', [2, 7]);
        const bob = await addUser('bob', [2]);
        await addSession(alice);
        await addSession(alice);
        await addSession(alice, 2, { expiresAt: at(1000) }); // expired at the count below
        await addSession(alice, 7); // idle after 60 s
        await addSession(bob);
        await store.insertTicket(token(alice, 2)); // tickets are not sessions
        expect(await store.countActiveTokens(at(10))).toBe(5);
        expect(await store.countActiveTokens(at(30_000))).toBe(4);
        expect(await store.countActiveTokens(at(61_000))).toBe(3);
        await store.setUserEnabled(bob.userId, false, at(61_000));
        expect(await store.countActiveTokens(at(61_000))).toBe(2);
        await store.setUserEnabled(bob.userId, true, at(61_000)); // revoked stays revoked
        expect(await store.countActiveTokens(at(61_000))).toBe(2);
        await store.updateApplication(2, { enabled: false }, at(62_000));
        expect(await store.countActiveTokens(at(62_000))).toBe(0);
      });

      it('counts users by password hash scheme', async () => {
        expect(await store.countPasswordHashSchemes()).toEqual([]);
        await addUser('a', [2], '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA');
        await addUser('b', [2], '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA');
        await addUser('c', [2], '$2b$10$abcdefghijklmnopqrstuv');
        await addUser('d', [2], 'AQAAAAEAACcQAAAAEJ3bWl0');
        await addUser('e', [2], '$weird');
        const counts = [...await store.countPasswordHashSchemes()].sort((x, y) => x.scheme.localeCompare(y.scheme));
        expect(counts).toEqual([{ scheme: '', count: 1 }, { scheme: '2b', count: 1 }, { scheme: 'argon2id', count: 2 }, { scheme: 'weird', count: 1 }]);
      });
    });

    describe('legacy migration', () => {
      it('a session upgrades the hash in the same transaction, keeping tokens and other fields', async () => {
        const alice = await addUser('alice', [2], 'legacy');
        const a = await addSession(alice);
        const before = await store.findUserByLoginKey('alice');
        expect(await store.insertSession(token(alice, 2), { passwordHash: 'legacy', newPasswordHash: 'argon' })).toBe(true);
        const after = await store.findUserByLoginKey('alice');
        expect(after).toMatchObject({ passwordHash: 'argon', enabled: true, appIds: [2], passwordChangedAt: before?.passwordChangedAt, createdAt: T0 });
        expect((await store.findToken(a))?.revokedAt).toBeNull();
        // The hash changed meanwhile: no token, no upgrade.
        const refused = token(alice, 2);
        expect(await store.insertSession(refused, { passwordHash: 'legacy', newPasswordHash: 'other' })).toBe(false);
        expect(await store.findToken(refused.tokenHash)).toBeNull();
        expect((await store.findUserByLoginKey('alice'))?.passwordHash).toBe('argon');
      });

      it('creates a user the legacy service vouched for, enabled and granted the application, once', async () => {
        const created = await store.migrateLegacyUser({ login: 'Bob', loginKey: 'bob', passwordHash: 'h1', appId: 2, expectedHash: null, now: at(HOUR) });
        expect(created).toMatchObject({ login: 'Bob', enabled: true, appIds: [2], passwordHash: 'h1', createdAt: at(HOUR), lastLoginAt: null });
        expect(await store.migrateLegacyUser({ login: 'BOB', loginKey: 'bob', passwordHash: 'h2', appId: 2, expectedHash: null, now: at(HOUR) })).toBeNull();
        expect((await store.findUserByLoginKey('bob'))?.passwordHash).toBe('h1');
        expect(await store.listPasswordHashes({ afterUserId: 0, limit: 10 })).toEqual([{ userId: created?.userId, passwordHash: 'h1', legacyMigratedAt: at(HOUR) }]);
      });

      it('replaces the hash of a user that still has the expected one, adds the grant, keeps tokens and other fields', async () => {
        await store.insertApplication(app(5));
        const carol = await addUser('carol', [2], '$needs-reset$aspnet-membership-encrypted');
        const t = await addSession(carol);
        expect(await store.migrateLegacyUser({ login: 'carol', loginKey: 'carol', passwordHash: 'new', appId: 5, expectedHash: 'other', now: at(HOUR) })).toBeNull();
        expect(await store.migrateLegacyUser({ login: 'nobody', loginKey: 'nobody', passwordHash: 'new', appId: 5, expectedHash: 'x', now: at(HOUR) })).toBeNull();
        const migrated = await store.migrateLegacyUser({ login: 'carol', loginKey: 'carol', passwordHash: 'new', appId: 5, expectedHash: '$needs-reset$aspnet-membership-encrypted', now: at(HOUR) });
        expect(migrated).toMatchObject({ userId: carol.userId, passwordHash: 'new', appIds: [2, 5], enabled: true, passwordChangedAt: T0, createdAt: T0 });
        expect((await store.findToken(t))?.revokedAt).toBeNull();
        expect(await store.listUsers()).toHaveLength(1);
      });

      it('lists password hashes page by page in user id order, with when the legacy service vouched', async () => {
        const users = [await addUser('u1', [2], 'h-1'), await addUser('u2', [2], 'h-2'), await addUser('u3', [2], 'h-3')];
        await store.migrateLegacyUser({ login: 'u2', loginKey: 'u2', passwordHash: 'm-2', appId: 2, expectedHash: 'h-2', now: at(HOUR) });
        const first = await store.listPasswordHashes({ afterUserId: 0, limit: 2 });
        expect(first.map((r) => [r.passwordHash, r.legacyMigratedAt])).toEqual([['h-1', null], ['m-2', at(HOUR)]]);
        const rest = await store.listPasswordHashes({ afterUserId: first[1]?.userId ?? 0, limit: 2 });
        expect(rest).toEqual([{ userId: users[2]?.userId, passwordHash: 'h-3', legacyMigratedAt: null }]);
      });
    });

    describe('audit trail', () => {
      const event = (overrides: Partial<NewAuditEvent> = {}): NewAuditEvent => ({
        at: T0, type: 'login.failure', reason: 'bad-password', requestId: 'req-1', appId: 2, login: 'alice',
        sourceIp: '192.0.2.1', claimedIp: '198.51.100.7', tokenFp: null, detail: null, ...overrides,
      });

      it('appends a batch and reads every field back, newest first', async () => {
        expect(await store.queryAudit({ limit: 10 })).toEqual([]);
        const first = event({ detail: { actor: 'cli:root', counts: { user: 3 }, all: true } });
        const second = event({ at: at(1), type: 'login.success', reason: 'success', tokenFp: 'a1b2c3d4e5f6', claimedIp: null, requestId: null });
        const third = event({ at: at(2), type: 'admin.app.add', reason: null, appId: null, login: null, sourceIp: null, claimedIp: null });
        await store.appendAudit([first, second]);
        await store.appendAudit([third]);
        await store.appendAudit([]);
        const rows = await store.queryAudit({ limit: 10 });
        expect(rows.map(({ id: _id, ...rest }) => rest)).toEqual([third, second, first]);
        const ids = rows.map((r) => r.id);
        expect([...ids].sort((a, b) => b - a)).toEqual(ids);
        expect(new Set(ids).size).toBe(3);
      });

      it('filters by time, login (case-insensitively), type, type prefix and application, and pages by id', async () => {
        await store.appendAudit([
          event({ at: at(0), login: 'Alice' }),
          event({ at: at(HOUR), login: 'bob', appId: 7 }),
          event({ at: at(2 * HOUR), login: 'ALICE', type: 'login.success', reason: 'success' }),
          event({ at: at(3 * HOUR), login: null, type: 'admin.user.disable', reason: null, appId: null }),
          event({ at: at(4 * HOUR), login: 'alice', type: 'admin.user.add', reason: null }),
        ]);
        const logins = async (query: Omit<AuditQuery, 'limit'>, limit = 10): Promise<(string | null)[]> =>
          (await store.queryAudit({ ...query, limit })).map((r) => `${r.type}@${r.at.getTime() - T0.getTime()}`);
        expect(await logins({ login: 'alice' })).toEqual([`admin.user.add@${4 * HOUR}`, `login.success@${2 * HOUR}`, 'login.failure@0']);
        expect(await logins({ since: at(HOUR), until: at(3 * HOUR) })).toEqual([`login.success@${2 * HOUR}`, `login.failure@${HOUR}`]);
        expect(await logins({ type: 'login.failure' })).toEqual([`login.failure@${HOUR}`, 'login.failure@0']);
        expect(await logins({ typePrefix: 'admin.' })).toEqual([`admin.user.add@${4 * HOUR}`, `admin.user.disable@${3 * HOUR}`]);
        expect(await logins({ appId: 7 })).toEqual([`login.failure@${HOUR}`]);
        expect(await logins({ login: 'alice', type: 'login.success', since: at(HOUR) })).toEqual([`login.success@${2 * HOUR}`]);
        const page1 = await store.queryAudit({ limit: 2 });
        const page2 = await store.queryAudit({ limit: 2, beforeId: page1.at(-1)?.id ?? 0 });
        const page3 = await store.queryAudit({ limit: 2, beforeId: page2.at(-1)?.id ?? 0 });
        expect([...page1, ...page2, ...page3].map((r) => r.at)).toEqual([at(4 * HOUR), at(3 * HOUR), at(2 * HOUR), at(HOUR), at(0)]);
        expect(await store.queryAudit({ limit: 0 })).toEqual([]);
      });

      it('finds the events of a login together with those of its fingerprint', async () => {
        await store.appendAudit([
          event({ at: at(0), login: 'unknown:00112233aabbccdd', reason: 'unknown-user' }),
          event({ at: at(1), login: 'bob' }),
          event({ at: at(2), login: 'Mallory', reason: 'bad-password' }),
          event({ at: at(3), login: 'unknown:99999999aaaaaaaa', reason: 'unknown-user' }),
        ]);
        const reasons = async (query: Omit<AuditQuery, 'limit'>): Promise<(string | null)[]> => (await store.queryAudit({ ...query, limit: 10 })).map((r) => r.login);
        expect(await reasons({ login: 'mallory', loginFp: 'unknown:00112233aabbccdd' })).toEqual(['Mallory', 'unknown:00112233aabbccdd']);
        expect(await reasons({ login: 'unknown:00112233AABBCCDD' })).toEqual(['unknown:00112233aabbccdd']);
      });

      it('keeps one installation secret per name: the first one stored, for every caller', async () => {
        const [a, b] = await Promise.all([store.installationSecret('k', 'first'), store.installationSecret('k', 'second')]);
        expect(a).toBe(b);
        expect(['first', 'second']).toContain(a);
        expect(await store.installationSecret('k', 'third')).toBe(a);
        expect(await store.installationSecret('other', 'x')).toBe('x');
      });

      it('purges events older than a time in batches, oldest first', async () => {
        await store.appendAudit(Array.from({ length: 5 }, (_, i) => event({ at: at(i * 1000), requestId: `r${i}` })));
        await store.appendAudit([event({ at: at(HOUR), requestId: 'young' })]);
        expect(await store.purgeAudit(at(HOUR), 2)).toBe(2);
        expect((await store.queryAudit({ limit: 10 })).map((r) => r.requestId)).toEqual(['young', 'r4', 'r3', 'r2']);
        expect(await store.purgeAudit(at(HOUR), 2)).toBe(2);
        expect(await store.purgeAudit(at(HOUR), 2)).toBe(1);
        expect(await store.purgeAudit(at(HOUR), 2)).toBe(0);
        expect((await store.queryAudit({ limit: 10 })).map((r) => r.requestId)).toEqual(['young']);
      });

      it('appends a large batch in one call', async () => {
        await store.appendAudit(Array.from({ length: 1200 }, (_, i) => event({ at: at(i), requestId: `r${i}` })));
        const newest = await store.queryAudit({ limit: 1 });
        expect(newest[0]?.requestId).toBe('r1199');
        expect(await store.purgeAudit(at(HOUR), 5000)).toBe(1200);
      });
    });

    describe('shadow differences (shadow and front modes)', () => {
      const difference = (n: number, overrides: Partial<NewShadowDifference> = {}): NewShadowDifference => ({
        at: at(n * 1000), mode: 'shadow', operation: 'ValidateUserToken', binding: 'soap11',
        requestJson: JSON.stringify({ method: 'POST', target: '/Authentication.asmx', n }),
        legacyJson: '{"status":200,"headers":[],"body":"<b>true</b>"}', oursJson: '{"status":200,"headers":[],"body":"<b>false</b>"}',
        diff: `-true\n+false ${n}\n`, ...overrides,
      });

      it('keeps a difference as written and lists the newest first', async () => {
        expect(await store.listShadowDifferences(10)).toEqual([]);
        await store.insertShadowDifference(difference(1, { mode: 'front', operation: null, binding: 'doc' }), 10);
        await store.insertShadowDifference(difference(2), 10);
        const rows = await store.listShadowDifferences(10);
        expect(rows.map((r) => r.diff)).toEqual(['-true\n+false 2\n', '-true\n+false 1\n']);
        const [newest, oldest] = rows;
        expect(newest?.id).toBeGreaterThan(oldest?.id ?? Infinity);
        expect(oldest).toMatchObject({ ...difference(1, { mode: 'front', operation: null, binding: 'doc' }), at: at(1000) });
        expect(newest).toMatchObject(difference(2));
        expect(await store.listShadowDifferences(1)).toHaveLength(1);
      });

      it('keeps only the newest `keep`, pruned by each insert', async () => {
        for (let n = 1; n <= 7; n++) await store.insertShadowDifference(difference(n), 3);
        expect((await store.listShadowDifferences(100)).map((r) => JSON.parse(r.requestJson).n)).toEqual([7, 6, 5]);
        // A smaller keep prunes further at the next insert; keep below 1 counts as 1.
        await store.insertShadowDifference(difference(8), 0);
        expect((await store.listShadowDifferences(100)).map((r) => JSON.parse(r.requestJson).n)).toEqual([8]);
      });
    });

    describe('token passthrough tallies', () => {
      const tally = (day: string, kind: LegacyTally['kind'], result: string, count: number, lastAt: string): LegacyTally =>
        ({ day, kind, result, count, lastAt: new Date(lastAt) });

      it('adds counts to the stored ones (count = count + n), keeps the later last time, lists by day, kind and result', async () => {
        expect(await store.listLegacyTallies()).toEqual([]);
        await store.addLegacyTallies([
          tally('2025-01-15', 'check', 'valid', 3, '2025-01-15T10:00:00.000Z'),
          tally('2025-01-15', 'adoption', 'adopted', 1, '2025-01-15T09:00:00.000Z'),
          tally('2025-01-14', 'check', 'invalid', 2, '2025-01-14T23:59:59.999Z'),
          tally('2025-01-15', 'relay', 'none', 0, '2025-01-15T11:00:00.000Z'), // nothing to add: no row
        ], '2024-10-17');
        await store.addLegacyTallies([
          tally('2025-01-15', 'check', 'valid', 4, '2025-01-15T08:00:00.000Z'), // earlier: the stored last time stays
          tally('2025-01-15', 'check', 'cached_valid', 5, '2025-01-15T12:00:00.000Z'),
          tally('2025-01-15', 'adoption', 'adopted', 2, '2025-01-15T12:30:00.000Z'),
        ], '2024-10-17');
        expect(await store.listLegacyTallies()).toEqual([
          tally('2025-01-14', 'check', 'invalid', 2, '2025-01-14T23:59:59.999Z'),
          tally('2025-01-15', 'adoption', 'adopted', 3, '2025-01-15T12:30:00.000Z'),
          tally('2025-01-15', 'check', 'cached_valid', 5, '2025-01-15T12:00:00.000Z'),
          tally('2025-01-15', 'check', 'valid', 7, '2025-01-15T10:00:00.000Z'),
        ]);
        // Nothing but zero counts: nothing written, nothing pruned.
        await store.addLegacyTallies([tally('2025-01-16', 'check', 'valid', 0, '2025-01-16T00:00:00.000Z')], '2025-01-16');
        expect(await store.listLegacyTallies()).toHaveLength(4);
      });

      it('writers adding at once all count', async () => {
        await Promise.all(Array.from({ length: 20 }, (_, i) => store.addLegacyTallies([
          tally('2025-01-15', 'check', 'valid', 1, at(i * 1000).toISOString()),
          tally('2025-01-15', 'check', 'invalid', 2, at(i * 1000).toISOString()),
        ], '2024-10-17')));
        expect(await store.listLegacyTallies()).toEqual([
          tally('2025-01-15', 'check', 'invalid', 40, at(19_000).toISOString()),
          tally('2025-01-15', 'check', 'valid', 20, at(19_000).toISOString()),
        ]);
      });

      it('deletes the days before keepFrom, except each kind and result\'s newest day', async () => {
        await store.addLegacyTallies([
          tally('2024-09-01', 'check', 'valid', 1, '2024-09-01T10:00:00.000Z'),
          tally('2024-09-02', 'check', 'valid', 1, '2024-09-02T10:00:00.000Z'), // valid's newest day: kept
          tally('2024-09-01', 'check', 'invalid', 1, '2024-09-01T10:00:00.000Z'),
          tally('2024-09-01', 'relay', 'relayed', 1, '2024-09-01T10:00:00.000Z'),
          tally('2024-10-17', 'relay', 'relayed', 1, '2024-10-17T10:00:00.000Z'), // not before keepFrom
        ], '2024-09-01');
        expect(await store.listLegacyTallies()).toHaveLength(5);
        await store.addLegacyTallies([tally('2025-01-15', 'check', 'invalid', 1, '2025-01-15T10:00:00.000Z')], '2024-10-17');
        expect((await store.listLegacyTallies()).map((t) => `${t.day} ${t.kind} ${t.result} ${t.count}`)).toEqual([
          '2024-09-02 check valid 1',
          '2024-10-17 relay relayed 1',
          '2025-01-15 check invalid 1',
        ]);
      });
    });

    describe('brute-force counters', () => {
      const MIN = 60_000;
      const limits: ThrottleLimits = {
        windowMs: 15 * MIN, maxDelayMs: 15 * MIN, pairMaxAttempts: 5, pairBaseDelayMs: 30_000,
        loginMaxAttempts: 100, sourceMaxFailures: 50, knownSourceMs: 30 * 24 * HOUR,
      };
      const loginHash = (n: number | string): string => createHash('sha256').update(`login-${n}`).digest('hex');
      const attempt = (login: number | string, source: string, now: Date): LoginAttempt => ({ loginHash: loginHash(login), source, now });
      const reserve = (login: number | string, source: string, now: Date, l: ThrottleLimits = limits) => store.reserveLoginAttempt(attempt(login, source, now), l);
      /** A whole failed attempt: reserved, verified, failed. Whether it was granted. */
      const fail = async (login: number | string, source: string, now: Date, l: ThrottleLimits = limits): Promise<boolean> => {
        const r = await reserve(login, source, now, l);
        if (r.granted) await store.recordLoginFailure(attempt(login, source, now), l);
        return r.granted;
      };
      const succeed = async (login: number | string, source: string, now: Date, l: ThrottleLimits = limits): Promise<boolean> => {
        const r = await reserve(login, source, now, l);
        if (r.granted) await store.recordLoginSuccess(attempt(login, source, now));
        return r.granted;
      };
      const times = async (n: number, fn: (i: number) => Promise<boolean>): Promise<boolean[]> => {
        const out: boolean[] = [];
        for (let i = 0; i < n; i++) out.push(await fn(i));
        return out;
      };

      it('lets a pair fail N times, then blocks it for a delay that doubles up to the maximum, never for good', async () => {
        expect(await times(5, () => fail('alice', '192.0.2.1', T0))).toEqual([true, true, true, true, true]);
        expect(await reserve('alice', '192.0.2.1', T0)).toEqual({ granted: false, refusedBy: 'pair', retryAt: at(30_000) });
        expect(await fail('alice', '192.0.2.1', at(29_999))).toBe(false);
        // Each failure after the block lifts blocks the pair twice as long: 60 s, 120 s, 240 s, 480 s, then 900 s (the cap) for ever.
        let now = 30_000;
        for (const delay of [60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]) {
          expect(await fail('alice', '192.0.2.1', at(now))).toBe(true);
          expect(await reserve('alice', '192.0.2.1', at(now))).toEqual({ granted: false, refusedBy: 'pair', retryAt: at(now + delay) });
          now += delay;
        }
        // Other pairs are untouched: the same login elsewhere, another login here.
        expect(await fail('alice', '192.0.2.2', T0)).toBe(true);
        expect(await fail('bob', '192.0.2.1', T0)).toBe(true);
      });

      it('forgets a pair a whole window after its block ends, and at once after a success', async () => {
        await times(5, () => fail('alice', '192.0.2.1', T0));
        // Blocked until +30 s; forgotten 15 min after that: five failures allowed again.
        expect(await fail('alice', '192.0.2.1', at(30_000 + 15 * MIN - 1))).toBe(true);
        expect(await fail('alice', '192.0.2.1', at(30_000 + 15 * MIN - 1))).toBe(false);
        const later = 30_000 + 15 * MIN - 1 + 60_000 + 15 * MIN;
        expect(await times(5, () => fail('alice', '192.0.2.1', at(later)))).toEqual([true, true, true, true, true]);
        expect(await fail('alice', '192.0.2.1', at(later))).toBe(false);

        await times(4, () => fail('carol', '192.0.2.1', T0));
        expect(await succeed('carol', '192.0.2.1', T0)).toBe(true);
        expect(await times(6, () => fail('carol', '192.0.2.1', T0))).toEqual([true, true, true, true, true, false]);
        // A success of an attempt granted before the block (it was under way) ends the block too.
        await times(4, () => fail('dave', '192.0.2.1', T0));
        expect((await reserve('dave', '192.0.2.1', T0)).granted).toBe(true); // under way...
        expect(await reserve('dave', '192.0.2.1', T0)).toMatchObject({ granted: false, refusedBy: 'pair', busy: true });
        await store.recordLoginSuccess(attempt('dave', '192.0.2.1', T0)); // ...and it was her
        expect(await times(5, () => fail('dave', '192.0.2.1', T0))).toEqual([true, true, true, true, true]);
      });

      it('counts verifications under way against the pair, so parallel guesses cannot overtake it', async () => {
        // Five under way: a sixth is refused as busy (worth asking again), not as blocked.
        expect(await times(5, async () => (await reserve('alice', '192.0.2.1', T0)).granted)).toEqual([true, true, true, true, true]);
        expect(await reserve('alice', '192.0.2.1', T0)).toEqual({ granted: false, refusedBy: 'pair', retryAt: at(30_000), busy: true });
        // Two of them fail: failures count as much as verifications under way, so still no slot is free.
        await store.recordLoginFailure(attempt('alice', '192.0.2.1', at(10)), limits);
        await store.recordLoginFailure(attempt('alice', '192.0.2.1', at(10)), limits);
        expect(await reserve('alice', '192.0.2.1', at(10))).toMatchObject({ granted: false, busy: true });
        // One succeeds: failures forgotten, two under way: three free.
        await store.recordLoginSuccess(attempt('alice', '192.0.2.1', at(20)));
        expect(await times(4, async () => (await reserve('alice', '192.0.2.1', at(30))).granted)).toEqual([true, true, true, false]);
        // An instance that died mid-verification does not hold its slot for ever.
        expect((await reserve('alice', '192.0.2.1', at(30 + 30_000))).granted).toBe(true);
        // From N failures on, one verification at a time.
        await times(5, () => fail('bob', '192.0.2.1', T0));
        expect((await reserve('bob', '192.0.2.1', at(30_000))).granted).toBe(true);
        expect(await reserve('bob', '192.0.2.1', at(30_000))).toMatchObject({ granted: false, busy: true });
      });

      it('frees the slot of an attempt that ended without an outcome, counting nothing', async () => {
        const l = { ...limits, sourceMaxFailures: 5 };
        expect(await times(5, async () => (await reserve('alice', '192.0.2.1', T0, l)).granted)).toEqual([true, true, true, true, true]);
        for (let i = 0; i < 5; i++) await store.releaseLoginAttempt(attempt('alice', '192.0.2.1', T0));
        // Neither the pair nor the source counted them: five whole failures still fit, then the block.
        expect(await times(6, () => fail('alice', '192.0.2.1', T0, l))).toEqual([true, true, true, true, true, false]);
        expect(await reserve('alice', '192.0.2.1', T0, l)).toMatchObject({ refusedBy: 'pair', retryAt: at(30_000) });
        await store.releaseLoginAttempt(attempt('nobody', '192.0.2.99', T0)); // nothing to free: no harm
      });

      it('holds a login to its ceiling across sources, except from sources known good for it, until the window ends', async () => {
        const l = { ...limits, loginMaxAttempts: 10 };
        expect(await succeed('alice', '203.0.113.7', at(-HOUR), l)).toBe(true); // her usual place
        expect(await times(10, (i) => fail('alice', `198.51.100.${i}`, T0, l))).toEqual(Array(10).fill(true));
        expect(await reserve('alice', '198.51.100.200', at(1000), l)).toEqual({ granted: false, refusedBy: 'login', retryAt: at(15 * MIN) });
        expect(await fail('alice', '203.0.113.7', at(1000), l)).toBe(true);
        expect(await fail('bob', '198.51.100.200', at(1000), l)).toBe(true);
        // A source known good for another login does not count.
        expect(await succeed('bob', '198.51.100.201', at(1000), l)).toBe(true);
        expect(await fail('alice', '198.51.100.201', at(2000), l)).toBe(false);
        // Known good only for knownSourceMs.
        expect(await fail('alice', '203.0.113.7', at(3000), { ...l, knownSourceMs: HOUR })).toBe(false);
        expect(await fail('alice', '198.51.100.200', at(15 * MIN), l)).toBe(true);
      });

      it('counts failures and verifications under way toward the login ceiling, never successes', async () => {
        const l = { ...limits, loginMaxAttempts: 5 };
        // Any number of successes from new sources: none of them counts.
        expect(await times(40, (i) => succeed('alice', `10.0.${i}.1`, T0, l))).toEqual(Array(40).fill(true));
        // Five under way from new sources: the sixth is told to wait (busy), not refused outright.
        expect(await times(5, async (i) => (await reserve('alice', `10.1.${i}.1`, at(1), l)).granted)).toEqual(Array(5).fill(true));
        expect(await reserve('alice', '10.2.0.1', at(2), l)).toEqual({ granted: false, refusedBy: 'login', retryAt: at(1 + 30_000), busy: true });
        // One succeeds and one could not run: their slots are given back.
        await store.recordLoginSuccess(attempt('alice', '10.1.0.1', at(3)));
        await store.releaseLoginAttempt(attempt('alice', '10.1.1.1', at(3)));
        expect(await times(3, async (i) => (await reserve('alice', `10.3.${i}.1`, at(4), l)).granted)).toEqual([true, true, false]);
        // All five under way fail: the ceiling holds until the window ends.
        for (const source of ['10.1.2.1', '10.1.3.1', '10.1.4.1', '10.3.0.1', '10.3.1.1']) await store.recordLoginFailure(attempt('alice', source, at(5)), l);
        expect(await reserve('alice', '10.2.0.1', at(6), l)).toEqual({ granted: false, refusedBy: 'login', retryAt: at(15 * MIN) });
        // Sources known good for it (the 40 above, the one that succeeded) go on, and their successes do not count either...
        expect(await times(10, (i) => succeed('alice', `10.0.${i % 2}.1`, at(7), l))).toEqual(Array(10).fill(true));
        expect(await succeed('alice', '10.1.0.1', at(7), l)).toBe(true);
        // ...while a new source waits for the next window.
        expect(await succeed('alice', '10.2.0.1', at(8), l)).toBe(false);
        expect(await succeed('alice', '10.2.0.1', at(15 * MIN), l)).toBe(true);
      });

      it('shows one login\'s counters to the operator, and resets its login and pair counters only', async () => {
        const l = { ...limits, loginMaxAttempts: 8, knownSourceMs: HOUR };
        const state = (now: Date, limit = 10) => store.loginThrottleState({ loginHash: loginHash('alice'), now, knownSince: new Date(now.getTime() - HOUR), limit });
        expect(await state(T0)).toEqual({ login: null, pairs: [], pairCount: 0, knownSources: [], knownSourceCount: 0 });
        await succeed('alice', '192.0.2.1', at(-2 * HOUR), l); // known, but too long ago
        await succeed('alice', '192.0.2.2', at(-30 * MIN), l);
        await succeed('alice', '192.0.2.3', at(-10 * MIN), l);
        await times(5, () => fail('alice', '198.51.100.1', T0, l)); // blocked until +30 s
        await times(2, () => fail('alice', '198.51.100.2', T0, l));
        expect((await reserve('alice', '198.51.100.4', T0, l)).granted).toBe(true);
        await store.releaseLoginAttempt(attempt('alice', '198.51.100.4', T0)); // nothing to show
        expect((await reserve('alice', '198.51.100.3', T0, l)).granted).toBe(true); // under way
        await fail('bob', '198.51.100.1', T0, l); // another login: not shown, not reset
        const s = await state(at(1000));
        // The window opened with the success 10 min ago; the successes counted nothing.
        expect(s.login).toEqual({ count: 7, windowStart: at(-10 * MIN), blockedUntil: null, inflight: 1, inflightUntil: at(30_000), expiresAt: at(5 * MIN) });
        expect(s.pairs.map((p) => [p.source, p.count, p.blockedUntil, p.inflight])).toEqual([
          ['198.51.100.1', 5, at(30_000), 0], ['198.51.100.2', 2, null, 0], ['198.51.100.3', 0, null, 1],
        ]);
        expect(s.pairCount).toBe(3);
        expect(s.knownSources).toEqual([{ source: '192.0.2.3', lastSuccessAt: at(-10 * MIN) }, { source: '192.0.2.2', lastSuccessAt: at(-30 * MIN) }]);
        expect(s.knownSourceCount).toBe(2);
        // The lists are cut at the limit; the counts are not.
        const cut = await state(at(1000), 1);
        expect([cut.pairs.length, cut.pairCount, cut.knownSources.length, cut.knownSourceCount]).toEqual([1, 3, 1, 2]);
        // The ceiling is tripped for new sources (7 failures + 1 under way = 8)...
        expect(await reserve('alice', '203.0.113.1', at(1000), l)).toMatchObject({ granted: false, refusedBy: 'login' });
        // ...until the operator resets the login: its counter and its 4 pair rows (the empty one too) go, and with them the block.
        expect(await store.resetLoginThrottle(loginHash('alice'))).toBe(5);
        expect(await store.resetLoginThrottle(loginHash('alice'))).toBe(0);
        const after = await state(at(1000));
        expect([after.login, after.pairs, after.knownSourceCount]).toEqual([null, [], 2]);
        expect(await fail('alice', '203.0.113.1', at(1000), l)).toBe(true);
        expect(await fail('alice', '198.51.100.1', at(1000), l)).toBe(true);
        // Another login's counters and the sources' counters stay.
        expect((await store.loginThrottleState({ loginHash: loginHash('bob'), now: at(1000), knownSince: T0, limit: 10 })).login?.count).toBe(1);
        expect(await times(46, (i) => fail(`x${i}`, '198.51.100.1', at(1000), l))).toEqual([...Array(43).fill(true), ...Array(3).fill(false)]); // 7 of its 50 used
        // A verification under way is shown for its 30 s, not after (its instance died); expired pairs
        // are not shown; the login row is, as stored, for the caller to judge.
        expect((await reserve('alice', '198.51.100.9', at(1000), l)).granted).toBe(true);
        expect((await state(at(30_999))).pairs.map((p) => p.source)).toEqual(['198.51.100.1', '203.0.113.1', '198.51.100.9']);
        expect((await state(at(31_000))).pairs.map((p) => p.source)).toEqual(['198.51.100.1', '203.0.113.1']);
        const late = await state(at(15 * MIN + 31_000));
        expect(late.pairs).toEqual([]);
        expect(late.login?.expiresAt).toEqual(at(1000 + 15 * MIN));
      });

      it('holds a source to its failure ceiling across logins until the window ends; successes give their slot back', async () => {
        const l = { ...limits, sourceMaxFailures: 10 };
        expect(await times(10, (i) => fail(`user-${i}`, '192.0.2.9', T0, l))).toEqual(Array(10).fill(true));
        expect(await reserve('user-x', '192.0.2.9', at(5), l)).toEqual({ granted: false, refusedBy: 'source', retryAt: at(15 * MIN) });
        expect(await fail('user-x', '192.0.2.10', at(5), l)).toBe(true);
        await store.recordLoginSuccess(attempt('user-3', '192.0.2.9', at(6)));
        expect(await fail('user-x', '192.0.2.9', at(7), l)).toBe(true);
        expect(await fail('user-y', '192.0.2.9', at(7), l)).toBe(false);
        expect(await fail('user-y', '192.0.2.9', at(15 * MIN), l)).toBe(true);
        // Successes take no lasting slot.
        expect(await times(20, (i) => succeed(`user-${i}`, '192.0.2.11', T0, l))).toEqual(Array(20).fill(true));
      });

      it('changes no counter when it refuses', async () => {
        const l = { ...limits, sourceMaxFailures: 3 };
        await times(3, (i) => fail(`u${i}`, '192.0.2.1', T0, l));
        // Refused by the source ceiling: the pair u9/source is not counted, however often it tries...
        for (let i = 0; i < 10; i++) expect(await fail('u9', '192.0.2.1', T0, l)).toBe(false);
        expect(await times(6, () => fail('u9', '192.0.2.1', T0))).toEqual([true, true, true, true, true, false]);
        // ...and refused by the pair block, the source and the login are not counted either.
        for (let i = 0; i < 10; i++) expect(await fail('u9', '192.0.2.1', T0)).toBe(false);
        expect(await times(4, (i) => fail(`v${i}`, '192.0.2.1', T0, { ...limits, sourceMaxFailures: 11 }))).toEqual([true, true, true, false]);
        expect(await times(2, (i) => fail('u9', `192.0.2.${50 + i}`, T0, { ...limits, loginMaxAttempts: 6 }))).toEqual([true, false]);
      });

      it('never grants more than the limits to parallel reservations', async () => {
        const pair = await Promise.all(Array.from({ length: 50 }, () => reserve('alice', '192.0.2.1', T0)));
        expect(pair.filter((r) => r.granted)).toHaveLength(5);
        const l = { ...limits, loginMaxAttempts: 20 };
        const logins = await Promise.all(Array.from({ length: 60 }, (_, i) => reserve('bob', `198.51.100.${i}`, T0, l)));
        expect(logins.filter((r) => r.granted)).toHaveLength(20);
        const sources = await Promise.all(Array.from({ length: 60 }, (_, i) => reserve(`user-${i}`, '192.0.2.77', T0, { ...limits, sourceMaxFailures: 25 })));
        expect(sources.filter((r) => r.granted)).toHaveLength(25);
        // Parallel failures are all counted: the pair is blocked after them.
        await Promise.all(Array.from({ length: 5 }, () => store.recordLoginFailure(attempt('alice', '192.0.2.1', T0), limits)));
        expect(await reserve('alice', '192.0.2.1', T0)).toEqual({ granted: false, refusedBy: 'pair', retryAt: at(30_000) });
      });

      it('purges expired counters and old known sources in batches, keeping what still counts', async () => {
        await times(5, (i) => fail(`u${i}`, `192.0.2.${i}`, T0)); // 5 logins, 5 sources, 5 pairs: 15 counters until +15 min
        await fail('late', '192.0.2.100', at(10 * MIN)); // 3 counters until +25 min
        await succeed('old', '192.0.2.200', at(-40 * 24 * HOUR)); // a known source, and two counters long expired
        await succeed('new', '192.0.2.201', T0); // a known source, two counters until +15 min
        const now = at(20 * MIN);
        const knownBefore = at(-30 * 24 * HOUR);
        let purged = 0;
        for (let n = 4; n === 4;) {
          n = await store.purgeLoginThrottle(now, knownBefore, 4);
          purged += n;
        }
        expect(purged).toBe(15 + 2 + 2 + 1);
        expect(await store.purgeLoginThrottle(now, knownBefore, 4)).toBe(0);
        expect(await store.purgeLoginThrottle(at(25 * MIN), knownBefore, 0)).toBe(0);
        // The counters of "late" still count; "new" is still known good.
        const l = { ...limits, loginMaxAttempts: 1 };
        expect(await fail('late', '192.0.2.101', now, l)).toBe(false);
        expect(await fail('new', '192.0.2.102', now, l)).toBe(true);
        expect(await fail('new', '192.0.2.201', now, l)).toBe(true);
        expect(await store.purgeLoginThrottle(at(25 * MIN), knownBefore, 100)).toBe(3);
      });
    });

    describe('lifecycle', () => {
      it('answers ping while open', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it('commits a write probe (readiness), again and again, without changing any data', async () => {
        const before = await store.revisions();
        // Our own probes, however many, never count as an older version's (migration 18).
        await expect(store.probeWrite(at(0))).resolves.toEqual({ olderVersionMsAgo: null });
        await expect(store.probeWrite(at(5000))).resolves.toEqual({ olderVersionMsAgo: null });
        expect(await store.revisions()).toEqual(before);
        expect(await store.listApplications()).toHaveLength(1);
      });

      it('closes idempotently; calls after close reject', async () => {
        await store.close();
        await store.close();
        await expect(store.getApplication(2)).rejects.toThrow();
        await expect(store.ping()).rejects.toThrow();
        await expect(store.probeWrite(at(0))).rejects.toThrow();
        store = await makeStore(); // for afterEach
      });
    });
  });
}
