/**
 * The gauges counted by the store (active tokens, password hash formats) are counted at most once
 * per refresh interval, in the background after the first scrape: on 10 million tokens the
 * active tokens' count takes 25 s (src/ops/metrics.ts STORE_GAUGE_REFRESH_MS), so a scrape must
 * neither wait for it nor start one each time.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/ops/metrics.js';
import type { Store } from '../../src/store/store.js';

function fakeStore(): { store: Store; calls: { active: number; hashes: number }; setActive(n: number): void; hold(): () => void } {
  let active = 5;
  const calls = { active: 0, hashes: 0 };
  let gate: Promise<void> = Promise.resolve();
  const store = {
    async countActiveTokens(): Promise<number> {
      calls.active += 1;
      await gate;
      return active;
    },
    async countPasswordHashSchemes(): Promise<{ scheme: string; count: number }[]> {
      calls.hashes += 1;
      await gate;
      return [{ scheme: 'argon2id', count: 3 }];
    },
  } as unknown as Store;
  return {
    store, calls,
    setActive: (n) => void (active = n),
    hold: () => {
      let release: () => void = () => undefined;
      gate = new Promise<void>((resolve) => (release = resolve));
      return release;
    },
  };
}

const sample = (text: string, line: string): number | undefined => {
  const match = new RegExp(`^${line.replace(/[{}"=]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text);
  return match === null ? undefined : Number(match[1]);
};

describe('the store-backed gauges', () => {
  it('are counted at the first scrape, then at most once per interval, the scrape reporting the last count meanwhile', async () => {
    const f = fakeStore();
    let t = 0;
    const metrics = createMetrics({ store: f.store, processMetrics: false, now: () => new Date(t), storeGaugeRefreshMs: 60_000 });
    const scrape = (): Promise<string> => metrics.registry.metrics();

    let text = await scrape();
    expect(sample(text, 'svcapi_auth_active_tokens')).toBe(5);
    expect(sample(text, 'svcapi_auth_password_hashes{format="argon2id"}')).toBe(3);
    expect(f.calls).toEqual({ active: 1, hashes: 1 });

    // Within the interval: the last count, and no query.
    f.setActive(7);
    t = 30_000;
    expect(sample(await scrape(), 'svcapi_auth_active_tokens')).toBe(5);
    expect(f.calls).toEqual({ active: 1, hashes: 1 });

    // Past it: the scrape starts a count and does not wait for it.
    t = 61_000;
    const release = f.hold();
    expect(sample(await scrape(), 'svcapi_auth_active_tokens')).toBe(5);
    expect(f.calls).toEqual({ active: 2, hashes: 2 });
    // A scrape while it runs starts no other.
    expect(sample(await scrape(), 'svcapi_auth_active_tokens')).toBe(5);
    expect(f.calls).toEqual({ active: 2, hashes: 2 });
    release();
    await new Promise((resolve) => setImmediate(resolve));
    text = await scrape();
    expect(sample(text, 'svcapi_auth_active_tokens')).toBe(7);
    expect(f.calls).toEqual({ active: 2, hashes: 2 });
  });

  it('wait ten times as long as a count took before the next, when that is more than the interval', async () => {
    const f = fakeStore();
    let t = 0;
    const metrics = createMetrics({ store: f.store, processMetrics: false, now: () => new Date(t), storeGaugeRefreshMs: 60_000 });
    const scrape = (): Promise<string> => metrics.registry.metrics();
    await scrape();
    t = 61_000;
    const release = f.hold();
    await scrape();
    t = 81_000; // the count took 20 s (a fleet's tokens)
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.calls.active).toBe(2);
    t = 81_000 + 150_000; // past the interval, not past 10 x 20 s
    await scrape();
    expect(f.calls.active).toBe(2);
    t = 81_000 + 201_000;
    await scrape();
    expect(f.calls.active).toBe(3);
  });

  it('do not hold the first scrape for a count that does not end', async () => {
    const f = fakeStore();
    f.hold(); // never released
    const metrics = createMetrics({ store: f.store, processMetrics: false });
    const text = await metrics.registry.metrics();
    expect(f.calls).toEqual({ active: 1, hashes: 1 });
    expect(sample(text, 'svcapi_auth_password_hashes{format="argon2id"}')).toBeUndefined();
    expect(text).toContain('svcapi_auth_http_requests_total');
    // Nor any later scrape: the first waited its second, the next ones report at once.
    const started = performance.now();
    await metrics.registry.metrics();
    expect(performance.now() - started).toBeLessThan(500);
    expect(f.calls).toEqual({ active: 1, hashes: 1 });
  });
});
