/** Test doubles for the domain's injected dependencies. */
import type { CallerContext } from '../../src/domain/auth-service.js';
import type { Clock } from '../../src/domain/clock.js';
import type { PasswordHasher } from '../../src/domain/password-hasher.js';
import type { RandomSource } from '../../src/domain/random-source.js';

export interface FakeClock extends Clock {
  set(date: Date | string): void;
  advance(ms: number): void;
}

export function fakeClock(start: Date | string = '2025-01-15T12:00:00.000Z'): FakeClock {
  let now = new Date(start).getTime();
  return {
    now: () => new Date(now),
    set: (date) => {
      now = new Date(date).getTime();
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

export interface FakeHasher extends PasswordHasher {
  /** How many times verify() ran (each ValidateUser must cost exactly one). */
  verifyCalls: number;
  /** Runs inside verify(), before it answers: lets a test change the world mid-login. */
  duringVerify?: () => Promise<void>;
}

/**
 * A fast, transparent hasher: `fake$<password>`. Hashes starting `old$` verify too but ask to
 * be re-hashed, standing in for a legacy or weaker format.
 */
export function fakeHasher(): FakeHasher {
  const hasher: FakeHasher = {
    verifyCalls: 0,
    hash: async (password) => `fake$${password}`,
    async verify(passwordHash, password) {
      hasher.verifyCalls += 1;
      if (hasher.duringVerify) await hasher.duringVerify();
      return passwordHash === `fake$${password}` || passwordHash === `old$${password}`;
    },
    needsRehash: (passwordHash) => !passwordHash.startsWith('fake$'),
  };
  return hasher;
}

/** Deterministic "random" bytes: a counter, so every token differs and tests can predict none of it mattering. */
export function counterRandom(): RandomSource {
  let n = 0;
  return {
    bytes(length) {
      n += 1;
      const out = new Uint8Array(length);
      for (let i = 0; i < length; i++) out[i] = (n * 31 + i * 7) & 0xff;
      out[0] = n & 0xff;
      out[1] = (n >> 8) & 0xff;
      return out;
    },
  };
}

export const ctx: CallerContext = Object.freeze({ sourceIp: '192.0.2.10', requestId: 'test' });

/** A reproducible pseudo-random sequence (LCG) for the differential tests. */
export function seededRandom(seed: number): { int(n: number): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return { int, pick: (items) => items[int(items.length)] as (typeof items)[number] };
}
