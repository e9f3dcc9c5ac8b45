import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSessionMemory } from '../../src/domain/session-memory.js';

const hash = (n: number | string): string => createHash('sha256').update(String(n)).digest('hex');
/** Hashes that share their first eight digits: the same home slot at every table size, one run of linear probing. */
const sameHome = (n: number): string => `00000000${hash(n).slice(8)}`;

describe('session memory', () => {
  it('answers a kept session with its expiry only under the revision it was kept under and before that expiry', () => {
    const memory = createSessionMemory(100);
    const h = hash(1);
    expect(memory.validUntil(h, 7, 1_000)).toBe(-1);
    memory.set(h, 7, 5_000);
    expect(memory.validUntil(h, 7, 1_000)).toBe(5_000);
    expect(memory.validUntil(h, 8, 1_000)).toBe(-1);
    // At its expiry a token no longer works (evaluateToken: now >= expiresAt).
    expect(memory.validUntil(h, 7, 4_999)).toBe(5_000);
    expect(memory.validUntil(h, 7, 5_000)).toBe(-1);
    expect(memory.holds(h)).toBe(true);
    expect(memory.validUntil(hash(2), 7, 1_000)).toBe(-1);
    expect(memory.holds(hash(2))).toBe(false);
  });

  it('replaces an entry set again and forgets a deleted one', () => {
    const memory = createSessionMemory(100);
    const h = hash('a');
    memory.set(h, 1, 5_000);
    memory.set(h, 2, 6_000);
    expect(memory.size).toBe(1);
    expect(memory.validUntil(h, 1, 0)).toBe(-1);
    expect(memory.validUntil(h, 2, 0)).toBe(6_000);
    memory.delete(h);
    expect(memory.size).toBe(0);
    expect(memory.holds(h)).toBe(false);
    memory.delete(h);
    expect(memory.size).toBe(0);
  });

  it('tells tokens apart by the first 96 bits of their hash, whichever of those digits differs', () => {
    const memory = createSessionMemory(1000);
    const base = hash('base');
    memory.set(base, 1, 9_000);
    for (let digit = 0; digit < 24; digit++) {
      const other = base.slice(0, digit) + (base[digit] === '0' ? '1' : '0') + base.slice(digit + 1);
      expect(memory.holds(other)).toBe(false);
      expect(memory.validUntil(other, 1, 0)).toBe(-1);
    }
  });

  it('keeps nothing it cannot compare exactly (a revision that is not a safe integer, no expiry) and nothing at all with 0 entries', () => {
    const memory = createSessionMemory(10);
    memory.set(hash(1), 2 ** 53, 5_000);
    memory.set(hash(3), 1.5, 5_000);
    memory.set(hash(4), 1, Number.NaN);
    memory.set(hash(5), 1, 0);
    expect(memory.size).toBe(0);
    // access_revision values are large (epoch microseconds): kept and compared exactly.
    memory.set(hash(6), 1_795_930_293_753_000, 5_000);
    expect(memory.validUntil(hash(6), 1_795_930_293_753_000, 0)).toBe(5_000);
    expect(memory.validUntil(hash(6), 1_795_930_293_753_001, 0)).toBe(-1);
    const off = createSessionMemory(0);
    off.set(hash(1), 1, 5_000);
    expect(off.size).toBe(0);
    expect(off.validUntil(hash(1), 1, 0)).toBe(-1);
  });

  it('never answers for an entry kept under a revision it numbered 64 revisions ago, even asked with that revision', () => {
    const memory = createSessionMemory(1000);
    memory.set(hash('old'), 100, 5_000);
    for (let r = 101; r <= 164; r++) memory.set(hash(r), r, 5_000);
    expect(memory.holds(hash('old'))).toBe(true);
    expect(memory.validUntil(hash('old'), 100, 0)).toBe(-1);
    expect(memory.validUntil(hash(164), 164, 0)).toBe(5_000);
    // Kept again under 100 (a fresh read said so): it gets a number of its own and answers.
    memory.set(hash('old'), 100, 5_000);
    expect(memory.validUntil(hash('old'), 100, 0)).toBe(5_000);
  });

  it('agrees with a plain map through growth, collisions, deletions inside probe runs and eviction at its limit', () => {
    for (const max of [50, 3000, 100_000]) {
      const memory = createSessionMemory(max);
      const model = new Map<string, { revision: number; expiry: number }>();
      let seed = 42;
      const rand = (n: number): number => {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        return seed % n;
      };
      // Half the keys share one home slot, so deletions happen inside long runs.
      const keyOf = (k: number): string => (k % 2 === 0 ? sameHome(k) : hash(k));
      for (let step = 0; step < 20_000; step++) {
        const key = keyOf(rand(4000));
        const op = rand(10);
        if (op < 6) {
          const entry = { revision: rand(3), expiry: 1 + rand(1000) };
          memory.set(key, entry.revision, entry.expiry);
          model.set(key, entry);
        } else if (op < 8) {
          memory.delete(key);
          model.delete(key);
        } else {
          const revision = rand(3);
          const now = rand(1000);
          const kept = model.get(key);
          const answer = memory.validUntil(key, revision, now);
          // Evicted entries answer -1; anything else must be exactly what was set last.
          if (answer !== -1) expect(kept !== undefined && kept.revision === revision && now < kept.expiry && answer === kept.expiry).toBe(true);
          else if (max >= 4000) expect(kept !== undefined && kept.revision === revision && now < kept.expiry).toBe(false);
        }
        expect(memory.size).toBeLessThanOrEqual(max);
      }
      // Without eviction the memory holds exactly the model's keys.
      if (max >= 4000) {
        expect(memory.size).toBe(model.size);
        for (const [key, kept] of model) expect(memory.validUntil(key, kept.revision, 0)).toBe(kept.expiry);
        for (let k = 0; k < 4000; k++) if (!model.has(keyOf(k))) expect(memory.holds(keyOf(k))).toBe(false);
      }
    }
  });

  it('starts again empty once it has numbered 65,535 revisions, so that no entry answers under a number given out again', () => {
    const memory = createSessionMemory(100);
    memory.set(hash('first'), 1, 5_000);
    for (let r = 2; r <= 65_535; r++) memory.set(hash('other'), r, 5_000);
    expect(memory.validUntil(hash('other'), 65_535, 0)).toBe(5_000);
    // The 65,536th revision: every number is taken, so all is forgotten before it gets number 1 again.
    memory.set(hash('new'), 65_536, 5_000);
    expect(memory.size).toBe(1);
    expect(memory.holds(hash('first'))).toBe(false);
    expect(memory.validUntil(hash('new'), 65_536, 0)).toBe(5_000);
    expect(memory.validUntil(hash('other'), 65_535, 0)).toBe(-1);
  });

  it('holds its limit of entries once full, the newest always among them', () => {
    const memory = createSessionMemory(500);
    for (let k = 0; k < 5000; k++) {
      memory.set(hash(k), 1, 10_000);
      expect(memory.validUntil(hash(k), 1, 0)).toBe(10_000);
    }
    expect(memory.size).toBe(500);
    let kept = 0;
    for (let k = 0; k < 5000; k++) if (memory.holds(hash(k))) kept += 1;
    expect(kept).toBe(500);
  });
});
