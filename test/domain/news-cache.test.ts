/**
 * WhatsNew's memory (src/domain/news-cache.ts): every answer exactly what the store
 * gives now, whoever changed the news and however time passed; the same frozen object while
 * nothing changed; members-only rows only for a session checked on that very call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewNewsInput } from '../../src/domain/admin-service.js';
import type { AuthService, WhatsNewInput } from '../../src/domain/auth-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { NewNews } from '../../src/store/store.js';
import { ctx, HOUR, MINUTE, SECOND } from '../support/domain-fakes.js';
import { input, login, makeWorld, must, newsCacheDifferential, PORTAL, type World } from '../support/news-cache-world.js';

const dir = mkdtempSync(join(tmpdir(), 'svcapi-news-cache-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
let fileCounter = 0;
const freshSqlite = (): string => `sqlite:${join(dir, `db-${++fileCounter}.db`)}`;

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

describe('WhatsNew with and without the cache give the same answers (PostgreSQL: postgres-news-cache.test.ts)', () => {
  it('over random news, writes, clock moves and requests: SQLite, writes through another connection', async () => {
    await newsCacheDifferential(freshSqlite(), 400);
  }, 120_000);
});
