/**
 * WhatsNew's memory (issue 9, src/domain/news-cache.ts): every answer exactly what the store
 * gives now, whoever changed the news and however time passed; the same frozen object while
 * nothing changed; members-only rows only for a session checked on that very call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuthService } from '../../src/domain/service.js';
import { createAdminService, type AdminService, type NewNewsInput } from '../../src/domain/admin-service.js';
import type { AuthService, WhatsNewInput } from '../../src/domain/auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { NewNews, Store } from '../../src/store/store.js';
import { counterRandom, ctx, fakeClock, fakeHasher, HOUR, MINUTE, SECOND, seededRandom, type FakeClock } from '../support/domain-fakes.js';
import { dropSchemas, newSchemaName, postgresForTests, schemaUrl } from '../support/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-news-cache-'));
const pgAdmin = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (pgAdmin !== null) await dropSchemas(schemas);
});
let fileCounter = 0;
const freshSqlite = (): string => `sqlite:${join(dir, `db-${++fileCounter}.db`)}`;
const freshPostgres = (): string => {
  const schema = newSchemaName();
  schemas.push(schema);
  return schemaUrl(schema);
};

const PORTAL = 5;

/** Counts the store reads the cache exists to avoid. */
function countingStore(store: Store): { store: Store; loads: () => number } {
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

interface World {
  url: string;
  store: Store;
  clock: FakeClock;
  admin: AdminService;
  service: AuthService;
  loads: () => number;
}

async function must<T>(result: Promise<{ ok: true; value: T } | { ok: false; message: string }>): Promise<T> {
  const r = await result;
  if (!r.ok) throw new Error(r.message);
  return r.value;
}

async function makeWorld(url: string, options: { newsCacheEntries?: number } = {}): Promise<World> {
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

async function login(service: AuthService, appId: number): Promise<string> {
  const outcome = await service.validateUser({ login: 'alice', password: 'pw', appId, ipAddress: null }, ctx);
  if (!outcome.ok) throw new Error('login failed');
  return outcome.token;
}

const input = (overrides: Partial<WhatsNewInput> = {}): WhatsNewInput => ({ appToken: null, appId: 2, appVersion: null, language: null, qtyNews: 100, ...overrides });

describe('WhatsNew news cache', () => {
  let w: World;
  const ask = (overrides: Partial<WhatsNewInput> = {}): ReturnType<AuthService['whatsNew']> => w.service.whatsNew(input(overrides), ctx);
  const titles = async (overrides: Partial<WhatsNewInput> = {}): Promise<string[]> => (await ask(overrides)).map((n) => n.title);
  const news = (item: Partial<NewNewsInput> & { title: string }): Promise<unknown> => must(w.admin.addNews({ appId: 2, body: 'b', ...item }));

  beforeEach(async () => {
    w = await makeWorld(freshSqlite());
  });
  afterEach(async () => {
    await w.store.close();
  });

  it('answers with the same frozen array while nothing changes, reading the rows once', async () => {
    for (let i = 0; i < 100; i++) await news({ title: `n${i}`, publishedAt: new Date(w.clock.now().getTime() - i * SECOND) });
    const first = await ask();
    expect(first).toHaveLength(100);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.every((item) => Object.isFrozen(item))).toBe(true);
    const loads = w.loads();
    for (let i = 0; i < 10; i++) expect(await ask()).toBe(first);
    // Another version or limit is another answer, drawn from the same rows without reading them again.
    expect(await ask({ qtyNews: 3 })).toEqual(first.slice(0, 3));
    expect(await ask({ appVersion: '2.5' })).toEqual(first);
    expect(w.loads()).toBe(loads);
    // AppVersions that read as the same version share the answer.
    expect(await ask({ appVersion: '2.5.0 (build 7)' })).toBe(await ask({ appVersion: '2.5' }));
    // Every empty answer is one object.
    expect(await ask({ qtyNews: 0 })).toBe(await ask({ appId: 404 }));
  });

  it('sees news added and removed through the admin service on the very next call', async () => {
    await news({ title: 'one' });
    expect(await titles()).toEqual(['one']);
    w.clock.advance(SECOND);
    await news({ title: 'two' });
    expect(await titles()).toEqual(['two', 'one']);
    const [latest] = await ask();
    await must(w.admin.removeNews(latest?.newsId ?? 0));
    expect(await titles()).toEqual(['one']);
  });

  it('sees news written through another connection to the database on the very next call, raw SQL included', async () => {
    const path = w.url.slice('sqlite:'.length);
    const other = await openStore(w.url);
    const raw = new Database(path);
    try {
      await news({ title: 'mine' });
      expect(await titles()).toEqual(['mine']);
      const theirs: NewNews = {
        appId: 2, language: 'en', title: 'theirs', body: 'b', url: null, publishedAt: w.clock.now(), expiresAt: null,
        minVersion: null, maxVersion: null, membersOnly: false, createdAt: w.clock.now(),
      };
      const inserted = await other.insertNews(theirs);
      expect(await titles()).toEqual(['theirs', 'mine']);
      raw.prepare("UPDATE news SET title = 'edited by hand' WHERE news_id = ?").run(inserted.newsId);
      expect(await titles()).toEqual(['edited by hand', 'mine']);
      raw.prepare("UPDATE news SET language = 'de' WHERE title = 'mine'").run();
      expect(await titles()).toEqual(['edited by hand']);
      expect(await titles({ language: 'de' })).toEqual(['mine']);
      await other.deleteNews(inserted.newsId);
      expect(await titles()).toEqual([]);
    } finally {
      raw.close();
      await other.close();
    }
  });

  it('shows a scheduled row exactly from its publication time, and an expiring row exactly until its expiry', async () => {
    const now = w.clock.now().getTime();
    await news({ title: 'live', publishedAt: new Date(now - HOUR) });
    await news({ title: 'scheduled', publishedAt: new Date(now + HOUR) });
    await news({ title: 'expiring', publishedAt: new Date(now - 2 * HOUR), expiresAt: new Date(now + 2 * HOUR) });
    await news({ title: 'members, scheduled', publishedAt: new Date(now + 30 * MINUTE), membersOnly: true });
    expect(await titles()).toEqual(['live', 'expiring']);
    w.clock.set(new Date(now + HOUR - 1));
    expect(await titles()).toEqual(['live', 'expiring']);
    w.clock.set(new Date(now + HOUR));
    expect(await titles()).toEqual(['scheduled', 'live', 'expiring']);
    w.clock.set(new Date(now + 2 * HOUR - 1));
    expect(await titles()).toEqual(['scheduled', 'live', 'expiring']);
    w.clock.set(new Date(now + 2 * HOUR));
    expect(await titles()).toEqual(['scheduled', 'live']);
    // A clock set back (NTP step) is not answered from rows read later.
    w.clock.set(new Date(now));
    expect(await titles()).toEqual(['live', 'expiring']);
  });

  it('shows members-only rows only for a token checked valid on that very call', async () => {
    await news({ title: 'public' });
    await news({ title: 'members', membersOnly: true });
    const token = await login(w.service, 2);
    const portalToken = await login(w.service, PORTAL);
    expect(await titles({ appToken: token })).toEqual(['members', 'public']);
    expect(await titles({ appToken: token })).toEqual(['members', 'public']);
    expect(await titles({ appToken: portalToken })).toEqual(['public']);
    expect(await titles({ appToken: 'garbage' })).toEqual(['public']);
    await must(w.admin.revokeTokens({ login: 'alice' }));
    expect(await titles({ appToken: token })).toEqual(['public']);
    const again = await login(w.service, 2);
    expect(await titles({ appToken: again })).toEqual(['members', 'public']);
    await must(w.admin.revokeApplication('alice', 2));
    expect(await titles({ appToken: again })).toEqual(['public']);
  });

  it('follows the application on the very next call: disabled, enabled, default language changed', async () => {
    await news({ title: 'en' });
    await news({ title: 'pt', language: 'pt' });
    expect(await titles({ language: 'fr' })).toEqual(['en']);
    await must(w.admin.updateApplication(2, { enabled: false }));
    expect(await ask()).toEqual([]);
    await must(w.admin.updateApplication(2, { enabled: true }));
    expect(await titles({ language: 'fr' })).toEqual(['en']);
    await must(w.admin.updateApplication(2, { defaultLanguage: 'pt' }));
    expect(await titles({ language: 'fr' })).toEqual(['pt']);
  });
});

/** A small deterministic generator, so a failing sequence can be replayed. */
const LANGUAGES = ['en', 'pt', 'pt-BR', 'de', 'fr'];
const ASKED_LANGUAGES = ['en', 'pt-BR', 'pt-br', 'pt-PT', 'pt', 'de-AT', 'fr', '', null, 'xx', '@@'];
const VERSIONS = [null, '1', '2', '2.5', '2.10', '3'];
const ASKED_VERSIONS = [null, '', '1', '2.5', '2.5.0', '2.10', '3.0 (build 7)', '10', 'abc', '2.9-beta'];
const QUANTITIES = [0, 1, 2, 3, 5, 100, 1000, -1];

const backends: { name: string; url: (() => string) | null }[] = [
  { name: 'SQLite, writes through another connection', url: freshSqlite },
  { name: 'PostgreSQL, writes through another pool', url: pgAdmin === null ? null : freshPostgres },
];

describe.each(backends)('WhatsNew with and without the cache give the same answers: $name', ({ url }) => {
  it.skipIf(url === null)('over random news, writes, clock moves and requests', async () => {
    const dbUrl = (url ?? freshSqlite)();
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
      for (let step = 0; step < (url === freshSqlite ? 400 : 150); step++) {
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
  }, 120_000);
});
