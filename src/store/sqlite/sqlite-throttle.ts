/**
 * The brute-force counters on SQLite: each attempt's counters read, decided on
 * (login-throttle-rules.ts) and written in one IMMEDIATE transaction; the operator's view and
 * reset of one login; the purge of spent counters and known sources.
 */
import type { LoginAttempt, LoginThrottleQuery, LoginThrottleRecord, ThrottleCounter, ThrottleLimits, ThrottleStore } from '../store.js';
import {
  decideAttempt, lockOrder, loginAfterFailure, loginAfterNoFailure, needsKnownSource, pairAfterFailure, pairAfterRelease, pairAfterSuccess,
  throttleKeys, type CounterState,
} from '../login-throttle-rules.js';
import type { Row } from '../row-mapping.js';
import { SQL } from '../shared-sql.js';
import type { SqliteContext } from './sqlite-context.js';
import { ms } from './sqlite-row-mapping.js';

export function sqliteThrottle({ db, writes }: SqliteContext): ThrottleStore {
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

  return {
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
  };
}
