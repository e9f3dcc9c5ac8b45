import type { AuditQuery, LegacyTally } from './store.js';
import { POSTGRES_DIALECT, SQLITE_DIALECT, type SqlDialect } from './sql-dialect.js';

/**
 * A statement written once for both adapters, with named parameters `@name`. SQLite
 * (better-sqlite3) binds them by name as written; PostgreSQL gets `$1..$n`, numbered in the order
 * the names first appear, and `postgresValues` puts the values in that order. The text may use the
 * dialect's words (sql-dialect.ts); a statement that really differs stays in its adapter.
 *
 * Values are the adapter's own (epoch milliseconds and 0/1 on SQLite, Date and boolean on
 * PostgreSQL): only the text is shared.
 */
export interface SharedSql {
  readonly sqlite: string;
  readonly postgres: string;
  /** The parameter names in $1..$n order. */
  readonly names: readonly string[];
}

const PARAMETER = /@([A-Za-z_][A-Za-z0-9_]*)/g;

export function sharedSql(text: string | ((d: SqlDialect) => string)): SharedSql {
  const sqlite = typeof text === 'function' ? text(SQLITE_DIALECT) : text;
  const pgText = typeof text === 'function' ? text(POSTGRES_DIALECT) : text;
  const names: string[] = [];
  const postgres = pgText.replace(PARAMETER, (_match, name: string) => {
    let index = names.indexOf(name);
    if (index < 0) index = names.push(name) - 1;
    return `$${index + 1}`;
  });
  return Object.freeze({ sqlite, postgres, names: Object.freeze(names) });
}

/** The values of `params` in the statement's $1..$n order; a name without a value is a bug. */
export function postgresValues(statement: SharedSql, params: Readonly<Record<string, unknown>>): unknown[] {
  return statement.names.map((name) => {
    if (!(name in params)) throw new Error(`no value for @${name}`);
    return params[name];
  });
}

// --- columns read the same way by both adapters (row-mapping.ts); listed, never *, so a
// PostgreSQL prepared statement survives a later migration adding columns ---

export const APP_COLUMNS = 'app_id, name, enabled, require_ip, login_url, token_lifetime_seconds, idle_timeout_seconds, default_language, created_at, trusted_callers';
export const NEWS_COLUMNS = 'news_id, app_id, language, title, body, url, published_at, expires_at, min_version, max_version, members_only, attributes, created_at';
const AUDIT_COLUMNS = 'id, at, type, reason, request_id, app_id, login, source_ip, claimed_ip, token_fp, detail';
const COUNTER_COLUMNS = 'count, window_start, blocked_until, inflight, inflight_until, expires_at';

/** A user with its grants, ascending (a comma list on SQLite, an array on PostgreSQL). */
const userColumns = (d: SqlDialect): string => `u.user_id, u.login, u.password_hash, u.enabled, u.created_at, u.last_login_at, u.password_changed_at,
  ${d.pick({
    sqlite: '(SELECT group_concat(g.app_id) FROM user_applications g WHERE g.user_id = u.user_id) AS app_ids',
    postgres: 'ARRAY(SELECT g.app_id FROM user_applications g WHERE g.user_id = u.user_id ORDER BY g.app_id) AS app_ids',
  })}`;

/** Statements by concern. */
export const SQL = {
  // --- applications, users and grants ---
  getApp: sharedSql(`SELECT ${APP_COLUMNS} FROM applications WHERE app_id = @appId`),
  listApps: sharedSql(`SELECT ${APP_COLUMNS} FROM applications ORDER BY app_id`),
  insertApp: sharedSql(`INSERT INTO applications (${APP_COLUMNS})
    VALUES (@appId, @name, @enabled, @requireIp, @loginUrl, @tokenLifetimeSeconds, @idleTimeoutSeconds, @defaultLanguage, @createdAt, @trustedCallers)
    ON CONFLICT (app_id) DO NOTHING RETURNING ${APP_COLUMNS}`),
  revokeAppTokens: sharedSql('UPDATE tokens SET revoked_at = @now WHERE app_id = @appId AND revoked_at IS NULL'),
  // Each revocation of tokens has its twin for the tickets table (migration 17), run right after
  // it in the same transaction: a ticket is revoked with the tokens it was issued beside.
  revokeAppTickets: sharedSql('UPDATE tickets SET revoked_at = @now WHERE app_id = @appId AND revoked_at IS NULL'),
  userByKey: sharedSql((d) => `SELECT ${userColumns(d)} FROM users u WHERE u.login_key = @loginKey`),
  userById: sharedSql((d) => `SELECT ${userColumns(d)} FROM users u WHERE u.user_id = @userId`),
  listUsers: sharedSql((d) => `SELECT ${userColumns(d)} FROM users u
    WHERE CAST(@appId AS INTEGER) IS NULL OR EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = u.user_id AND g.app_id = CAST(@appId AS INTEGER))
    ORDER BY u.login_key`),
  insertUser: sharedSql(`INSERT INTO users (login, login_key, password_hash, enabled, created_at, password_changed_at, last_login_at)
    VALUES (@login, @loginKey, @passwordHash, @enabled, @createdAt, @passwordChangedAt, @lastLoginAt)
    ON CONFLICT (login_key) DO NOTHING RETURNING user_id`),
  insertGrant: sharedSql(`INSERT INTO user_applications (user_id, app_id, granted_at) VALUES (@userId, @appId, @now)
    ON CONFLICT (user_id, app_id) DO NOTHING`),
  deleteGrant: sharedSql('DELETE FROM user_applications WHERE user_id = @userId AND app_id = @appId'),
  setPassword: sharedSql('UPDATE users SET password_hash = @passwordHash, password_changed_at = @now WHERE user_id = @userId'),
  upgradePassword: sharedSql('UPDATE users SET password_hash = @newHash WHERE user_id = @userId AND password_hash = @expectedHash'),
  setUserEnabled: sharedSql('UPDATE users SET enabled = @enabled WHERE user_id = @userId'),
  revokeUserTokens: sharedSql('UPDATE tokens SET revoked_at = @now WHERE user_id = @userId AND revoked_at IS NULL'),
  revokeUserAppTokens: sharedSql('UPDATE tokens SET revoked_at = @now WHERE user_id = @userId AND app_id = @appId AND revoked_at IS NULL'),
  revokeUserTickets: sharedSql('UPDATE tickets SET revoked_at = @now WHERE user_id = @userId AND revoked_at IS NULL'),
  revokeUserAppTickets: sharedSql('UPDATE tickets SET revoked_at = @now WHERE user_id = @userId AND app_id = @appId AND revoked_at IS NULL'),
  // Lazy migration from the legacy service, and the migration report.
  upgradeLegacyPassword: sharedSql('UPDATE users SET password_hash = @newHash WHERE login_key = @loginKey AND password_hash = @expectedHash RETURNING user_id'),
  markLegacyMigrated: sharedSql(`INSERT INTO legacy_migrations (user_id, migrated_at) VALUES (@userId, @now)
    ON CONFLICT (user_id) DO UPDATE SET migrated_at = excluded.migrated_at`),
  passwordHashes: sharedSql(`SELECT u.user_id, u.password_hash, m.migrated_at FROM users u
    LEFT JOIN legacy_migrations m ON m.user_id = u.user_id
    WHERE u.user_id > @afterUserId ORDER BY u.user_id LIMIT @limit`),

  // --- news ---
  insertNews: sharedSql(`INSERT INTO news (app_id, language, title, body, url, published_at, expires_at, min_version, max_version, members_only, attributes, created_at)
    VALUES (@appId, @language, @title, @body, @url, @publishedAt, @expiresAt, @minVersion, @maxVersion, @membersOnly, @attributes, @createdAt)
    RETURNING ${NEWS_COLUMNS}`),
  listNews: sharedSql(`SELECT ${NEWS_COLUMNS} FROM news WHERE CAST(@appId AS INTEGER) IS NULL OR app_id = CAST(@appId AS INTEGER)
    ORDER BY published_at DESC, news_id DESC`),
  getNews: sharedSql(`SELECT ${NEWS_COLUMNS} FROM news WHERE news_id = @newsId`),
  deleteNews: sharedSql('DELETE FROM news WHERE news_id = @newsId'),
  updateNews: sharedSql(`UPDATE news SET language = @language, title = @title, body = @body, url = @url, published_at = @publishedAt,
    expires_at = @expiresAt, min_version = @minVersion, max_version = @maxVersion, members_only = @membersOnly, attributes = @attributes
    WHERE news_id = @newsId RETURNING ${NEWS_COLUMNS}`),

  // --- admin console accounts and sessions ---
  insertAdmin: sharedSql(`INSERT INTO admin_accounts (name, password_hash, role, created_at, password_changed_at, last_login_at)
    VALUES (@name, @passwordHash, @role, @createdAt, @passwordChangedAt, @lastLoginAt) ON CONFLICT (name) DO NOTHING`),
  getAdmin: sharedSql('SELECT * FROM admin_accounts WHERE name = @name'),
  listAdmins: sharedSql('SELECT * FROM admin_accounts ORDER BY name'),
  setAdminPassword: sharedSql('UPDATE admin_accounts SET password_hash = @passwordHash, password_changed_at = @now WHERE name = @name'),
  endAdminSessions: sharedSql('DELETE FROM admin_sessions WHERE name = @name'),
  removeAdmin: sharedSql('DELETE FROM admin_accounts WHERE name = @name'),
  adminLastLogin: sharedSql('UPDATE admin_accounts SET last_login_at = @createdAt WHERE name = @name'),
  findAdminSession: sharedSql('SELECT s.*, a.role FROM admin_sessions s JOIN admin_accounts a ON a.name = s.name WHERE s.session_hash = @sessionHash'),
  touchAdminSession: sharedSql((d) => `UPDATE admin_sessions SET last_used_at = ${d.greatest}(last_used_at, @now) WHERE session_hash = @sessionHash`),
  deleteAdminSession: sharedSql('DELETE FROM admin_sessions WHERE session_hash = @sessionHash'),
  purgeAdminSessions: sharedSql('DELETE FROM admin_sessions WHERE expires_at <= @now OR last_used_at < @idleBefore'),

  // --- audit trail and shadow differences ---
  purgeAudit: sharedSql((d) => `DELETE FROM audit_events WHERE id IN
    (SELECT id FROM audit_events WHERE at < @before ORDER BY at LIMIT @limit${d.skipLocked})`),
  listShadowDifferences: sharedSql(`SELECT id, observed_at, mode, operation, binding, request_json, legacy_json, ours_json, diff
    FROM shadow_differences ORDER BY id DESC LIMIT @limit`),

  // --- token passthrough's tallies (migration 16): added to, never replaced, so instances sum ---
  addLegacyTally: sharedSql((d) => `INSERT INTO legacy_token_tallies (day, kind, result, count, last_at) VALUES (@day, @kind, @result, @count, @lastAt)
    ON CONFLICT (day, kind, result) DO UPDATE SET count = legacy_token_tallies.count + excluded.count,
      last_at = ${d.greatest}(legacy_token_tallies.last_at, excluded.last_at)`),
  // Each kind and result's newest day stays whatever its age: the report's "last vouched for".
  pruneLegacyTallies: sharedSql(`DELETE FROM legacy_token_tallies WHERE day < @keepFrom
    AND day < (SELECT MAX(t.day) FROM legacy_token_tallies t WHERE t.kind = legacy_token_tallies.kind AND t.result = legacy_token_tallies.result)`),
  listLegacyTallies: sharedSql('SELECT day, kind, result, count, last_at FROM legacy_token_tallies ORDER BY day, kind, result'),

  // --- brute-force counters: the operator's view and housekeeping ---
  counter: sharedSql(`SELECT ${COUNTER_COLUMNS} FROM throttle_counters WHERE key = @key`),
  knownSource: sharedSql('SELECT 1 FROM known_sources WHERE login_hash = @loginHash AND source = @source AND last_success_at > @since'),
  forgetCounter: sharedSql('DELETE FROM throttle_counters WHERE key = @key'),
  refundCounter: sharedSql('UPDATE throttle_counters SET count = count - 1 WHERE key = @key AND count > 0 AND expires_at > @now'),
  purgeCounters: sharedSql((d) => `DELETE FROM throttle_counters WHERE key IN
    (SELECT key FROM throttle_counters WHERE expires_at <= @now ORDER BY expires_at LIMIT @limit${d.skipLocked})`),
  purgeKnownSources: sharedSql((d) => `DELETE FROM known_sources WHERE (login_hash, source) IN
    (SELECT login_hash, source FROM known_sources WHERE last_success_at < @before ORDER BY last_success_at LIMIT @limit${d.skipLocked})`),
  // One login's pairs are `p:<hash>|<source>`: found by that exact prefix (substr, not LIKE, which
  // has wildcards and, on SQLite, ignores case). The keys compare byte-wise in both dialects.
  loginPairs: sharedSql(`SELECT substr(key, length(CAST(@prefix AS TEXT)) + 1) AS source, ${COUNTER_COLUMNS}
    FROM throttle_counters WHERE substr(key, 1, length(CAST(@prefix AS TEXT))) = @prefix AND expires_at > @now
      AND (count > 0 OR (inflight > 0 AND inflight_until > @now))
    ORDER BY count DESC, key LIMIT @limit`),
  loginPairCount: sharedSql(`SELECT COUNT(*) AS n FROM throttle_counters WHERE substr(key, 1, length(CAST(@prefix AS TEXT))) = @prefix AND expires_at > @now
      AND (count > 0 OR (inflight > 0 AND inflight_until > @now))`),
  knownSources: sharedSql(`SELECT source, last_success_at FROM known_sources
    WHERE login_hash = @loginHash AND last_success_at > @since ORDER BY last_success_at DESC, source LIMIT @limit`),
  knownSourceCount: sharedSql('SELECT COUNT(*) AS n FROM known_sources WHERE login_hash = @loginHash AND last_success_at > @since'),
  resetLogin: sharedSql('DELETE FROM throttle_counters WHERE key = @login OR substr(key, 1, length(CAST(@prefix AS TEXT))) = @prefix'),
} as const;

/**
 * addLegacyTallies' rows as both adapters write them: those with a count, in (day, kind, result)
 * order, so that two instances' transactions take their row locks in the same order and never
 * wait on each other in a cycle (PostgreSQL).
 */
export function legacyTallyRows(tallies: readonly LegacyTally[]): LegacyTally[] {
  const key = (t: LegacyTally): string => `${t.day}\u0000${t.kind}\u0000${t.result}`;
  return tallies.filter((t) => t.count > 0).sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/**
 * queryAudit: only the filters given, so the at / login indexes can serve them. `key` names the
 * shape (the same key, the same text), for an adapter that keeps one prepared statement a shape;
 * `time` is the adapter's value of an instant.
 */
export function auditQuerySql(query: AuditQuery, time: (d: Date) => unknown): { key: string; statement: SharedSql; params: Record<string, unknown> } {
  const where: string[] = [];
  const params: Record<string, unknown> = { limit: Math.max(0, Math.trunc(query.limit)) };
  if (query.since !== undefined) { where.push('at >= @since'); params.since = time(query.since); }
  if (query.until !== undefined) { where.push('at < @until'); params.until = time(query.until); }
  if (query.login !== undefined && query.loginFp !== undefined) {
    where.push('lower(login) IN (lower(CAST(@login AS TEXT)), lower(CAST(@loginFp AS TEXT)))');
    params.login = query.login;
    params.loginFp = query.loginFp;
  } else if (query.login !== undefined) { where.push('lower(login) = lower(CAST(@login AS TEXT))'); params.login = query.login; }
  if (query.type !== undefined) { where.push('type = @type'); params.type = query.type; }
  if (query.typePrefix !== undefined) { where.push('substr(type, 1, length(CAST(@typePrefix AS TEXT))) = @typePrefix'); params.typePrefix = query.typePrefix; }
  if (query.appId !== undefined) { where.push('app_id = @appId'); params.appId = query.appId; }
  if (query.beforeId !== undefined) { where.push('id < @beforeId'); params.beforeId = query.beforeId; }
  const key = where.join('|');
  let statement = auditShapes.get(key);
  if (statement === undefined) {
    statement = sharedSql(`SELECT ${AUDIT_COLUMNS} FROM audit_events${where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`} ORDER BY id DESC LIMIT @limit`);
    auditShapes.set(key, statement);
  }
  return { key, statement, params };
}
/** At most 2^7 shapes (one per combination of filters). */
const auditShapes = new Map<string, SharedSql>();
