/**
 * The audit trail's vocabulary: what an audit event is, how the domain's outcome
 * events (auth-events.ts) and the operator's changes (admin-service.ts) become audit events,
 * and how text taken from a request is made safe to store and print.
 *
 * No audit event ever holds a password, a token or a ticket. Tokens and tickets appear only as a
 * fingerprint: the first 12 hex digits of the SHA-256 the store keys them by (48 bits: enough to
 * correlate the events about one token, far too little to find the token). The writer is in
 * src/ops/audit-trail.ts; docs/security.md#audit-trail documents the events.
 *
 * Audited: every ValidateUser outcome, session tokens and login tickets issued, tickets used,
 * tokens of the old service adopted and the adoptions refused for a reason that matters for
 * security, and every admin change. Not audited: successful ValidateUserToken / WhatsNew / GetUserLoginURL
 * checks of a session token — every client call makes one, so they would swamp the trail; the
 * metrics count them (svcapi_auth_token_validations_total).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { NewAuditEvent } from '../store/store.js';
import type { AuthEvents, LoginOutcome, TokenAdoptionEvent } from './auth-events.js';
import { loginKey } from './logins.js';
import { escapeChar, UNSAFE_CHAR } from './display-text.js';

export const AUDIT_EVENT_TYPES = [
  'login.success',
  'login.failure',
  'login.throttled',
  'token.issued',
  'ticket.issued',
  'ticket.used',
  'token.adopted',
  'token.adoption-refused',
  'admin.app.add',
  'admin.app.update',
  'admin.user.add',
  'admin.user.passwd',
  'admin.user.enable',
  'admin.user.disable',
  'admin.user.grant',
  'admin.user.revoke-app',
  'admin.user.throttle-reset',
  'admin.news.add',
  'admin.news.update',
  'admin.news.remove',
  'admin.news.import',
  'admin.token.revoke',
  'admin.export',
  'admin.import',
  'admin.import-legacy',
  'admin.import-tokens',
  'admin.account.add',
  'admin.account.passwd',
  'admin.account.remove',
  'console.login.success',
  'console.login.failure',
  'console.logout',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** What a producer hands over; missing fields are null, `at` defaults to now. */
export interface AuditInput {
  readonly type: AuditEventType;
  readonly at?: Date;
  readonly reason?: string | null;
  readonly requestId?: string | null;
  readonly appId?: number | null;
  readonly login?: string | null;
  readonly sourceIp?: string | null;
  readonly claimedIp?: string | null;
  readonly tokenFp?: string | null;
  readonly detail?: Readonly<Record<string, unknown>> | null;
}

/** Where audit events go (the buffered writer in serve, a direct store write in the CLI). */
export type AuditRecorder = (event: AuditInput) => void | Promise<void>;

/** Longest login kept (code points, before escaping); longer ones are cut and marked. */
export const AUDIT_LOGIN_MAX = 256;
/** Longest claimed IPAddress kept. */
export const AUDIT_IP_MAX = 64;
const AUDIT_ID_MAX = 64;

/** Store.installationSecret name of the login fingerprint key. */
export const LOGIN_FP_SECRET = 'audit-login-fingerprint';

/** A new key for login fingerprints (256 bits, hex), offered to Store.installationSecret. */
export function newLoginFingerprintKey(): string {
  return randomBytes(32).toString('hex');
}

/** What marks a login fingerprint in the audit trail's login column. */
export const LOGIN_FP_PREFIX = 'unknown:';

/**
 * What the audit trail records instead of a login that names no user: users often type their
 * password into the login field, so the text itself is never kept (nor logged). The fingerprint
 * is an HMAC-SHA256, keyed with the installation's secret (kept in the database), of the
 * login's key (case and width variants agree), cut to 64 bits: stable, so an operator can follow
 * one unknown login through the trail (`audit --login <text or fingerprint>`), but without the
 * key nobody who reads the log or an exported trail can test guesses against it.
 */
export function loginFingerprint(key: string, login: string): string {
  return `${LOGIN_FP_PREFIX}${createHmac('sha256', key).update(loginKey(login), 'utf8').digest('hex').slice(0, 16)}`;
}

/** True for a login-column value that is a fingerprint (as `audit --login` may be given one). */
export function isLoginFingerprint(text: string): boolean {
  return new RegExp(`^${LOGIN_FP_PREFIX}[0-9a-f]{16}$`).test(text.trim().toLowerCase());
}

/** The fingerprint of a token or ticket, from the SHA-256 hex the store keeps (hashToken). */
export function tokenFingerprint(tokenHash: string): string {
  return tokenHash.slice(0, 12);
}

/** Printable ASCII but the backslash: text that escapeAuditText gives back unchanged. */
const PLAIN_ASCII = /^[\x20-\x5b\x5d-\x7e]*$/;

/**
 * Text from a request, made safe to store, log and print in a terminal: every control or
 * non-printable character (display-text.ts UNSAFE_CHAR; and `\`) written as `\uXXXX` (`\\` for
 * the backslash), cut to `max` code points with `…(+N)` telling how many were dropped. Nothing
 * is lost silently and nothing can forge a line, move the cursor or reorder text when printed.
 */
export function escapeAuditText(text: string, max: number): string {
  // Most texts (request ids, addresses, logins) are printable ASCII without a backslash: none of
  // it is escaped and one UTF-16 unit is one code point, so the text is its own answer. The
  // general path below splits it into code points and tests each: 1.7% of a GetUserLoginURL's
  // CPU, for the three or four texts of its ticket's audit event (bench/profile.mjs).
  if (text.length <= max && PLAIN_ASCII.test(text)) return text;
  const points = Array.from(text);
  const kept = points.length > max ? points.slice(0, max) : points;
  let out = '';
  for (const ch of kept) {
    if (ch === '\\') out += '\\\\';
    else if (UNSAFE_CHAR.test(ch)) out += escapeChar(ch);
    else out += ch;
  }
  return points.length > max ? `${out}…(+${points.length - max})` : out;
}

const escapeOrNull = (text: string | null | undefined, max: number): string | null =>
  text === null || text === undefined ? null : escapeAuditText(text, max);

/** An input as the store keeps it: every field present, request text escaped and capped. */
export function toAuditEvent(input: AuditInput, now: () => Date = () => new Date()): NewAuditEvent {
  return {
    at: input.at ?? now(),
    type: input.type,
    reason: input.reason ?? null,
    requestId: escapeOrNull(input.requestId, AUDIT_ID_MAX),
    appId: input.appId !== undefined && input.appId !== null && Number.isSafeInteger(input.appId) ? input.appId : null,
    login: escapeOrNull(input.login, AUDIT_LOGIN_MAX),
    sourceIp: escapeOrNull(input.sourceIp === '' ? null : input.sourceIp, AUDIT_IP_MAX),
    claimedIp: escapeOrNull(input.claimedIp, AUDIT_IP_MAX),
    tokenFp: input.tokenFp ?? null,
    detail: input.detail ?? null,
  };
}

function loginType(outcome: LoginOutcome): AuditEventType {
  if (outcome === 'success') return 'login.success';
  // Throttling (a concurrent change) adds its own outcome; it gets its own type.
  return (outcome as string) === 'throttled' ? 'login.throttled' : 'login.failure';
}

/**
 * The adoption results the trail records as `token.adoption-refused`: the old service vouched for
 * a token (its ValidateUserToken said true) and then described it in a way that does not hold
 * here. An answer not in the profile's layout is a wrong profile or an old service that is not
 * what it seems; a login naming nobody (or a disabled user) or an application the user may not
 * hold is a token this service would never have issued. `expired` (a token ending as it was
 * checked) and `already_stored` (two instances adopting at once) are ordinary and only counted
 * (svcapi_auth_legacy_token_adoptions_total), as are failures to get an answer.
 */
export const AUDITED_ADOPTION_REFUSALS: ReadonlySet<TokenAdoptionEvent['result']> = new Set(['unrecognised', 'unknown_user', 'unknown_app'] as const);

/** Expiries in `detail` as ISO 8601 text (the column is JSON). */
const isoOrNull = (date: Date | null | undefined): string | null => (date === null || date === undefined ? null : date.toISOString());

export interface AuthAuditOptions {
  /** The login of a user id, for events that only know the id (ticket.used); best effort. */
  readonly loginOf?: (userId: number) => Promise<string | null>;
  /**
   * The installation's login fingerprint key (Store.installationSecret LOGIN_FP_SECRET). Without
   * it a key of this process is used: fingerprints then hold only until it ends.
   */
  readonly loginFingerprintKey?: string;
}

/**
 * The domain's outcome events as audit events (subscribe with createAuthService `events`).
 * Successful token validations are not audited (see the file comment).
 */
export function authAuditEvents(record: AuditRecorder, options: AuthAuditOptions = {}): AuthEvents {
  const emit = (input: AuditInput): void => {
    void Promise.resolve(record(input)).catch(() => undefined);
  };
  const fingerprintKey = options.loginFingerprintKey ?? newLoginFingerprintKey();
  return {
    loginOutcome(e) {
      // A login that names no user is never kept as typed: it may be a password (see loginFingerprint).
      const login = e.userId !== null ? e.login ?? null : e.unknownLogin === undefined || e.unknownLogin === null || e.unknownLogin === '' ? null : loginFingerprint(fingerprintKey, e.unknownLogin);
      emit({
        type: loginType(e.outcome), reason: e.outcome, requestId: e.ctx.requestId, appId: e.appId, login,
        sourceIp: e.ctx.sourceIp, claimedIp: e.claimedIp ?? null, tokenFp: e.tokenFp ?? null,
        detail: e.userId === null ? null : { userId: e.userId },
      });
    },
    tokenIssued(e) {
      emit({ type: 'token.issued', requestId: e.ctx.requestId, appId: e.appId, login: e.login ?? null, sourceIp: e.ctx.sourceIp, tokenFp: e.tokenFp ?? null, detail: { userId: e.userId } });
    },
    ticketIssued(e) {
      emit({ type: 'ticket.issued', requestId: e.ctx.requestId, appId: e.appId, login: e.login ?? null, sourceIp: e.ctx.sourceIp, tokenFp: e.tokenFp ?? null, detail: { userId: e.userId } });
    },
    tokenAdoption(e) {
      const refused = e.result !== 'adopted';
      if (refused && !AUDITED_ADOPTION_REFUSALS.has(e.result)) return;
      // The old service's login of a user unknown here is kept only as a fingerprint, as a typed one is.
      const login = e.login ?? (e.unknownLogin === undefined || e.unknownLogin === '' ? null : loginFingerprint(fingerprintKey, e.unknownLogin));
      const detail: Record<string, unknown> = { userId: e.userId, legacyExpiresAt: isoOrNull(e.legacyExpiresAt) };
      if (e.expiresAt !== undefined) detail.expiresAt = e.expiresAt.toISOString();
      if (e.userDisabled === true) detail.userDisabled = true;
      if (e.appProblem !== undefined) detail.appProblem = e.appProblem;
      emit({
        type: refused ? 'token.adoption-refused' : 'token.adopted', reason: refused ? e.result : null,
        requestId: e.ctx?.requestId ?? null, appId: e.appId, login, sourceIp: e.ctx?.sourceIp ?? null, tokenFp: e.tokenFp, detail,
      });
    },
    ticketUsed(e) {
      const at = new Date();
      const base = { type: 'ticket.used', at, requestId: e.ctx.requestId, appId: e.appId, sourceIp: e.ctx.sourceIp, tokenFp: e.tokenFp ?? null, detail: { userId: e.userId } } as const;
      if (e.login !== undefined || options.loginOf === undefined) {
        emit({ ...base, login: e.login ?? null });
        return;
      }
      // An event with the user id only (the service sends the login it read with the ticket): the login is looked up off the request's path.
      void options.loginOf(e.userId).then((login) => login, () => null).then((login) => emit({ ...base, login }));
    },
  };
}
