/**
 * Moving the data between databases (SQLite <-> PostgreSQL, or one server to another): an
 * export is JSON lines, one record per line with a `type`, written in dependency order:
 *
 *   {"type":"header","format":"svcapi-auth-export","version":1,"exportedAt":"...","schemaVersion":1}
 *   {"type":"application","appId":2,"name":"GPS",...}
 *   {"type":"user","login":"alice","passwordHash":"$argon2id$...","enabled":true,"appIds":[2],...}
 *   {"type":"news","appId":2,"language":"en","title":"...",...,"attributes":{"Destaque":"true"}}
 *   {"type":"token","tokenHash":"<sha-256 hex>","kind":"session","login":"alice","appId":2,...,"origin":"legacy"}
 *
 * Records refer to each other by natural keys (AppID, login), never by internal ids, so they can
 * go into a database that already holds data. Tokens travel as the SHA-256 of their text, as
 * they are stored: an export never contains a usable token, but it does contain password
 * hashes, so it is as sensitive as the database itself.
 *
 * Import is idempotent: a record whose natural key exists already (AppID, login, token hash, or
 * news AppID + language + title + publication time) is skipped, so running it twice adds nothing.
 */
import type { Application, Store, TokenKind, TokenOrigin, User } from '../store/store.js';
import { findUserByLogin, loginKey } from './logins.js';
import { checkNewsAttributes } from './news-attributes.js';
import { parseAddressRange } from './source-address.js';

export const EXPORT_FORMAT = 'svcapi-auth-export';
export const EXPORT_VERSION = 1;
const TOKEN_PAGE = 1000;

export type RecordType = 'application' | 'user' | 'news' | 'token';
export const RECORD_TYPES: readonly RecordType[] = ['application', 'user', 'news', 'token'];

export type TransferCounts = Record<RecordType, number>;

const zero = (): TransferCounts => ({ application: 0, user: 0, news: 0, token: 0 });
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** Writes every record of `store` through `write` (one JSON text per call, without newline). Returns the counts. */
export async function exportData(store: Store, write: (line: string) => Promise<void>, now: Date): Promise<TransferCounts> {
  const counts = zero();
  const emit = async (record: object): Promise<void> => write(JSON.stringify(record));

  await emit({ type: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: now.toISOString(), schemaVersion: await store.schemaVersion() });

  for (const app of await store.listApplications()) {
    await emit({
      type: 'application', appId: app.appId, name: app.name, enabled: app.enabled, requireIp: app.requireIp, loginUrl: app.loginUrl,
      tokenLifetimeSeconds: app.tokenLifetimeSeconds, idleTimeoutSeconds: app.idleTimeoutSeconds, defaultLanguage: app.defaultLanguage,
      trustedCallers: app.trustedCallers, createdAt: iso(app.createdAt),
    });
    counts.application++;
  }

  const logins = new Map<number, string>();
  for (const user of await store.listUsers()) {
    const credentials = await findUserByLogin(store, user.login); // also a user created before RFC 8265 was applied
    if (credentials === null) continue; // deleted meanwhile
    logins.set(user.userId, user.login);
    await emit({
      type: 'user', login: user.login, passwordHash: credentials.passwordHash, enabled: credentials.enabled, appIds: credentials.appIds,
      createdAt: iso(user.createdAt), lastLoginAt: iso(credentials.lastLoginAt), passwordChangedAt: iso(credentials.passwordChangedAt),
    });
    counts.user++;
  }

  for (const news of [...await store.listNews()].reverse()) {
    await emit({
      type: 'news', appId: news.appId, language: news.language, title: news.title, body: news.body, url: news.url,
      publishedAt: iso(news.publishedAt), expiresAt: iso(news.expiresAt), minVersion: news.minVersion, maxVersion: news.maxVersion,
      membersOnly: news.membersOnly, attributes: news.attributes, createdAt: iso(news.createdAt),
    });
    counts.news++;
  }

  let after: string | null = null;
  for (;;) {
    const page = await store.listLiveTokens({ liveAt: now, afterHash: after, limit: TOKEN_PAGE });
    for (const t of page) {
      const login = logins.get(t.userId) ?? (await store.getUser(t.userId))?.login;
      if (login === undefined) continue;
      await emit({
        type: 'token', tokenHash: t.tokenHash, kind: t.kind, login, appId: t.appId, clientIp: t.clientIp, sourceIp: t.sourceIp,
        issuedAt: iso(t.issuedAt), expiresAt: iso(t.expiresAt), lastUsedAt: iso(t.lastUsedAt), origin: t.origin,
      });
      counts.token++;
    }
    const last = page.at(-1);
    if (page.length < TOKEN_PAGE || last === undefined) break;
    after = last.tokenHash;
  }
  return counts;
}

/** A line that is not a valid record: the import stops there (what came before stays imported). */
export class ImportError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'ImportError';
  }
}

export interface ImportOptions {
  /** Overwrite the settings of applications that exist already (default: keep them, and say so). */
  readonly updateApplications?: boolean;
}

export interface ImportReport {
  readonly added: TransferCounts;
  /** Already present (same natural key), or referring to something absent: see `notes`. */
  readonly skipped: TransferCounts;
  /** Existing applications overwritten (only with updateApplications). */
  readonly updatedApplications: number;
  /** Why records were skipped, when it was not simply "already there"; at most 100. */
  readonly notes: readonly string[];
}

type Json = Record<string, unknown>;

interface FieldReaders {
  text(name: string): string;
  textOrNull(name: string): string | null;
  flag(name: string): boolean;
  int(name: string): number;
  intOrNull(name: string): number | null;
  date(name: string): Date;
  dateOrNull(name: string): Date | null;
  ints(name: string): number[];
}

/** Field readers: each throws a message naming the field. */
function fields(record: Json): FieldReaders {
  const fail = (name: string, what: string): never => {
    throw new Error(`"${name}" must be ${what}`);
  };
  const text = (name: string): string => (typeof record[name] === 'string' ? record[name] : fail(name, 'a string'));
  const textOrNull = (name: string): string | null => (record[name] === null || record[name] === undefined ? null : text(name));
  const flag = (name: string): boolean => (typeof record[name] === 'boolean' ? record[name] : fail(name, 'true or false'));
  const int = (name: string): number => (Number.isSafeInteger(record[name]) ? (record[name] as number) : fail(name, 'a whole number'));
  const intOrNull = (name: string): number | null => (record[name] === null || record[name] === undefined ? null : int(name));
  const date = (name: string): Date => {
    const d = new Date(text(name));
    return Number.isNaN(d.getTime()) ? fail(name, 'an ISO 8601 time') : d;
  };
  const dateOrNull = (name: string): Date | null => (record[name] === null || record[name] === undefined ? null : date(name));
  const ints = (name: string): number[] => {
    const v = record[name];
    return Array.isArray(v) && v.every((x) => Number.isSafeInteger(x)) ? (v as number[]) : fail(name, 'a list of whole numbers');
  };
  return { text, textOrNull, flag, int, intOrNull, date, dateOrNull, ints };
}

function sameSettings(a: Application, b: Application): boolean {
  return a.name === b.name && a.enabled === b.enabled && a.requireIp === b.requireIp && a.loginUrl === b.loginUrl
    && a.tokenLifetimeSeconds === b.tokenLifetimeSeconds && a.idleTimeoutSeconds === b.idleTimeoutSeconds && a.defaultLanguage === b.defaultLanguage
    && a.trustedCallers.join(',') === b.trustedCallers.join(',');
}

/** An application's trusted callers; absent in exports made before them: none. */
function trustedCallersOf(record: Json): string[] {
  const v = record.trustedCallers;
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error('"trustedCallers" must be a list of IP addresses / CIDR ranges');
  return v.map((entry) => {
    const range = typeof entry === 'string' ? parseAddressRange(entry) : null;
    if (range === null) throw new Error(`"trustedCallers" must be a list of IP addresses / CIDR ranges, got ${JSON.stringify(entry)}`);
    return range.text;
  });
}

/** A token's origin (migration 12); absent in exports made before it, whose tokens were all ours then. */
function originOf(record: Json): TokenOrigin {
  const v = record.origin;
  if (v === undefined || v === null) return 'ours';
  if (v !== 'ours' && v !== 'legacy') throw new Error('"origin" must be "ours" or "legacy"');
  return v;
}

/** A news item's attributes (migration 9); absent in exports made before them: none. */
function attributesOf(record: Json): Record<string, string> {
  const v = record.attributes;
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v) || Object.values(v).some((x) => typeof x !== 'string')) throw new Error('"attributes" must be an object of text values');
  const attributes = v as Record<string, string>;
  const problem = checkNewsAttributes(attributes);
  if (problem !== null) throw new Error(`"attributes": ${problem}`);
  return attributes;
}

/** Imports records (JSON lines, blank lines ignored) into `store`. */
export async function importData(store: Store, lines: AsyncIterable<string> | Iterable<string>, options: ImportOptions, now: Date): Promise<ImportReport> {
  // Start iterating before the first await: a readline interface drops the lines it reads while
  // nobody iterates yet (they would be lost during the first query on a networked database).
  const iterator: AsyncIterator<string> | Iterator<string> = Symbol.asyncIterator in lines ? lines[Symbol.asyncIterator]() : lines[Symbol.iterator]();
  const source: AsyncIterable<string> = { [Symbol.asyncIterator]: () => ({ next: async () => iterator.next() }) };
  const added = zero();
  const skipped = zero();
  let updatedApplications = 0;
  const notes: string[] = [];
  const note = (text: string): void => {
    if (notes.length < 100) notes.push(text);
  };

  const appIds = new Set((await store.listApplications()).map((a) => a.appId));
  const users = new Map<string, User | null>();
  const findUser = async (login: string): Promise<User | null> => {
    const key = loginKey(login);
    if (!users.has(key)) users.set(key, await findUserByLogin(store, login));
    return users.get(key) ?? null;
  };
  const newsKeys = new Map<number, Set<string>>();
  const newsKey = (language: string, title: string, publishedAt: Date): string => JSON.stringify([language, title, publishedAt.getTime()]);
  const existingNews = async (appId: number): Promise<Set<string>> => {
    let keys = newsKeys.get(appId);
    if (keys === undefined) {
      keys = new Set((await store.listNews({ appId })).map((n) => newsKey(n.language, n.title, n.publishedAt)));
      newsKeys.set(appId, keys);
    }
    return keys;
  };

  let lineNo = 0;
  for await (const raw of source) {
    lineNo++;
    const line = raw.trim();
    if (line === '') continue;
    let record: Json;
    try {
      const parsed: unknown = JSON.parse(line);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
      record = parsed as Json;
    } catch (error) {
      throw new ImportError(lineNo, `not a JSON object (${(error as Error).message})`);
    }
    try {
      const f = fields(record);
      const type = f.text('type');
      switch (type) {
        case 'header': {
          if (f.text('format') !== EXPORT_FORMAT) throw new Error(`not an svcapi-auth export (format ${JSON.stringify(record.format)})`);
          if (f.int('version') > EXPORT_VERSION) throw new Error(`export format version ${f.int('version')} is newer than this svcapi-auth reads (${EXPORT_VERSION}); upgrade svcapi-auth`);
          break;
        }
        case 'application': {
          const app: Application = {
            appId: f.int('appId'), name: f.text('name'), enabled: f.flag('enabled'), requireIp: f.flag('requireIp'), loginUrl: f.textOrNull('loginUrl'),
            tokenLifetimeSeconds: f.int('tokenLifetimeSeconds'), idleTimeoutSeconds: f.intOrNull('idleTimeoutSeconds'),
            defaultLanguage: f.text('defaultLanguage'), trustedCallers: trustedCallersOf(record), createdAt: f.date('createdAt'),
          };
          const result = await store.insertApplication(app);
          if (result.ok) {
            added.application++;
            appIds.add(app.appId);
            break;
          }
          const existing = await store.getApplication(app.appId);
          if (existing !== null && !sameSettings(existing, app)) {
            if (options.updateApplications === true) {
              const { appId, createdAt: _createdAt, ...patch } = app;
              await store.updateApplication(appId, patch, now);
              updatedApplications++;
              break;
            }
            note(`AppID ${app.appId} exists with other settings; kept them (--update-applications overwrites)`);
          }
          skipped.application++;
          break;
        }
        case 'user': {
          const login = f.text('login');
          const grants = f.ints('appIds');
          const missing = grants.filter((id) => !appIds.has(id));
          if (missing.length > 0) {
            note(`user ${JSON.stringify(login)} skipped: no application ${missing.join(', ')}`);
            skipped.user++;
            break;
          }
          const result = await store.insertUser({
            login, loginKey: loginKey(login), passwordHash: f.text('passwordHash'), enabled: f.flag('enabled'), appIds: grants,
            createdAt: f.date('createdAt'), passwordChangedAt: f.date('passwordChangedAt'), lastLoginAt: f.dateOrNull('lastLoginAt'),
          });
          if (result.ok) {
            added.user++;
            users.set(loginKey(login), result.user);
          } else {
            skipped.user++;
          }
          break;
        }
        case 'news': {
          const appId = f.int('appId');
          if (!appIds.has(appId)) {
            note(`news ${JSON.stringify(record.title)} skipped: no application ${appId}`);
            skipped.news++;
            break;
          }
          const news = {
            appId, language: f.text('language'), title: f.text('title'), body: f.text('body'), url: f.textOrNull('url'),
            publishedAt: f.date('publishedAt'), expiresAt: f.dateOrNull('expiresAt'), minVersion: f.textOrNull('minVersion'),
            maxVersion: f.textOrNull('maxVersion'), membersOnly: f.flag('membersOnly'), attributes: attributesOf(record), createdAt: f.date('createdAt'),
          };
          const keys = await existingNews(appId);
          const key = newsKey(news.language, news.title, news.publishedAt);
          if (keys.has(key)) {
            skipped.news++;
            break;
          }
          await store.insertNews(news);
          keys.add(key);
          added.news++;
          break;
        }
        case 'token': {
          const tokenHash = f.text('tokenHash');
          if (!/^[0-9a-f]{64}$/.test(tokenHash)) throw new Error('"tokenHash" must be 64 lower-case hex digits (the SHA-256 of the token, never the token)');
          const kind = f.text('kind');
          if (kind !== 'session' && kind !== 'ticket') throw new Error('"kind" must be "session" or "ticket"');
          const login = f.text('login');
          const appId = f.int('appId');
          const user = await findUser(login);
          if (user === null || !appIds.has(appId)) {
            note(`token for ${JSON.stringify(login)} on AppID ${appId} skipped: no such ${user === null ? 'user' : 'application'}`);
            skipped.token++;
            break;
          }
          const stored = await store.importToken({
            tokenHash, kind: kind satisfies TokenKind, userId: user.userId, appId, clientIp: f.textOrNull('clientIp'), sourceIp: f.textOrNull('sourceIp'),
            issuedAt: f.date('issuedAt'), expiresAt: f.date('expiresAt'), lastUsedAt: f.date('lastUsedAt'), usedAt: null, revokedAt: null,
            origin: originOf(record),
          });
          if (stored) added.token++;
          else skipped.token++;
          break;
        }
        default:
          note(`line ${lineNo}: record type ${JSON.stringify(type)} is unknown to this version; skipped`);
      }
    } catch (error) {
      if (error instanceof ImportError) throw error;
      throw new ImportError(lineNo, (error as Error).message);
    }
  }
  return { added, skipped, updatedApplications, notes };
}
