/**
 * Brute-force protection for ValidateUser (docs/security.md#brute-force-protection).
 *
 * Before any password verification, ValidateUser reserves an attempt in the store
 * (ThrottleStore.reserveLoginAttempt: one atomic transaction, so parallel requests and other instances
 * cannot slip past a limit). A refused reservation means the ordinary failure, without checking
 * the password. Three counters, all in the store so they hold across instances:
 *
 * - per (login, source) pair: `pair.maxAttempts` failures, then a block that starts at
 *   `pair.baseDelayMs` and doubles with every further failure, at most `maxDelayMs`; a success
 *   resets the pair. Never permanent. Verifications under way count as failures until they
 *   report, so parallel guesses cannot overtake the limit; a request that finds the pair's slots
 *   taken by verifications under way waits for them (at most BUSY_WAIT_MS), so parallel logins
 *   of a legitimate client are delayed, not refused.
 * - per login, across sources: at most `login.maxAttempts` failures per window (verifications
 *   under way hold a slot until they report; a success gives it back, so successes never
 *   count), then only sources known good for that login (a success from there within
 *   `knownSourceDays`) are verified until the window ends; the user's usual places are never
 *   slowed. While only verifications under way fill the ceiling, a new source waits for them
 *   (at most BUSY_WAIT_MS) like a busy pair.
 * - per source, across logins: at most `source.maxFailures` failures per window (credential
 *   stuffing).
 *
 * A source is an IPv4 address or an IPv6 /64 (source-address.ts); a login is counted by the
 * SHA-256 of its case-insensitive key, whether or not such a user exists.
 */
import { createHash } from 'node:crypto';
import { counterState, loginCeilingState, pairView } from '../store/login-throttle-rules.js';
import type { AttemptReservation, LoginAttempt, ThrottleLimits, ThrottleStore } from '../store/store.js';
import { loginKey } from './logins.js';
import { sourceKey } from './source-address.js';

export interface ThrottlePolicy {
  /** How long failures are remembered (every counter's window). */
  readonly windowMs: number;
  /** The longest a (login, source) pair is ever made to wait. */
  readonly maxDelayMs: number;
  readonly pair: {
    /** Attempts that pass at once; the last of them starts the first delay. */
    readonly maxAttempts: number;
    /** The first delay; each further attempt doubles it (up to maxDelayMs). */
    readonly baseDelayMs: number;
  };
  /** Failures per login per window beyond which only sources known good for it are verified. */
  readonly login: { readonly maxAttempts: number };
  /** Failed attempts per source per window, across all logins. */
  readonly source: { readonly maxFailures: number };
  /** A source from which the login succeeded within this many days is known good for it. */
  readonly knownSourceDays: number;
}

export const DEFAULT_THROTTLE_POLICY: ThrottlePolicy = Object.freeze({
  windowMs: 15 * 60_000,
  maxDelayMs: 15 * 60_000,
  pair: Object.freeze({ maxAttempts: 5, baseDelayMs: 30_000 }),
  login: Object.freeze({ maxAttempts: 100 }),
  source: Object.freeze({ maxFailures: 50 }),
  knownSourceDays: 30,
});

export const DAY_MS = 86_400_000;

export function throttleLimits(policy: ThrottlePolicy): ThrottleLimits {
  return {
    windowMs: policy.windowMs,
    maxDelayMs: policy.maxDelayMs,
    pairMaxAttempts: policy.pair.maxAttempts,
    pairBaseDelayMs: policy.pair.baseDelayMs,
    loginMaxAttempts: policy.login.maxAttempts,
    sourceMaxFailures: policy.source.maxFailures,
    knownSourceMs: policy.knownSourceDays * DAY_MS,
  };
}

/** What the counters know a login by: the SHA-256 of its key (never the login as typed, which may be a password). */
export function loginThrottleKey(login: string): string {
  return createHash('sha256').update(loginKey(login), 'utf8').digest('hex');
}

/** How long an attempt waits for a pair's verifications under way to report before it counts as throttled. */
export const BUSY_WAIT_MS = 2000;

export interface LoginThrottle {
  /**
   * Reserves one verification for `login` from `address` (already chosen: socket, proxy or
   * trusted caller). Every granted reservation must be followed by succeeded() or failed().
   */
  reserve(login: string, address: string): Promise<AttemptReservation>;
  /** The attempt succeeded (a token was issued). */
  succeeded(login: string, address: string): Promise<void>;
  /** The attempt failed, for whatever reason. */
  failed(login: string, address: string): Promise<void>;
  /** The attempt ended without an outcome (the verification could not run). */
  released(login: string, address: string): Promise<void>;
}

export interface LoginThrottleOptions {
  readonly now?: () => Date;
  /** Real time, for the busy wait (default setTimeout / performance.now). */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly busyWaitMs?: number;
  /**
   * Put before every login hash, so another kind of login (the admin console's `admin:`) has
   * counters of its own and can never share (or exhaust) a service user's of the same text.
   * The source counters are shared on purpose: one address guessing at both is one attacker.
   */
  readonly namespace?: string;
}

/** The store calls a LoginThrottle makes. */
export type AttemptStore = Pick<ThrottleStore, 'reserveLoginAttempt' | 'recordLoginSuccess' | 'recordLoginFailure' | 'releaseLoginAttempt'>;

export function createLoginThrottle(store: AttemptStore, policy: ThrottlePolicy, options: LoginThrottleOptions = {}): LoginThrottle {
  const limits = throttleLimits(policy);
  const now = options.now ?? (() => new Date());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const busyWaitMs = options.busyWaitMs ?? BUSY_WAIT_MS;
  const namespace = options.namespace ?? '';
  const attempt = (login: string, address: string): LoginAttempt => ({ loginHash: `${namespace}${loginThrottleKey(login)}`, source: sourceKey(address), now: now() });
  return {
    async reserve(login, address) {
      let waited = 0;
      for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
        const reservation = await store.reserveLoginAttempt(attempt(login, address), limits);
        // Only verifications under way stand in the way (of the pair, or of the login's ceiling):
        // they report within one verification's time.
        if (reservation.granted || reservation.busy !== true || waited + pause > busyWaitMs) return reservation;
        await sleep(pause);
        waited += pause;
      }
    },
    succeeded: (login, address) => store.recordLoginSuccess(attempt(login, address)),
    failed: (login, address) => store.recordLoginFailure(attempt(login, address), limits),
    released: (login, address) => store.releaseLoginAttempt(attempt(login, address)),
  };
}

/** One login's brute-force state, for the operator (`svcapi-auth user throttle`). Never a password. */
export interface LoginThrottleReport {
  /** The per-login ceiling: failures counted in the current window (and verifications under way). */
  readonly failures: number;
  readonly underWay: number;
  readonly limit: number;
  /** New sources are refused until `windowEndsAt` (failures at the limit). */
  readonly tripped: boolean;
  /** New sources wait: the limit is reached only with verifications under way. */
  readonly busy: boolean;
  /** When the current window ends (null: no window open). */
  readonly windowEndsAt: Date | null;
  /** Its (login, source) pairs that still count, most failures first (at most `limit` of listLimit). */
  readonly pairs: readonly { readonly source: string; readonly failures: number; readonly underWay: number; readonly blockedUntil: Date | null }[];
  readonly pairCount: number;
  /** Sources known good for the login (a success within knownSourceDays), most recent first. */
  readonly knownSources: readonly { readonly source: string; readonly lastSuccessAt: Date }[];
  readonly knownSourceCount: number;
  readonly knownSourceDays: number;
}

/** The state of `login`'s counters at `now`; lists at most `listLimit` long. Sources are the stored source keys. */
export async function loginThrottleReport(
  store: Pick<ThrottleStore, 'loginThrottleState'>, login: string, policy: ThrottlePolicy, now: Date, listLimit: number,
): Promise<LoginThrottleReport> {
  const at = now.getTime();
  const record = await store.loginThrottleState({
    loginHash: loginThrottleKey(login), now, knownSince: new Date(at - policy.knownSourceDays * DAY_MS), limit: listLimit,
  });
  const ceiling = loginCeilingState(record.login === null ? null : counterState(record.login), at, { loginMaxAttempts: policy.login.maxAttempts });
  return {
    failures: ceiling.failures,
    underWay: ceiling.underWay,
    limit: policy.login.maxAttempts,
    tripped: ceiling.tripped,
    busy: ceiling.busy,
    windowEndsAt: ceiling.until === null ? null : new Date(ceiling.until),
    pairs: record.pairs.map((p) => {
      const view = pairView(counterState(p), at);
      return { source: p.source, failures: view.failures, underWay: view.underWay, blockedUntil: view.blockedUntil === null ? null : new Date(view.blockedUntil) };
    }),
    pairCount: record.pairCount,
    knownSources: record.knownSources,
    knownSourceCount: record.knownSourceCount,
    knownSourceDays: policy.knownSourceDays,
  };
}

/** Forgets `login`'s ceiling and all its pairs' failures and blocks (not its known sources); how many counters went. */
export function resetLoginThrottle(store: Pick<ThrottleStore, 'resetLoginThrottle'>, login: string): Promise<number> {
  return store.resetLoginThrottle(loginThrottleKey(login));
}
