/**
 * The domain caches' bounded map (src/domain/recent-map.ts): exactly the entries a plain model
 * keeps, in the same order of forgetting, over long random runs of reads, writes and deletes
 * (its oldest entry comes from an iterator kept across evictions, which must never skip or
 * repeat one).
 */
import { describe, expect, it } from 'vitest';
import { recentMap } from '../../src/domain/recent-map.js';
import { seededRandom } from '../support/domain-fakes.js';

/** The reference: an array in order from oldest to newest. */
function model(max: number, byUse: boolean): { get(k: string): number | undefined; set(k: string, v: number): void; delete(k: string): void } {
  const entries: [string, number][] = [];
  const at = (k: string): number => entries.findIndex(([key]) => key === k);
  return {
    get(k) {
      const i = at(k);
      if (i < 0) return undefined;
      const entry = entries[i] as [string, number];
      if (byUse) entries.push(...entries.splice(i, 1));
      return entry[1];
    },
    set(k, v) {
      const i = at(k);
      if (i >= 0) entries.splice(i, 1);
      entries.push([k, v]);
      if (entries.length > max) entries.shift();
    },
    delete(k) {
      const i = at(k);
      if (i >= 0) entries.splice(i, 1);
    },
  };
}

describe('recentMap', () => {
  it.each([
    { byUse: false, max: 7 },
    { byUse: true, max: 7 },
    { byUse: false, max: 200 },
    { byUse: true, max: 200 },
  ])('keeps what a plain model keeps: byUse $byUse, max $max', ({ byUse, max }) => {
    const rnd = seededRandom(max + (byUse ? 1 : 0));
    const map = recentMap<number>(max, { byUse });
    const ref = model(max, byUse);
    const keys = Array.from({ length: max * 3 }, (_, i) => `k${i}`);
    for (let step = 0; step < 20_000; step++) {
      const key = rnd.pick(keys);
      const action = rnd.int(10);
      if (action < 5) {
        map.set(key, step);
        ref.set(key, step);
      } else if (action < 6) {
        map.delete(key);
        ref.delete(key);
      } else {
        expect(map.get(key), `step ${step}`).toBe(ref.get(key));
      }
    }
    for (const key of keys) expect(map.get(key), key).toBe(ref.get(key));
  });

  it('forgets the least recently set first when reads do not count (the token memory)', () => {
    const map = recentMap<number>(3, { byUse: false });
    for (const [i, k] of ['a', 'b', 'c'].entries()) map.set(k, i);
    expect(map.get('a')).toBe(0); // a read does not make it recent
    map.set('d', 3);
    expect(map.get('a')).toBeUndefined();
    map.set('b', 9); // a write does
    map.set('e', 4);
    expect([map.get('b'), map.get('c'), map.get('d'), map.get('e')]).toEqual([9, undefined, 3, 4]);
  });
});
