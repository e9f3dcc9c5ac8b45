import { describe, expect, it } from 'vitest';
import { createFailurePadding } from '../../src/domain/failure-padding.js';

describe('failure padding', () => {
  function fake() {
    let now = 0;
    const slept: number[] = [];
    const padding = createFailurePadding({ window: 5, now: () => now, sleep: async (ms) => { slept.push(ms); now += ms; } });
    return { padding, slept, advance: (ms: number) => (now += ms), now: () => now };
  }

  it('pads a failure to the median of recent successes, never below what it already took', async () => {
    const { padding, slept, advance, now } = fake();
    for (const d of [40, 60, 50, 500, 45]) padding.recordSuccess(d);
    expect(padding.targetMs()).toBe(50);
    const started = now();
    advance(10);
    await padding.pad(started);
    expect(slept).toEqual([40]);
    const slow = now();
    advance(80);
    await padding.pad(slow);
    expect(slept).toEqual([40]);
  });

  it('follows the machine: only the last `window` successes count', () => {
    const { padding } = fake();
    for (const d of [10, 10, 10, 10, 10, 90, 90, 90]) padding.recordSuccess(d);
    expect(padding.targetMs()).toBe(90);
  });
});
