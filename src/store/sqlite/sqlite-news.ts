/**
 * News on SQLite: the editors' inserts, edits and listings, and what WhatsNew may show read
 * together with the news revision it is valid for.
 */
import type { NewNews, NewsStore, PublishedNewsQuery, PublishedNewsSnapshot } from '../store.js';
import { encodeNewsAttributes, type Row } from '../row-mapping.js';
import { toPublishedNewsSnapshot } from '../news-snapshot.js';
import { NEWS_COLUMNS, SQL } from '../shared-sql.js';
import { revisionValue } from '../revisions.js';
import type { SqliteContext } from './sqlite-context.js';
import { bool, ms, toNews } from './sqlite-row-mapping.js';

function newsParams(news: NewNews): Record<string, unknown> {
  return {
    appId: news.appId, language: news.language, title: news.title, body: news.body, url: news.url,
    publishedAt: ms(news.publishedAt), expiresAt: news.expiresAt === null ? null : ms(news.expiresAt),
    minVersion: news.minVersion, maxVersion: news.maxVersion, membersOnly: bool(news.membersOnly),
    attributes: encodeNewsAttributes(news.attributes), createdAt: ms(news.createdAt),
  };
}

export function sqliteNews({ db }: SqliteContext): NewsStore {
  const s = {
    insertNews: db.prepare(SQL.insertNews.sqlite),
    // AUTOINCREMENT keeps sqlite_sequence at the largest id ever used: later ids continue above it.
    insertNewsWithId: db.prepare(`INSERT INTO news (news_id, app_id, language, title, body, url, published_at, expires_at, min_version, max_version, members_only, attributes, created_at)
      VALUES (@newsId, @appId, @language, @title, @body, @url, @publishedAt, @expiresAt, @minVersion, @maxVersion, @membersOnly, @attributes, @createdAt)
      ON CONFLICT (news_id) DO NOTHING
      RETURNING ${NEWS_COLUMNS}`),
    listNews: db.prepare(SQL.listNews.sqlite),
    // The rows WhatsNew may show (visible = 1) and the scheduled ones, which only say when that
    // set changes (news-snapshot.ts).
    newsSnapshot: db.prepare(`SELECT ${NEWS_COLUMNS}, published_at <= @now AS visible FROM news
      WHERE app_id = @appId AND language IN (SELECT value FROM json_each(@languages))
        AND (expires_at IS NULL OR expires_at > @now) AND (members_only = 0 OR @members = 1)
      ORDER BY published_at DESC, news_id DESC`),
    // Bumped by triggers (migrations 5 and 6); read once per event-loop turn (revision-gate.ts).
    newsRevision: db.prepare('SELECT revision FROM news_revision WHERE id = 1').pluck(),
    getNews: db.prepare(SQL.getNews.sqlite),
    deleteNews: db.prepare(SQL.deleteNews.sqlite),
    updateNews: db.prepare(SQL.updateNews.sqlite),
  };

  // One read transaction: in WAL mode both statements see the same snapshot of the database, so
  // the revision names exactly the state the rows come from (another process may write between).
  const newsSnapshot = db.transaction((query: PublishedNewsQuery): PublishedNewsSnapshot => {
    const revision = revisionValue(s.newsRevision.get(), 'news_revision');
    const rows = query.languages.length === 0 ? [] : s.newsSnapshot.all({
      appId: query.appId, languages: JSON.stringify(query.languages), now: ms(query.now), members: bool(query.includeMembersOnly),
    }) as Row[];
    return toPublishedNewsSnapshot(rows, revision, toNews, (v) => v === 1);
  });

  return {
    async insertNews(news: NewNews) {
      return toNews(s.insertNews.get(newsParams(news)) as Row);
    },
    async insertNewsWithId(newsId: number, news: NewNews) {
      const row = s.insertNewsWithId.get({ newsId, ...newsParams(news) }) as Row | undefined;
      return row === undefined ? null : toNews(row);
    },
    async listNews(filter) {
      return (s.listNews.all({ appId: filter?.appId ?? null }) as Row[]).map(toNews);
    },
    async findPublishedNews(query: PublishedNewsQuery) {
      return newsSnapshot(query).rows;
    },
    async publishedNewsSnapshot(query: PublishedNewsQuery) {
      return newsSnapshot(query);
    },
    async getNews(newsId) {
      const row = s.getNews.get({ newsId }) as Row | undefined;
      return row === undefined ? null : toNews(row);
    },
    async deleteNews(newsId) {
      return s.deleteNews.run({ newsId }).changes === 1;
    },
    async updateNews(newsId, u) {
      const row = s.updateNews.get({
        newsId, language: u.language, title: u.title, body: u.body, url: u.url, publishedAt: ms(u.publishedAt),
        expiresAt: u.expiresAt === null ? null : ms(u.expiresAt), minVersion: u.minVersion, maxVersion: u.maxVersion, membersOnly: bool(u.membersOnly),
        attributes: encodeNewsAttributes(u.attributes),
      }) as Row | undefined;
      return row === undefined ? null : toNews(row);
    },
  };
}
