/**
 * Shadow mode's CPU budget (src/compat/shadow-budget.ts) on a fake clock: a simulated event loop
 * serves requests back to back, each costing the clients' work, plus the shadow work of those
 * admitted. The share of the time spent on shadow work follows `share` at saturation, every
 * request is admitted at light load, and share 1 admits everything. Counts and simulated time
 * only: nothing here depends on the machine's speed.
 */
import { describe, expect, it } from 'vitest';
import { createShadowBudget } from '../../src/compat/shadow-budget.js';

interface Simulated {
  readonly admitted: number;
  readonly dropped: number;
  /**
   * Shadow work over the time spent, simulated, after the first two windows (a full bucket
   * lets the share of a whole window through at once).
   */
  readonly shadowShare: number;
  /** Admitted after the first two windows, and the time that took. */
  readonly steadyAdmitted: number;
  readonly steadyMs: number;
}

/**
 * `requests` requests; each takes `requestMs` of the loop, then its shadow work `shadowMs` if
 * admitted (charged as it is done), then the loop idles `idleMs` (0: saturated).
 */
function simulate(share: number, requests: number, requestMs: number, shadowMs: number, idleMs: number): Simulated {
  let now = 0;
  const budget = createShadowBudget({ share, now: () => now });
  let admitted = 0;
  let steadyAdmitted = 0;
  let shadowTotal = 0;
  const steadyFrom = 2000;
  for (let i = 0; i < requests; i++) {
    now += requestMs;
    if (budget.admit()) {
      admitted += 1;
      if (now >= steadyFrom) steadyAdmitted += 1;
      // The work comes in two stretches (sending, then reading and comparing), charged each.
      for (const part of [shadowMs / 2, shadowMs / 2]) {
        now += part;
        budget.charge(part);
        if (now >= steadyFrom) shadowTotal += part;
      }
    }
    now += idleMs;
  }
  const steadyMs = now - steadyFrom;
  return { admitted, dropped: requests - admitted, shadowShare: shadowTotal / steadyMs, steadyAdmitted, steadyMs };
}

describe('the shadow CPU budget', () => {
  it('at saturation, shadow work takes the share, no more (and not much less)', () => {
    // ValidateUserToken-like: 30 µs a request, 40 µs of shadow work: unlimited, shadowing would take 57%.
    for (const share of [0.02, 0.08, 0.25]) {
      const r = simulate(share, 300_000, 0.03, 0.04, 0);
      expect(r.steadyMs).toBeGreaterThan(5000);
      expect(r.shadowShare).toBeLessThanOrEqual(share * 1.01);
      expect(r.shadowShare).toBeGreaterThan(share * 0.95);
      expect(r.dropped).toBeGreaterThan(0);
    }
  });

  it('the admitted count is what the share allows: shadowShare × time / cost', () => {
    const r = simulate(0.08, 200_000, 0.05, 0.1, 0);
    // Shadow time is 0.08 of the time: admitted × 0.1 ms = 0.08 × steadyMs.
    const expected = (0.08 * r.steadyMs) / 0.1;
    expect(r.steadyAdmitted / expected).toBeGreaterThan(0.97);
    expect(r.steadyAdmitted / expected).toBeLessThan(1.01);
  });

  it('at light load every request is admitted', () => {
    // 1000 requests a second, 40 µs of shadow work each: 4% of the loop.
    const r = simulate(0.08, 20_000, 0.03, 0.04, 0.93);
    expect(r.dropped).toBe(0);
    expect(r.admitted).toBe(20_000);
  });

  it('share 1 admits everything, even at saturation', () => {
    const r = simulate(1, 10_000, 0.03, 0.04, 0);
    expect(r.dropped).toBe(0);
  });

  it('at saturation the admissions come evenly, not a whole window\'s share at once', () => {
    let now = 0;
    const budget = createShadowBudget({ share: 0.08, now: () => now });
    const perSlice = new Map<number, number>();
    for (let i = 0; i < 200_000; i++) {
      now += 0.03;
      if (!budget.admit()) continue;
      perSlice.set(Math.floor(now / 100), (perSlice.get(Math.floor(now / 100)) ?? 0) + 1);
      now += 0.04;
      budget.charge(0.04);
    }
    // Past the first window's burst, every 100 ms has close to its 8 ms of shadow work (200 exchanges).
    const steady = [...perSlice].filter(([slice]) => slice >= 20 && slice < Math.floor(now / 100)).map(([, n]) => n);
    expect(steady.length).toBeGreaterThan(30);
    expect(Math.min(...steady)).toBeGreaterThan(190);
    expect(Math.max(...steady)).toBeLessThan(215);
  });

  it('a burst of work is paid back before more is admitted', () => {
    let now = 0;
    const budget = createShadowBudget({ share: 0.08, windowMs: 1000, now: () => now });
    budget.charge(500);
    expect(budget.spent()).toBe(500);
    expect(budget.admit()).toBe(false);
    // 80 ms of allowance less 500 charged: 420 ms of debt, repaid at 0.08 ms a millisecond.
    now = 5000;
    expect(budget.admit()).toBe(false);
    now = 5300;
    expect(budget.admit()).toBe(true);
  });
});
