import type { StoreRevisions } from './store.js';

const MIGRATION = { news_revision: 5, access_revision: 6 } as const;

/**
 * A revision as read from its single row (news_revision, migration 5; access_revision,
 * migration 6). A missing row (deleted by hand) would leave the triggers bumping nothing, so
 * kept answers could go stale: that database is broken, and reads reject rather than answer from it.
 */
export function revisionValue(value: unknown, table: keyof typeof MIGRATION): number {
  const revision = value === null || value === undefined ? Number.NaN : Number(value);
  if (!Number.isSafeInteger(revision)) {
    throw new Error(`the ${table} row is missing or damaged (schema migration ${MIGRATION[table]}); restore it before serving`);
  }
  return revision;
}

/** Both revisions from one read (Store.revisions). */
export function toStoreRevisions(news: unknown, access: unknown): StoreRevisions {
  return { news: revisionValue(news, 'news_revision'), access: revisionValue(access, 'access_revision') };
}
