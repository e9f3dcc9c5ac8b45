/**
 * Brute-force protection for ValidateUser (issue 6; docs/security.md#brute-force-protection).
 *
 * Before any password verification, ValidateUser reserves an attempt in the store
 * (Store.reserveLoginAttempt: one atomic transaction, so parallel requests and other instances
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
import type { AttemptReservation, LoginAttempt, Store, ThrottleLimits } from '../store/store.js';
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
}

export function createLoginThrottle(store: Store, policy: ThrottlePolicy, options: LoginThrottleOptions = {}): LoginThrottle {
  const limits = throttleLimits(policy);
  const now = options.now ?? (() => new Date());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const busyWaitMs = options.busyWaitMs ?? BUSY_WAIT_MS;
  const attempt = (login: string, address: string): LoginAttempt => ({ loginHash: loginThrottleKey(login), source: sourceKey(address), now: now() });
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
