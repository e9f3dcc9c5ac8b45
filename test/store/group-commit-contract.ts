/**
 * Group commit (config `performance.groupCommit`; src/store/turn-batch.ts): the new tokens and
 * tickets of one event-loop turn commit together, each caller's promise settling only after
 * that commit, each with its own outcome. Run against an adapter with
 * `describeGroupCommitContract('name', newDatabase)`, where `newDatabase` returns the URL of a
 * fresh, empty database that several stores may open at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { openStore, type OpenStoreOptions } from '../../src/store/open-store.js';
import type { NewToken, Store, User } from '../../src/store/store.js';

const T0 = new Date('2025-01-15T12:00:00.000Z');
const at = (offsetMs: number): Date => new Date(T0.getTime() + offsetMs);
let counter = 0;
const newHash = (): string => createHash('sha256').update(`group-${++counter}-${Math.random()}`).digest('hex');

export interface GroupCommitOptions {
  /**
   * SQLite groups every small write of the hot paths (token uses, tickets consumed, brute-force
   * counters) with the new tokens; PostgreSQL only new tokens and tickets.
   */
  readonly groupsEverySmallWrite: boolean;
  /** More options for every store the suite opens (SQLite: the sync inside or after COMMIT). */
  readonly storeOptions?: OpenStoreOptions;
}

export function describeGroupCommitContract(name: string, newDatabase: () => string, adapter: GroupCommitOptions): void {
  describe(`group commit: ${name}`, () => {
    const opened: Store[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
    });

    /** A store on `url` whose group commits are recorded in `commits` (writes per commit). */
    async function open(url: string, groupCommit = true): Promise<{ store: Store; commits: number[] }> {
      const commits: number[] = [];
      const store = await openStore(url, { ...adapter.storeOptions, groupCommit, onGroupCommit: (writes) => commits.push(writes) });
      opened.push(store);
      return { store, commits };
    }

    async function addUser(store: Store, login: string, enabled = true): Promise<User> {
      const r = await store.insertUser({ login, loginKey: login, passwordHash: `hash-of-${login}`, enabled, appIds: [2], createdAt: T0 });
      if (!r.ok) throw new Error(`could not add ${login}`);
      return r.user;
    }

    const token = (user: User, overrides: Partial<NewToken> = {}): NewToken => ({
      tokenHash: newHash(), userId: user.userId, appId: 2, clientIp: null, sourceIp: '192.0.2.1', issuedAt: T0, expiresAt: at(120_000), ...overrides,
    });

    it('commits the tickets asked for in one turn together, and answers each only once another connection sees it', async () => {
      const url = newDatabase();
      const { store, commits } = await open(url);
      // Another connection (another pool, another SQLite handle) sees only what was committed.
      const { store: observer } = await open(url);
      const alice = await addUser(store, 'alice');
      commits.length = 0;
      const tickets = Array.from({ length: 8 }, () => token(alice));
      const seenWhenAnswered = await Promise.all(tickets.map(async (t) => {
        const stored = await store.insertTicket(t);
        return { stored, commitsSoFar: commits.length, visible: (await observer.findToken(t.tokenHash))?.kind ?? null };
      }));
      expect(commits).toEqual([8]);
      expect(seenWhenAnswered).toEqual(tickets.map(() => ({ stored: true, commitsSoFar: 1, visible: 'ticket' })));
    });

    it('commits the sessions of one turn together; each user\'s last login is that of its last session asked for', async () => {
      const url = newDatabase();
      const { store, commits } = await open(url);
      const alice = await addUser(store, 'alice');
      const bob = await addUser(store, 'bob');
      commits.length = 0;
      const sessions = [token(alice, { issuedAt: at(3) }), token(alice, { issuedAt: at(7) }), token(bob, { issuedAt: at(5) }), token(alice, { issuedAt: at(4) })];
      const results = await Promise.all(sessions.map((t) => store.insertSession(t, { passwordHash: `hash-of-${t.userId === alice.userId ? 'alice' : 'bob'}` })));
      expect(results).toEqual([true, true, true, true]);
      expect(commits).toEqual([4]);
      // As if one after another: the last asked for wins (the clock gives later calls later times).
      expect((await store.getUser(alice.userId))?.lastLoginAt).toEqual(at(4));
      expect((await store.getUser(bob.userId))?.lastLoginAt).toEqual(at(5));
      for (const t of sessions) expect(await store.findToken(t.tokenHash)).toMatchObject({ kind: 'session', issuedAt: t.issuedAt });
    });

    it('gives a refused or failing write its own outcome; the others of its turn commit', async () => {
      const url = newDatabase();
      const { store } = await open(url);
      const alice = await addUser(store, 'alice');
      const carol = await addUser(store, 'carol', false);
      const taken = token(alice);
      expect(await store.insertTicket(taken)).toBe(true);
      const good = [token(alice), token(alice), token(alice)];
      const [first, duplicate, disabled, second, staleSession, third, session] = await Promise.allSettled([
        store.insertTicket(good[0] as NewToken),
        store.insertTicket({ ...token(alice), tokenHash: taken.tokenHash }), // the primary key: a constraint violation
        store.insertTicket(token(carol)), // refused: the user is disabled
        store.insertTicket(good[1] as NewToken),
        store.insertSession(token(alice), { passwordHash: 'stale' }), // refused: the password changed meanwhile
        store.insertTicket(good[2] as NewToken),
        store.insertSession(token(alice, { issuedAt: at(9) }), { passwordHash: 'hash-of-alice' }),
      ]);
      expect([first, disabled, second, staleSession, third, session]).toEqual([
        { status: 'fulfilled', value: true }, { status: 'fulfilled', value: false }, { status: 'fulfilled', value: true },
        { status: 'fulfilled', value: false }, { status: 'fulfilled', value: true }, { status: 'fulfilled', value: true },
      ]);
      expect(duplicate.status).toBe('rejected');
      for (const t of good) expect((await store.findToken(t.tokenHash))?.kind).toBe('ticket');
      expect((await store.findToken(taken.tokenHash))?.sourceIp).toBe('192.0.2.1');
      expect((await store.getUser(alice.userId))?.lastLoginAt).toEqual(at(9));
    });

    it('never leaves a live token of a batch issued against a password being changed, a user being disabled or a grant being withdrawn', async () => {
      const url = newDatabase();
      const { store: a } = await open(url);
      const { store: b } = await open(url);
      const changes: ((s: Store, user: User) => Promise<unknown>)[] = [
        (s, u) => s.setPasswordHash(u.userId, 'changed', at(1)),
        (s, u) => s.setUserEnabled(u.userId, false, at(1)),
        (s, u) => s.revokeApplication(u.userId, 2, at(1)),
      ];
      for (let i = 0; i < 24; i++) {
        const user = await addUser(a, `user${i}`);
        const sessions = [token(user), token(user), token(user)];
        const tickets = [token(user), token(user)];
        const change = async (): Promise<unknown> => {
          // Sometimes at once, sometimes a turn later: the batch is sent at the end of the turn.
          if (i % 2 === 1) await new Promise<void>((resolve) => setImmediate(resolve));
          return (changes[i % changes.length] as (s: Store, u: User) => Promise<unknown>)(b, user);
        };
        const [issued] = await Promise.all([
          Promise.all([...sessions.map((t) => a.insertSession(t, { passwordHash: `hash-of-user${i}` })), ...tickets.map((t) => a.insertTicket(t))]),
          change(),
        ]);
        // A ticket is not bound to the password: one issued after a password change is fine.
        const judged = i % changes.length === 0 ? sessions : [...sessions, ...tickets];
        for (const [k, t] of judged.entries()) {
          const record = await a.findToken(t.tokenHash);
          // Either refused, or issued first and revoked by the change.
          if (issued[k] === true) expect(record?.revokedAt, `iteration ${i}, token ${k}`).not.toBeNull();
          else expect(record, `iteration ${i}, token ${k}`).toBeNull();
        }
      }
    });

    it('commits what is still queued when the store closes', async () => {
      const url = newDatabase();
      const { store } = await open(url);
      const alice = await addUser(store, 'alice');
      const t = token(alice);
      const stored = store.insertTicket(t);
      await store.close();
      expect(await stored).toBe(true);
      const { store: reopened } = await open(url);
      expect((await reopened.findToken(t.tokenHash))?.kind).toBe('ticket');
    });

    it('switched off (performance.groupCommit: false), every write commits on its own', async () => {
      const { store, commits } = await open(newDatabase(), false);
      const alice = await addUser(store, 'alice');
      const tickets = [token(alice), token(alice), token(alice)];
      expect(await Promise.all(tickets.map((t) => store.insertTicket(t)))).toEqual([true, true, true]);
      expect(await store.insertSession(token(alice), { passwordHash: 'hash-of-alice' })).toBe(true);
      expect(commits).toEqual([]);
      for (const t of tickets) expect((await store.findToken(t.tokenHash))?.kind).toBe('ticket');
    });

    it.runIf(adapter.groupsEverySmallWrite)('puts the uses of tokens and tickets and the brute-force counters of a turn in the same commit', async () => {
      const { store, commits } = await open(newDatabase());
      const alice = await addUser(store, 'alice');
      const ticket = token(alice);
      const session = token(alice);
      expect(await store.insertTicket(ticket)).toBe(true);
      expect(await store.insertSession(session, { passwordHash: 'hash-of-alice' })).toBe(true);
      commits.length = 0;
      const limits = { windowMs: 900_000, maxDelayMs: 900_000, pairMaxAttempts: 5, pairBaseDelayMs: 30_000, loginMaxAttempts: 100, sourceMaxFailures: 50, knownSourceMs: 86_400_000 };
      const attempt = { loginHash: newHash(), source: '192.0.2.9', now: at(1) };
      const results = await Promise.all([
        store.consumeTicket(ticket.tokenHash, at(1)),
        store.consumeTicket(ticket.tokenHash, at(1)), // single use, in the same commit too
        store.touchToken(session.tokenHash, at(60_000)),
        store.reserveLoginAttempt(attempt, limits),
        store.insertTicket(token(alice)),
      ]);
      expect(results).toEqual([true, false, undefined, { granted: true }, true]);
      expect(commits).toEqual([5]);
      expect((await store.findToken(session.tokenHash))?.lastUsedAt).toEqual(at(60_000));
      await Promise.all([store.recordLoginFailure(attempt, limits), store.reserveLoginAttempt(attempt, limits)]);
      expect(commits).toEqual([5, 2]);
      expect((await store.loginThrottleState({ loginHash: attempt.loginHash, now: at(2), knownSince: T0, limit: 5 })).pairs).toMatchObject([{ count: 1, inflight: 1 }]);
    });
  });
}
