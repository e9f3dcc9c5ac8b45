/**
 * The persistence ports of the service, one per concern (StoreLifecycle, AccountStore,
 * TokenStore, NewsStore, RevisionStore, ThrottleStore, AdminConsoleStore, AuditStore,
 * ShadowStore, LegacyTallyStore); Store is all of them. Every adapter (SQLite, PostgreSQL) implements Store and
 * passes the same contract suite (test/store/store-contract.ts).
 *
 * Rules every adapter keeps:
 * - Every method is async, even when the driver is synchronous, so a networked database fits.
 * - A write has been committed durably when its promise resolves (the crash-safety promise:
 *   a token handed to a client survives a crash of the server right after). An adapter may
 *   commit the small writes of one event-loop turn together (group commit, turn-batch.ts): each
 *   promise still resolves only after that commit, with its own outcome.
 * - Expected outcomes (duplicate login, unknown row) are values; a broken database rejects.
 * - Tokens and login tickets are known only by the SHA-256 hex of their text; the text never
 *   reaches the store.
 * - Methods that change who may hold a token (disable a user, change a password, disable an
 *   application, withdraw a grant) revoke the affected tokens in the same transaction, so there
 *   is no moment when the change is visible but old tokens still work.
 */

export interface Application {
  readonly appId: number;
  readonly name: string;
  readonly enabled: boolean;
  /** Whether ValidateUser demands a valid IPAddress (GPS, AppId 2, does not). */
  readonly requireIp: boolean;
  readonly loginUrl: string | null;
  readonly tokenLifetimeSeconds: number;
  /** Sliding expiry: a token unused for this long expires; null means no idle timeout. */
  readonly idleTimeoutSeconds: number | null;
  /** Canonical BCP 47 tag of the news language used when the caller's language has none. */
  readonly defaultLanguage: string;
  /**
   * addresses / CIDR ranges (canonical, source-address.ts) of servers that log their
   * own users in; from them, ValidateUser's IPAddress is the end user's address for brute-force
   * counting. Empty: none (IPAddress is only recorded).
   */
  readonly trustedCallers: readonly string[];
  readonly createdAt: Date;
}

export type ApplicationPatch = Partial<Omit<Application, 'appId' | 'createdAt'>>;

export interface User {
  readonly userId: number;
  /** As the operator typed it; matching uses `loginKey`. */
  readonly login: string;
  readonly enabled: boolean;
  /** Applications the user may use, ascending. */
  readonly appIds: readonly number[];
  readonly createdAt: Date;
  readonly lastLoginAt: Date | null;
  readonly passwordChangedAt: Date;
}

/** A user with the secret needed to check a password. */
export interface UserCredentials extends User {
  /** Opaque PHC string (`$argon2id$...`, later possibly a legacy format); only a PasswordHasher reads it. */
  readonly passwordHash: string;
}

export interface NewUser {
  readonly login: string;
  /** Case-insensitive matching key, computed by the domain (`loginKey()`); unique. */
  readonly loginKey: string;
  readonly passwordHash: string;
  readonly enabled: boolean;
  readonly appIds: readonly number[];
  readonly createdAt: Date;
  /** Import only (svcapi-auth import): kept from the source database; default createdAt / null. */
  readonly passwordChangedAt?: Date;
  readonly lastLoginAt?: Date | null;
}

/** What insertSession checks; with `newPasswordHash`, the hash is also upgraded in the same transaction. */
export interface SessionExpectation {
  readonly passwordHash: string;
  /** Replaces `passwordHash` (same password, stronger or non-legacy format); tokens and other fields untouched. */
  readonly newPasswordHash?: string;
}

export interface LegacyMigrationInput {
  readonly login: string;
  readonly loginKey: string;
  readonly passwordHash: string;
  readonly appId: number;
  /** null: create the user; else the hash the existing user must still have. */
  readonly expectedHash: string | null;
  readonly now: Date;
}

export interface PasswordHashRow {
  readonly userId: number;
  readonly passwordHash: string;
  /** When the legacy service vouched for the user (lazy migration), if it did. */
  readonly legacyMigratedAt: Date | null;
}

export type TokenKind = 'session' | 'ticket';

/** Where a ticket of the tickets table is: its issue time (read off its text) and its hash. */
export interface OrderedTicketKey {
  readonly issuedAt: Date;
  readonly tokenHash: string;
}

export interface NewToken {
  /** SHA-256 hex of the token text. */
  readonly tokenHash: string;
  readonly userId: number;
  readonly appId: number;
  /** The IPAddress the client declared (ValidateUser), if any. */
  readonly clientIp: string | null;
  /** The address the request came from. */
  readonly sourceIp: string | null;
  readonly issuedAt: Date;
  readonly expiresAt: Date;
}

/**
 * A token row together with the facts needed to judge it, read in ONE indexed lookup by hash
 * (joined to its user, its application and the user's grant for that application).
 */
export interface TokenRecord {
  readonly tokenHash: string;
  readonly kind: TokenKind;
  readonly userId: number;
  readonly appId: number;
  readonly clientIp: string | null;
  readonly sourceIp: string | null;
  readonly issuedAt: Date;
  /** Absolute expiry (issue time + lifetime). */
  readonly expiresAt: Date;
  readonly lastUsedAt: Date;
  /** Tickets only: when it was consumed. */
  readonly usedAt: Date | null;
  readonly revokedAt: Date | null;
  readonly userEnabled: boolean;
  readonly appEnabled: boolean;
  /** Whether the user still holds a grant for `appId`. */
  readonly granted: boolean;
  readonly idleTimeoutSeconds: number | null;
  /**
   * The user's login as stored, read with the token: what the ticket's audit event, a login URL
   * with {login} and a JSON answer's owner show, without reading the user again.
   */
  readonly login: string;
}

/**
 * Where a token was issued (migration 12): 'ours' by ValidateUser here, 'legacy' by the old
 * service and brought over by `import tokens`. Shown to the operator only; it changes nothing
 * in how a token is judged.
 */
export type TokenOrigin = 'ours' | 'legacy';

/**
 * A token row with its origin, for the listings an operator reads (sessions, export). Not what
 * findToken returns: the hot lookup reads only what judging a token needs.
 */
export interface ListedToken extends TokenRecord {
  readonly origin: TokenOrigin;
}

/**
 * Numbers that change with every committed write of a kind, by whatever path (this store,
 * another process, another instance, raw SQL: database triggers bump them), and never come back
 * to an earlier value, even after a restore or a re-created database (each is at least the
 * database clock in microseconds). What the domain keeps in memory is labelled with them.
 */
export interface StoreRevisions {
  /** Every INSERT, UPDATE, DELETE (and TRUNCATE) of news (migration 5). */
  readonly news: number;
  /**
   * Every write that can end a session or change how one is judged (migration 6): a token's
   * identity, owner, expiry or revocation; a user's enabled flag or removal; any change to a
   * grant or an application. Not the issue or use of tokens and tickets, nor a login's bookkeeping.
   */
  readonly access: number;
}

/** A token row exactly as another database held it (svcapi-auth import). */
export type ImportedToken = Omit<ListedToken, 'userEnabled' | 'appEnabled' | 'granted' | 'idleTimeoutSeconds' | 'login'>;

export interface NewsRecord {
  readonly newsId: number;
  readonly appId: number;
  /** Canonical BCP 47 tag. */
  readonly language: string;
  readonly title: string;
  readonly body: string;
  readonly url: string | null;
  readonly publishedAt: Date;
  readonly expiresAt: Date | null;
  /** Dotted numeric versions, inclusive bounds; null means unbounded. */
  readonly minVersion: string | null;
  readonly maxVersion: string | null;
  readonly membersOnly: boolean;
  /**
   * Extra per-item values, text by name (migration 9): what a legacy news table had besides the
   * usual fields (a highlight flag, a category...), for WhatsNew columns of the compatibility
   * profile (`{ "attribute": name }`). Keys in ascending order; {} when none.
   */
  readonly attributes: Readonly<Record<string, string>>;
  readonly createdAt: Date;
}

/** A news row to insert; no attributes when `attributes` is absent. */
export type NewNews = Omit<NewsRecord, 'newsId' | 'attributes'> & { readonly attributes?: Readonly<Record<string, string>> };

export interface PublishedNewsQuery {
  readonly appId: number;
  /** Only rows in one of these canonical tags. */
  readonly languages: readonly string[];
  /** Rows published at or before, and not expired at, this instant. */
  readonly now: Date;
  readonly includeMembersOnly: boolean;
}

/**
 * findPublishedNews' rows together with how long they stay the answer (the news cache of
 * WhatsNew, src/domain/news-cache.ts, keeps them until then or until the news revision moves).
 */
export interface PublishedNewsSnapshot {
  /** Exactly what findPublishedNews returns for the same query. */
  readonly rows: readonly NewsRecord[];
  /** revisions().news as of the same read: the rows are exactly the table's content at this revision. */
  readonly revision: number;
  /**
   * The earliest instant after `now` at which the same query could return other rows with the
   * table unchanged: the first publication time still to come or expiry of a relevant row (same
   * application, languages and members-only filter). null: not before the table changes. Never
   * later than the real change; it may be earlier (rounding), which only costs a new read.
   */
  readonly changesAt: Date | null;
}

/** One token by its hash (the admin console's and `token revoke ID`'s single session), one user's, or everybody's. */
export type RevokeScope = { readonly userId: number } | { readonly all: true } | { readonly tokenHash: string };

/** The changeable fields of a news item (updateNews): everything but its id, application and creation time. */
export type NewsUpdate = Omit<NewsRecord, 'newsId' | 'appId' | 'createdAt'>;

/** Admin console roles: `editor` manages news only, `admin` everything. */
export type AdminRole = 'editor' | 'admin';

/** An admin console account (not a service user). `name` is lower-case ASCII (the domain checks it). */
export interface AdminAccount {
  readonly name: string;
  readonly role: AdminRole;
  readonly createdAt: Date;
  readonly passwordChangedAt: Date;
  readonly lastLoginAt: Date | null;
}

export interface AdminAccountCredentials extends AdminAccount {
  /** PHC string, read only by a PasswordHasher. */
  readonly passwordHash: string;
}

export interface NewAdminSession {
  /** SHA-256 hex of the cookie value; the value itself never reaches the store. */
  readonly sessionHash: string;
  readonly name: string;
  /** The synchronizer token every form of this session carries. */
  readonly csrfToken: string;
  readonly sourceIp: string | null;
  readonly createdAt: Date;
  /** Absolute expiry. */
  readonly expiresAt: Date;
}

/** A console session joined to its account's role, in one lookup. */
export interface AdminSessionRecord extends NewAdminSession {
  readonly role: AdminRole;
  readonly lastUsedAt: Date;
}

export type InsertUserResult = { readonly ok: true; readonly user: User } | { readonly ok: false; readonly reason: 'login-taken' };
export type InsertApplicationResult = { readonly ok: true; readonly application: Application } | { readonly ok: false; readonly reason: 'app-exists' };

/** Opening, closing and readiness of the database; the schema version the migrations left. */
export interface StoreLifecycle {
  /** Highest applied migration, for `svcapi-auth migrate` and diagnostics. */
  schemaVersion(): Promise<number>;
  /** Releases the connection; further calls reject. Idempotent. */
  close(): Promise<void>;
  /** Readiness: resolves when the database answers a trivial query, rejects (quickly) when it is unreachable. */
  ping(): Promise<void>;
  /**
   * Readiness: commits one small write (the health_probe row, migration 8) and resolves; rejects
   * when the database answers reads but cannot take a write (a read-only file or transaction, a
   * full disk), the condition under which no token can be issued while ping() still succeeds.
   * Also tells whether an instance of an older version is serving from the same database
   * (migration 18).
   */
  probeWrite(now: Date): Promise<WriteProbe>;
}

/** What a write probe reads back (Store.probeWrite). */
export interface WriteProbe {
  /**
   * How long ago, on the database's clock, an instance of a version before schema 18 last
   * rewrote the probe row (migration 18 stamps it; it probes every 5 seconds); null when none
   * ever did. Such an instance looks for login tickets in the tokens table only.
   */
  readonly olderVersionMsAgo: number | null;
}

/** The service's applications, users and their grants, and the users' password hashes. */
export interface AccountStore {
  // --- applications ---
  getApplication(appId: number): Promise<Application | null>;
  /** Ascending AppID. */
  listApplications(): Promise<readonly Application[]>;
  insertApplication(app: Application): Promise<InsertApplicationResult>;
  /** null when the application does not exist. Setting `enabled: false` revokes its tokens. */
  updateApplication(appId: number, patch: ApplicationPatch, now: Date): Promise<Application | null>;

  // --- users ---
  findUserByLoginKey(loginKey: string): Promise<UserCredentials | null>;
  getUser(userId: number): Promise<User | null>;
  /** Ascending login key; only users granted `appId` when given. */
  listUsers(filter?: { readonly appId?: number }): Promise<readonly User[]>;
  /** The granted applications must exist (the domain checks first; a foreign-key failure rejects). */
  insertUser(user: NewUser): Promise<InsertUserResult>;
  /** A password change: replaces the hash and revokes all the user's tokens. */
  setPasswordHash(userId: number, passwordHash: string, now: Date): Promise<void>;
  /**
   * Re-hash on login (stronger parameters, later legacy formats): replaces the hash only if it is
   * still `expectedHash`, so it can never undo a password change made meanwhile. Tokens are kept.
   */
  upgradePasswordHash(userId: number, expectedHash: string, newHash: string): Promise<boolean>;
  /** Disabling revokes all the user's tokens. */
  setUserEnabled(userId: number, enabled: boolean, now: Date): Promise<void>;
  /** false when the grant already existed. */
  grantApplication(userId: number, appId: number, now: Date): Promise<boolean>;
  /** Removes the grant and revokes the user's tokens for that application; false when there was none. */
  revokeApplication(userId: number, appId: number, now: Date): Promise<boolean>;
  /**
   * Legacy lazy migration: the old service vouched for this login and password. In one
   * transaction: with `expectedHash` null, creates the user (enabled, granted `appId`) unless the
   * login key exists; else replaces the hash of the user whose hash is still `expectedHash`
   * (other fields and tokens untouched) and adds the grant. Either way records the user as
   * migrated at `now`. The resulting user, or null when neither applied (raced).
   */
  migrateLegacyUser(input: LegacyMigrationInput): Promise<UserCredentials | null>;
  /** Migration report: users' hashes in ascending user id after `afterUserId`, at most `limit`. */
  listPasswordHashes(page: { readonly afterUserId: number; readonly limit: number }): Promise<readonly PasswordHashRow[]>;

  /**
   * Metrics (hash migration progress): users per password hash scheme, the PHC identifier between
   * the first two `$` (`argon2id`, `2b`...), or '' for a hash that does not start with `$`.
   * One GROUP BY over the users table.
   */
  countPasswordHashSchemes(): Promise<readonly { readonly scheme: string; readonly count: number }[]>;
}

/** Session tokens and login tickets: issue, validation (the hot path), revocation, housekeeping, export and import. */
export interface TokenStore {
  /**
   * Stores a session token and sets the user's last login, in one durable transaction, but only
   * if at that moment the user is enabled and still has `passwordHash` (the hash the password
   * was just verified against), holds a grant for the application, and the application is
   * enabled. false otherwise. This closes the race with a concurrent password change or
   * disable: either it commits first and the insert is refused, or it commits later and revokes
   * the new token. (A PostgreSQL adapter must lock the user row to keep this.)
   */
  insertSession(token: NewToken, expect: SessionExpectation): Promise<boolean>;
  /**
   * Stores a single-use login ticket under the same conditions (without the password check), in
   * the tokens table, keyed by its hash: a ticket issued with `tickets.issueOrder` off.
   */
  insertTicket(token: NewToken): Promise<boolean>;
  /**
   * The same, in the tickets table (migration 17) under the key (token.issuedAt, token.tokenHash),
   * appended in issue order: a ticket whose text carries its issue time (src/domain/ordered-ticket.ts).
   * The same durability and the same conditions, checked in the insert.
   */
  insertOrderedTicket(token: NewToken): Promise<boolean>;
  /** A ticket of the tickets table by its whole key, joined as findToken joins a token (kind 'ticket'). */
  findOrderedTicket(key: OrderedTicketKey): Promise<TokenRecord | null>;
  /** consumeTicket for a ticket of the tickets table: true for exactly one caller. */
  consumeOrderedTicket(key: OrderedTicketKey, now: Date): Promise<boolean>;
  /** One indexed lookup by hash, joined to user, application and grant. */
  findToken(tokenHash: string): Promise<TokenRecord | null>;
  /** Records a use of a session token (sliding expiry). */
  touchToken(tokenHash: string, now: Date): Promise<void>;
  /**
   * Atomically marks an unused, unrevoked, unexpired ticket as used. true for exactly one caller,
   * across connections and processes.
   */
  consumeTicket(tokenHash: string, now: Date): Promise<boolean>;
  /** Revokes live tokens and tickets (of both tables) in scope; returns how many were revoked. */
  revokeTokens(scope: RevokeScope, now: Date): Promise<number>;
  /**
   * The admin console and `token list`: one user's session tokens (not tickets) that are not
   * revoked and not past their absolute expiry at `now`, newest first, at most `limit`. (Idle
   * expiry is the domain's to judge: evaluateToken.)
   */
  listUserSessions(userId: number, now: Date, limit: number): Promise<readonly ListedToken[]>;
  /**
   * Tokens and tickets (both tables) whose hash starts with `prefix` (lower-case hex, a fingerprint of
   * audit.ts tokenFingerprint), at most `limit`, by hash: what `token revoke ID` names.
   */
  findTokensByFingerprint(prefix: string, limit: number): Promise<readonly ListedToken[]>;
  /** Housekeeping: deletes tokens and tickets (both tables) whose absolute expiry is before `before`; returns the count. */
  deleteExpiredTokens(before: Date): Promise<number>;
  /**
   * Scheduled housekeeping, in small batches: deletes at most `limit` tokens and tickets (used or
   * not; a ticket expires tickets.ttlSeconds after issue) whose absolute expiry is before `before`,
   * oldest first, in one short transaction; returns how many. Callers repeat until it returns < limit.
   */
  purgeExpiredTokens(before: Date, limit: number): Promise<number>;
  /** Metrics: session tokens that work at `now` (not revoked, not past absolute or idle expiry). */
  countActiveTokens(now: Date): Promise<number>;

  // --- moving data between databases (svcapi-auth export / import) ---
  /**
   * Live tokens and tickets of both tables (not revoked, not used, not expired at `liveAt`), judged like
   * findToken, in ascending hash order after `afterHash` (null: from the start), at most `limit`.
   */
  listLiveTokens(query: { readonly liveAt: Date; readonly afterHash: string | null; readonly limit: number }): Promise<readonly ListedToken[]>;
  /**
   * Stores a token row as exported, with its kind, times and origin, without the issue-time checks.
   * false when a token with that hash exists. The user and application must exist (else rejects).
   */
  importToken(token: ImportedToken): Promise<boolean>;
}

/** News items, for WhatsNew and the operator. */
export interface NewsStore {
  insertNews(news: NewNews): Promise<NewsRecord>;
  /**
   * Inserts a row under a given id (news import keeps the legacy service's NewsID, which clients
   * see); later insertNews ids continue above it. null, and nothing written, when the id is taken.
   */
  insertNewsWithId(newsId: number, news: NewNews): Promise<NewsRecord | null>;
  /** Every row (optionally of one application), newest first, for the operator. */
  listNews(filter?: { readonly appId?: number }): Promise<readonly NewsRecord[]>;
  /** Rows WhatsNew may show, newest first (published desc, then id desc). Version filtering is the domain's. */
  findPublishedNews(query: PublishedNewsQuery): Promise<readonly NewsRecord[]>;
  /** findPublishedNews plus the revision it saw and when its answer next changes by the passing of time alone; one consistent read. */
  publishedNewsSnapshot(query: PublishedNewsQuery): Promise<PublishedNewsSnapshot>;
  getNews(newsId: number): Promise<NewsRecord | null>;
  /** false when no such row. */
  deleteNews(newsId: number): Promise<boolean>;
  /** Replaces the changeable fields of one row; the updated row, or null when there is none. */
  updateNews(newsId: number, update: NewsUpdate): Promise<NewsRecord | null>;
}

/** What the domain keeps in memory is labelled with these (revision-gate.ts). */
export interface RevisionStore {
  /**
   * The news and access revisions (StoreRevisions), read together in one single-row statement.
   * Callers compare each for equality only.
   */
  revisions(): Promise<StoreRevisions>;
  /**
   * revisions() and findToken() of each hash, all as of one snapshot (SQLite: one read
   * transaction; PostgreSQL: one statement, one round trip), so each row is exactly the row the
   * store held at those revisions. A hash without a row is absent from `tokens`.
   */
  revisionsWithTokens(tokenHashes: readonly string[]): Promise<RevisionsWithTokens>;
}

/** What RevisionStore.revisionsWithTokens read: the revisions, and the rows found, by hash. */
export interface RevisionsWithTokens {
  readonly revisions: StoreRevisions;
  readonly tokens: ReadonlyMap<string, TokenRecord>;
}

/** Brute-force protection: the login throttle's counters (docs/security.md#brute-force-protection). */
export interface ThrottleStore {
  /**
   * Reserves one password verification for `attempt`, atomically across connections and
   * processes (one write transaction holding the three counter rows): granted only if the
   * (login, source) pair is not blocked and has a free slot (its failures plus verifications
   * under way below N), the source is under its failure ceiling, and the login's failures plus
   * verifications under way are under its ceiling or the source is known good for it. When
   * granted, all three counters count it (the login's as under way); when refused, nothing
   * changes. Parallel calls can never be granted more than the limits allow. Every granted
   * reservation is followed by recordLoginSuccess, recordLoginFailure or releaseLoginAttempt.
   * Rules: src/store/login-throttle-rules.ts.
   */
  reserveLoginAttempt(attempt: LoginAttempt, limits: ThrottleLimits): Promise<AttemptReservation>;
  /**
   * A granted attempt succeeded: forgets the pair's failures and block, marks the source known
   * good for the login, and gives the login and the source back the slot the attempt took (their
   * ceilings count failures: a success never counts).
   */
  recordLoginSuccess(attempt: LoginAttempt): Promise<void>;
  /** A granted attempt failed (for whatever reason): one more failure of the pair, which may block it, and of the login. */
  recordLoginFailure(attempt: LoginAttempt, limits: ThrottleLimits): Promise<void>;
  /**
   * A granted attempt ended without an outcome (the verification could not run: server too
   * busy, an error): frees its slot in the pair and the login and gives the source its slot
   * back, so none counts it as a failure.
   */
  releaseLoginAttempt(attempt: LoginAttempt): Promise<void>;
  /**
   * Housekeeping, in small batches: deletes at most `limit` rows in one short transaction:
   * counters past their expiry at `now`, then known-good sources last used before `knownBefore`;
   * returns how many. Callers repeat until it returns < limit.
   */
  purgeLoginThrottle(now: Date, knownBefore: Date, limit: number): Promise<number>;
  /**
   * For the operator (`svcapi-auth user throttle`): one login's counters as stored, in one read:
   * its login counter (if a row exists, expired or not), its pairs still live at `now` with
   * failures or verifications under way (most failures first), and its sources known good since `knownSince` (most recent first); each
   * list at most `limit` long, with its full count.
   */
  loginThrottleState(query: LoginThrottleQuery): Promise<LoginThrottleRecord>;
  /**
   * For the operator: deletes the login's counter and all its pairs' counters (failures, blocks,
   * verifications under way) in one statement; returns how many rows. Known-good sources and
   * the sources' counters stay.
   */
  resetLoginThrottle(loginHash: string): Promise<number>;
}

/** The admin console's own accounts and their sessions (src/console; docs/security.md#admin-console). */
export interface AdminConsoleStore {
  /** false when an account with that name exists. */
  insertAdminAccount(account: AdminAccountCredentials): Promise<boolean>;
  getAdminAccount(name: string): Promise<AdminAccountCredentials | null>;
  /** By name. */
  listAdminAccounts(): Promise<readonly AdminAccount[]>;
  /** Replaces the hash and ends every session of the account, in one transaction; false when no such account. */
  setAdminPassword(name: string, passwordHash: string, now: Date): Promise<boolean>;
  /** Deletes the account and its sessions; false when no such account. */
  removeAdminAccount(name: string): Promise<boolean>;
  /**
   * Stores a session and sets the account's last login, only if the account still has
   * `passwordHash` (the hash the password was just checked against), so a password change or
   * removal committed meanwhile wins. false otherwise.
   */
  insertAdminSession(session: NewAdminSession, passwordHash: string): Promise<boolean>;
  /** One lookup by hash, joined to the account's role; null when none. */
  findAdminSession(sessionHash: string): Promise<AdminSessionRecord | null>;
  /** Records a use (idle timeout); never moves it backwards. */
  touchAdminSession(sessionHash: string, now: Date): Promise<void>;
  /** Logout: false when there was no such session. */
  deleteAdminSession(sessionHash: string): Promise<boolean>;
  /** Deletes sessions past their absolute expiry at `now` or unused since `idleBefore`; how many. */
  purgeAdminSessions(now: Date, idleBefore: Date): Promise<number>;
}

/** The audit trail and the installation's secrets (its login fingerprint key; docs/security.md#audit-trail). */
export interface AuditStore {
  /** Appends events in one transaction (the audit writer batches them); resolves when durable. */
  appendAudit(events: readonly NewAuditEvent[]): Promise<void>;
  /** Events matching every given filter, newest first (descending id), at most `limit`. */
  queryAudit(query: AuditQuery): Promise<readonly AuditRecord[]>;
  /**
   * A secret of this installation (the audit trail's login fingerprint key): the one stored
   * under `name`, storing `candidate` first when there is none. Concurrent first calls (several
   * instances starting together) all get the same, first stored, value.
   */
  installationSecret(name: string, candidate: string): Promise<string>;
  /** Housekeeping: deletes at most `limit` events older than `before`, oldest first, in one short transaction; returns how many. */
  purgeAudit(before: Date, limit: number): Promise<number>;
}

/** Differences seen by the shadow and front modes (src/compat/shadow.ts; docs/cutover.md). */
export interface ShadowStore {
  /**
   * Keeps one difference between the old service's answer and ours, and in the same transaction
   * deletes all but the newest `keep` (at least 1): the table never grows past `keep` rows.
   */
  insertShadowDifference(difference: NewShadowDifference, keep: number): Promise<void>;
  /** The differences kept, newest first (descending id), at most `limit`. */
  listShadowDifferences(limit: number): Promise<readonly ShadowDifferenceRecord[]>;
}

/** What a tally counts: token passthrough's checks, its GetUserLoginURL relays, token adoptions. */
export type LegacyTallyKind = 'check' | 'relay' | 'adoption';

/**
 * One row of token passthrough's tallies (migration 16): how many of one kind ended with one
 * result on one UTC day. Counts and times only, never a token, fingerprint or login.
 */
export interface LegacyTally {
  /** The UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly kind: LegacyTallyKind;
  /** The result label (LEGACY_TOKEN_CHECK_RESULTS, LOGIN_URL_RELAY_RESULTS, TOKEN_ADOPTION_RESULTS). */
  readonly result: string;
  readonly count: number;
  /** When the last one counted in this row happened. */
  readonly lastAt: Date;
}

/**
 * Token passthrough's tallies (src/domain/legacy-token-tally.ts; docs/cutover.md), summed over
 * every process and instance on the database, for the migration report in another process.
 */
export interface LegacyTallyStore {
  /**
   * Adds each row's count to the stored row of its day, kind and result (a new row when there is
   * none; `lastAt` becomes the later of both), in one transaction, so instances writing at once
   * sum; then deletes the rows of days before `keepFrom` except each kind and result's newest
   * day. Rows with a count of 0 write nothing.
   */
  addLegacyTallies(tallies: readonly LegacyTally[], keepFrom: string): Promise<void>;
  /** Every row, by day, kind and result. */
  listLegacyTallies(): Promise<readonly LegacyTally[]>;
}

/**
 * The whole persistence port: what each adapter (SQLite, PostgreSQL) implements and the
 * contract suite (test/store/store-contract.ts) checks. A module that needs one concern depends on
 * that concern's port only.
 */
export interface Store
  extends StoreLifecycle, AccountStore, TokenStore, NewsStore, RevisionStore, ThrottleStore, AdminConsoleStore, AuditStore, ShadowStore,
  LegacyTallyStore {}

/**
 * A difference seen on live traffic, already redacted by its writer (src/compat/shadow-redaction.ts:
 * logins, passwords, tokens, tickets and cookies only as fingerprints). The three documents are
 * JSON texts the store keeps as they are.
 */
export interface NewShadowDifference {
  readonly at: Date;
  /** `shadow`: our answer was sent and the old service's compared; `front`: the other way round. */
  readonly mode: 'shadow' | 'front';
  /** The contract operation our dispatch resolved, or null (documentation, errors before one). */
  readonly operation: string | null;
  /** soap11, soap12, http-get, http-post or doc. */
  readonly binding: string;
  /** `{ method, target, headers, body }`. */
  readonly requestJson: string;
  /** `{ status, headers, body }` of the old service, normalised as compat check does. */
  readonly legacyJson: string;
  /** `{ status, headers, body }` of svcapi-auth, normalised alike. */
  readonly oursJson: string;
  /** A unified diff of the two normalised answers. */
  readonly diff: string;
}

export interface ShadowDifferenceRecord extends NewShadowDifference {
  readonly id: number;
}

/**
 * One audit event as stored (table audit_events). Never a password, a token or a ticket: tokens
 * and tickets appear only as `tokenFp` (the first 12 hex digits of their SHA-256). Text fields
 * taken from requests (login, claimedIp) are escaped and length-capped by the domain first.
 */
export interface NewAuditEvent {
  /** When it happened (UTC). */
  readonly at: Date;
  /** `login.failure`, `ticket.used`, `admin.user.disable`... (src/domain/audit.ts). */
  readonly type: string;
  /** Internal reason code (the login outcome...), or null. */
  readonly reason: string | null;
  readonly requestId: string | null;
  readonly appId: number | null;
  readonly login: string | null;
  /** The address the request came from. */
  readonly sourceIp: string | null;
  /** The IPAddress the client declared (ValidateUser). */
  readonly claimedIp: string | null;
  readonly tokenFp: string | null;
  /** A small JSON object (operator, counts, changed fields...), or null. */
  readonly detail: Readonly<Record<string, unknown>> | null;
}

export interface AuditRecord extends NewAuditEvent {
  /** Ascending in insertion order; `beforeId` pages through older events. */
  readonly id: number;
}

export interface AuditQuery {
  /** Events at or after this instant. */
  readonly since?: Date;
  /** Events before this instant. */
  readonly until?: Date;
  /** Compared case-insensitively (ASCII on SQLite). */
  readonly login?: string;
  /** With `login`: also the events that record it by this fingerprint (an unknown login, audit.ts). */
  readonly loginFp?: string;
  /** Exact type. */
  readonly type?: string;
  /** Types starting with this text (e.g. `admin.`). */
  readonly typePrefix?: string;
  readonly appId?: number;
  /** Only events with a smaller id (the next page). */
  readonly beforeId?: number;
  readonly limit: number;
}

/** One ValidateUser attempt, as the brute-force counters see it. */
export interface LoginAttempt {
  /** SHA-256 hex of the login key (loginThrottleKey()): failed logins are never stored as typed. */
  readonly loginHash: string;
  /** IPv4 address or IPv6 /64 (sourceKey() in src/domain/source-address.ts). */
  readonly source: string;
  readonly now: Date;
}

/** The limits reserveLoginAttempt applies (config `bruteForce`, docs/security.md#brute-force-protection). */
export interface ThrottleLimits {
  /** Counting window of every counter. */
  readonly windowMs: number;
  /** Failures of a pair before it is blocked (N); also how many of its verifications may run at once. */
  readonly pairMaxAttempts: number;
  /** The block after failure N; it doubles with every further failure... */
  readonly pairBaseDelayMs: number;
  /** ...up to this. */
  readonly maxDelayMs: number;
  /** Failures (and verifications under way) per login per window beyond which only sources known good for it go on. */
  readonly loginMaxAttempts: number;
  /** Failed attempts per source (all logins) per window. */
  readonly sourceMaxFailures: number;
  /** A source with a successful login of this login within this long is known good for it. */
  readonly knownSourceMs: number;
}

export type ThrottleScope = 'pair' | 'source' | 'login';

export interface LoginThrottleQuery {
  /** SHA-256 hex of the login key (loginThrottleKey()). */
  readonly loginHash: string;
  readonly now: Date;
  /** Known-good sources with a success after this instant. */
  readonly knownSince: Date;
  /** Longest list of pairs, and of known sources. */
  readonly limit: number;
}

/** One counter row (throttle_counters) as stored. */
export interface ThrottleCounter {
  readonly count: number;
  readonly windowStart: Date;
  readonly blockedUntil: Date | null;
  readonly inflight: number;
  readonly inflightUntil: Date | null;
  readonly expiresAt: Date;
}

export interface LoginThrottleRecord {
  readonly login: ThrottleCounter | null;
  readonly pairs: readonly (ThrottleCounter & { readonly source: string })[];
  readonly pairCount: number;
  readonly knownSources: readonly { readonly source: string; readonly lastSuccessAt: Date }[];
  readonly knownSourceCount: number;
}

export type AttemptReservation =
  | { readonly granted: true }
  /**
   * `retryAt`: when this refusal stops applying (a later attempt may still be refused by another
   * counter). `busy`: only the pair's verifications under way stand in the way; it may be worth
   * asking again as soon as they report (the domain waits a little, see login-throttle.ts).
   */
  | { readonly granted: false; readonly refusedBy: ThrottleScope; readonly retryAt: Date; readonly busy?: true };
