/**
 * The world of the token-memory tests (src/domain/access-cache.ts), shared by the SQLite tests
 * (test/domain/access-cache.test.ts) and the PostgreSQL ones (test/domain/postgres-access-cache.test.ts):
 * a store with two users and two applications, a service whose store reads are counted, and the
 * differential check of the memory against no memory.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import type { AuthService } from '../../src/domain/auth-service.js';
import type { LegacyTokenPassthrough } from '../../src/domain/legacy-token-passthrough.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { counterRandom, ctx, fakeClock, fakeHasher, HOUR, MINUTE, seededRandom, type FakeClock } from './domain-fakes.js';

export const PORTAL = 5; // sliding: 30 minutes idle timeout
export const LOGINS = ['alice', 'bob'];

/** Counts the store reads the memory exists to avoid. */
export function countingStore(store: Store, revisionsDelayMs = 0): { store: Store; revisionReads: () => number; tokenReads: () => number } {
  let revisionReads = 0;
  let tokenReads = 0;
  const counted: Store = {
    ...store,
    revisions: async () => {
      revisionReads++;
      const revisions = await store.revisions();
      if (revisionsDelayMs > 0) await sleep(revisionsDelayMs); // a slow round trip: the value is as of its start
      return revisions;
    },
    // The turn's read with the tokens the memory does not hold (revision-gate.ts): one revisions
    // read, and a token read per hash.
    revisionsWithTokens: async (hashes) => {
      revisionReads++;
      tokenReads += hashes.length;
      const read = await store.revisionsWithTokens(hashes);
      if (revisionsDelayMs > 0) await sleep(revisionsDelayMs);
      return read;
    },
    findToken: async (hash) => {
      tokenReads++;
      return store.findToken(hash);
    },
    findOrderedTicket: async (key) => {
      tokenReads++;
      return store.findOrderedTicket(key);
    },
  };
  return { store: counted, revisionReads: () => revisionReads, tokenReads: () => tokenReads };
}

export interface World {
  store: Store;
  clock: FakeClock;
  admin: AdminService;
  service: AuthService;
  revisionReads: () => number;
  tokenReads: () => number;
  close(): Promise<void>;
}

export async function must<T>(result: Promise<{ ok: true; value: T } | { ok: false; message: string }>): Promise<T> {
  const r = await result;
  if (!r.ok) throw new Error(r.message);
  return r.value;
}

export async function makeWorld(url: string, options: { tokenCacheEntries?: number; sessionMemoryEntries?: number; revisionsDelayMs?: number; legacyTokens?: LegacyTokenPassthrough } = {}): Promise<World> {
  const store = await openStore(url);
  const clock = fakeClock();
  const hasher = fakeHasher();
  const admin = createAdminService({ store, hasher, clock });
  const counting = countingStore(store, options.revisionsDelayMs);
  const service = createAuthService({
    store: counting.store, hasher, clock, random: counterRandom(),
    ...(options.tokenCacheEntries !== undefined && { tokenCacheEntries: options.tokenCacheEntries }),
    ...(options.sessionMemoryEntries !== undefined && { sessionMemoryEntries: options.sessionMemoryEntries }),
    ...(options.legacyTokens !== undefined && { legacyTokens: options.legacyTokens }),
  });
  await must(admin.addApplication({ appId: PORTAL, name: 'Portal', requireIp: false, loginUrl: 'https://portal.example/in', tokenLifetimeSeconds: 8 * 3600, idleTimeoutSeconds: 30 * 60, defaultLanguage: 'en' }));
  for (const login of LOGINS) await must(admin.addUser({ login, password: 'pw', appIds: [2, PORTAL] }));
  return { store, clock, admin, service, revisionReads: counting.revisionReads, tokenReads: counting.tokenReads, close: () => store.close() };
}

export async function login(service: AuthService, appId = 2, who = 'alice'): Promise<string> {
  const outcome = await service.validateUser({ login: who, password: 'pw', appId, ipAddress: null }, ctx);
  if (!outcome.ok) throw new Error('login failed');
  return outcome.token;
}

export const valid = async (w: World, token: string): Promise<boolean> => (await w.service.validateUserToken(token, ctx)).valid;

/**
 * `steps` random logins, revocations, disabled users and applications, grants and clock moves on
 * the database at `dbUrl`, written through this service's store or another connection; after each,
 * ValidateUserToken with the memory, with a tiny memory, with the records alone and without any
 * must give the same answers, with and without the owner.
 */
export async function accessCacheDifferential(dbUrl: string, steps: number): Promise<void> {
  const cached = await makeWorld(dbUrl);
  const writerStore = await openStore(dbUrl);
  const writer = createAdminService({ store: writerStore, hasher: fakeHasher(), clock: cached.clock });
  const reference = createAuthService({ store: cached.store, hasher: fakeHasher(), clock: cached.clock, random: counterRandom(), tokenCacheEntries: 0 });
  const tiny = createAuthService({ store: cached.store, hasher: fakeHasher(), clock: cached.clock, random: counterRandom(), tokenCacheEntries: 2, sessionMemoryEntries: 3 });
  // The records alone, as before the session memory (and as an operator may run it).
  const recordsOnly = createAuthService({ store: cached.store, hasher: fakeHasher(), clock: cached.clock, random: counterRandom(), sessionMemoryEntries: 0 });
  try {
    const rnd = seededRandom(11);
    const tokens: string[] = ['garbage', '00000000-0000-0000-0000-000000000000'];
    let positives = 0;
    for (let step = 0; step < steps; step++) {
      const action = rnd.int(14);
      const who = rnd.pick(LOGINS);
      const appId = rnd.pick([2, 2, PORTAL]);
      const admin = rnd.int(2) === 0 ? writer : cached.admin; // another connection, or this one
      if (action < 3) {
        const outcome = await cached.service.validateUser({ login: who, password: 'pw', appId, ipAddress: null }, ctx);
        if (outcome.ok) tokens.push(outcome.token);
      } else if (action === 3) {
        await must(admin.revokeTokens(rnd.int(5) === 0 ? { all: true } : { login: who }));
      } else if (action === 4) {
        await must(admin.setUserEnabled(who, rnd.int(3) !== 0));
      } else if (action === 5) {
        await must(admin.updateApplication(appId, { enabled: rnd.int(3) !== 0 }));
      } else if (action === 6) {
        await (rnd.int(2) === 0 ? admin.grantApplication(who, appId) : admin.revokeApplication(who, appId));
      } else if (action === 7) {
        cached.clock.advance(rnd.pick([1, MINUTE, 20 * MINUTE, 4 * HOUR]));
      } else if (action === 8 && rnd.int(3) === 0) {
        await must(admin.updateApplication(2, { idleTimeoutSeconds: rnd.pick([null, null, 60 * 60]) }));
      } else if (action === 9 && rnd.int(3) === 0) {
        await must(admin.changePassword(who, 'pw'));
      } else if (action === 10 && rnd.int(2) === 0) {
        // Housekeeping: rows expired by this clock go without moving the revision (migration 13).
        await writerStore.purgeExpiredTokens(cached.clock.now(), 1000);
      }
      for (let q = 0; q < 4; q++) {
        const token = rnd.pick(tokens);
        const label = `step ${step}: token #${tokens.indexOf(token)}`;
        const expected = await reference.validateUserToken(token, ctx);
        expect(await cached.service.validateUserToken(token, ctx), label).toEqual(expected);
        expect(await tiny.validateUserToken(token, ctx), label).toEqual(expected);
        expect(await recordsOnly.validateUserToken(token, ctx), label).toEqual(expected);
        // The owner is read with the row, never from the session memory.
        expect(await cached.service.validateUserToken(token, ctx, { owner: true }), label).toEqual(await reference.validateUserToken(token, ctx, { owner: true }));
        if (expected.valid) positives++;
      }
    }
    expect(positives).toBeGreaterThan(20); // the sequence exercised working tokens, not only refusals
  } finally {
    await writerStore.close();
    await cached.close();
  }
}

/** Old-service passthrough that says no and counts how often it was asked (unknown tokens only). */
function countingPassthrough(): { passthrough: LegacyTokenPassthrough; asked: () => number } {
  let asked = 0;
  const passthrough = {
    check: async () => {
      asked++;
      return { valid: false };
    },
    loginUrl: async () => null,
  } as unknown as LegacyTokenPassthrough;
  return { passthrough, asked: () => asked };
}

/**
 * Housekeeping's purge beside the memory (migration 13): a purge of expired rows moves no
 * revision, so live tokens stay kept (no read); and a kept token that expired and was purged is
 * unknown (the old service asked), as it is without memory, not "expired" from memory.
 */
export async function housekeepingBesideMemory(freshUrl: () => string): Promise<void> {
  const w = await makeWorld(freshUrl());
  try {
    const old = await login(w.service);
    expect(await valid(w, old)).toBe(true);
    w.clock.advance(2 * 24 * HOUR); // old expired a day ago
    const live = await login(w.service, 2, 'bob');
    expect(await valid(w, live)).toBe(true);
    expect(await valid(w, live)).toBe(true); // kept from its second check
    const [revision, rows] = [(await w.store.revisions()).access, w.tokenReads()];
    expect(await w.store.purgeExpiredTokens(new Date(w.clock.now().getTime() - HOUR), 100)).toBe(1);
    expect((await w.store.revisions()).access).toBe(revision);
    for (let i = 0; i < 3; i++) expect(await valid(w, live)).toBe(true);
    expect(w.tokenReads() - rows).toBe(0);
  } finally {
    await w.close();
  }

  const legacy = countingPassthrough();
  const v = await makeWorld(freshUrl(), { legacyTokens: legacy.passthrough });
  const reference = createAuthService({ store: v.store, hasher: fakeHasher(), clock: v.clock, random: counterRandom(), tokenCacheEntries: 0, legacyTokens: legacy.passthrough });
  try {
    const token = await login(v.service);
    expect(await valid(v, token)).toBe(true);
    expect(await valid(v, token)).toBe(true); // kept
    v.clock.advance(2 * 24 * HOUR);
    expect(await v.store.purgeExpiredTokens(new Date(v.clock.now().getTime() - HOUR), 100)).toBe(1);
    expect(await valid(v, token)).toBe(false);
    expect(legacy.asked()).toBe(1);
    expect((await reference.validateUserToken(token, ctx)).valid).toBe(false);
    expect(legacy.asked()).toBe(2);
  } finally {
    await v.close();
  }
}
