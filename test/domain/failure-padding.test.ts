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

  it('counts failed verifications with the successes, so the target follows the machine while nobody succeeds', () => {
    const { padding } = fake();
    for (const d of [30, 30, 30, 30, 30]) padding.recordSuccess(d);
    expect(padding.targetMs()).toBe(30);
    // The machine slowed down; only failures come in, each having verified a password.
    for (const d of [42, 41, 43]) padding.recordVerification(d);
    expect(padding.targetMs()).toBe(41);
  });

  it('follows the machine: only the last `window` successes count', () => {
    const { padding } = fake();
    for (const d of [10, 10, 10, 10, 10, 90, 90, 90]) padding.recordSuccess(d);
    expect(padding.targetMs()).toBe(90);
  });
});

describe('failure padding beside an old service', () => {
  it('pads to the larger of the success and legacy-call medians', async () => {
    let now = 0;
    const slept: number[] = [];
    const padding = createFailurePadding({ window: 3, now: () => now, sleep: async (ms) => { slept.push(ms); now += ms; } });
    for (const d of [30, 32, 34]) padding.recordSuccess(d);
    expect(padding.targetMs()).toBe(32);
    for (const d of [300, 340, 320]) padding.recordLegacyCall(d);
    expect(padding.targetMs()).toBe(320);
    await padding.pad(now - 20);
    expect(slept).toEqual([300]);
    // The old service got faster: the target follows it down, never below the successes.
    for (const d of [5, 5, 5]) padding.recordLegacyCall(d);
    expect(padding.targetMs()).toBe(32);
  });
});
