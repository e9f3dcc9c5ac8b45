/**
 * The admin console's own accounts and browser sessions (docs/security.md#admin-console).
 *
 * Accounts are not service users: a person who posts news is no client of any application, and
 * a leaked service password must never open the console. Passwords are argon2id (the service's
 * hasher), at least MIN_ADMIN_PASSWORD_LENGTH characters, prepared as ValidateUser prepares them.
 *
 * Logging in is throttled like ValidateUser (login-throttle.ts, counters in the store under the
 * `admin:` namespace, so they never mix with a service login of the same text) and every
 * failure is padded to the recent median success (failure-padding.ts), so neither the answer nor
 * its timing tells an unknown name from a wrong password.
 *
 * A session is a random 256-bit value in a cookie; the store knows it only by its SHA-256. A
 * new value is made at every login (no fixation), and it ends at logout, after `idleTimeoutMs`
 * without use, `absoluteTimeoutMs` after login, or when the account's password changes or the
 * account is removed. Each session has its own CSRF synchronizer token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AdminAccount, AdminConsoleStore, AdminRole, AdminSessionRecord, ThrottleStore } from '../store/store.js';
import type { AdminResult } from './admin-service.js';
import { preparePassword } from './admin-service.js';
import type { AuditInput, AuditRecorder } from './audit.js';
import { systemClock, type Clock } from './clock.js';
import { createFailurePadding, type FailurePadding } from './failure-padding.js';
import { createLoginThrottle, DEFAULT_THROTTLE_POLICY, type ThrottlePolicy } from './login-throttle.js';
import type { PasswordHasher } from './password-hasher.js';

export const ADMIN_ROLES: readonly AdminRole[] = ['editor', 'admin'];
export const MIN_ADMIN_PASSWORD_LENGTH = 12;
/** What the console's login counters are kept under (login-throttle.ts `namespace`). */
export const ADMIN_THROTTLE_NAMESPACE = 'admin:';

export interface ConsoleSessionPolicy {
  /** A session unused for this long ends. */
  readonly idleTimeoutMs: number;
  /** A session ends this long after login, used or not. */
  readonly absoluteTimeoutMs: number;
}

export const DEFAULT_CONSOLE_SESSION_POLICY: ConsoleSessionPolicy = Object.freeze({ idleTimeoutMs: 30 * 60_000, absoluteTimeoutMs: 12 * 3_600_000 });

/** A live console session, as the console needs it. Never holds the cookie value. */
export interface ConsoleSession {
  readonly name: string;
  readonly role: AdminRole;
  readonly csrfToken: string;
  /** The stored hash: what logout deletes. */
  readonly sessionHash: string;
  readonly expiresAt: Date;
}

export type ConsoleLoginResult =
  | { readonly ok: true; readonly sessionId: string; readonly session: ConsoleSession }
  | { readonly ok: false };

export interface AdminAccounts {
  add(name: string, password: string, role: AdminRole): Promise<AdminResult<AdminAccount>>;
  setPassword(name: string, password: string): Promise<AdminResult<AdminAccount>>;
  remove(name: string): Promise<AdminResult<AdminAccount>>;
  list(): Promise<readonly AdminAccount[]>;
  /** One answer for every failure, padded; the audit trail says which. */
  login(name: string, password: string, sourceIp: string): Promise<ConsoleLoginResult>;
  /** The live session of a cookie value, recording its use; null when none (ended, expired, malformed). */
  session(sessionId: string): Promise<ConsoleSession | null>;
  logout(session: ConsoleSession, sourceIp: string): Promise<void>;
}

export interface AdminAccountsDeps {
  readonly store: AdminConsoleStore & ThrottleStore;
  readonly hasher: PasswordHasher;
  readonly clock?: Clock;
  readonly audit?: AuditRecorder;
  /** Who makes account changes (`cli:<OS user>`), for the audit trail. */
  readonly actor?: string;
  readonly throttle?: ThrottlePolicy;
  readonly sessions?: ConsoleSessionPolicy;
  readonly padding?: FailurePadding;
  readonly randomBytes?: (size: number) => Buffer;
}

/** Lower-case ASCII letters, digits and `._@-`, 1 to 64: names print safely everywhere and compare byte-wise. */
const NAME = /^[a-z0-9][a-z0-9._@-]{0,63}$/;

export function normaliseAdminName(name: string): string {
  return name.trim().toLowerCase();
}

export function checkAdminName(name: string): string | null {
  return NAME.test(normaliseAdminName(name)) ? null : 'an admin name is 1 to 64 characters: letters a-z, digits and . _ @ - (starting with a letter or digit)';
}

export function isAdminRole(text: string): text is AdminRole {
  return (ADMIN_ROLES as readonly string[]).includes(text);
}

/** SHA-256 hex of a session cookie value: all the store ever sees of it. */
export function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId, 'utf8').digest('hex');
}

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(session: ConsoleSession, submitted: string | null | undefined): boolean {
  if (typeof submitted !== 'string') return false;
  const a = Buffer.from(session.csrfToken, 'utf8');
  const b = Buffer.from(submitted, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** base64url of 32 random bytes: 43 characters. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function checkAdminPassword(password: string): { ok: true; value: string } | { ok: false; message: string } {
  if ([...password].length < MIN_ADMIN_PASSWORD_LENGTH) return { ok: false, message: `an admin password must be at least ${MIN_ADMIN_PASSWORD_LENGTH} characters` };
  return preparePassword(password);
}

export function createAdminAccounts(deps: AdminAccountsDeps): AdminAccounts {
  const { store, hasher } = deps;
  const clock = deps.clock ?? systemClock;
  const policy = deps.sessions ?? DEFAULT_CONSOLE_SESSION_POLICY;
  const random = deps.randomBytes ?? randomBytes;
  const padding = deps.padding ?? createFailurePadding();
  const throttle = createLoginThrottle(store, deps.throttle ?? DEFAULT_THROTTLE_POLICY, { namespace: ADMIN_THROTTLE_NAMESPACE, now: () => clock.now() });
  const record = async (input: AuditInput): Promise<void> => {
    try {
      await deps.audit?.(input);
    } catch {
      // The recorder reports its own failures; the change stands.
    }
  };
  const actorDetail = deps.actor === undefined ? {} : { actor: deps.actor };
  const view = (a: AdminAccount): AdminAccount => ({ name: a.name, role: a.role, createdAt: a.createdAt, passwordChangedAt: a.passwordChangedAt, lastLoginAt: a.lastLoginAt });

  async function find(name: string): Promise<AdminResult<AdminAccount>> {
    const problem = checkAdminName(name);
    if (problem !== null) return { ok: false, code: 'invalid', message: problem };
    const account = await store.getAdminAccount(normaliseAdminName(name));
    return account === null ? { ok: false, code: 'not-found', message: `no admin account ${normaliseAdminName(name)}` } : { ok: true, value: view(account) };
  }

  return {
    async add(name, password, role) {
      const problem = checkAdminName(name);
      if (problem !== null) return { ok: false, code: 'invalid', message: problem };
      if (!isAdminRole(role)) return { ok: false, code: 'invalid', message: 'the role must be editor or admin' };
      const prepared = checkAdminPassword(password);
      if (!prepared.ok) return { ok: false, code: 'invalid', message: prepared.message };
      const now = clock.now();
      const account = { name: normaliseAdminName(name), role, passwordHash: await hasher.hash(prepared.value), createdAt: now, passwordChangedAt: now, lastLoginAt: null };
      if (!(await store.insertAdminAccount(account))) return { ok: false, code: 'conflict', message: `an admin account ${account.name} already exists` };
      await record({ type: 'admin.account.add', login: account.name, detail: { ...actorDetail, role } });
      return { ok: true, value: view(account) };
    },

    async setPassword(name, password) {
      const found = await find(name);
      if (!found.ok) return found;
      const prepared = checkAdminPassword(password);
      if (!prepared.ok) return { ok: false, code: 'invalid', message: prepared.message };
      if (!(await store.setAdminPassword(found.value.name, await hasher.hash(prepared.value), clock.now()))) {
        return { ok: false, code: 'not-found', message: `no admin account ${found.value.name}` };
      }
      await record({ type: 'admin.account.passwd', login: found.value.name, detail: { ...actorDetail, sessionsEnded: true } });
      return find(found.value.name);
    },

    async remove(name) {
      const found = await find(name);
      if (!found.ok) return found;
      if (!(await store.removeAdminAccount(found.value.name))) return { ok: false, code: 'not-found', message: `no admin account ${found.value.name}` };
      await record({ type: 'admin.account.remove', login: found.value.name, detail: actorDetail });
      return found;
    },

    list: async () => (await store.listAdminAccounts()).map(view),

    async login(rawName, password, sourceIp) {
      const started = padding.now();
      const name = normaliseAdminName(rawName);
      const fail = async (reason: string, known: boolean): Promise<ConsoleLoginResult> => {
        // A name that is no account may be a password typed in the wrong field: not kept.
        await record({ type: 'console.login.failure', reason, login: known ? name : null, sourceIp });
        await padding.pad(started);
        return { ok: false };
      };
      if (checkAdminName(name) !== null || password === '') return fail('malformed', false);
      const reservation = await throttle.reserve(name, sourceIp);
      if (!reservation.granted) return fail('throttled', (await store.getAdminAccount(name)) !== null);
      let outcome: 'success' | 'unknown' | 'bad-password' | 'raced' = 'unknown';
      let sessionId = '';
      let session: ConsoleSession | null = null;
      try {
        const account = await store.getAdminAccount(name);
        const prepared = preparePassword(password);
        if (account !== null) {
          outcome = prepared.ok && await hasher.verify(account.passwordHash, prepared.value) ? 'success' : 'bad-password';
        }
        if (account !== null && outcome === 'success') {
          const now = clock.now();
          sessionId = random(32).toString('base64url');
          const stored = {
            sessionHash: hashSessionId(sessionId), name, csrfToken: random(32).toString('base64url'), sourceIp: sourceIp === '' ? null : sourceIp,
            createdAt: now, expiresAt: new Date(now.getTime() + policy.absoluteTimeoutMs),
          };
          if (await store.insertAdminSession(stored, account.passwordHash)) {
            session = { name, role: account.role, csrfToken: stored.csrfToken, sessionHash: stored.sessionHash, expiresAt: stored.expiresAt };
          } else {
            outcome = 'raced';
          }
        }
      } catch (error) {
        await throttle.released(name, sourceIp).catch(() => undefined);
        throw error;
      }
      if (session === null) {
        await throttle.failed(name, sourceIp);
        return fail(outcome, outcome !== 'unknown');
      }
      await throttle.succeeded(name, sourceIp);
      padding.recordSuccess(padding.now() - started);
      // Old sessions of everybody are cleared here: logins are rare, and nothing else needs to run.
      const now = clock.now();
      await store.purgeAdminSessions(now, new Date(now.getTime() - policy.idleTimeoutMs)).catch(() => 0);
      await record({ type: 'console.login.success', login: name, sourceIp, detail: { role: session.role } });
      return { ok: true, sessionId, session };
    },

    async session(sessionId) {
      if (!SESSION_ID.test(sessionId)) return null;
      const sessionHash = hashSessionId(sessionId);
      const found: AdminSessionRecord | null = await store.findAdminSession(sessionHash);
      if (found === null) return null;
      const now = clock.now().getTime();
      if (now >= found.expiresAt.getTime() || now - found.lastUsedAt.getTime() >= policy.idleTimeoutMs) {
        await store.deleteAdminSession(sessionHash);
        return null;
      }
      await store.touchAdminSession(sessionHash, new Date(now));
      return { name: found.name, role: found.role, csrfToken: found.csrfToken, sessionHash, expiresAt: found.expiresAt };
    },

    async logout(session, sourceIp) {
      if (await store.deleteAdminSession(session.sessionHash)) {
        await record({ type: 'console.logout', login: session.name, sourceIp });
      }
    },
  };
}
