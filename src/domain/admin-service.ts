import type { Application, ApplicationPatch, NewsRecord, Store, User } from '../store/store.js';
import type { PasswordHasher } from './password-hasher.js';
import { systemClock, type Clock } from './clock.js';
import { checkLogin, findUserByLogin, loginKey, loginLookupKeys, storedLogin } from './logins.js';
import { opaqueString } from './precis.js';
import { quoted } from './display-text.js';
import { canonicalLanguage } from './languages.js';
import { checkLoginUrl } from './login-url.js';
import { compareVersions, parseVersion } from './versions.js';
import { evaluateToken } from './tokens.js';
import { tokenFingerprint } from './audit.js';
import type { ListedToken, NewsUpdate, TokenOrigin } from '../store/store.js';
import { parseAddressRange } from './source-address.js';
import { checkNewsAttributes } from './news-attributes.js';
import type { AuditInput, AuditRecorder } from './audit.js';
import { MAX_PASSWORD_BYTES, passwordTooLong } from './password-limits.js';
import { DEFAULT_THROTTLE_POLICY, loginThrottleReport, resetLoginThrottle, type LoginThrottleReport, type ThrottlePolicy } from './login-throttle.js';

/**
 * The operator's operations (what the CLI offers): the rules about what may be created and
 * changed live here, so every front end (CLI now, maybe an admin API later) enforces the same.
 * Refusals are values with a message meant for the operator.
 */

export type AdminErrorCode = 'invalid' | 'not-found' | 'conflict';
export type AdminResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly code: AdminErrorCode; readonly message: string };

export const DEFAULT_TOKEN_LIFETIME_SECONDS = 24 * 3600;
/** Ten years: anything longer is a typo, not a policy. */
export const MAX_DURATION_SECONDS = 10 * 366 * 24 * 3600;

export interface NewApplicationInput {
  readonly appId: number;
  readonly name: string;
  readonly enabled?: boolean;
  readonly requireIp?: boolean;
  readonly loginUrl?: string | null;
  readonly tokenLifetimeSeconds?: number;
  readonly idleTimeoutSeconds?: number | null;
  readonly defaultLanguage?: string;
  /** servers whose IPAddress names the end user (addresses / CIDR ranges); default none. */
  readonly trustedCallers?: readonly string[];
}

/** More trusted callers than this is a misconfiguration (or an attempt to trust everybody piecemeal). */
export const MAX_TRUSTED_CALLERS = 100;

export interface NewUserInput {
  readonly login: string;
  readonly password: string;
  readonly appIds: readonly number[];
  readonly enabled?: boolean;
}

export interface NewNewsInput {
  readonly appId: number;
  readonly title: string;
  readonly body: string;
  /** Defaults to the application's default language. */
  readonly language?: string;
  readonly url?: string | null;
  /** Defaults to now. */
  readonly publishedAt?: Date;
  readonly expiresAt?: Date | null;
  readonly minVersion?: string | null;
  readonly maxVersion?: string | null;
  readonly membersOnly?: boolean;
  /** Extra values for WhatsNew columns of the compatibility profile (news-attributes.ts); default none. */
  readonly attributes?: Readonly<Record<string, string>>;
}

export type RevokeTarget = { readonly login: string } | { readonly all: true };

/** What changes when a news item is edited; absent fields keep their value. */
export type NewsPatch = Partial<Omit<NewNewsInput, 'appId'>>;

/**
 * One live session token of a user, for the operator. `id` is the token's fingerprint (the first
 * 12 hex digits of its SHA-256, as the audit trail shows it): never the token.
 */
export interface SessionView {
  readonly id: string;
  readonly appId: number;
  readonly issuedAt: Date;
  readonly lastUsedAt: Date;
  readonly expiresAt: Date;
  readonly sourceIp: string | null;
  readonly clientIp: string | null;
  /** 'ours' when ValidateUser issued it here, 'legacy' when the old service did (`import tokens`, or token adoption). */
  readonly origin: TokenOrigin;
}

/** A session token's id (SessionView.id): 12 lower-case hex digits. */
export const SESSION_ID_PATTERN = /^[0-9a-f]{12}$/;
/** Most sessions listed per user. */
export const SESSION_LIST_LIMIT = 200;

export interface AdminService {
  addApplication(input: NewApplicationInput): Promise<AdminResult<Application>>;
  updateApplication(appId: number, patch: ApplicationPatch): Promise<AdminResult<Application>>;
  listApplications(): Promise<readonly Application[]>;
  getApplication(appId: number): Promise<AdminResult<Application>>;
  getUser(login: string): Promise<AdminResult<User>>;
  addUser(input: NewUserInput): Promise<AdminResult<User>>;
  changePassword(login: string, password: string): Promise<AdminResult<User>>;
  setUserEnabled(login: string, enabled: boolean): Promise<AdminResult<User>>;
  grantApplication(login: string, appId: number): Promise<AdminResult<User>>;
  revokeApplication(login: string, appId: number): Promise<AdminResult<User>>;
  listUsers(filter?: { readonly appId?: number }): Promise<AdminResult<readonly User[]>>;
  addNews(input: NewNewsInput): Promise<AdminResult<NewsRecord>>;
  listNews(filter?: { readonly appId?: number }): Promise<AdminResult<readonly NewsRecord[]>>;
  removeNews(newsId: number): Promise<AdminResult<NewsRecord>>;
  getNews(newsId: number): Promise<AdminResult<NewsRecord>>;
  /** Edit, reschedule (publishedAt), expire (expiresAt) one item, checked as addNews checks. */
  updateNews(newsId: number, patch: NewsPatch): Promise<AdminResult<NewsRecord>>;
  /** The user's live session tokens (not revoked, not expired by time or idleness), newest first. */
  listSessions(login: string): Promise<AdminResult<readonly SessionView[]>>;
  /** Revokes one live session or ticket by its id (SessionView.id); with `login`, only one of that user's. */
  revokeSession(id: string, login?: string): Promise<AdminResult<SessionView & { readonly userId: number; readonly login: string | null }>>;
  /** Number of tokens revoked. */
  revokeTokens(target: RevokeTarget): Promise<AdminResult<number>>;
  /**
   * Brute-force state of a login (docs/security.md#brute-force-protection): counted whether or
   * not a user has that login, as ValidateUser counts it; `userExists` says which.
   */
  loginThrottle(login: string): Promise<AdminResult<LoginThrottleReport & { readonly userExists: boolean }>>;
  /** Clears the login's ceiling and its pairs' failures and blocks; how many counters went. */
  resetLoginThrottle(login: string): Promise<AdminResult<number>>;
}

export interface AdminServiceDeps {
  readonly store: Store;
  readonly hasher: PasswordHasher;
  readonly clock?: Clock;
  /** Audit trail: every change that succeeded is recorded here (never a password). */
  readonly audit?: AuditRecorder;
  /** Who makes the changes, for the audit trail: `cli:<OS user>`... */
  readonly actor?: string;
  /** The brute-force settings the service runs with (config `bruteForce`): the limits loginThrottle reports against. */
  readonly throttle?: ThrottlePolicy;
}

/** Longest list of pairs / known sources loginThrottle returns (their full counts come with them). */
export const THROTTLE_LIST_LIMIT = 20;

const invalid = (message: string): { ok: false; code: 'invalid'; message: string } => ({ ok: false, code: 'invalid', message });
const notFound = (message: string): { ok: false; code: 'not-found'; message: string } => ({ ok: false, code: 'not-found', message });
const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });

/** AppIDs travel as xsd:int; 0 is what a missing SOAP int binds to, so it is never an application. */
function checkAppId(appId: number): string | null {
  return Number.isSafeInteger(appId) && appId >= 1 && appId <= 2147483647 ? null : `AppID must be an integer from 1 to 2147483647, got ${String(appId)}`;
}

function checkDuration(name: string, seconds: number): string | null {
  return Number.isSafeInteger(seconds) && seconds >= 1 && seconds <= MAX_DURATION_SECONDS
    ? null : `${name} must be a whole number of seconds from 1 to ${MAX_DURATION_SECONDS}`;
}

/** The password to hash (PRECIS OpaqueString, RFC 8265: what ValidateUser compares), or why it cannot be set. */
export function preparePassword(password: string): { readonly ok: true; readonly value: string } | { readonly ok: false; readonly message: string } {
  if (password.length === 0) return { ok: false, message: 'the password must not be empty' };
  if (passwordTooLong(password)) return { ok: false, message: `the password must be at most ${MAX_PASSWORD_BYTES} bytes in UTF-8 (longer ones can never log in)` };
  const prepared = opaqueString(password);
  if (!prepared.ok) return { ok: false, message: `the password ${prepared.reason} (RFC 8265 OpaqueString)` };
  return prepared;
}

/** Checks the application fields present in `patch`; returns the normalised patch or a message. */
function checkApplicationFields(patch: ApplicationPatch): ApplicationPatch | string {
  const out: { -readonly [K in keyof ApplicationPatch]: ApplicationPatch[K] } = { ...patch };
  if (patch.name !== undefined) {
    const name = patch.name.trim();
    if (name === '' || name.length > 200) return 'the application name must be 1 to 200 characters';
    out.name = name;
  }
  if (patch.loginUrl !== undefined && patch.loginUrl !== null) {
    const problem = checkLoginUrl(patch.loginUrl);
    if (problem !== null) return `the login URL ${problem}: ${patch.loginUrl}`;
  }
  if (patch.tokenLifetimeSeconds !== undefined) {
    const problem = checkDuration('the token lifetime', patch.tokenLifetimeSeconds);
    if (problem !== null) return problem;
  }
  if (patch.idleTimeoutSeconds !== undefined && patch.idleTimeoutSeconds !== null) {
    const problem = checkDuration('the idle timeout', patch.idleTimeoutSeconds);
    if (problem !== null) return problem;
  }
  if (patch.defaultLanguage !== undefined) {
    const language = canonicalLanguage(patch.defaultLanguage);
    if (language === null) return `not a language tag: ${patch.defaultLanguage}`;
    out.defaultLanguage = language;
  }
  if (patch.trustedCallers !== undefined) {
    if (patch.trustedCallers.length > MAX_TRUSTED_CALLERS) return `at most ${MAX_TRUSTED_CALLERS} trusted callers`;
    const callers: string[] = [];
    for (const entry of patch.trustedCallers) {
      const range = parseAddressRange(entry);
      if (range === null) return `a trusted caller must be an IP address or CIDR range like 10.0.0.5 or 10.1.0.0/16, got ${JSON.stringify(entry)}`;
      // A range that covers everybody would let any client choose the address it is counted under.
      if (range.prefix === 0) return `a trusted caller range must not cover every address: ${JSON.stringify(entry)}`;
      if (!callers.includes(range.text)) callers.push(range.text);
    }
    out.trustedCallers = callers;
  }
  return out;
}

/** A news item's fields checked and normalised (title trimmed, language canonical), or what is wrong. */
function checkNewsFields(f: NewsUpdate): NewsUpdate | string {
  const title = f.title.trim();
  if (title === '' || title.length > 500) return 'the title must be 1 to 500 characters';
  const language = canonicalLanguage(f.language);
  if (language === null) return `not a language tag: ${f.language}`;
  if (f.url !== null) {
    const problem = checkLoginUrl(f.url);
    if (problem !== null) return `the URL ${problem}: ${f.url}`;
  }
  const minParsed = f.minVersion === null ? null : parseVersion(f.minVersion);
  const maxParsed = f.maxVersion === null ? null : parseVersion(f.maxVersion);
  if (f.minVersion !== null && minParsed === null) return `bad minimum version ${JSON.stringify(f.minVersion)}: use dotted numbers like 2.5.1`;
  if (f.maxVersion !== null && maxParsed === null) return `bad maximum version ${JSON.stringify(f.maxVersion)}: use dotted numbers like 2.5.1`;
  if (minParsed && maxParsed && compareVersions(minParsed, maxParsed) > 0) return `the minimum version ${f.minVersion ?? ''} is above the maximum version ${f.maxVersion ?? ''}`;
  const attributeProblem = checkNewsAttributes(f.attributes);
  if (attributeProblem !== null) return attributeProblem;
  if (Number.isNaN(f.publishedAt.getTime())) return 'bad publication date';
  if (f.expiresAt !== null && (Number.isNaN(f.expiresAt.getTime()) || f.expiresAt.getTime() <= f.publishedAt.getTime())) {
    return 'the expiry must be a date after the publication date';
  }
  return { ...f, title, language };
}

function sessionView(r: ListedToken): SessionView {
  return {
    id: tokenFingerprint(r.tokenHash), appId: r.appId, issuedAt: r.issuedAt, lastUsedAt: r.lastUsedAt, expiresAt: r.expiresAt, sourceIp: r.sourceIp, clientIp: r.clientIp,
    origin: r.origin,
  };
}

export function createAdminService(deps: AdminServiceDeps): AdminService {
  const service = createUnauditedAdminService(deps);
  return deps.audit === undefined ? service : auditedAdminService(service, deps.audit, deps.actor ?? null);
}

/**
 * Every change that succeeded, as one audit event (`admin.*`), with the operator in detail.actor.
 * A failing audit write never undoes nor fails the change (the recorder reports it).
 */
function auditedAdminService(service: AdminService, recorder: AuditRecorder, actor: string | null): AdminService {
  const record = async (input: AuditInput): Promise<void> => {
    try {
      await recorder({ ...input, detail: { ...(actor !== null && { actor }), ...input.detail } });
    } catch {
      // The recorder says what went wrong; the change stands.
    }
  };
  const settings = (app: Application): Record<string, unknown> => {
    const { appId: _appId, createdAt: _createdAt, ...rest } = app;
    return rest;
  };
  return {
    ...service,
    async addApplication(input) {
      const r = await service.addApplication(input);
      if (r.ok) await record({ type: 'admin.app.add', appId: r.value.appId, detail: { settings: settings(r.value) } });
      return r;
    },
    async updateApplication(appId, patch) {
      const r = await service.updateApplication(appId, patch);
      if (r.ok) await record({ type: 'admin.app.update', appId, detail: { changes: { ...patch } } });
      return r;
    },
    async addUser(input) {
      const r = await service.addUser(input);
      if (r.ok) await record({ type: 'admin.user.add', login: r.value.login, detail: { userId: r.value.userId, appIds: r.value.appIds, enabled: r.value.enabled } });
      return r;
    },
    async changePassword(login, password) {
      const r = await service.changePassword(login, password);
      if (r.ok) await record({ type: 'admin.user.passwd', login: r.value.login, detail: { userId: r.value.userId, tokensRevoked: true } });
      return r;
    },
    async setUserEnabled(login, enabled) {
      const r = await service.setUserEnabled(login, enabled);
      if (r.ok) await record({ type: enabled ? 'admin.user.enable' : 'admin.user.disable', login: r.value.login, detail: { userId: r.value.userId } });
      return r;
    },
    async grantApplication(login, appId) {
      const r = await service.grantApplication(login, appId);
      if (r.ok) await record({ type: 'admin.user.grant', appId, login: r.value.login, detail: { userId: r.value.userId } });
      return r;
    },
    async revokeApplication(login, appId) {
      const r = await service.revokeApplication(login, appId);
      if (r.ok) await record({ type: 'admin.user.revoke-app', appId, login: r.value.login, detail: { userId: r.value.userId } });
      return r;
    },
    async addNews(input) {
      const r = await service.addNews(input);
      if (r.ok) await record({ type: 'admin.news.add', appId: r.value.appId, detail: { newsId: r.value.newsId, language: r.value.language, title: r.value.title } });
      return r;
    },
    async updateNews(newsId, patch) {
      const r = await service.updateNews(newsId, patch);
      if (r.ok) {
        const changes = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]));
        await record({ type: 'admin.news.update', appId: r.value.appId, detail: { newsId, changes } });
      }
      return r;
    },
    async revokeSession(id, login) {
      const r = await service.revokeSession(id, login);
      if (r.ok) await record({ type: 'admin.token.revoke', appId: r.value.appId, login: r.value.login, tokenFp: r.value.id, detail: { scope: 'token', revoked: 1 } });
      return r;
    },
    async removeNews(newsId) {
      const r = await service.removeNews(newsId);
      if (r.ok) await record({ type: 'admin.news.remove', appId: r.value.appId, detail: { newsId: r.value.newsId, title: r.value.title } });
      return r;
    },
    async revokeTokens(target) {
      const r = await service.revokeTokens(target);
      if (r.ok) await record({ type: 'admin.token.revoke', login: 'all' in target ? null : target.login, detail: { scope: 'all' in target ? 'all' : 'user', revoked: r.value } });
      return r;
    },
    async resetLoginThrottle(login) {
      const r = await service.resetLoginThrottle(login);
      if (r.ok) await record({ type: 'admin.user.throttle-reset', login, detail: { counters: r.value } });
      return r;
    },
  };
}

function createUnauditedAdminService(deps: AdminServiceDeps): AdminService {
  const { store, hasher } = deps;
  const clock = deps.clock ?? systemClock;

  async function findUser(login: string): Promise<AdminResult<User>> {
    const user = await findUserByLogin(store, login);
    if (user === null) return notFound(`no user with login ${quoted(login)}`);
    // Never hand the hash to a front end.
    return ok({
      userId: user.userId, login: user.login, enabled: user.enabled, appIds: user.appIds,
      createdAt: user.createdAt, lastLoginAt: user.lastLoginAt, passwordChangedAt: user.passwordChangedAt,
    });
  }

  async function findApp(appId: number): Promise<AdminResult<Application>> {
    const problem = checkAppId(appId);
    if (problem !== null) return invalid(problem);
    const app = await store.getApplication(appId);
    return app === null ? notFound(`no application with AppID ${appId}`) : ok(app);
  }

  async function findNews(newsId: number): Promise<AdminResult<NewsRecord>> {
    if (!Number.isSafeInteger(newsId) || newsId < 1) return invalid(`bad news id ${String(newsId)}`);
    const row = await store.getNews(newsId);
    return row === null ? notFound(`no news item with id ${newsId}`) : ok(row);
  }

  async function reload(userId: number): Promise<AdminResult<User>> {
    const user = await store.getUser(userId);
    return user === null ? notFound('the user was deleted meanwhile') : ok(user);
  }

  return {
    async addApplication(input) {
      const idProblem = checkAppId(input.appId);
      if (idProblem !== null) return invalid(idProblem);
      const fields = checkApplicationFields({
        name: input.name,
        enabled: input.enabled ?? true,
        requireIp: input.requireIp ?? true,
        loginUrl: input.loginUrl ?? null,
        tokenLifetimeSeconds: input.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS,
        idleTimeoutSeconds: input.idleTimeoutSeconds ?? null,
        defaultLanguage: input.defaultLanguage ?? 'en',
        trustedCallers: input.trustedCallers ?? [],
      });
      if (typeof fields === 'string') return invalid(fields);
      const app: Application = {
        appId: input.appId,
        name: fields.name ?? input.name,
        enabled: fields.enabled ?? true,
        requireIp: fields.requireIp ?? true,
        loginUrl: fields.loginUrl ?? null,
        tokenLifetimeSeconds: fields.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS,
        idleTimeoutSeconds: fields.idleTimeoutSeconds ?? null,
        defaultLanguage: fields.defaultLanguage ?? 'en',
        trustedCallers: fields.trustedCallers ?? [],
        createdAt: clock.now(),
      };
      const result = await store.insertApplication(app);
      return result.ok ? ok(result.application) : { ok: false, code: 'conflict', message: `an application with AppID ${input.appId} already exists` };
    },

    async updateApplication(appId, patch) {
      const found = await findApp(appId);
      if (!found.ok) return found;
      const fields = checkApplicationFields(patch);
      if (typeof fields === 'string') return invalid(fields);
      const updated = await store.updateApplication(appId, fields, clock.now());
      return updated === null ? notFound(`no application with AppID ${appId}`) : ok(updated);
    },

    listApplications: () => store.listApplications(),
    getApplication: (appId) => findApp(appId),
    getUser: (login) => findUser(login),

    async addUser(input) {
      const loginProblem = checkLogin(input.login);
      if (loginProblem !== null) return invalid(`the login ${loginProblem}`);
      const password = preparePassword(input.password);
      if (!password.ok) return invalid(password.message);
      if (input.appIds.length === 0) return invalid('a user needs at least one application (--app)');
      for (const appId of input.appIds) {
        const app = await findApp(appId);
        if (!app.ok) return app;
      }
      // Under its key and, for a login with fullwidth forms, the key such a login had before.
      for (const key of loginLookupKeys(input.login)) {
        if ((await store.findUserByLoginKey(key)) !== null) {
          return { ok: false, code: 'conflict', message: `a user with login ${quoted(input.login)} already exists (logins are case-insensitive)` };
        }
      }
      const result = await store.insertUser({
        login: storedLogin(input.login),
        loginKey: loginKey(input.login),
        passwordHash: await hasher.hash(password.value),
        enabled: input.enabled ?? true,
        appIds: [...new Set(input.appIds)].sort((a, b) => a - b),
        createdAt: clock.now(),
      });
      return result.ok ? ok(result.user) : { ok: false, code: 'conflict', message: `a user with login ${quoted(input.login)} already exists (logins are case-insensitive)` };
    },

    async changePassword(login, password) {
      const user = await findUser(login);
      if (!user.ok) return user;
      const prepared = preparePassword(password);
      if (!prepared.ok) return invalid(prepared.message);
      await store.setPasswordHash(user.value.userId, await hasher.hash(prepared.value), clock.now());
      return reload(user.value.userId);
    },

    async setUserEnabled(login, enabled) {
      const user = await findUser(login);
      if (!user.ok) return user;
      await store.setUserEnabled(user.value.userId, enabled, clock.now());
      return reload(user.value.userId);
    },

    async grantApplication(login, appId) {
      const user = await findUser(login);
      if (!user.ok) return user;
      const app = await findApp(appId);
      if (!app.ok) return app;
      await store.grantApplication(user.value.userId, appId, clock.now());
      return reload(user.value.userId);
    },

    async revokeApplication(login, appId) {
      const user = await findUser(login);
      if (!user.ok) return user;
      const problem = checkAppId(appId);
      if (problem !== null) return invalid(problem);
      if (!(await store.revokeApplication(user.value.userId, appId, clock.now()))) {
        return notFound(`user ${quoted(user.value.login)} has no grant for AppID ${appId}`);
      }
      return reload(user.value.userId);
    },

    async listUsers(filter) {
      if (filter?.appId !== undefined) {
        const app = await findApp(filter.appId);
        if (!app.ok) return app;
      }
      return ok(await store.listUsers(filter));
    },

    async addNews(input) {
      const found = await findApp(input.appId);
      if (!found.ok) return found;
      const app = found.value;
      const now = clock.now();
      const fields = checkNewsFields({
        language: input.language ?? app.defaultLanguage, title: input.title, body: input.body, url: input.url ?? null,
        publishedAt: input.publishedAt ?? now, expiresAt: input.expiresAt ?? null, minVersion: input.minVersion ?? null,
        maxVersion: input.maxVersion ?? null, membersOnly: input.membersOnly ?? false, attributes: input.attributes ?? {},
      });
      if (typeof fields === 'string') return invalid(fields);
      return ok(await store.insertNews({ ...fields, appId: app.appId, createdAt: now }));
    },

    getNews: (newsId) => findNews(newsId),

    async updateNews(newsId, patch) {
      const existing = await findNews(newsId);
      if (!existing.ok) return existing;
      const e = existing.value;
      const pick = <K extends keyof NewsUpdate>(key: K): NewsUpdate[K] => (patch[key] === undefined ? e[key] : patch[key]) as NewsUpdate[K];
      const fields = checkNewsFields({
        language: pick('language'), title: pick('title'), body: pick('body'), url: pick('url'), publishedAt: pick('publishedAt'),
        expiresAt: pick('expiresAt'), minVersion: pick('minVersion'), maxVersion: pick('maxVersion'), membersOnly: pick('membersOnly'),
        attributes: pick('attributes'),
      });
      if (typeof fields === 'string') return invalid(fields);
      const updated = await store.updateNews(newsId, fields);
      return updated === null ? notFound(`no news item with id ${newsId}`) : ok(updated);
    },

    async listSessions(login) {
      const user = await findUser(login);
      if (!user.ok) return user;
      const now = clock.now();
      const rows = await store.listUserSessions(user.value.userId, now, SESSION_LIST_LIMIT);
      // Judged as ValidateUserToken judges them: a session past its idle timeout is no longer live.
      return ok(rows.filter((r) => evaluateToken(r, now).valid).map(sessionView));
    },

    async revokeSession(id, login) {
      const fp = id.trim().toLowerCase();
      if (!SESSION_ID_PATTERN.test(fp)) return invalid('a session id is 12 hex digits, as `token list` and the console show it');
      let userId: number | null = null;
      if (login !== undefined) {
        const user = await findUser(login);
        if (!user.ok) return user;
        userId = user.value.userId;
      }
      const now = clock.now();
      const matches = (await store.findTokensByFingerprint(fp, 2)).filter((r) => userId === null || r.userId === userId);
      const [match] = matches;
      if (match === undefined) return notFound(`no session ${fp}${login === undefined ? '' : ` of user ${quoted(login)}`}`);
      // 48 bits make a clash unlikely, never impossible: refuse to guess which was meant.
      if (matches.length > 1) return { ok: false, code: 'conflict', message: `more than one token has the id ${fp}; revoke the user's tokens with --user` };
      if ((await store.revokeTokens({ tokenHash: match.tokenHash }, now)) === 0) return notFound(`session ${fp} has already ended`);
      const owner = await store.getUser(match.userId);
      return ok({ ...sessionView(match), userId: match.userId, login: owner?.login ?? null });
    },

    async listNews(filter) {
      if (filter?.appId !== undefined) {
        const app = await findApp(filter.appId);
        if (!app.ok) return app;
      }
      return ok(await store.listNews(filter));
    },

    async removeNews(newsId) {
      if (!Number.isSafeInteger(newsId) || newsId < 1) return invalid(`bad news id ${String(newsId)}`);
      const existing = await store.getNews(newsId);
      if (existing === null || !(await store.deleteNews(newsId))) return notFound(`no news item with id ${newsId}`);
      return ok(existing);
    },

    async revokeTokens(target) {
      if ('all' in target) return ok(await store.revokeTokens({ all: true }, clock.now()));
      const user = await findUser(target.login);
      if (!user.ok) return user;
      return ok(await store.revokeTokens({ userId: user.value.userId }, clock.now()));
    },

    async loginThrottle(login) {
      if (login === '') return invalid('the login must not be empty');
      const report = await loginThrottleReport(store, login, deps.throttle ?? DEFAULT_THROTTLE_POLICY, clock.now(), THROTTLE_LIST_LIMIT);
      return ok({ ...report, userExists: (await store.findUserByLoginKey(loginKey(login))) !== null });
    },

    async resetLoginThrottle(login) {
      if (login === '') return invalid('the login must not be empty');
      return ok(await resetLoginThrottle(store, login));
    },
  };
}
