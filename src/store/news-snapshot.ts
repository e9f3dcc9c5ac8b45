/**
 * The one place both adapters turn the rows of their news snapshot query into a
 * PublishedNewsSnapshot (Store.publishedNewsSnapshot, Store.findPublishedNews).
 *
 * The query reads the news revision and, in the same snapshot of the database, the relevant rows
 * (application, languages, members-only filter) that have not expired at `now`, newest first,
 * each with `visible`: the database's own verdict on `published_at <= now`. Visible rows are the
 * answer; the rest are scheduled rows, needed only for when the answer changes. The verdict is
 * the database's because PostgreSQL keeps microseconds that a Date loses: comparing truncated
 * Dates here could show a row a few microseconds early.
 *
 * The change instant is the smallest expiry of a visible row or publication of a scheduled one.
 * Dates decoded from PostgreSQL are truncated to the millisecond, so it can only come out
 * earlier than the real instant: a cached answer is dropped a little too soon, never kept too long.
 */
import type { Row } from './row-mapping.js';
import type { NewsRecord, PublishedNewsSnapshot } from './store.js';

export function toPublishedNewsSnapshot(
  rows: readonly Row[],
  revision: number,
  toNews: (r: Row) => NewsRecord,
  visible: (value: unknown) => boolean,
): PublishedNewsSnapshot {
  const shown: NewsRecord[] = [];
  let changesAt: number | null = null;
  const earliest = (at: Date): void => {
    const t = at.getTime();
    if (changesAt === null || t < changesAt) changesAt = t;
  };
  for (const row of rows) {
    const record = toNews(row);
    if (visible(row.visible)) {
      shown.push(record);
      if (record.expiresAt !== null) earliest(record.expiresAt);
    } else {
      earliest(record.publishedAt);
    }
  }
  return { rows: shown, revision, changesAt: changesAt === null ? null : new Date(changesAt) };
}
