/**
 * WhatsNew's memory. Reading and mapping every published row of an application on
 * every request cost most of a WhatsNew; the rows change rarely. So answers are kept, and a
 * kept answer is used only while it is provably the answer the store would give now:
 *
 * - The store's news revision (Store.revisions) is read for every request, after it arrived
 *   (revision-gate.ts: one single-row read serves all requests of an event-loop turn).
 *   Triggers in the database bump it on every write to the news table, whoever makes it
 *   (admin service, CLI in another process, another instance on the same PostgreSQL, raw SQL),
 *   so a change is seen by the very next request. Rows are kept with the revision read in the
 *   same database snapshot as them (Store.publishedNewsSnapshot), so the label is exact.
 * - Time changes the answer too (a scheduled row is published, a row expires): rows are kept
 *   only for [the instant they were read, the store's next change instant).
 *
 * What is kept, both bounded by `maxEntries` (least recently used forgotten first), so clients
 * sending endless languages or versions cannot grow memory:
 * - per (application, members flag, language): the visible rows of that language (a language
 *   without news costs an empty list);
 * - per (application, members flag, candidate languages, version key, limit): the answer, a
 *   frozen array of at most 100 frozen items, returned as the SAME object while the rows it was
 *   drawn from are current, so the wire layer can also keep its rendering by identity.
 *
 * Not kept here: the application and the session behind members-only rows. The caller checks
 * both on every request (through access-cache.ts, under the access revision: a disabled
 * application answers nothing at once); only the session's yes/no is part of the key.
 */
import type { NewsItem } from './auth-service.js';
import type { Clock } from './clock.js';
import type { NewsRecord, NewsStore, RevisionStore } from '../store/store.js';
import { selectNews, toNewsItem } from './news-selection.js';
import { clientVersionKey } from './versions.js';
import { recentMap } from './recent-map.js';
import { directRevisions, type RevisionGate } from './revision-gate.js';

export interface NewsQuery {
  readonly appId: number;
  /** languageCandidates(), in order of preference. */
  readonly candidates: readonly string[];
  /** Whether members-only rows may be shown: the caller checked the session on this request. */
  readonly members: boolean;
  readonly appVersion: string | null;
  /** newsLimit(qtyNews). */
  readonly limit: number;
}

export interface NewsCache {
  /** Exactly `selectNews(store.findPublishedNews(...)).map(toNewsItem)` as of now, frozen. */
  select(query: NewsQuery): Promise<readonly NewsItem[]>;
}

export interface NewsCacheOptions {
  readonly store: NewsStore & RevisionStore;
  readonly clock: Clock;
  /** Bound of each of the two memories (default 1000); 0 keeps nothing and reads the store every time. */
  readonly maxEntries?: number;
  /** Where the news revision comes from (default: one store read per call). */
  readonly revisions?: RevisionGate;
}

/** The empty answer, one object, so every empty table is the same result for the wire layer. */
export const NO_NEWS: readonly NewsItem[] = Object.freeze([]);

/** The visible rows of one language, exactly as the store had them at `revision`, for instants in [from, until). */
interface LanguageRows {
  /** Which store read produced them (ascending per cache): what an answer remembers of its rows. */
  readonly load: number;
  readonly revision: number;
  readonly from: number;
  readonly until: number;
  readonly rows: readonly NewsRecord[];
}

interface Answer {
  /**
   * The loads of the LanguageRows it was drawn from, one per candidate: it stands while each is
   * still the current one. Numbers, not the rows themselves, so an outdated answer does not keep
   * outdated rows alive: an answer holds at most `limit` items.
   */
  readonly loads: readonly number[];
  readonly items: readonly NewsItem[];
}

const drawnFrom = (answer: Answer, sources: readonly LanguageRows[]): boolean =>
  answer.loads.length === sources.length && sources.every((source, i) => source.load === answer.loads[i]);

export function createNewsCache(options: NewsCacheOptions): NewsCache {
  const { store, clock } = options;
  const gate = options.revisions ?? directRevisions(store);
  const maxEntries = Math.max(0, Math.trunc(options.maxEntries ?? 1000));

  if (maxEntries === 0) {
    // The reference behaviour, kept callable: what every cached answer must equal.
    return {
      async select(query) {
        const rows = await store.findPublishedNews({ appId: query.appId, languages: query.candidates, now: clock.now(), includeMembersOnly: query.members });
        const items = selectNews(rows, { candidates: query.candidates, appVersion: query.appVersion, limit: query.limit }).map(toNewsItem);
        return items.length === 0 ? NO_NEWS : Object.freeze(items.map((item) => Object.freeze(item)));
      },
    };
  }

  const languages = recentMap<LanguageRows>(maxEntries);
  let loads = 0;
  const answers = recentMap<Answer>(maxEntries);
  // One item per row object, shared by every answer drawn from that row; gone with the row.
  const items = new WeakMap<NewsRecord, NewsItem>();
  const itemOf = (record: NewsRecord): NewsItem => {
    let item = items.get(record);
    if (item === undefined) {
      item = Object.freeze(toNewsItem(record));
      items.set(record, item);
    }
    return item;
  };

  /** One read of every candidate language (so the answer comes from one database snapshot), kept per language. */
  async function load(query: NewsQuery, prefix: string, now: Date): Promise<LanguageRows[]> {
    const snapshot = await store.publishedNewsSnapshot({ appId: query.appId, languages: query.candidates, now, includeMembersOnly: query.members });
    const id = ++loads;
    const from = now.getTime();
    const until = snapshot.changesAt === null ? Number.POSITIVE_INFINITY : snapshot.changesAt.getTime();
    const byLanguage = new Map<string, NewsRecord[]>(query.candidates.map((language) => [language, []]));
    for (const row of snapshot.rows) byLanguage.get(row.language)?.push(row);
    return query.candidates.map((language) => {
      const entry: LanguageRows = { load: id, revision: snapshot.revision, from, until, rows: byLanguage.get(language) ?? [] };
      languages.set(prefix + language, entry);
      return entry;
    });
  }

  return {
    async select(query) {
      const revision = (await gate.current()).news;
      const now = clock.now();
      const t = now.getTime();
      const prefix = `${query.appId}|${query.members ? 'm' : 'p'}|`;
      let sources: LanguageRows[] | null = [];
      for (const language of query.candidates) {
        const entry = languages.get(prefix + language);
        if (entry === undefined || entry.revision !== revision || t < entry.from || t >= entry.until) {
          sources = null;
          break;
        }
        sources.push(entry);
      }
      // A miss reads all candidates again, even those still kept: one answer, one snapshot.
      sources ??= await load(query, prefix, now);

      // Tags are canonical BCP 47 ([A-Za-z0-9-]) and the version key is digits and dots: '|' and ',' cannot collide.
      const key = `${prefix}${query.candidates.join(',')}|${clientVersionKey(query.appVersion)}|${query.limit}`;
      const kept = answers.get(key);
      if (kept !== undefined && drawnFrom(kept, sources)) return kept.items;
      const selected = selectNews(sources.flatMap((source) => source.rows), {
        candidates: query.candidates, appVersion: query.appVersion, limit: query.limit,
      });
      const answer = selected.length === 0 ? NO_NEWS : Object.freeze(selected.map(itemOf));
      answers.set(key, { loads: sources.map((source) => source.load), items: answer });
      return answer;
    },
  };
}
