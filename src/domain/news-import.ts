/**
 * News import from a legacy service (`svcapi-auth news import --from-legacy URL` or `--csv FILE`):
 * items as the legacy's WhatsNew showed them, read back through the compatibility profile's
 * columns (src/wire/news-row-reader.ts turns cell text into NewsFacts, defined in
 * contract/compat-profile.ts), stored with their own values so that our WhatsNew gives the same
 * rows for the same question.
 *
 * The rules of the operator's `news add` apply (an item the service would refuse to add is
 * skipped, with the reason), except that text is kept exactly as the legacy had it (no trimming):
 * the goal is the same bytes.
 *
 * Idempotent. The key of an item is, when a profile column shows `newsId`, the legacy's NewsID
 * itself: the item is stored under that id (clients see it), and an id already present is
 * "already imported" when it holds the same item (application, title, publication time), else
 * reported as taken. Without such a column, the key is the natural one of `svcapi-auth import`:
 * application, language, title and publication time.
 */
import type { NewsFacts } from '../contract/compat-profile.js';
import type { NewNews, NewsRecord, NewsStore } from '../store/store.js';
import { canonicalLanguage } from './languages.js';
import { checkLoginUrl } from './login-url.js';
import { checkNewsAttributes, xmlCarries } from './news-attributes.js';
import { compareVersions, parseVersion } from './versions.js';

export interface NewsImportContext {
  /** --app: every item is stored for this application (a row naming another is skipped). */
  readonly appId: number;
  /** When no column gives the language: the one asked (canonical), else the application's default. */
  readonly language: string;
  /** Whether a profile column shows newsId: then the legacy's NewsID is the key (see above). */
  readonly keyedByNewsId: boolean;
  readonly now: Date;
}

export interface NewsImportReport {
  added: number;
  /** Already imported (same key, same item). */
  alreadyPresent: number;
  /** Not importable: by reason, with how many rows. */
  readonly skipped: Map<string, number>;
  /** Imported, but worth knowing (a language tag stored in canonical form, a constant that differed), by note. */
  readonly notes: Map<string, number>;
}

export function emptyNewsImportReport(): NewsImportReport {
  return { added: 0, alreadyPresent: 0, skipped: new Map(), notes: new Map() };
}

const count = (map: Map<string, number>, key: string): void => {
  map.set(key, (map.get(key) ?? 0) + 1);
};

/** The row as a news item to store, or why it cannot be one. */
export function newsFromFacts(facts: NewsFacts, ctx: NewsImportContext): { ok: true; newsId: number | null; news: NewNews; notes: string[] } | { ok: false; reason: string } {
  if (facts.unreadable.length > 0) return { ok: false, reason: `unreadable cell ${facts.unreadable[0] ?? ''}` };
  if (ctx.keyedByNewsId && (facts.newsId === undefined || facts.newsId < 1)) return { ok: false, reason: 'no NewsID (1 or more) in the row' };
  if (facts.appId !== undefined && facts.appId !== ctx.appId) return { ok: false, reason: `the row is for AppID ${facts.appId}, not ${ctx.appId}` };
  const title = facts.title ?? '';
  if (title.trim() === '' || title.length > 500) return { ok: false, reason: 'the title must be 1 to 500 characters' };
  const body = facts.body ?? '';
  if (!xmlCarries(title) || !xmlCarries(body)) return { ok: false, reason: 'the title or body holds a character XML cannot carry' };
  const notes: string[] = [];
  const given = facts.language ?? ctx.language;
  const language = canonicalLanguage(given);
  if (language === null) return { ok: false, reason: `not a language tag: ${JSON.stringify(given.slice(0, 40))}` };
  if (language !== given) notes.push(`language ${JSON.stringify(given.slice(0, 40))} stored as ${language}: WhatsNew writes ${language}`);
  const url = facts.url === undefined || facts.url === '' ? null : facts.url;
  if (url !== null && checkLoginUrl(url) !== null) return { ok: false, reason: 'the link is not an absolute http(s) URL' };
  if (facts.publishedAt === undefined) return { ok: false, reason: 'no publication date' };
  const expiresAt = facts.expiresAt ?? null;
  if (expiresAt !== null && expiresAt.getTime() <= facts.publishedAt.getTime()) return { ok: false, reason: 'the expiry is not after the publication date' };
  const min = facts.minVersion === undefined || facts.minVersion === '' ? null : facts.minVersion;
  const max = facts.maxVersion === undefined || facts.maxVersion === '' ? null : facts.maxVersion;
  const minParsed = min === null ? null : parseVersion(min);
  const maxParsed = max === null ? null : parseVersion(max);
  if ((min !== null && minParsed === null) || (max !== null && maxParsed === null)) return { ok: false, reason: 'a version is not dotted numbers' };
  if (minParsed && maxParsed && compareVersions(minParsed, maxParsed) > 0) return { ok: false, reason: 'the minimum version is above the maximum' };
  const problem = checkNewsAttributes(facts.attributes);
  if (problem !== null) return { ok: false, reason: problem };
  for (const column of facts.constantsDiffering) notes.push(`column ${column} differs from the profile's constant: WhatsNew writes the constant`);
  return {
    ok: true,
    newsId: ctx.keyedByNewsId ? (facts.newsId ?? null) : null,
    news: {
      appId: ctx.appId, language, title, body, url, publishedAt: facts.publishedAt, expiresAt, minVersion: min, maxVersion: max,
      membersOnly: facts.membersOnly ?? false, attributes: facts.attributes, createdAt: ctx.now,
    },
    notes,
  };
}

const naturalKey = (n: { appId: number; language: string; title: string; publishedAt: Date }): string => JSON.stringify([n.appId, n.language, n.title, n.publishedAt.getTime()]);
const sameItem = (a: NewsRecord, b: NewNews): boolean => a.appId === b.appId && a.title === b.title && a.publishedAt.getTime() === b.publishedAt.getTime();

/** Stores the rows (in order) into `report`; rows already imported (by key) are counted, not stored again. */
export async function importNewsFacts(store: NewsStore, rows: readonly NewsFacts[], ctx: NewsImportContext, report: NewsImportReport): Promise<void> {
  const existing = ctx.keyedByNewsId ? null : new Set((await store.listNews({ appId: ctx.appId })).map(naturalKey));
  for (const facts of rows) {
    const item = newsFromFacts(facts, ctx);
    if (!item.ok) {
      count(report.skipped, item.reason);
      continue;
    }
    for (const note of item.notes) count(report.notes, note);
    if (item.newsId !== null) {
      if (await store.insertNewsWithId(item.newsId, item.news)) {
        report.added++;
        continue;
      }
      const holder = await store.getNews(item.newsId);
      if (holder !== null && sameItem(holder, item.news)) report.alreadyPresent++;
      else count(report.skipped, 'its NewsID is taken by another news item here');
      continue;
    }
    const key = naturalKey(item.news);
    if (existing?.has(key) === true) {
      report.alreadyPresent++;
      continue;
    }
    await store.insertNews(item.news);
    existing?.add(key);
    report.added++;
  }
}
