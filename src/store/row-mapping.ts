/**
 * Rows to domain records, written once for both adapters. The dialects differ only in how a
 * column comes back (SQLite: 0/1 integers, epoch milliseconds, comma lists and JSON text;
 * PostgreSQL: booleans, Date objects, arrays and jsonb), so each adapter supplies just those
 * decoders, the way a query compiler lets each dialect override only what differs.
 */
import type { Application, AuditRecord, ListedToken, NewsRecord, TokenRecord, User } from './store.js';

export type Row = Record<string, unknown>;

/** What differs between the dialects' drivers. */
export interface ColumnDecoders {
  bool(value: unknown): boolean;
  date(value: unknown): Date;
  /** users.app_ids as the adapter's USER_COLUMNS select it. */
  idList(value: unknown): number[];
  /** applications.trusted_callers. */
  stringList(value: unknown): string[];
  /** audit_events.detail. */
  json(value: unknown): Record<string, unknown> | null;
}

export interface RowMappers {
  toApplication(r: Row): Application;
  toUser(r: Row): User;
  toNews(r: Row): NewsRecord;
  /** A row of TOKEN_SELECT as an array (see TOKEN_COLUMNS). */
  toToken(r: readonly unknown[]): TokenRecord;
  /** A row of LISTED_TOKEN_SELECT as an array: TOKEN_COLUMNS, then the origin. */
  toListedToken(r: readonly unknown[]): ListedToken;
  toAudit(r: Row): AuditRecord;
}

const isNull = (v: unknown): boolean => v === null || v === undefined;
const str = (v: unknown): string => String(v);
const strOrNull = (v: unknown): string | null => (isNull(v) ? null : String(v));
const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (isNull(v) ? null : Number(v));

/**
 * The hot path (every client request validates a token): one primary-key lookup, joined to the
 * token's user, application and grant so their state is judged from the same read. Both
 * dialects append their own `WHERE t.token_hash = ...`.
 *
 * Rows of this select are read as arrays (better-sqlite3 `.raw()`, node-postgres
 * `rowMode: 'array'`), in the order of TOKEN_COLUMNS, which toToken destructures in the same
 * order: building a keyed object per row costs better-sqlite3 about 1.5 µs, a quarter of the
 * whole lookup.
 */
const columnsOf = (kind: string, lastUsedAt: string): string => `t.token_hash, ${kind} AS kind, t.user_id, t.app_id, t.client_ip, t.source_ip, t.issued_at, t.expires_at,
    ${lastUsedAt} AS last_used_at, t.used_at, t.revoked_at, u.enabled AS user_enabled, a.enabled AS app_enabled, a.idle_timeout_seconds,
    EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id) AS granted, u.login`;
const TOKEN_COLUMNS = columnsOf('t.kind', 't.last_used_at');

export const TOKEN_SELECT = `SELECT ${TOKEN_COLUMNS}
  FROM tokens t JOIN users u ON u.user_id = t.user_id JOIN applications a ON a.app_id = t.app_id`;

/**
 * TOKEN_SELECT plus the token's origin (migration 12), for the operator's listings only: the
 * hot lookup above does not read a column it has no use for.
 */
export const LISTED_TOKEN_SELECT = `SELECT ${TOKEN_COLUMNS}, t.origin
  FROM tokens t JOIN users u ON u.user_id = t.user_id JOIN applications a ON a.app_id = t.app_id`;
const ORIGIN_INDEX = 16;

/**
 * TOKEN_COLUMNS read from the tickets table (migration 17), in the same order, so that toToken
 * and toListedToken read its rows unchanged: the kind is 'ticket', a ticket's last use is its
 * issue, and every ticket there was issued by this service (origin 'ours').
 */
export const TICKET_COLUMNS = columnsOf("'ticket'", 't.issued_at');
/** TICKET_COLUMNS with the origin, as LISTED_TOKEN_SELECT, from the tickets table. */
export const LISTED_TICKET_SELECT = `SELECT ${TICKET_COLUMNS}, 'ours' AS origin
  FROM tickets t JOIN users u ON u.user_id = t.user_id JOIN applications a ON a.app_id = t.app_id`;

/** news.attributes: string values only, keys in ascending order (both dialects alike), frozen. */
function newsAttributes(json: Record<string, unknown> | null): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  if (json !== null && !Array.isArray(json)) {
    for (const key of Object.keys(json).sort()) {
      const value = json[key];
      if (typeof value === 'string') out[key] = value;
    }
  }
  return Object.freeze(out);
}

/** news.attributes as the adapters store it: JSON text of an object, keys sorted. */
export function encodeNewsAttributes(attributes: Readonly<Record<string, string>> | undefined): string {
  const sorted: Record<string, string> = {};
  for (const key of Object.keys(attributes ?? {}).sort()) sorted[key] = attributes?.[key] ?? '';
  return JSON.stringify(sorted);
}

export function createRowMappers(d: ColumnDecoders): RowMappers {
  const dateOrNull = (v: unknown): Date | null => (isNull(v) ? null : d.date(v));
  const toToken = (r: readonly unknown[]): TokenRecord => {
    // The order of TOKEN_COLUMNS.
    const [tokenHash, kind, userId, appId, clientIp, sourceIp, issuedAt, expiresAt, lastUsedAt, usedAt, revokedAt,
      userEnabled, appEnabled, idleTimeoutSeconds, granted, login] = r;
    return {
      tokenHash: str(tokenHash),
      kind: kind === 'ticket' ? 'ticket' : 'session',
      userId: num(userId),
      appId: num(appId),
      clientIp: strOrNull(clientIp),
      sourceIp: strOrNull(sourceIp),
      issuedAt: d.date(issuedAt),
      expiresAt: d.date(expiresAt),
      lastUsedAt: d.date(lastUsedAt),
      usedAt: dateOrNull(usedAt),
      revokedAt: dateOrNull(revokedAt),
      userEnabled: d.bool(userEnabled),
      appEnabled: d.bool(appEnabled),
      granted: d.bool(granted),
      idleTimeoutSeconds: numOrNull(idleTimeoutSeconds),
      login: str(login),
    };
  };
  return {
    toApplication: (r) => ({
      appId: num(r.app_id),
      name: str(r.name),
      enabled: d.bool(r.enabled),
      requireIp: d.bool(r.require_ip),
      loginUrl: strOrNull(r.login_url),
      tokenLifetimeSeconds: num(r.token_lifetime_seconds),
      idleTimeoutSeconds: numOrNull(r.idle_timeout_seconds),
      defaultLanguage: str(r.default_language),
      trustedCallers: d.stringList(r.trusted_callers),
      createdAt: d.date(r.created_at),
    }),
    toUser: (r) => ({
      userId: num(r.user_id),
      login: str(r.login),
      enabled: d.bool(r.enabled),
      appIds: d.idList(r.app_ids).sort((a, b) => a - b),
      createdAt: d.date(r.created_at),
      lastLoginAt: dateOrNull(r.last_login_at),
      passwordChangedAt: d.date(r.password_changed_at),
    }),
    toNews: (r) => ({
      newsId: num(r.news_id),
      appId: num(r.app_id),
      language: str(r.language),
      title: str(r.title),
      body: str(r.body),
      url: strOrNull(r.url),
      publishedAt: d.date(r.published_at),
      expiresAt: dateOrNull(r.expires_at),
      minVersion: strOrNull(r.min_version),
      maxVersion: strOrNull(r.max_version),
      membersOnly: d.bool(r.members_only),
      attributes: newsAttributes(d.json(r.attributes)),
      createdAt: d.date(r.created_at),
    }),
    toToken,
    // The column's CHECK allows only the two values.
    toListedToken: (r) => ({ ...toToken(r), origin: r[ORIGIN_INDEX] === 'legacy' ? 'legacy' : 'ours' }),
    toAudit: (r) => ({
      id: num(r.id),
      at: d.date(r.at),
      type: str(r.type),
      reason: strOrNull(r.reason),
      requestId: strOrNull(r.request_id),
      appId: numOrNull(r.app_id),
      login: strOrNull(r.login),
      sourceIp: strOrNull(r.source_ip),
      claimedIp: strOrNull(r.claimed_ip),
      tokenFp: strOrNull(r.token_fp),
      detail: d.json(r.detail),
    }),
  };
}
