import type { NewsItem } from './auth-service.js';
import type { NewsRecord } from '../store/store.js';
import { versionInRange } from './versions.js';

/** The most rows WhatsNew ever returns, whatever qtyNews asks for. */
export const MAX_NEWS = 100;

/** How many rows a request may get: min(qtyNews, max); zero for 0, negatives or nonsense. */
export function newsLimit(qtyNews: number, max: number = MAX_NEWS): number {
  if (!Number.isFinite(qtyNews) || qtyNews <= 0) return 0;
  return Math.min(Math.trunc(qtyNews), max);
}

/**
 * Picks the rows to show from the published rows of an application (newest first): those whose
 * version range admits the client's version, in the first candidate language that has at least
 * one such row, at most `limit` of them. One language per answer keeps a client from getting a
 * mix of translations of the same item.
 */
export function selectNews(rows: readonly NewsRecord[], options: { candidates: readonly string[]; appVersion: string | null; limit: number }): readonly NewsRecord[] {
  if (options.limit <= 0) return [];
  const visible = rows.filter((r) => versionInRange(options.appVersion, r.minVersion, r.maxVersion));
  for (const language of options.candidates) {
    const inLanguage = visible.filter((r) => r.language === language);
    if (inLanguage.length > 0) return inLanguage.slice(0, options.limit);
  }
  return [];
}

export function toNewsItem(record: NewsRecord): NewsItem {
  return {
    newsId: record.newsId,
    appId: record.appId,
    title: record.title,
    body: record.body,
    language: record.language,
    url: record.url ?? '',
    publishedAt: record.publishedAt,
    expiresAt: record.expiresAt,
    minVersion: record.minVersion,
    maxVersion: record.maxVersion,
    membersOnly: record.membersOnly,
    // Shared by every answer holding the item: frozen like the item itself.
    attributes: Object.isFrozen(record.attributes) ? record.attributes : Object.freeze({ ...record.attributes }),
  };
}
