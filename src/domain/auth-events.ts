/**
 * What happened inside the AuthService (and token adoption beside it), for observers outside the
 * domain: the metrics and the audit trail (src/ops). The client only ever sees one uniform failure
 * from ValidateUser (anti-enumeration); these events carry the real reason to the operator's side.
 *
 * Events carry no secret: never a password, a token or a ticket (nor their full hashes), only ids,
 * outcomes, the caller context, what the client claimed (IPAddress: as received, escaped
 * by the audit trail; the login only when it names a user, else only for a keyed fingerprint) and a token fingerprint (the first 12 hex digits of the token's SHA-256,
 * `tokenFingerprint()` in audit.ts) to correlate events about one token. Observers are called synchronously and must be cheap; an
 * observer that throws is ignored, it never changes the answer to the client.
 */
import type { CallerContext } from './auth-service.js';
import type { TokenAdoptionResult } from './legacy-token-adoption.js';

/** Why ValidateUser answered as it did, in the order the checks are judged. */
export const LOGIN_OUTCOMES = [
  'success',
  'unknown-app',
  'unknown-user',
  'bad-password',
  'app-disabled',
  'user-disabled',
  'not-granted',
  'bad-ip',
  /** All checks passed, but a concurrent password change / disable / withdrawal won the race. */
  'changed-meanwhile',
  /** Brute-force protection refused the attempt before the password was checked; judged first. */
  'throttled',
] as const;
export type LoginOutcome = (typeof LOGIN_OUTCOMES)[number];

export interface LoginOutcomeEvent {
  readonly outcome: LoginOutcome;
  /** As sent (may name no application). */
  readonly appId: number;
  /** null when the login names no user. */
  readonly userId: number | null;
  readonly ctx: CallerContext;
  /** The login of the user `userId` names, as stored; absent when the login names no user. */
  readonly login?: string | null;
  /**
   * When the login names no user (userId null): the text received. It may be a password typed in
   * the wrong field, so an observer must never store, log or count it as such (the audit trail
   * keeps only a keyed fingerprint of it, audit.ts loginFingerprint).
   */
  readonly unknownLogin?: string | null;
  /** The IPAddress as received (null when missing). */
  readonly claimedIp?: string | null;
  /** Success: the fingerprint of the token issued. */
  readonly tokenFp?: string;
  /** `throttled` only: which brute-force counter refused (login-throttle.ts). */
  readonly throttledBy?: 'pair' | 'login' | 'source';
}

export interface IssueEvent {
  readonly userId: number;
  readonly appId: number;
  readonly ctx: CallerContext;
  /** The user's login, when the domain has it at hand. */
  readonly login?: string;
  /** Fingerprint of the token or ticket issued / used. */
  readonly tokenFp?: string;
}

export interface TokenValidatedEvent {
  readonly valid: boolean;
  /**
   * What the text named: a session token, a login ticket, nothing known, or a token of the old
   * service it vouched for (token passthrough, legacy-token-passthrough.ts).
   */
  readonly kind: 'session' | 'ticket' | 'unknown' | 'legacy';
  readonly ctx: CallerContext;
}

/**
 * The end of one adoption that reached the adopter (legacy-token-adoption.ts): the old service's
 * ValidateUserTokenJSON answered, and its answer was judged. Adoptions that never asked (circuit
 * not closed, no free call) or failed (no answer, the store) count only in the metrics.
 */
export interface TokenAdoptionEvent {
  readonly result: Exclude<TokenAdoptionResult, 'error'>;
  /** The request whose check of the token got the old service's fresh yes; absent when unknown. */
  readonly ctx?: CallerContext;
  /** Fingerprint of the token (of the SHA-256 the store keys it by); never the token. */
  readonly tokenFp: string;
  /** The user the answer's login names here (enabled or not); null when it names nobody or was not read. */
  readonly userId: number | null;
  /** That user's login as stored. */
  readonly login?: string;
  /**
   * The answer's login when it names no user here: text from the old service, which an observer
   * treats as it treats LoginOutcomeEvent.unknownLogin (never kept as such).
   */
  readonly unknownLogin?: string;
  /** `unknown_user`: the login names a user here who is disabled. */
  readonly userDisabled?: boolean;
  /** The application the token is stored for, else the answer's AppID (null when it has none). */
  readonly appId: number | null;
  /** `unknown_app`: why no application could be given to the token. */
  readonly appProblem?: 'ambiguous' | 'not-granted' | 'unknown-app' | 'app-disabled';
  /** The expiry the old service's answer gave; null when the answer was not read. */
  readonly legacyExpiresAt: Date | null;
  /** `adopted`: the expiry stored (the old one, capped at the application's token lifetime). */
  readonly expiresAt?: Date;
}

export interface AuthEvents {
  /** Every ValidateUser call, once. */
  loginOutcome?(event: LoginOutcomeEvent): void;
  /** A session token was stored and is about to be returned. */
  tokenIssued?(event: IssueEvent): void;
  /** GetUserLoginURL stored a login ticket. */
  ticketIssued?(event: IssueEvent): void;
  /** ValidateUserToken consumed a ticket (true for exactly one caller). */
  ticketUsed?(event: IssueEvent): void;
  /** Every ValidateUserToken call, once. */
  tokenValidated?(event: TokenValidatedEvent): void;
  /** Token adoption judged an answer of the old service (stored the token, or said why not). */
  tokenAdoption?(event: TokenAdoptionEvent): void;
}

/** Several observers as one; each is called in turn, and one that throws does not stop the others. */
export function combineAuthEvents(...observers: readonly (AuthEvents | undefined)[]): Required<AuthEvents> {
  const list = observers.filter((o): o is AuthEvents => o !== undefined);
  const fan = <K extends keyof AuthEvents>(name: K) => (event: Parameters<NonNullable<AuthEvents[K]>>[0]): void => {
    for (const observer of list) {
      try {
        (observer[name] as ((e: typeof event) => void) | undefined)?.call(observer, event);
      } catch {
        // An observer's failure is its own business; the domain's answer does not change.
      }
    }
  };
  return {
    loginOutcome: fan('loginOutcome'),
    tokenIssued: fan('tokenIssued'),
    ticketIssued: fan('ticketIssued'),
    ticketUsed: fan('ticketUsed'),
    tokenValidated: fan('tokenValidated'),
    tokenAdoption: fan('tokenAdoption'),
  };
}
