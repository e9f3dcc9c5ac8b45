import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { classifyDatabaseError, DatabaseError, firstLine } from '../database-errors.js';
import { judgeSchema, type SchemaVerdict } from '../schema-identity.js';
import type {
  Application, ApplicationPatch, InsertApplicationResult, InsertUserResult, NewNews, NewToken, NewUser,
  PublishedNewsQuery, PublishedNewsSnapshot, RevokeScope, Store, TokenRecord, User, UserCredentials,
} from '../store.js';
import type { LegacyMigrationInput, PasswordHashRow, RevisionsWithTokens } from '../store.js';
import type { AdminAccountCredentials, NewAdminSession } from '../store.js';
import type { LegacyTally, LegacyTallyKind, NewAuditEvent, NewShadowDifference, ShadowDifferenceRecord } from '../store.js';
import type { LoginAttempt, LoginThrottleQuery, LoginThrottleRecord, ThrottleCounter, ThrottleLimits } from '../store.js';
import {
  decideAttempt, lockOrder, loginAfterFailure, loginAfterNoFailure, needsKnownSource, pairAfterFailure, pairAfterRelease, pairAfterSuccess,
  throttleKeys, type CounterState,
} from '../login-throttle-rules.js';
import { applySqliteMigrations, SQLITE_MIGRATIONS, SVCAPI_APPLICATION_ID, sqliteSchemaVersion } from './migrations/sqlite-migrations.js';
import { encodeNewsAttributes, LISTED_TOKEN_SELECT, type Row } from '../row-mapping.js';
import { bool, date, dateOrNull, ms, str, toApplication, toAudit, toListedToken, toNews, toToken, toUser } from './sqlite-row-mapping.js';
import { toPublishedNewsSnapshot } from '../news-snapshot.js';
import { auditQuerySql, legacyTallyRows, NEWS_COLUMNS, SQL } from '../shared-sql.js';
import { revisionValue, toStoreRevisions } from '../revisions.js';
import { startPurgeThread, type PurgeThread } from './purge-thread.js';
import { damagedByQuickCheck, startBackgroundCheck, type BackgroundCheck, type IntegrityCheckResult } from './background-check.js';
import { createSqliteWrites } from './group-commit.js';
import { createWalSync } from './wal-sync.js';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:' for a private in-memory database (tests). */
  readonly path: string;
  /** Apply pending migrations on open (default true). When false, an out-of-date schema is an error. */
  readonly migrate?: boolean;
  /** How long a writer waits for another process's write lock before failing (default 5000 ms). */
  readonly busyTimeoutMs?: number;
  /**
   * May a missing file be created, or an empty one initialised (default true: `serve`,
   * `migrate`)? When false, either is a DatabaseError('missing'). A file that is not an
   * svcapi-auth database is refused untouched either way.
   */
  readonly create?: boolean;
  /**
   * PRAGMA quick_check of the file: before anything else (true, the default; a damaged file is
   * refused), after the store opened, in a child process (`'background'`: `serve`,
   * background-check.ts; its result goes to onIntegrityCheck), or not at all (false).
   */
  readonly integrityCheck?: boolean | 'background';
  /**
   * The result of a check in the background (integrityCheck 'background'); not called if the
   * store closed first. close() resolves only once the check's child process is gone.
   */
  readonly onIntegrityCheck?: (result: IntegrityCheckResult) => void;
  /**
   * Group commit of the hot paths' small writes (default true; config `performance.groupCommit`):
   * those of one event-loop turn share one transaction and one fsync (group-commit.ts).
   */
  readonly groupCommit?: boolean;
  /** Observes each group transaction after its commit, with how many writes it held. */
  readonly onGroupCommit?: (writes: number) => void;
  /**
   * Housekeeping's token purge on a thread of its own with its own connection (default true;
   * a file only, purge-thread.ts); false runs it on this connection, on the event loop.
   */
  readonly purgeThread?: boolean;
  /**
   * Durable commits off the event loop (default true; a file only; config
   * `performance.sqliteAsyncSync`): group commits and audit appends commit at synchronous NORMAL
   * and their callers wait for the WAL's fdatasync on libuv's pool instead of the event loop
   * waiting inside COMMIT (wal-sync.ts). false: synchronous FULL for every commit.
   */
  readonly asyncSync?: boolean;
  /**
   * How much of the file is read through a memory map (PRAGMA mmap_size; default 0, none). SQLite
   * caps it at its build's SQLITE_MAX_MMAP_SIZE (2 GiB for better-sqlite3).
   */
  readonly mmapBytes?: number;
}


function newsParams(news: NewNews): Record<string, unknown> {
  return {
    appId: news.appId, language: news.language, title: news.title, body: news.body, url: news.url,
    publishedAt: ms(news.publishedAt), expiresAt: news.expiresAt === null ? null : ms(news.expiresAt),
    minVersion: news.minVersion, maxVersion: news.maxVersion, membersOnly: bool(news.membersOnly),
    attributes: encodeNewsAttributes(news.attributes), createdAt: ms(news.createdAt),
  };
}





function toAdminCredentials(r: Row): AdminAccountCredentials {
  return {
    name: str(r.name), passwordHash: str(r.password_hash), role: r.role === 'admin' ? 'admin' : 'editor',
    createdAt: date(r.created_at), passwordChangedAt: date(r.password_changed_at), lastLoginAt: dateOrNull(r.last_login_at),
  };
}

// The conditions under which a token may be created: checked inside the INSERT itself so a
// concurrent disable / password change / grant withdrawal cannot slip in between.
const TOKEN_PRECONDITIONS = `
  EXISTS (SELECT 1 FROM users u WHERE u.user_id = @userId AND u.enabled = 1 AND (@passwordHash IS NULL OR u.password_hash = @passwordHash))
  AND EXISTS (SELECT 1 FROM applications a WHERE a.app_id = @appId AND a.enabled = 1)
  AND EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = @userId AND g.app_id = @appId)`;

/**
 * The hot lookup: TOKEN_SELECT's columns in its order (row-mapping.ts), but the user, the
 * application and the grant read by correlated subqueries of a single-table SELECT instead of
 * joins. This SQLite is built with SQLITE_ENABLE_STAT4, under which a join whose WHERE compares
 * a parameter to an indexed column is planned again at every new value bound (the value could
 * change the best join order): every token not kept in memory cost a full re-parse and re-plan,
 * 14 µs of CPU per joined table (findToken 30 -> 8 µs user CPU per lookup on 10M tokens,
 * bench/README.md). A single-table lookup by its unique key is planned once.
 *
 * A token whose user or application row is missing (possible only with foreign keys off) reads
 * NULL there and is no token at all, as the inner joins made it (findToken).
 */
export const FIND_TOKEN_SQL = `SELECT t.token_hash, t.kind, t.user_id, t.app_id, t.client_ip, t.source_ip, t.issued_at, t.expires_at,
    t.last_used_at, t.used_at, t.revoked_at,
    (SELECT u.enabled FROM users u WHERE u.user_id = t.user_id) AS user_enabled,
    (SELECT a.enabled FROM applications a WHERE a.app_id = t.app_id) AS app_enabled,
    (SELECT a.idle_timeout_seconds FROM applications a WHERE a.app_id = t.app_id) AS idle_timeout_seconds,
    EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id) AS granted,
    (SELECT u.login FROM users u WHERE u.user_id = t.user_id) AS login
  FROM tokens t WHERE t.token_hash = ?`;
const PURGE_EXPIRED_SQL = `DELETE FROM tokens WHERE token_hash IN
  (SELECT token_hash FROM tokens WHERE expires_at < @before ORDER BY expires_at LIMIT @limit)`;

/** user_enabled and app_enabled in FIND_TOKEN_SQL's row: NULL when the row they come from is missing. */
const FIND_TOKEN_USER_ENABLED = 11;
const FIND_TOKEN_APP_ENABLED = 12;

// --- audit trail ---


/**
 * A new database file, private to its owner: it holds password hashes. SQLite gives the -wal
 * and -shm files the mode of the database file, so they are 0600 too; directories created on
 * the way are 0700.
 */
function toShadowDifference(row: Row): ShadowDifferenceRecord {
  return {
    id: Number(row.id), at: date(row.observed_at), mode: row.mode === 'front' ? 'front' : 'shadow', operation: row.operation === null ? null : str(row.operation),
    binding: str(row.binding), requestJson: str(row.request_json), legacyJson: str(row.legacy_json), oursJson: str(row.ours_json), diff: str(row.diff),
  };
}

function createPrivateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    // Another process starting at the same moment made it first: it is inspected as any existing file.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** What the file is, read through `db` without writing anything. */
function inspectConnection(db: Database.Database, path: string, integrityCheck: boolean): SchemaVerdict {
  if (integrityCheck) {
    const rows = (db.pragma('quick_check') as { quick_check: string }[]).map((r) => String(r.quick_check));
    if (rows.length !== 1 || rows[0] !== 'ok') throw damagedByQuickCheck(path, rows);
  }
  const applicationId = Number(db.pragma('application_id', { simple: true }));
  if (applicationId !== 0 && applicationId !== SVCAPI_APPLICATION_ID) {
    return { kind: 'foreign', reason: `its header names another application (application_id 0x${(applicationId >>> 0).toString(16)})` };
  }
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").pluck().all() as string[];
  if (!tables.includes('schema_migrations')) return judgeSchema({ tables, applied: null }, SQLITE_MIGRATIONS);
  let applied: { version: number; name: string }[];
  try {
    applied = (db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as Row[]).map((r) => ({ version: Number(r.version), name: String(r.name) }));
  } catch {
    return { kind: 'foreign', reason: 'its schema_migrations table is not svcapi-auth\'s' };
  }
  return judgeSchema({ tables, applied }, SQLITE_MIGRATIONS);
}

/**
 * Reads the file before anything writes to it (not even the switch to WAL): is it sound, is it
 * ours? Through a read-only connection first, so that refusing a file leaves it as it was; a
 * file that connection cannot read (a WAL left by a crash needs a writer to recover it) is read
 * again through an ordinary one.
 */
export function inspectSqliteFile(path: string, integrityCheck = true): SchemaVerdict {
  for (const readonly of [true, false]) {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { readonly, fileMustExist: true });
      return inspectConnection(db, path, integrityCheck);
    } catch (error) {
      if (error instanceof DatabaseError) throw error;
      if (classifyDatabaseError(error) === 'damaged') {
        const what = (error as { code?: unknown }).code === 'SQLITE_NOTADB' ? 'is not a SQLite database, or its header is damaged' : 'is damaged';
        throw new DatabaseError('damaged', `the database ${path} ${what} (${firstLine((error as Error).message)}); restore it from a backup`);
      }
      if (!readonly) throw error;
    } finally {
      db?.close();
    }
  }
  throw new Error('unreachable');
}

/**
 * Checks the file and refuses one that is damaged, not ours, or (without `create`) missing or
 * empty; creates a missing one (with `create`) private to its owner. Also what backup and
 * restore check their files with.
 */
export function prepareSqliteFile(options: SqliteStoreOptions): void {
  const { path } = options;
  const create = options.create ?? true;
  if (!existsSync(path)) {
    if (!create) throw new DatabaseError('missing', `there is no database at ${path}; create it with "svcapi-auth migrate"`);
    createPrivateFile(path);
  }
  const verdict = inspectSqliteFile(path, (options.integrityCheck ?? true) === true);
  if (verdict.kind === 'foreign') throw new DatabaseError('foreign', `${path} is not an svcapi-auth database: ${verdict.reason}; it was left untouched`);
  if (verdict.kind === 'empty' && !create) throw new DatabaseError('missing', `${path} holds no svcapi-auth database yet; create it with "svcapi-auth migrate"`);
}

/**
 * Opens a SQLite database as a Store: checks the file (prepareSqliteFile), then migrates it. Only a
 * new or empty file is initialised, and only with `create` (the default).
 */
export function openSqliteStore(options: SqliteStoreOptions): Store {
  const inMemory = options.path === ':memory:';
  if (!inMemory) prepareSqliteFile(options);
  const db = new Database(options.path, inMemory ? {} : { fileMustExist: true });
  try {
    return createSqliteStore(db, options, inMemory);
  } catch (error) {
    db.close();
    throw error;
  }
}

const require = createRequire(import.meta.url);

function createSqliteStore(db: Database.Database, options: SqliteStoreOptions, inMemory: boolean): Store {
  let purgeThread: PurgeThread | undefined;
  let check: BackgroundCheck | undefined;
  db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000))}`);
  if (!inMemory) {
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (String(mode).toLowerCase() !== 'wal') throw new Error(`could not put ${options.path} in WAL mode (got ${String(mode)})`);
  }
  // FULL: in WAL mode the log is synced on every commit, so a token is durable before the
  // response carrying it is written (NORMAL could lose the last commits on power loss).
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  // A 16 MiB page cache (SQLite's default is 2 MiB), enough for the upper levels of the token,
  // user and grant B-trees: it is anonymous memory of each process (a cache per worker).
  // The memory map (serve: performance.sqliteMmapMiB, default 2047) reads a page the cache does
  // not hold by a memory access instead of a pread() system call and a copy: with a million
  // distinct tokens checked in turn over 10 million (bench:scale's fleet), every lookup misses
  // the cache, and the map took findToken from 9 to 2.4 µs of system CPU per lookup (a fleet
  // check in the server: 58 -> 53 µs, as a mapped page is parsed again at every use). Mapped
  // pages are the kernel's page cache, shared and reclaimable: they count in RssFile, not in
  // RssAnon (a 256 MiB map had looked like +150 MB of RSS once, when RSS was read whole).
  // The cost: an I/O error on a mapped page is a SIGBUS rather than an error code.
  if (!inMemory) {
    db.pragma('cache_size = -16384');
    db.pragma(`mmap_size = ${Math.max(0, Math.trunc(options.mmapBytes ?? 0))}`);
  }

  if (options.migrate ?? true) {
    applySqliteMigrations(db);
  } else {
    const latest = SQLITE_MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
    const current = hasTable ? sqliteSchemaVersion(db) : 0;
    if (current !== latest) throw new Error(`the database schema is at version ${current}, expected ${latest}; run "svcapi-auth migrate"`);
  }

  // Every statement is compiled once, here.
  const s = {
    schemaVersion: db.prepare('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations'),
    getApp: db.prepare(SQL.getApp.sqlite),
    listApps: db.prepare(SQL.listApps.sqlite),
    insertApp: db.prepare(SQL.insertApp.sqlite),
    updateApp: db.prepare(`UPDATE applications SET
        name                   = CASE WHEN @setName THEN @name ELSE name END,
        enabled                = CASE WHEN @setEnabled THEN @enabled ELSE enabled END,
        require_ip             = CASE WHEN @setRequireIp THEN @requireIp ELSE require_ip END,
        login_url              = CASE WHEN @setLoginUrl THEN @loginUrl ELSE login_url END,
        token_lifetime_seconds = CASE WHEN @setLifetime THEN @tokenLifetimeSeconds ELSE token_lifetime_seconds END,
        idle_timeout_seconds   = CASE WHEN @setIdle THEN @idleTimeoutSeconds ELSE idle_timeout_seconds END,
        default_language       = CASE WHEN @setLanguage THEN @defaultLanguage ELSE default_language END,
        trusted_callers        = CASE WHEN @setTrustedCallers THEN @trustedCallers ELSE trusted_callers END
      WHERE app_id = @appId`),
    revokeAppTokens: db.prepare(SQL.revokeAppTokens.sqlite),

    userByKey: db.prepare(SQL.userByKey.sqlite),
    userById: db.prepare(SQL.userById.sqlite),
    listUsers: db.prepare(SQL.listUsers.sqlite),
    insertUser: db.prepare(SQL.insertUser.sqlite),
    insertGrant: db.prepare(SQL.insertGrant.sqlite),
    deleteGrant: db.prepare(SQL.deleteGrant.sqlite),
    setPassword: db.prepare(SQL.setPassword.sqlite),
    upgradePassword: db.prepare(SQL.upgradePassword.sqlite),
    setUserEnabled: db.prepare(SQL.setUserEnabled.sqlite),
    setLastLogin: db.prepare('UPDATE users SET last_login_at = @issuedAt WHERE user_id = @userId'),
    revokeUserTokens: db.prepare(SQL.revokeUserTokens.sqlite),
    revokeUserAppTokens: db.prepare(SQL.revokeUserAppTokens.sqlite),
    upgradeLegacyPassword: db.prepare(SQL.upgradeLegacyPassword.sqlite),
    markLegacyMigrated: db.prepare(SQL.markLegacyMigrated.sqlite),
    passwordHashes: db.prepare(SQL.passwordHashes.sqlite),

    insertToken: db.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at)
      SELECT @tokenHash, @kind, @userId, @appId, @clientIp, @sourceIp, @issuedAt, @expiresAt, @issuedAt
      WHERE ${TOKEN_PRECONDITIONS}`),
    // Array rows (row-mapping.ts TOKEN_COLUMNS): cheaper to build than keyed objects.
    findToken: db.prepare(FIND_TOKEN_SQL).raw(),
    touchToken: db.prepare(`UPDATE tokens SET last_used_at = MAX(last_used_at, @now) WHERE token_hash = @tokenHash AND kind = 'session'`),
    consumeTicket: db.prepare(`UPDATE tokens SET used_at = @now
      WHERE token_hash = @tokenHash AND kind = 'ticket' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > @now`),
    revokeLiveUserTokens: db.prepare(`UPDATE tokens SET revoked_at = @now
      WHERE user_id = @userId AND revoked_at IS NULL AND used_at IS NULL AND expires_at > @now`),
    revokeAllLiveTokens: db.prepare(`UPDATE tokens SET revoked_at = @now
      WHERE revoked_at IS NULL AND used_at IS NULL AND expires_at > @now`),
    revokeOneLiveToken: db.prepare(`UPDATE tokens SET revoked_at = @now
      WHERE token_hash = @tokenHash AND revoked_at IS NULL AND used_at IS NULL AND expires_at > @now`),
    userSessions: db.prepare(`${LISTED_TOKEN_SELECT}
      WHERE t.user_id = @userId AND t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > @now
      ORDER BY t.issued_at DESC, t.token_hash LIMIT @limit`).raw(),
    // A range on the primary key (hex digits sort below 'g'), so the lookup uses the index.
    tokensByPrefix: db.prepare(`${LISTED_TOKEN_SELECT}
      WHERE t.token_hash >= @prefix AND t.token_hash < @prefix || 'g' ORDER BY t.token_hash LIMIT @limit`).raw(),
    deleteExpired: db.prepare('DELETE FROM tokens WHERE expires_at < ?'),
    syncNormal: db.prepare('PRAGMA synchronous = NORMAL'),
    syncFull: db.prepare('PRAGMA synchronous = FULL'),
    purgeExpired: db.prepare(PURGE_EXPIRED_SQL),
    // Judged as evaluateToken judges a session (tokens.ts), for the active-tokens gauge.
    countActive: db.prepare(`SELECT COUNT(*) AS n FROM tokens t
      JOIN users u ON u.user_id = t.user_id AND u.enabled = 1
      JOIN applications a ON a.app_id = t.app_id AND a.enabled = 1
      WHERE t.kind = 'session' AND t.revoked_at IS NULL AND t.expires_at > @now
        AND (a.idle_timeout_seconds IS NULL OR t.last_used_at + a.idle_timeout_seconds * 1000 > @now)
        AND EXISTS (SELECT 1 FROM user_applications g WHERE g.user_id = t.user_id AND g.app_id = t.app_id)`),
    hashSchemes: db.prepare(`SELECT CASE WHEN substr(password_hash, 1, 1) = '$'
        THEN substr(password_hash, 2, instr(substr(password_hash, 2) || '$', '$') - 1) ELSE '' END AS scheme, COUNT(*) AS n
      FROM users GROUP BY scheme ORDER BY scheme`),

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
    revisions: db.prepare(`SELECT (SELECT revision FROM news_revision WHERE id = 1),
      (SELECT revision FROM access_revision WHERE id = 1)`).raw(),
    getNews: db.prepare(SQL.getNews.sqlite),
    deleteNews: db.prepare(SQL.deleteNews.sqlite),
    updateNews: db.prepare(SQL.updateNews.sqlite),

    insertAdmin: db.prepare(SQL.insertAdmin.sqlite),
    getAdmin: db.prepare(SQL.getAdmin.sqlite),
    listAdmins: db.prepare(SQL.listAdmins.sqlite),
    setAdminPassword: db.prepare(SQL.setAdminPassword.sqlite),
    endAdminSessions: db.prepare(SQL.endAdminSessions.sqlite),
    removeAdmin: db.prepare(SQL.removeAdmin.sqlite),
    insertAdminSession: db.prepare(`INSERT INTO admin_sessions (session_hash, name, csrf_token, source_ip, created_at, last_used_at, expires_at)
      SELECT @sessionHash, @name, @csrfToken, @sourceIp, @createdAt, @createdAt, @expiresAt
      WHERE EXISTS (SELECT 1 FROM admin_accounts WHERE name = @name AND password_hash = @passwordHash)`),
    adminLastLogin: db.prepare(SQL.adminLastLogin.sqlite),
    findAdminSession: db.prepare(SQL.findAdminSession.sqlite),
    touchAdminSession: db.prepare(SQL.touchAdminSession.sqlite),
    deleteAdminSession: db.prepare(SQL.deleteAdminSession.sqlite),
    purgeAdminSessions: db.prepare(SQL.purgeAdminSessions.sqlite),

    ping: db.prepare('SELECT 1'),
    probeWrite: db.prepare('INSERT INTO health_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at'),
    liveTokens: db.prepare(`${LISTED_TOKEN_SELECT}
      WHERE t.token_hash > @afterHash AND t.revoked_at IS NULL AND t.used_at IS NULL AND t.expires_at > @liveAt
      ORDER BY t.token_hash LIMIT @limit`).raw(),
    importToken: db.prepare(`INSERT INTO tokens (token_hash, kind, user_id, app_id, client_ip, source_ip, issued_at, expires_at, last_used_at, used_at, revoked_at, origin)
      VALUES (@tokenHash, @kind, @userId, @appId, @clientIp, @sourceIp, @issuedAt, @expiresAt, @lastUsedAt, @usedAt, @revokedAt, @origin)
      ON CONFLICT (token_hash) DO NOTHING`),
  };

  const audit = {
    insert: db.prepare(`INSERT INTO audit_events (at, type, reason, request_id, app_id, login, source_ip, claimed_ip, token_fp, detail)
      VALUES (@at, @type, @reason, @requestId, @appId, @login, @sourceIp, @claimedIp, @tokenFp, @detail)`),
    purge: db.prepare(SQL.purgeAudit.sqlite),
    queries: new Map<string, Database.Statement>(),
  };
  const findTokenRow = (tokenHash: string): TokenRecord | null => {
    const row = s.findToken.get(tokenHash) as unknown[] | undefined;
    if (row === undefined || row[FIND_TOKEN_USER_ENABLED] === null || row[FIND_TOKEN_APP_ENABLED] === null) return null;
    return toToken(row);
  };
  // revisionsWithTokens: the revisions and the turn's token lookups in one read transaction (one
  // WAL read lock and snapshot for all; revision-gate.ts).
  const revisionsWithTokensTx = db.transaction((hashes: readonly string[]): RevisionsWithTokens => {
    const row = s.revisions.get() as unknown[];
    const tokens = new Map<string, TokenRecord>();
    for (const hash of hashes) {
      const record = findTokenRow(hash);
      if (record !== null) tokens.set(hash, record);
    }
    return { revisions: toStoreRevisions(row[0], row[1]), tokens };
  });

  const appendAuditTx = db.transaction((events: readonly NewAuditEvent[]): void => {
    for (const e of events) {
      audit.insert.run({
        at: ms(e.at), type: e.type, reason: e.reason, requestId: e.requestId, appId: e.appId, login: e.login,
        sourceIp: e.sourceIp, claimedIp: e.claimedIp, tokenFp: e.tokenFp, detail: e.detail === null ? null : JSON.stringify(e.detail),
      });
    }
  });

  // --- shadow and front modes: the newest differences only ---
  const shadow = {
    insert: db.prepare(`INSERT INTO shadow_differences (observed_at, mode, operation, binding, request_json, legacy_json, ours_json, diff)
      VALUES (@at, @mode, @operation, @binding, @requestJson, @legacyJson, @oursJson, @diff)`),
    prune: db.prepare(`DELETE FROM shadow_differences WHERE id <= (SELECT id FROM shadow_differences ORDER BY id DESC LIMIT 1 OFFSET ?)`),
    list: db.prepare(SQL.listShadowDifferences.sqlite),
  };
  const insertShadowTx = db.transaction((d: NewShadowDifference, keep: number): void => {
    shadow.insert.run({ at: ms(d.at), mode: d.mode, operation: d.operation, binding: d.binding, requestJson: d.requestJson, legacyJson: d.legacyJson, oursJson: d.oursJson, diff: d.diff });
    shadow.prune.run(keep);
  });

  // --- token passthrough's tallies: added to in one transaction, then pruned ---
  const tallies = {
    add: db.prepare(SQL.addLegacyTally.sqlite),
    prune: db.prepare(SQL.pruneLegacyTallies.sqlite),
    list: db.prepare(SQL.listLegacyTallies.sqlite),
  };
  const addTalliesTx = db.transaction((rows: readonly LegacyTally[], keepFrom: string): void => {
    for (const t of rows) tallies.add.run({ day: t.day, kind: t.kind, result: t.result, count: t.count, lastAt: ms(t.lastAt) });
    tallies.prune.run({ keepFrom });
  });

  // --- brute-force counters: read, decide (login-throttle-rules.ts) and write in one IMMEDIATE transaction ---
  const throttle = {
    get: db.prepare(SQL.counter.sqlite),
    put: db.prepare(`INSERT INTO throttle_counters (key, count, window_start, blocked_until, inflight, inflight_until, expires_at)
      VALUES (@key, @count, @windowStart, @blockedUntil, @inflight, @inflightUntil, @expiresAt)
      ON CONFLICT (key) DO UPDATE SET count = excluded.count, window_start = excluded.window_start, blocked_until = excluded.blocked_until,
        inflight = excluded.inflight, inflight_until = excluded.inflight_until, expires_at = excluded.expires_at`),
    known: db.prepare(SQL.knownSource.sqlite),
    forget: db.prepare(SQL.forgetCounter.sqlite),
    refund: db.prepare(SQL.refundCounter.sqlite),
    markKnown: db.prepare(`INSERT INTO known_sources (login_hash, source, last_success_at) VALUES (@loginHash, @source, @now)
      ON CONFLICT (login_hash, source) DO UPDATE SET last_success_at = MAX(last_success_at, excluded.last_success_at)`),
    purgeCounters: db.prepare(SQL.purgeCounters.sqlite),
    purgeKnown: db.prepare(SQL.purgeKnownSources.sqlite),
    // The operator's view and reset of one login.
    pairs: db.prepare(SQL.loginPairs.sqlite),
    pairCount: db.prepare(SQL.loginPairCount.sqlite),
    knownList: db.prepare(SQL.knownSources.sqlite),
    knownCount: db.prepare(SQL.knownSourceCount.sqlite),
    reset: db.prepare(SQL.resetLogin.sqlite),
  };
  const counterOf = (r: Row): ThrottleCounter => ({
    count: Number(r.count), windowStart: new Date(Number(r.window_start)), blockedUntil: r.blocked_until === null ? null : new Date(Number(r.blocked_until)),
    inflight: Number(r.inflight), inflightUntil: r.inflight_until === null ? null : new Date(Number(r.inflight_until)), expiresAt: new Date(Number(r.expires_at)),
  });
  const throttleStateTx = db.transaction((query: LoginThrottleQuery): LoginThrottleRecord => {
    const keys = throttleKeys({ loginHash: query.loginHash, source: '' });
    const limit = Math.max(0, Math.trunc(query.limit));
    const login = throttle.get.get({ key: keys.login }) as Row | undefined;
    const pairs = { prefix: keys.pair, now: ms(query.now) };
    const known = { loginHash: query.loginHash, since: ms(query.knownSince) };
    return {
      login: login === undefined ? null : counterOf(login),
      pairs: (throttle.pairs.all({ ...pairs, limit }) as Row[]).map((r) => ({ source: String(r.source), ...counterOf(r) })),
      pairCount: Number((throttle.pairCount.get(pairs) as Row).n),
      knownSources: (throttle.knownList.all({ ...known, limit }) as Row[]).map((r) => ({ source: String(r.source), lastSuccessAt: new Date(Number(r.last_success_at)) })),
      knownSourceCount: Number((throttle.knownCount.get(known) as Row).n),
    };
  });
  const counter = (key: string): CounterState | null => {
    const r = throttle.get.get({ key }) as Row | undefined;
    return r === undefined ? null : {
      count: Number(r.count), windowStart: Number(r.window_start), blockedUntil: r.blocked_until === null ? null : Number(r.blocked_until),
      inflight: Number(r.inflight), inflightUntil: r.inflight_until === null ? null : Number(r.inflight_until), expiresAt: Number(r.expires_at),
    };
  };
  const reserveTx = db.transaction((attempt: LoginAttempt, limits: ThrottleLimits) => {
    const keys = throttleKeys(attempt);
    const now = ms(attempt.now);
    const rows = { pair: counter(keys.pair), login: counter(keys.login), source: counter(keys.source) };
    const known = needsKnownSource(rows, now, limits)
      && throttle.known.get({ loginHash: attempt.loginHash, source: attempt.source, since: now - limits.knownSourceMs }) !== undefined;
    const decision = decideAttempt(rows, now, limits, known);
    if ('writes' in decision) {
      for (const scope of lockOrder(keys)) throttle.put.run({ key: keys[scope], ...decision.writes[scope] });
    }
    return decision.reservation;
  });
  /** A verification that did not fail gives the login its slot back. */
  const loginSlotBack = (key: string, now: number): void => {
    const login = loginAfterNoFailure(counter(key), now);
    if (login !== null) throttle.put.run({ key, ...login });
  };
  const successTx = db.transaction((attempt: LoginAttempt) => {
    const keys = throttleKeys(attempt);
    loginSlotBack(keys.login, ms(attempt.now));
    const pair = pairAfterSuccess(counter(keys.pair), ms(attempt.now));
    if (pair === null) throttle.forget.run({ key: keys.pair });
    else throttle.put.run({ key: keys.pair, ...pair });
    throttle.refund.run({ key: keys.source, now: ms(attempt.now) });
    throttle.markKnown.run({ loginHash: attempt.loginHash, source: attempt.source, now: ms(attempt.now) });
  });
  const failureTx = db.transaction((attempt: LoginAttempt, limits: ThrottleLimits) => {
    const keys = throttleKeys(attempt);
    throttle.put.run({ key: keys.login, ...loginAfterFailure(counter(keys.login), ms(attempt.now), limits) });
    throttle.put.run({ key: keys.pair, ...pairAfterFailure(counter(keys.pair), ms(attempt.now), limits) });
  });
  const releaseTx = db.transaction((attempt: LoginAttempt) => {
    const keys = throttleKeys(attempt);
    loginSlotBack(keys.login, ms(attempt.now));
    const pair = pairAfterRelease(counter(keys.pair), ms(attempt.now));
    if (pair !== null) throttle.put.run({ key: keys.pair, ...pair });
    throttle.refund.run({ key: keys.source, now: ms(attempt.now) });
  });
  const purgeThrottleTx = db.transaction((now: Date, knownBefore: Date, limit: number): number => {
    const counters = throttle.purgeCounters.run({ now: ms(now), limit }).changes;
    return counters + (counters < limit ? throttle.purgeKnown.run({ before: ms(knownBefore), limit: limit - counters }).changes : 0);
  });

  // One read transaction: in WAL mode both statements see the same snapshot of the database, so
  // the revision names exactly the state the rows come from (another process may write between).
  const newsSnapshot = db.transaction((query: PublishedNewsQuery): PublishedNewsSnapshot => {
    const revision = revisionValue(s.newsRevision.get(), 'news_revision');
    const rows = query.languages.length === 0 ? [] : s.newsSnapshot.all({
      appId: query.appId, languages: JSON.stringify(query.languages), now: ms(query.now), members: bool(query.includeMembersOnly),
    }) as Row[];
    return toPublishedNewsSnapshot(rows, revision, toNews, (v) => v === 1);
  });

  const getUser = (userId: number): User | null => {
    const row = s.userById.get({ userId }) as Row | undefined;
    return row === undefined ? null : toUser(row);
  };

  const insertUserTx = db.transaction((user: NewUser): InsertUserResult => {
    const inserted = s.insertUser.get({
      login: user.login, loginKey: user.loginKey, passwordHash: user.passwordHash,
      enabled: bool(user.enabled), createdAt: ms(user.createdAt),
      passwordChangedAt: ms(user.passwordChangedAt ?? user.createdAt), lastLoginAt: user.lastLoginAt ? ms(user.lastLoginAt) : null,
    }) as Row | undefined;
    if (inserted === undefined) return { ok: false, reason: 'login-taken' };
    const userId = Number(inserted.user_id);
    for (const appId of user.appIds) s.insertGrant.run({ userId, appId, now: ms(user.createdAt) });
    const created = getUser(userId);
    if (created === null) throw new Error('user vanished inside its own transaction');
    return { ok: true, user: created };
  });

  const updateAppTx = db.transaction((appId: number, patch: ApplicationPatch, now: Date): Application | null => {
    const info = s.updateApp.run({
      appId,
      setName: bool(patch.name !== undefined), name: patch.name ?? null,
      setEnabled: bool(patch.enabled !== undefined), enabled: bool(patch.enabled ?? false),
      setRequireIp: bool(patch.requireIp !== undefined), requireIp: bool(patch.requireIp ?? false),
      setLoginUrl: bool(patch.loginUrl !== undefined), loginUrl: patch.loginUrl ?? null,
      setLifetime: bool(patch.tokenLifetimeSeconds !== undefined), tokenLifetimeSeconds: patch.tokenLifetimeSeconds ?? null,
      setIdle: bool(patch.idleTimeoutSeconds !== undefined), idleTimeoutSeconds: patch.idleTimeoutSeconds ?? null,
      setLanguage: bool(patch.defaultLanguage !== undefined), defaultLanguage: patch.defaultLanguage ?? null,
      setTrustedCallers: bool(patch.trustedCallers !== undefined), trustedCallers: JSON.stringify(patch.trustedCallers ?? []),
    });
    if (info.changes !== 1) return null;
    if (patch.enabled === false) s.revokeAppTokens.run({ appId, now: ms(now) });
    const row = s.getApp.get({ appId }) as Row | undefined;
    return row === undefined ? null : toApplication(row);
  });

  const setAdminPasswordTx = db.transaction((name: string, passwordHash: string, now: Date): boolean => {
    if (s.setAdminPassword.run({ name, passwordHash, now: ms(now) }).changes !== 1) return false;
    s.endAdminSessions.run({ name });
    return true;
  });
  const insertAdminSessionTx = db.transaction((session: NewAdminSession, passwordHash: string): boolean => {
    const params = {
      sessionHash: session.sessionHash, name: session.name, csrfToken: session.csrfToken, sourceIp: session.sourceIp,
      createdAt: ms(session.createdAt), expiresAt: ms(session.expiresAt), passwordHash,
    };
    if (s.insertAdminSession.run(params).changes !== 1) return false;
    s.adminLastLogin.run({ name: session.name, createdAt: params.createdAt });
    return true;
  });
  const setPasswordTx = db.transaction((userId: number, passwordHash: string, now: Date): void => {
    s.setPassword.run({ userId, passwordHash, now: ms(now) });
    s.revokeUserTokens.run({ userId, now: ms(now) });
  });

  const setEnabledTx = db.transaction((userId: number, enabled: boolean, now: Date): void => {
    s.setUserEnabled.run({ userId, enabled: bool(enabled) });
    if (!enabled) s.revokeUserTokens.run({ userId, now: ms(now) });
  });

  const revokeGrantTx = db.transaction((userId: number, appId: number, now: Date): boolean => {
    if (s.deleteGrant.run({ userId, appId }).changes !== 1) return false;
    s.revokeUserAppTokens.run({ userId, appId, now: ms(now) });
    return true;
  });

  const tokenParams = (token: NewToken, kind: 'session' | 'ticket', passwordHash: string | null): Row => ({
    tokenHash: token.tokenHash, kind, userId: token.userId, appId: token.appId,
    clientIp: token.clientIp, sourceIp: token.sourceIp,
    issuedAt: ms(token.issuedAt), expiresAt: ms(token.expiresAt), passwordHash,
  });

  const insertSessionTx = db.transaction((token: NewToken, passwordHash: string, newPasswordHash: string | null): boolean => {
    if (s.insertToken.run(tokenParams(token, 'session', passwordHash)).changes !== 1) return false;
    s.setLastLogin.run({ userId: token.userId, issuedAt: ms(token.issuedAt) });
    // The insert just checked the hash is still `passwordHash`, so this upgrade cannot undo a change.
    if (newPasswordHash !== null) s.upgradePassword.run({ userId: token.userId, expectedHash: passwordHash, newHash: newPasswordHash });
    return true;
  });

  const migrateLegacyTx = db.transaction((input: LegacyMigrationInput): UserCredentials | null => {
    let userId: number;
    if (input.expectedHash === null) {
      const created = insertUserTx({
        login: input.login, loginKey: input.loginKey, passwordHash: input.passwordHash, enabled: true, appIds: [input.appId], createdAt: input.now,
      });
      if (!created.ok) return null;
      userId = created.user.userId;
    } else {
      const upgraded = s.upgradeLegacyPassword.get({ loginKey: input.loginKey, expectedHash: input.expectedHash, newHash: input.passwordHash }) as Row | undefined;
      if (upgraded === undefined) return null;
      userId = Number(upgraded.user_id);
      s.insertGrant.run({ userId, appId: input.appId, now: ms(input.now) });
    }
    s.markLegacyMigrated.run({ userId, now: ms(input.now) });
    const row = s.userById.get({ userId }) as Row;
    return { ...toUser(row), passwordHash: str(row.password_hash) };
  });

  // The hot paths' small writes (tokens, tickets, their uses, brute-force counters): one
  // transaction and one fsync per event-loop turn for all of them (group-commit.ts).
  const walSync = inMemory || !(options.asyncSync ?? true) ? null : createWalSync(db, { walPath: `${options.path}-wal` });
  const writes = createSqliteWrites(db, {
    enabled: options.groupCommit ?? true, ...(options.onGroupCommit !== undefined && { onCommit: options.onGroupCommit }),
    ...(walSync !== null && { walSync }),
  });

  // The whole file checked while the store already serves (background-check.ts).
  if (options.integrityCheck === 'background' && !inMemory) {
    const started = startBackgroundCheck(options.path, require.resolve('better-sqlite3'));
    check = started;
    void started.result.then((result) => {
      // A result that settled just as close() began is not reported either (close() clears `check`).
      if (check !== started) return;
      check = undefined;
      options.onIntegrityCheck?.(result);
    });
  }

  return {
    async schemaVersion() {
      return Number((s.schemaVersion.get() as Row).version);
    },
    async close() {
      // The check's child is killed (SIGKILL: at once, whatever page it reads) and awaited, so
      // that a closed store leaves no process reading its file; a few milliseconds on shutdown.
      const stopping = check;
      check = undefined;
      stopping?.stop();
      await stopping?.ended;
      await purgeThread?.close();
      purgeThread = undefined;
      if (db.open) await writes.flush();
      await walSync?.close();
      if (db.open) db.close();
    },
    async ping() {
      s.ping.get();
    },
    async probeWrite(now) {
      s.probeWrite.run(ms(now));
    },

    async getApplication(appId) {
      const row = s.getApp.get({ appId }) as Row | undefined;
      return row === undefined ? null : toApplication(row);
    },
    async listApplications() {
      return (s.listApps.all() as Row[]).map(toApplication);
    },
    async insertApplication(app): Promise<InsertApplicationResult> {
      const row = s.insertApp.get({
        appId: app.appId, name: app.name, enabled: bool(app.enabled), requireIp: bool(app.requireIp),
        loginUrl: app.loginUrl, tokenLifetimeSeconds: app.tokenLifetimeSeconds, idleTimeoutSeconds: app.idleTimeoutSeconds,
        defaultLanguage: app.defaultLanguage, trustedCallers: JSON.stringify(app.trustedCallers), createdAt: ms(app.createdAt),
      }) as Row | undefined;
      return row === undefined ? { ok: false, reason: 'app-exists' } : { ok: true, application: toApplication(row) };
    },
    async updateApplication(appId, patch, now) {
      return updateAppTx.immediate(appId, patch, now);
    },

    async findUserByLoginKey(loginKey): Promise<UserCredentials | null> {
      const row = s.userByKey.get({ loginKey }) as Row | undefined;
      return row === undefined ? null : { ...toUser(row), passwordHash: str(row.password_hash) };
    },
    async getUser(userId) {
      return getUser(userId);
    },
    async listUsers(filter) {
      return (s.listUsers.all({ appId: filter?.appId ?? null }) as Row[]).map(toUser);
    },
    async insertUser(user) {
      return insertUserTx.immediate(user);
    },
    async setPasswordHash(userId, passwordHash, now) {
      setPasswordTx.immediate(userId, passwordHash, now);
    },
    async upgradePasswordHash(userId, expectedHash, newHash) {
      return s.upgradePassword.run({ userId, expectedHash, newHash }).changes === 1;
    },
    async setUserEnabled(userId, enabled, now) {
      setEnabledTx.immediate(userId, enabled, now);
    },
    async grantApplication(userId, appId, now) {
      return s.insertGrant.run({ userId, appId, now: ms(now) }).changes === 1;
    },
    async revokeApplication(userId, appId, now) {
      return revokeGrantTx.immediate(userId, appId, now);
    },
    async migrateLegacyUser(input) {
      return migrateLegacyTx.immediate(input);
    },
    async listPasswordHashes(page): Promise<readonly PasswordHashRow[]> {
      return (s.passwordHashes.all({ afterUserId: page.afterUserId, limit: Math.max(0, Math.trunc(page.limit)) }) as Row[]).map((r) => ({
        userId: Number(r.user_id), passwordHash: str(r.password_hash), legacyMigratedAt: dateOrNull(r.migrated_at),
      }));
    },

    async insertSession(token, expect) {
      return writes.run(() => insertSessionTx.immediate(token, expect.passwordHash, expect.newPasswordHash ?? null));
    },
    async insertTicket(token) {
      return writes.run(() => s.insertToken.run(tokenParams(token, 'ticket', null)).changes === 1);
    },
    async findToken(tokenHash) {
      // One lookup at a time: reading a turn's lookups in one read transaction saved 2 µs of
      // system CPU per lookup in a loop, but nothing measurable per fleet check in the server.
      return findTokenRow(tokenHash);
    },
    async touchToken(tokenHash, now) {
      await writes.run(() => s.touchToken.run({ tokenHash, now: ms(now) }));
    },
    async consumeTicket(tokenHash, now) {
      return writes.run(() => s.consumeTicket.run({ tokenHash, now: ms(now) }).changes === 1);
    },
    async revokeTokens(scope: RevokeScope, now) {
      const info = 'all' in scope
        ? s.revokeAllLiveTokens.run({ now: ms(now) })
        : 'tokenHash' in scope
          ? s.revokeOneLiveToken.run({ tokenHash: scope.tokenHash, now: ms(now) })
          : s.revokeLiveUserTokens.run({ userId: scope.userId, now: ms(now) });
      return info.changes;
    },
    async listUserSessions(userId, now, limit) {
      return (s.userSessions.all({ userId, now: ms(now), limit: Math.max(0, Math.trunc(limit)) }) as unknown[][]).map(toListedToken);
    },
    async findTokensByFingerprint(prefix, limit) {
      return (s.tokensByPrefix.all({ prefix, limit: Math.max(0, Math.trunc(limit)) }) as unknown[][]).map(toListedToken);
    },
    async deleteExpiredTokens(before) {
      return s.deleteExpired.run(ms(before)).changes;
    },
    async purgeExpiredTokens(before, limit) {
      // A file: on the purge thread (purge-thread.ts), so neither the DELETE nor the checkpoint
      // its commit may set off holds the event loop.
      if (!inMemory && (options.purgeThread ?? true)) {
        purgeThread ??= startPurgeThread({ path: options.path, sql: PURGE_EXPIRED_SQL, busyTimeoutMs: Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000)), driver: require.resolve('better-sqlite3') });
        return purgeThread.purge(ms(before), Math.max(0, Math.trunc(limit)));
      }
      // Committed without the fsync of synchronous = FULL: a purge lost to a power cut only
      // leaves rows the next run deletes, and the sync held the event loop ~3 ms per batch on
      // 10M tokens (bench/README.md). The next FULL commit (a token) syncs these frames too.
      s.syncNormal.run();
      try {
        return s.purgeExpired.run({ before: ms(before), limit: Math.max(0, Math.trunc(limit)) }).changes;
      } finally {
        s.syncFull.run();
      }
    },
    async countActiveTokens(now) {
      return Number((s.countActive.get({ now: ms(now) }) as Row).n);
    },
    async countPasswordHashSchemes() {
      return (s.hashSchemes.all() as Row[]).map((r) => ({ scheme: str(r.scheme), count: Number(r.n) }));
    },

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
    async revisions() {
      const row = s.revisions.get() as unknown[];
      return toStoreRevisions(row[0], row[1]);
    },
    async revisionsWithTokens(hashes) {
      return revisionsWithTokensTx.deferred(hashes);
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

    async insertAdminAccount(a) {
      return s.insertAdmin.run({
        name: a.name, passwordHash: a.passwordHash, role: a.role, createdAt: ms(a.createdAt), passwordChangedAt: ms(a.passwordChangedAt),
        lastLoginAt: a.lastLoginAt === null ? null : ms(a.lastLoginAt),
      }).changes === 1;
    },
    async getAdminAccount(name) {
      const row = s.getAdmin.get({ name }) as Row | undefined;
      return row === undefined ? null : toAdminCredentials(row);
    },
    async listAdminAccounts() {
      return (s.listAdmins.all() as Row[]).map((r) => {
        const { passwordHash: _hash, ...account } = toAdminCredentials(r);
        return account;
      });
    },
    async setAdminPassword(name, passwordHash, now) {
      return setAdminPasswordTx.immediate(name, passwordHash, now);
    },
    async removeAdminAccount(name) {
      return s.removeAdmin.run({ name }).changes === 1;
    },
    async insertAdminSession(session, passwordHash) {
      return insertAdminSessionTx.immediate(session, passwordHash);
    },
    async findAdminSession(sessionHash) {
      const r = s.findAdminSession.get({ sessionHash }) as Row | undefined;
      if (r === undefined) return null;
      return {
        sessionHash: str(r.session_hash), name: str(r.name), role: r.role === 'admin' ? 'admin' : 'editor', csrfToken: str(r.csrf_token),
        sourceIp: r.source_ip === null ? null : str(r.source_ip), createdAt: date(r.created_at), lastUsedAt: date(r.last_used_at), expiresAt: date(r.expires_at),
      };
    },
    async touchAdminSession(sessionHash, now) {
      s.touchAdminSession.run({ sessionHash, now: ms(now) });
    },
    async deleteAdminSession(sessionHash) {
      return s.deleteAdminSession.run({ sessionHash }).changes === 1;
    },
    async purgeAdminSessions(now, idleBefore) {
      return s.purgeAdminSessions.run({ now: ms(now), idleBefore: ms(idleBefore) }).changes;
    },

    async listLiveTokens(query) {
      return (s.liveTokens.all({ afterHash: query.afterHash ?? '', liveAt: ms(query.liveAt), limit: query.limit }) as unknown[][]).map(toListedToken);
    },
    async importToken(token) {
      return s.importToken.run({
        tokenHash: token.tokenHash, kind: token.kind, userId: token.userId, appId: token.appId, clientIp: token.clientIp, sourceIp: token.sourceIp,
        issuedAt: ms(token.issuedAt), expiresAt: ms(token.expiresAt), lastUsedAt: ms(token.lastUsedAt),
        usedAt: token.usedAt === null ? null : ms(token.usedAt), revokedAt: token.revokedAt === null ? null : ms(token.revokedAt), origin: token.origin,
      }).changes === 1;
    },

    async appendAudit(events) {
      if (events.length === 0) return;
      // The audit writer never holds a request; nor does its commit hold the event loop.
      if (walSync === null) appendAuditTx.immediate(events);
      else await walSync.commitThenSync(() => appendAuditTx.immediate(events));
    },
    async installationSecret(name, candidate) {
      // Read first: once the secret exists, starting (or `audit --login`) needs no write, so a
      // database that has turned read-only still opens, and readiness says why it is not ready.
      const existing = db.prepare('SELECT secret FROM installation_secrets WHERE name = ?').get(name) as Row | undefined;
      if (existing !== undefined) return str(existing.secret);
      db.prepare('INSERT INTO installation_secrets (name, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING').run(name, candidate, Date.now());
      return str((db.prepare('SELECT secret FROM installation_secrets WHERE name = ?').get(name) as Row).secret);
    },
    async queryAudit(query) {
      const { key, statement: shared, params } = auditQuerySql(query, ms);
      let statement = audit.queries.get(key);
      if (statement === undefined) {
        statement = db.prepare(shared.sqlite);
        audit.queries.set(key, statement);
      }
      return (statement.all(params) as Row[]).map(toAudit);
    },
    async reserveLoginAttempt(attempt, limits) {
      return writes.run(() => reserveTx.immediate(attempt, limits));
    },
    async recordLoginSuccess(attempt) {
      await writes.run(() => successTx.immediate(attempt));
    },
    async recordLoginFailure(attempt, limits) {
      await writes.run(() => failureTx.immediate(attempt, limits));
    },
    async releaseLoginAttempt(attempt) {
      await writes.run(() => releaseTx.immediate(attempt));
    },
    async purgeLoginThrottle(now, knownBefore, limit) {
      return purgeThrottleTx.immediate(now, knownBefore, Math.max(0, Math.trunc(limit)));
    },
    async loginThrottleState(query) {
      return throttleStateTx.deferred(query);
    },
    async resetLoginThrottle(loginHash) {
      const keys = throttleKeys({ loginHash, source: '' });
      return throttle.reset.run({ login: keys.login, prefix: keys.pair }).changes;
    },
    async purgeAudit(before, limit) {
      return audit.purge.run({ before: ms(before), limit: Math.max(0, Math.trunc(limit)) }).changes;
    },
    async insertShadowDifference(difference, keep) {
      insertShadowTx.immediate(difference, Math.max(1, Math.trunc(keep)));
    },
    async listShadowDifferences(limit) {
      return (shadow.list.all({ limit: Math.max(0, Math.trunc(limit)) }) as Row[]).map(toShadowDifference);
    },
    async addLegacyTallies(rows, keepFrom) {
      const ordered = legacyTallyRows(rows);
      if (ordered.length === 0) return;
      // Once a minute per process; like the audit trail's appends, its commit does not hold the event loop.
      if (walSync === null) addTalliesTx.immediate(ordered, keepFrom);
      else await walSync.commitThenSync(() => addTalliesTx.immediate(ordered, keepFrom));
    },
    async listLegacyTallies() {
      return (tallies.list.all() as Row[]).map((r): LegacyTally => ({
        day: str(r.day), kind: str(r.kind) as LegacyTallyKind, result: str(r.result), count: Number(r.count), lastAt: date(r.last_at),
      }));
    },
  };
}
