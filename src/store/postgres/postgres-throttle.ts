/**
 * PostgreSQL's brute-force counters (ThrottleStore): each attempt locks its counter rows in one
 * global order, login-throttle-rules.ts decides, and the rows are written back in the same
 * transaction; plus the operator's view, reset and purge.
 */
import type pg from 'pg';
import type { AttemptReservation, LoginAttempt, LoginThrottleQuery, LoginThrottleRecord, ThrottleCounter, ThrottleLimits, ThrottleStore } from '../store.js';
import {
  decideAttempt, lockOrder, loginAfterFailure, loginAfterNoFailure, needsKnownSource, pairAfterFailure, pairAfterRelease, pairAfterSuccess,
  throttleKeys, type CounterState,
} from '../login-throttle-rules.js';
import type { Row } from '../row-mapping.js';
import { SQL } from '../shared-sql.js';
import type { PostgresContext } from './postgres-context.js';
import { date, dateOrNull, num } from './postgres-row-mapping.js';

export function postgresThrottle(ctx: PostgresContext): ThrottleStore {
  const { run, runOn, tx } = ctx;

  // --- brute-force counters: the three rows locked in one global order, decided by
  // login-throttle-rules.ts, written back, committed. A row that does not exist yet is inserted
  // (as an expired, empty counter) by the same statement that locks it, so a first attempt races
  // nobody; `inserted` (xmax = 0: no earlier version) says which, to remove them again on a refusal.
  const LOCK_COUNTER = `INSERT INTO throttle_counters (key, count, window_start, blocked_until, expires_at) VALUES ($1, 0, $2, NULL, $2)
    ON CONFLICT (key) DO UPDATE SET count = throttle_counters.count
    RETURNING count, window_start, blocked_until, inflight, inflight_until, expires_at, (xmax = 0) AS inserted`;
  const WRITE_COUNTERS = `UPDATE throttle_counters t
    SET count = v.count, window_start = v.window_start, blocked_until = v.blocked_until, inflight = v.inflight,
      inflight_until = v.inflight_until, expires_at = v.expires_at
    FROM unnest($1::text[], $2::integer[], $3::timestamptz[], $4::timestamptz[], $5::integer[], $6::timestamptz[], $7::timestamptz[])
      AS v (key, count, window_start, blocked_until, inflight, inflight_until, expires_at)
    WHERE t.key = v.key`;
  const toCounter = (r: Row | undefined): CounterState | null => (r === undefined ? null : {
    count: num(r.count), windowStart: date(r.window_start).getTime(), blockedUntil: r.blocked_until === null ? null : date(r.blocked_until).getTime(),
    inflight: num(r.inflight), inflightUntil: r.inflight_until === null ? null : date(r.inflight_until).getTime(), expiresAt: date(r.expires_at).getTime(),
  });
  const orNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
  /** Writes counter rows that the transaction holds locked (they exist: LOCK_COUNTER made them). */
  async function writeCounters(c: pg.PoolClient, rows: readonly (readonly [string, CounterState])[]): Promise<void> {
    await c.query({
      name: 'throttle_write', text: WRITE_COUNTERS,
      values: [rows.map(([key]) => key), rows.map(([, x]) => x.count), rows.map(([, x]) => new Date(x.windowStart)), rows.map(([, x]) => orNull(x.blockedUntil)),
        rows.map(([, x]) => x.inflight), rows.map(([, x]) => orNull(x.inflightUntil)), rows.map(([, x]) => new Date(x.expiresAt))],
    });
  }
  /** A counter's row, locked, if it exists. */
  async function lockedRow(c: pg.PoolClient, key: string): Promise<CounterState | null> {
    return toCounter((await c.query<Row>({
      name: 'throttle_pair', text: 'SELECT count, window_start, blocked_until, inflight, inflight_until, expires_at FROM throttle_counters WHERE key = $1 FOR UPDATE',
      values: [key],
    })).rows[0]);
  }
  /** Locks one counter row (creating it, empty and expired, if missing). */
  async function lockCounter(c: pg.PoolClient, key: string, now: Date): Promise<{ state: CounterState | null; inserted: boolean }> {
    const row = (await c.query<Row>({ name: 'throttle_lock', text: LOCK_COUNTER, values: [key, now] })).rows[0];
    return { state: toCounter(row), inserted: row?.inserted === true };
  }
  const counterOf = (r: Row): ThrottleCounter => ({
    count: num(r.count), windowStart: date(r.window_start), blockedUntil: dateOrNull(r.blocked_until),
    inflight: num(r.inflight), inflightUntil: dateOrNull(r.inflight_until), expiresAt: date(r.expires_at),
  });
  /**
   * The operator's view of one login, in one REPEATABLE READ transaction (one snapshot).
   */
  async function throttleState(query: LoginThrottleQuery): Promise<LoginThrottleRecord> {
    const keys = throttleKeys({ loginHash: query.loginHash, source: '' });
    const limit = Math.max(0, Math.trunc(query.limit));
    return tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const pairs = { prefix: keys.pair, now: query.now };
      const known = { loginHash: query.loginHash, since: query.knownSince };
      const login = (await runOn(c, SQL.counter, { key: keys.login }, 'throttle_state_login')).rows[0];
      const pairRows = (await runOn(c, SQL.loginPairs, { ...pairs, limit }, 'throttle_state_pairs')).rows;
      const pairCount = (await runOn(c, SQL.loginPairCount, pairs, 'throttle_state_pair_count')).rows[0];
      const knownRows = (await runOn(c, SQL.knownSources, { ...known, limit }, 'throttle_state_known')).rows;
      const knownCount = (await runOn(c, SQL.knownSourceCount, known, 'throttle_state_known_count')).rows[0];
      return {
        login: login === undefined ? null : counterOf(login),
        pairs: pairRows.map((r) => ({ source: String(r.source), ...counterOf(r) })),
        pairCount: num(pairCount?.n ?? 0),
        knownSources: knownRows.map((r) => ({ source: String(r.source), lastSuccessAt: date(r.last_success_at) })),
        knownSourceCount: num(knownCount?.n ?? 0),
      };
    });
  }
  /** A verification that did not fail gives the login its slot back (the row locked first). */
  async function loginSlotBack(c: pg.PoolClient, key: string, now: number): Promise<void> {
    const login = loginAfterNoFailure(await lockedRow(c, key), now);
    if (login !== null) await writeCounters(c, [[key, login]]);
  }
  async function reserveAttempt(attempt: LoginAttempt, limits: ThrottleLimits): Promise<AttemptReservation> {
    const keys = throttleKeys(attempt);
    const now = attempt.now.getTime();
    return tx(async (c) => {
      const rows: { pair: CounterState | null; login: CounterState | null; source: CounterState | null } = { pair: null, login: null, source: null };
      const inserted: string[] = [];
      for (const scope of lockOrder(keys)) {
        const locked = await lockCounter(c, keys[scope], attempt.now);
        rows[scope] = locked.state;
        if (locked.inserted) inserted.push(keys[scope]);
      }
      const known = needsKnownSource(rows, now, limits)
        && ((await runOn(c, SQL.knownSource, { loginHash: attempt.loginHash, source: attempt.source, since: new Date(now - limits.knownSourceMs) }, 'throttle_known')).rowCount ?? 0) > 0;
      const decision = decideAttempt(rows, now, limits, known);
      if ('writes' in decision) {
        await writeCounters(c, lockOrder(keys).map((scope) => [keys[scope], decision.writes[scope]] as const));
      } else if (inserted.length > 0) {
        // A refusal changes nothing, as on SQLite: the placeholders go again.
        await c.query({ name: 'throttle_unlock', text: 'DELETE FROM throttle_counters WHERE key = ANY($1::text[])', values: [inserted] });
      }
      return decision.reservation;
    });
  }

  return {
    async reserveLoginAttempt(attempt, limits) {
      return reserveAttempt(attempt, limits);
    },
    async recordLoginSuccess(attempt) {
      // In the order of reserveLoginAttempt ('l:' < 'p:' < 's:'): the login's slot back, the pair,
      // then the source's refund and the known source.
      const keys = throttleKeys(attempt);
      await tx(async (c) => {
        await loginSlotBack(c, keys.login, attempt.now.getTime());
        const pair = pairAfterSuccess(await lockedRow(c, keys.pair), attempt.now.getTime());
        if (pair === null) await runOn(c, SQL.forgetCounter, { key: keys.pair }, 'throttle_forget');
        else await writeCounters(c, [[keys.pair, pair]]);
        await c.query({
          name: 'throttle_success', text: `WITH refund AS (UPDATE throttle_counters SET count = count - 1 WHERE key = $1 AND count > 0 AND expires_at > $4)
            INSERT INTO known_sources (login_hash, source, last_success_at) VALUES ($2, $3, $4)
            ON CONFLICT (login_hash, source) DO UPDATE SET last_success_at = GREATEST(known_sources.last_success_at, excluded.last_success_at)`,
          values: [keys.source, attempt.loginHash, attempt.source, attempt.now],
        });
      });
    },
    async releaseLoginAttempt(attempt) {
      const keys = throttleKeys(attempt);
      await tx(async (c) => {
        await loginSlotBack(c, keys.login, attempt.now.getTime());
        const pair = pairAfterRelease(await lockedRow(c, keys.pair), attempt.now.getTime());
        if (pair !== null) await writeCounters(c, [[keys.pair, pair]]);
        await runOn(c, SQL.refundCounter, { key: keys.source, now: attempt.now }, 'throttle_refund');
      });
    },
    async recordLoginFailure(attempt, limits) {
      const keys = throttleKeys(attempt);
      const now = attempt.now.getTime();
      await tx(async (c) => {
        // The login, then the pair ('l:' < 'p:'), as every transaction locks them.
        const login = loginAfterFailure((await lockCounter(c, keys.login, attempt.now)).state, now, limits);
        const pair = pairAfterFailure((await lockCounter(c, keys.pair, attempt.now)).state, now, limits);
        await writeCounters(c, [[keys.login, login], [keys.pair, pair]]);
      });
    },
    async purgeLoginThrottle(now, knownBefore, limit) {
      const max = Math.max(0, Math.trunc(limit));
      const counters = (await run(null, SQL.purgeCounters, { now, limit: max })).rowCount ?? 0;
      if (counters >= max) return counters;
      return counters + ((await run(null, SQL.purgeKnownSources, { before: knownBefore, limit: max - counters })).rowCount ?? 0);
    },
    async loginThrottleState(query) {
      return throttleState(query);
    },
    async resetLoginThrottle(loginHash) {
      const keys = throttleKeys({ loginHash, source: '' });
      return tx(async (c) => {
        // The login's row first, as every throttle transaction locks it before any of its pairs:
        // so the delete cannot wait in a cycle with a reservation of this login.
        await lockedRow(c, keys.login);
        return (await runOn(c, SQL.resetLogin, { login: keys.login, prefix: keys.pair }, 'throttle_reset')).rowCount ?? 0;
      });
    },
  };
}
