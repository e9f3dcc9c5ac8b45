/**
 * The world of the WhatsNew memory tests (src/domain/news-cache.ts), shared by the SQLite tests
 * (test/domain/news-cache.test.ts) and the PostgreSQL ones (test/domain/postgres-news-cache.test.ts):
 * a store with one user and two applications, a service whose news reads are counted, and the
 * differential check of the cache against no cache.
 */
import { expect } from 'vitest';
import { createAdminService, type AdminService } from '../../src/domain/admin-service.js';
import type { AuthService, WhatsNewInput } from '../../src/domain/auth-service.js';
import { createAuthService } from '../../src/domain/create-auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { counterRandom, ctx, fakeClock, fakeHasher, MINUTE, seededRandom, type FakeClock } from './domain-fakes.js';

export const PORTAL = 5;

/** Counts the store reads the cache exists to avoid. */
export function countingStore(store: Store): { store: Store; loads: () => number } {
  let loads = 0;
  const counted: Store = {
    ...store,
    findPublishedNews: async (query) => {
      loads++;
      return store.findPublishedNews(query);
    },
    publishedNewsSnapshot: async (query) => {
      loads++;
      return store.publishedNewsSnapshot(query);
    },
  };
  return { store: counted, loads: () => loads };
}

export interface World {
  url: string;
  store: Store;
  clock: FakeClock;
  admin: AdminService;
  service: AuthService;
  loads: () => number;
}

export async function must<T>(result: Promise<{ ok: true; value: T } | { ok: false; message: string }>): Promise<T> {
  const r = await result;
  if (!r.ok) throw new Error(r.message);
  return r.value;
}

export async function makeWorld(url: string, options: { newsCacheEntries?: number } = {}): Promise<World> {
  const store = await openStore(url);
  const clock = fakeClock();
  const hasher = fakeHasher();
  const admin = createAdminService({ store, hasher, clock });
  const counting = countingStore(store);
  const service = createAuthService({ store: counting.store, hasher, clock, random: counterRandom(), ...options });
  await must(admin.addApplication({ appId: PORTAL, name: 'Portal', requireIp: false, loginUrl: null, tokenLifetimeSeconds: 8 * 3600, idleTimeoutSeconds: 30 * 60, defaultLanguage: 'pt-BR' }));
  await must(admin.addUser({ login: 'alice', password: 'pw', appIds: [2, PORTAL] }));
  return { url, store, clock, admin, service, loads: counting.loads };
}

export async function login(service: AuthService, appId: number): Promise<string> {
  const outcome = await service.validateUser({ login: 'alice', password: 'pw', appId, ipAddress: null }, ctx);
  if (!outcome.ok) throw new Error('login failed');
  return outcome.token;
}

export const input = (overrides: Partial<WhatsNewInput> = {}): WhatsNewInput => ({ appToken: null, appId: 2, appVersion: null, language: null, qtyNews: 100, ...overrides });

/** A small deterministic generator, so a failing sequence can be replayed. */
const LANGUAGES = ['en', 'pt', 'pt-BR', 'de', 'fr'];
const ASKED_LANGUAGES = ['en', 'pt-BR', 'pt-br', 'pt-PT', 'pt', 'de-AT', 'fr', '', null, 'xx', '@@'];
const VERSIONS = [null, '1', '2', '2.5', '2.10', '3'];
const ASKED_VERSIONS = [null, '', '1', '2.5', '2.5.0', '2.10', '3.0 (build 7)', '10', 'abc', '2.9-beta'];
const QUANTITIES = [0, 1, 2, 3, 5, 100, 1000, -1];

/**
 * `steps` random news inserts and deletions through another connection, clock moves (to the
 * edge of a row's publication or expiry) and default-language changes on the database at
 * `dbUrl`; after each, WhatsNew with the cache, a tiny cache and none must give the same answers.
 */
export async function newsCacheDifferential(dbUrl: string, steps: number): Promise<void> {
  const cached = await makeWorld(dbUrl);
  const writer = await openStore(dbUrl);
  const store = cached.store;
  const clock = cached.clock;
  const hasher = fakeHasher();
  const reference = createAuthService({ store, hasher, clock, random: counterRandom(), newsCacheEntries: 0 });
  const tiny = createAuthService({ store, hasher, clock, random: counterRandom(), newsCacheEntries: 3 });
  try {
    const rnd = seededRandom(9);
    const tokens = [null, 'garbage', await login(cached.service, 2), await login(cached.service, PORTAL)];
    const ids: number[] = [];
    const boundaries: number[] = [];
    for (let step = 0; step < steps; step++) {
      const action = rnd.int(10);
      const now = clock.now().getTime();
      if (action < 3) {
        const publishedAt = now + (rnd.int(5) - 3) * 20 * MINUTE + rnd.int(3);
        const expiresAt = rnd.int(3) === 0 ? null : publishedAt + (rnd.int(6) + 1) * 15 * MINUTE;
        const created = await writer.insertNews({
          appId: rnd.pick([2, 2, PORTAL]), language: rnd.pick(LANGUAGES), title: `t${step}`, body: rnd.pick(['b', '<&>']), url: rnd.pick([null, 'https://x.example/']),
          publishedAt: new Date(publishedAt), expiresAt: expiresAt === null ? null : new Date(expiresAt),
          minVersion: rnd.pick(VERSIONS), maxVersion: rnd.pick([null, null, '2.5', '3']), membersOnly: rnd.int(4) === 0, createdAt: new Date(now),
        });
        ids.push(created.newsId);
        boundaries.push(publishedAt);
        if (expiresAt !== null) boundaries.push(expiresAt);
      } else if (action === 3 && ids.length > 0) {
        await writer.deleteNews(ids.splice(rnd.int(ids.length), 1)[0] ?? 0);
      } else if (action === 4 && boundaries.length > 0) {
        // Right at, or just before, some row's publication or expiry.
        clock.set(new Date(rnd.pick(boundaries) - rnd.int(2)));
      } else if (action === 5) {
        clock.advance(rnd.int(40) * MINUTE);
      } else if (action === 6 && rnd.int(4) === 0) {
        await writer.updateApplication(PORTAL, { defaultLanguage: rnd.pick(LANGUAGES) }, new Date(now));
      }
      for (let q = 0; q < 4; q++) {
        const request = input({
          appToken: rnd.pick(tokens), appId: rnd.pick([2, 2, PORTAL, 404]), appVersion: rnd.pick(ASKED_VERSIONS),
          language: rnd.pick(ASKED_LANGUAGES), qtyNews: rnd.pick(QUANTITIES),
        });
        const expected = await reference.whatsNew(request, ctx);
        const label = `step ${step}: ${JSON.stringify(request)}`;
        const answer = await cached.service.whatsNew(request, ctx);
        expect(answer, label).toEqual(expected);
        expect(Object.isFrozen(answer), label).toBe(true);
        expect(await tiny.whatsNew(request, ctx), label).toEqual(expected);
      }
    }
  } finally {
    await writer.close();
    await store.close();
  }
}
