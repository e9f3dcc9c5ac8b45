/**
 * PostgreSQL's news (NewsStore): what editors write, and the snapshot WhatsNew serves, read with
 * the news revision in one statement.
 */
import type { NewNews, NewsStore, PublishedNewsQuery, PublishedNewsSnapshot } from '../store.js';
import { encodeNewsAttributes, type Row } from '../row-mapping.js';
import { toPublishedNewsSnapshot } from '../news-snapshot.js';
import { revisionValue } from '../revisions.js';
import { NEWS_COLUMNS, postgresValues, SQL } from '../shared-sql.js';
import { one, type PostgresContext } from './postgres-context.js';
import { toNews } from './postgres-row-mapping.js';

/** The named values of the news INSERTs (shared-sql.ts). */
function newsParams(news: NewNews): Row {
  return {
    appId: news.appId, language: news.language, title: news.title, body: news.body, url: news.url, publishedAt: news.publishedAt,
    expiresAt: news.expiresAt, minVersion: news.minVersion, maxVersion: news.maxVersion, membersOnly: news.membersOnly,
    attributes: encodeNewsAttributes(news.attributes), createdAt: news.createdAt,
  };
}

export function postgresNews(ctx: PostgresContext): NewsStore {
  const { q, run, tx } = ctx;

  /**
   * The rows WhatsNew may show (visible) and the scheduled ones, which only say when that set
   * changes (news-snapshot.ts), with the news revision. One statement, so one snapshot: the
   * revision names exactly the state the rows come from. The outer join yields one row of nulls
   * (news_id null) when no news matches, so the revision always comes back.
   */
  async function newsSnapshot(query: PublishedNewsQuery): Promise<PublishedNewsSnapshot> {
    const result = await q('news_snapshot', `SELECT r.revision, n.* FROM news_revision r LEFT JOIN LATERAL (
        SELECT ${NEWS_COLUMNS}, published_at <= $3 AS visible FROM news
        WHERE app_id = $1 AND language = ANY($2::text[]) AND (expires_at IS NULL OR expires_at > $3)
          AND (NOT members_only OR $4::boolean)
      ) n ON true
      ORDER BY n.published_at DESC, n.news_id DESC`, [query.appId, [...query.languages], query.now, query.includeMembersOnly], true);
    const rows = result.rows.filter((r) => r.news_id !== null);
    return toPublishedNewsSnapshot(rows, revisionValue(result.rows[0]?.revision, 'news_revision'), toNews, (v) => v === true);
  }

  return {
    async insertNews(news: NewNews) {
      const row = one(await run('insert_news', SQL.insertNews, newsParams(news)));
      if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
      return toNews(row);
    },
    async insertNewsWithId(newsId: number, news: NewNews) {
      return tx(async (client) => {
        // The identity first moves past the id, so no insertNews from now on can be handed it.
        await client.query(`SELECT setval(s.seq, GREATEST($1::bigint, pg_sequence_last_value(s.seq)))
          FROM (SELECT pg_get_serial_sequence('news', 'news_id')::regclass AS seq) s`, [newsId]);
        const row = one(await client.query<Row>(`INSERT INTO news (news_id, app_id, language, title, body, url, published_at, expires_at, min_version, max_version, members_only, attributes, created_at)
          OVERRIDING SYSTEM VALUE VALUES ($13, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
          ON CONFLICT (news_id) DO NOTHING RETURNING ${NEWS_COLUMNS}`, [...postgresValues(SQL.insertNews, newsParams(news)), newsId])); // insertNews' $1..$12, then the id
        return row === undefined ? null : toNews(row);
      });
    },
    async listNews(filter) {
      return (await run('list_news', SQL.listNews, { appId: filter?.appId ?? null }, true)).rows.map(toNews);
    },
    async findPublishedNews(query: PublishedNewsQuery) {
      return (await newsSnapshot(query)).rows;
    },
    async publishedNewsSnapshot(query: PublishedNewsQuery) {
      return newsSnapshot(query);
    },
    async getNews(newsId) {
      const row = one(await run('get_news', SQL.getNews, { newsId }, true));
      return row === undefined ? null : toNews(row);
    },
    async deleteNews(newsId) {
      return (await run(null, SQL.deleteNews, { newsId })).rowCount === 1;
    },
    async updateNews(newsId, u) {
      const row = one(await run(null, SQL.updateNews, {
        newsId, language: u.language, title: u.title, body: u.body, url: u.url, publishedAt: u.publishedAt, expiresAt: u.expiresAt,
        minVersion: u.minVersion, maxVersion: u.maxVersion, membersOnly: u.membersOnly, attributes: encodeNewsAttributes(u.attributes),
      }));
      return row === undefined ? null : toNews(row);
    },
  };
}
