/**
 * The brute-force counting rules, as pure functions both store adapters apply inside
 * their write transactions, on counter rows they hold locked: the rules are written once, and no
 * two instances can both take the last slot. See docs/security.md#brute-force-protection.
 *
 * Three counters, each a row keyed by text (throttle_counters):
 *
 * - pair `p:<login hash>|<source>`: `count` is the pair's failures, `inflight` its verifications
 *   under way. While failures < N, up to N − failures verifications may run at once, so N
 *   parallel guesses are the most that are ever checked; from N failures on, one at a time.
 *   Failure number N and each later one block the pair for base·2^(failures−N), at most
 *   maxDelay; an attempt while blocked is refused. A success forgets the failures and the block.
 *   Failures are forgotten once a whole window passes after the block ends without an attempt.
 *   A verification that never reports back (its instance died) stops counting as under way
 *   INFLIGHT_TTL_MS after its reservation.
 * - login `l:<login hash>`: `count` is the login's failures in a fixed window, `inflight` its
 *   verifications under way (they may yet fail, so they hold a slot until they report; a
 *   success or a verification that could not run gives it back). Successes never count: a
 *   shared account logged in from many places is not a guesser. Once failures plus
 *   verifications under way reach the ceiling, only sources known good for the login (a success
 *   from there within knownSourceMs) go on: others wait (busy) while only verifications under
 *   way stand in the way, and are refused once the failures alone reach it, until the window ends.
 * - source `s:<source>`: attempts minus successes in a fixed window; at the ceiling, the source
 *   is refused until the window ends.
 *
 * A refused attempt changes no counter (it costs the service nothing, and counting it would let
 * an attacker stretch a block for ever).
 */
import type { AttemptReservation, LoginAttempt, ThrottleCounter, ThrottleLimits, ThrottleScope } from './store.js';

/** How long a granted verification counts as under way if it never reports its outcome. */
export const INFLIGHT_TTL_MS = 30_000;

/** One counter row, times in milliseconds since the epoch. */
export interface CounterState {
  /** Pair: failures; login: verifications; source: attempts minus successes. */
  readonly count: number;
  readonly windowStart: number;
  /** Pairs only: refused until then. */
  readonly blockedUntil: number | null;
  /** Pairs only: verifications granted and not yet reported, meaningful until inflightUntil. */
  readonly inflight: number;
  readonly inflightUntil: number | null;
  /** From this instant on the row means nothing (as if absent); housekeeping deletes it. */
  readonly expiresAt: number;
}

export interface ThrottleKeys {
  readonly pair: string;
  readonly login: string;
  readonly source: string;
}

export function throttleKeys(attempt: Pick<LoginAttempt, 'loginHash' | 'source'>): ThrottleKeys {
  return { pair: `p:${attempt.loginHash}|${attempt.source}`, login: `l:${attempt.loginHash}`, source: `s:${attempt.source}` };
}

/**
 * The keys in the order every transaction locks them ('l:' < 'p:' < 's:'): one global order, so
 * two transactions can never wait for each other in a cycle.
 */
export function lockOrder(keys: ThrottleKeys): readonly (keyof ThrottleKeys)[] {
  return (['pair', 'login', 'source'] as const).slice().sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : 0));
}

export interface CounterRows {
  readonly pair: CounterState | null;
  readonly login: CounterState | null;
  readonly source: CounterState | null;
}

export type ThrottleDecision =
  | { readonly reservation: AttemptReservation & { granted: false } }
  | { readonly reservation: { readonly granted: true }; readonly writes: { readonly [K in keyof CounterRows]: CounterState } };

const live = (row: CounterState | null, now: number): CounterState | null => (row !== null && now < row.expiresAt ? row : null);
const underWay = (row: CounterState | null, now: number): number => (row !== null && row.inflightUntil !== null && now < row.inflightUntil ? row.inflight : 0);

/** Whether the decision depends on the source being known good for the login (then the adapter looks it up). */
export function needsKnownSource(rows: CounterRows, now: number, limits: ThrottleLimits): boolean {
  const login = live(rows.login, now);
  return login !== null && login.count + underWay(login, now) >= limits.loginMaxAttempts;
}

/** The per-login ceiling as it stands at `now` (for the operator: `svcapi-auth user throttle`). */
export interface LoginCeilingState {
  /** Failures counted in the current window. */
  readonly failures: number;
  /** Verifications under way (each holds a slot until it reports). */
  readonly underWay: number;
  /** New sources are refused (failures at the ceiling) until `until`. */
  readonly tripped: boolean;
  /** New sources wait: the ceiling is reached only with verifications under way. */
  readonly busy: boolean;
  /** When the current window ends (null: no window open). */
  readonly until: number | null;
}

export function loginCeilingState(row: CounterState | null, now: number, limits: Pick<ThrottleLimits, 'loginMaxAttempts'>): LoginCeilingState {
  const login = live(row, now);
  const failures = login?.count ?? 0;
  const inflight = underWay(login, now);
  const tripped = failures >= limits.loginMaxAttempts;
  return { failures, underWay: inflight, tripped, busy: !tripped && failures + inflight >= limits.loginMaxAttempts, until: login?.expiresAt ?? null };
}

/** A pair as it stands at `now`: its failures, its verifications under way, and its block if it still applies. */
export function pairView(row: CounterState | null, now: number): { readonly failures: number; readonly underWay: number; readonly blockedUntil: number | null } {
  const pair = live(row, now);
  const blockedUntil = pair?.blockedUntil ?? null;
  return { failures: pair?.count ?? 0, underWay: underWay(pair, now), blockedUntil: blockedUntil !== null && now < blockedUntil ? blockedUntil : null };
}

/** A counter row as the Store hands it out (Date), as the rules read it (milliseconds). */
export function counterState(row: ThrottleCounter): CounterState {
  return {
    count: row.count, windowStart: row.windowStart.getTime(), blockedUntil: row.blockedUntil?.getTime() ?? null,
    inflight: row.inflight, inflightUntil: row.inflightUntil?.getTime() ?? null, expiresAt: row.expiresAt.getTime(),
  };
}

/** The block after failure number `failures` of a pair, or null while it is below N. */
export function pairDelayMs(failures: number, limits: Pick<ThrottleLimits, 'pairMaxAttempts' | 'pairBaseDelayMs' | 'maxDelayMs'>): number | null {
  if (failures < limits.pairMaxAttempts) return null;
  return Math.min(limits.pairBaseDelayMs * 2 ** (failures - limits.pairMaxAttempts), limits.maxDelayMs);
}

/** Grant or refuse one attempt given the current rows; when granted, the rows to write. */
export function decideAttempt(rows: CounterRows, now: number, limits: ThrottleLimits, knownSource: boolean): ThrottleDecision {
  const pair = live(rows.pair, now);
  const login = live(rows.login, now);
  const source = live(rows.source, now);
  const refuse = (refusedBy: ThrottleScope, until: number, busy = false): ThrottleDecision =>
    ({ reservation: { granted: false, refusedBy, retryAt: new Date(until), ...(busy && { busy: true }) } });

  if (pair !== null && pair.blockedUntil !== null && now < pair.blockedUntil) return refuse('pair', pair.blockedUntil);
  const failures = pair?.count ?? 0;
  const inflight = underWay(pair, now);
  if (inflight >= Math.max(1, limits.pairMaxAttempts - failures)) return refuse('pair', pair?.inflightUntil ?? now, true);
  if (source !== null && source.count >= limits.sourceMaxFailures) return refuse('source', source.expiresAt);
  const loginFailures = login?.count ?? 0;
  const loginInflight = underWay(login, now);
  if (login !== null && !knownSource) {
    if (loginFailures >= limits.loginMaxAttempts) return refuse('login', login.expiresAt);
    // Only verifications under way fill it: they may all succeed, so this one waits for them.
    if (loginFailures + loginInflight >= limits.loginMaxAttempts) return refuse('login', Math.min(login.inflightUntil ?? now, login.expiresAt), true);
  }

  const fresh = (count: number, inflight: number): CounterState => ({
    count, windowStart: now, blockedUntil: null, inflight, inflightUntil: inflight > 0 ? now + INFLIGHT_TTL_MS : null, expiresAt: now + limits.windowMs,
  });
  return {
    reservation: { granted: true },
    writes: {
      pair: {
        count: failures, windowStart: pair?.windowStart ?? now, blockedUntil: null,
        inflight: inflight + 1, inflightUntil: now + INFLIGHT_TTL_MS, expiresAt: Math.max(pair?.expiresAt ?? 0, now + limits.windowMs),
      },
      // Every granted verification holds a slot of the login until it reports, from a known source too:
      // the reports cannot tell which reservation they end, so all of them must have taken one.
      login: login === null ? fresh(0, 1) : { ...login, inflight: loginInflight + 1, inflightUntil: now + INFLIGHT_TTL_MS },
      source: source === null ? fresh(1, 0) : { ...source, count: source.count + 1 },
    },
  };
}

/** The login row after a granted verification failed: one more failure, one fewer under way (null row: a new window). */
export function loginAfterFailure(row: CounterState | null, now: number, limits: Pick<ThrottleLimits, 'windowMs'>): CounterState {
  const login = live(row, now);
  if (login === null) return { count: 1, windowStart: now, blockedUntil: null, inflight: 0, inflightUntil: null, expiresAt: now + limits.windowMs };
  const inflight = Math.max(0, underWay(login, now) - 1);
  return { ...login, count: login.count + 1, inflight, inflightUntil: inflight > 0 ? login.inflightUntil : null };
}

/**
 * The login row after a granted verification succeeded or could not run: its slot given back,
 * nothing counted. null: nothing to write (no live row: its window ended meanwhile).
 */
export function loginAfterNoFailure(row: CounterState | null, now: number): CounterState | null {
  const login = live(row, now);
  if (login === null) return null;
  const inflight = Math.max(0, underWay(login, now) - 1);
  return { ...login, inflight, inflightUntil: inflight > 0 ? login.inflightUntil : null };
}

/** The pair row after a granted verification failed (null row: it expired or was purged meanwhile). */
export function pairAfterFailure(row: CounterState | null, now: number, limits: ThrottleLimits): CounterState {
  const pair = live(row, now);
  const failures = (pair?.count ?? 0) + 1;
  const delay = pairDelayMs(failures, limits);
  const blockedUntil = delay === null ? null : now + delay;
  const inflight = Math.max(0, underWay(pair, now) - 1);
  return {
    count: failures, windowStart: pair?.windowStart ?? now, blockedUntil,
    inflight, inflightUntil: inflight > 0 ? (pair?.inflightUntil ?? null) : null,
    expiresAt: Math.max(pair?.expiresAt ?? 0, (blockedUntil ?? now) + limits.windowMs),
  };
}

/** The pair row after a granted verification succeeded: failures and block forgotten; null: delete it. */
export function pairAfterSuccess(row: CounterState | null, now: number): CounterState | null {
  const pair = live(row, now);
  const inflight = Math.max(0, underWay(pair, now) - 1);
  if (pair === null || inflight === 0) return null;
  return { ...pair, count: 0, blockedUntil: null, inflight };
}

/** The pair row after a granted verification could not run (server too busy...): its slot freed, nothing counted. */
export function pairAfterRelease(row: CounterState | null, now: number): CounterState | null {
  const pair = live(row, now);
  if (pair === null) return null;
  const inflight = Math.max(0, underWay(pair, now) - 1);
  return { ...pair, inflight, inflightUntil: inflight > 0 ? pair.inflightUntil : null };
}
