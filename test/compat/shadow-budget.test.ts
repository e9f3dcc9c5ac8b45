/**
 * Shadow mode's CPU budget (src/compat/shadow-budget.ts) on fake clocks: a simulated event loop
 * serves requests back to back, each costing the clients' work, plus the shadow work of those
 * admitted: a part timed and charged by the caller, and a part nobody times (socket system time,
 * promise plumbing, garbage collection), which only the event loop's busy clock sees. The share
 * of the time spent on shadow work, all of it, follows `share` at saturation; every request is
 * admitted at light load, even when comparing them all costs more than the share; share 1
 * admits everything. Counts and simulated time only: nothing here depends on the machine's speed.
 */
import { describe, expect, it } from 'vitest';
import { ADMISSION_ESTIMATE_MS, createShadowBudget, LIGHT_LOAD, MIN_BURST } from '../../src/compat/shadow-budget.js';

interface Simulated {
  readonly admitted: number;
  readonly dropped: number;
  /**
   * Shadow work (timed and untimed) over the time spent, simulated, after the first two windows
   * (a full bucket lets the share of a whole window through at once).
   */
  readonly shadowShare: number;
  /** Admitted after the first two windows, and the time that took. */
  readonly steadyAdmitted: number;
  readonly steadyMs: number;
  /** What the budget charged, over the whole run, against the shadow work done. */
  readonly spent: number;
  readonly shadowTotal: number;
}

interface Load {
  readonly share: number;
  readonly requests: number;
  /** CPU time of a client's request. */
  readonly requestMs: number;
  /** Shadow work per exchange the caller times and charges (in two stretches), and the part nobody times. */
  readonly timedMs: number;
  readonly untimedMs?: number;
  /** Idle time after each request (0: saturated). */
  readonly idleMs?: number;
  /** Exchanges admitted are worked through this many at a time (shadow mode's batches). */
  readonly batch?: number;
  /** Whether the budget sees the event loop's busy clock (false: the caller's timing only). */
  readonly busyClock?: boolean;
}

function simulate(load: Load): Simulated {
  const { share, requests, requestMs, timedMs, untimedMs = 0, idleMs = 0, batch = 1, busyClock = true } = load;
  let now = 0;
  let busy = 0;
  const budget = createShadowBudget({ share, now: () => now, ...(busyClock && { busy: () => busy }) });
  const work = (ms: number): void => {
    now += ms;
    busy += ms;
  };
  let admitted = 0;
  let steadyAdmitted = 0;
  let shadowTotal = 0;
  let steadyShadow = 0;
  let waiting = 0;
  const steadyFrom = 2000;
  for (let i = 0; i < requests; i++) {
    work(requestMs);
    budget.served();
    if (budget.admit()) {
      admitted += 1;
      if (now >= steadyFrom) steadyAdmitted += 1;
      waiting += 1;
    }
    if (waiting >= batch) {
      for (; waiting > 0; waiting--) {
        // Sending, then reading and comparing, each timed; the rest of it untimed.
        for (const part of [timedMs / 2, timedMs / 2]) {
          work(part);
          budget.charge(part);
        }
        work(untimedMs);
        shadowTotal += timedMs + untimedMs;
        if (now >= steadyFrom) steadyShadow += timedMs + untimedMs;
      }
    }
    now += idleMs;
  }
  const steadyMs = now - steadyFrom;
  return { admitted, dropped: requests - admitted, shadowShare: steadyShadow / steadyMs, steadyAdmitted, steadyMs, spent: budget.spent(), shadowTotal };
}

describe('the shadow CPU budget', () => {
  it('at saturation, shadow work takes the share, no more (and not much less)', () => {
    // ValidateUserToken-like: 30 µs a request, 40 µs of shadow work: unlimited, shadowing would take 57%.
    for (const share of [0.02, 0.08, 0.25]) {
      const r = simulate({ share, requests: 300_000, requestMs: 0.03, timedMs: 0.04 });
      expect(r.steadyMs).toBeGreaterThan(5000);
      expect(r.shadowShare).toBeLessThanOrEqual(share * 1.1);
      expect(r.shadowShare).toBeGreaterThan(share * 0.95);
      expect(r.dropped).toBeGreaterThan(0);
    }
  });

  it('the work nobody times is charged too: the share holds with 60% of the shadow work untimed, one by one or in batches', () => {
    // 20 µs timed, 30 µs untimed: charged by the caller's timing alone, shadowing would take 2.5× the share.
    for (const batch of [1, 16]) {
      for (const share of [0.03, 0.08]) {
        const r = simulate({ share, requests: 300_000, requestMs: 0.03, timedMs: 0.02, untimedMs: 0.03, batch });
        expect(r.shadowShare).toBeLessThanOrEqual(share * 1.1);
        expect(r.shadowShare).toBeGreaterThan(share * 0.9);
        // What was charged is what the shadow work cost, the requests' own time left out.
        expect(r.spent / r.shadowTotal).toBeGreaterThan(0.95);
        expect(r.spent / r.shadowTotal).toBeLessThan(1.1);
      }
    }
  });

  it('without the busy clock (the timed stretches alone), the untimed work escapes the share', () => {
    // What the budget did before it read the busy clock: the check that the test above can fail.
    const r = simulate({ share: 0.03, requests: 300_000, requestMs: 0.03, timedMs: 0.02, untimedMs: 0.03, busyClock: false });
    expect(r.shadowShare).toBeGreaterThan(0.03 * 2);
  });

  it('the admitted count is what the share allows: share × time / cost', () => {
    const r = simulate({ share: 0.08, requests: 200_000, requestMs: 0.05, timedMs: 0.04, untimedMs: 0.06 });
    // Shadow time is 0.08 of the time: admitted × 0.1 ms = 0.08 × steadyMs.
    const expected = (0.08 * r.steadyMs) / 0.1;
    expect(r.steadyAdmitted / expected).toBeGreaterThan(0.95);
    expect(r.steadyAdmitted / expected).toBeLessThan(1.05);
  });

  it('share 0 (the default): at saturation nothing is compared once the first burst is spent', () => {
    const r = simulate({ share: 0, requests: 300_000, requestMs: 0.03, timedMs: 0.02, untimedMs: 0.03 });
    expect(r.steadyMs).toBeGreaterThan(5000);
    expect(r.steadyAdmitted).toBe(0);
    // Only at the start: the bucket's first burst (MIN_BURST of a window, as charged) before the
    // first utilisation window has passed, under 1% of the ~9 s run.
    expect(r.shadowTotal).toBeGreaterThan(0);
    expect(r.shadowTotal).toBeLessThanOrEqual(MIN_BURST * 1000 * 1.2);
    expect(r.shadowTotal).toBeLessThan(0.01 * 300_000 * 0.03);
  });

  it('share 0, exchanges charged long after they were admitted: the first burst is still only the bucket\'s worth', () => {
    // Saturated from the start; each exchange is charged 60 ms (2,000 requests) after its
    // admission: the batch's wait, then the old service's answer. Admission alone must bound it.
    let now = 0;
    let busy = 0;
    const budget = createShadowBudget({ share: 0, now: () => now, busy: () => busy });
    const due: number[] = [];
    let admitted = 0;
    for (let i = 0; i < 100_000; i++) {
      now += 0.03;
      busy += 0.03;
      budget.served();
      if (budget.admit()) {
        admitted += 1;
        due.push(i + 2000);
      }
      while (due.length > 0 && (due[0] ?? Infinity) <= i) {
        due.shift();
        now += 0.05;
        busy += 0.05;
        budget.charge(0.05);
      }
    }
    // The bucket (MIN_BURST of a second) over what admit() prepays for each exchange; charged only
    // as they end, all 2,000 requests of the first 60 ms would have been admitted.
    expect(admitted).toBeGreaterThan(0);
    // (Twice that: what was prepaid flows back meanwhile.)
    expect(admitted).toBeLessThanOrEqual((2 * MIN_BURST * 1000) / ADMISSION_ESTIMATE_MS);
  });

  it('share 0, load starting after a light spell: the light spell\'s allowance ends within a few milliseconds, not a window later', () => {
    // A second of light load (a request a millisecond, each compared), then saturation; each
    // exchange costs what admission prepays, charged 20 ms (about 670 requests) after it.
    let now = 0;
    let busy = 0;
    const budget = createShadowBudget({ share: 0, now: () => now, busy: () => busy });
    const due: Array<{ at: number }> = [];
    let loadStart = 0;
    let admittedUnderLoad = 0;
    const work = (ms: number): void => {
      now += ms;
      busy += ms;
    };
    for (let i = 0; i < 60_000; i++) {
      const saturated = i >= 1000;
      if (i === 1000) loadStart = now;
      work(0.03);
      budget.served();
      if (budget.admit()) {
        due.push({ at: now + 20 });
        if (saturated) admittedUnderLoad += 1;
      }
      while (due.length > 0 && (due[0]?.at ?? Infinity) <= now) {
        due.shift();
        work(ADMISSION_ESTIMATE_MS);
        budget.charge(ADMISSION_ESTIMATE_MS);
      }
      if (!saturated) now += 0.97;
    }
    expect(now - loadStart).toBeGreaterThan(1000);
    // The bucket's worth (MIN_BURST of a second, at what admission prepays: 100), a few
    // milliseconds of the light allowance and what the exchanges in flight had prepaid: 154.
    // Judged by the last whole window alone, the light allowance lasted up to UTILISATION_MS into
    // the load: 201.
    expect(admittedUnderLoad).toBeLessThanOrEqual((MIN_BURST * 1000) / ADMISSION_ESTIMATE_MS + 60);
  });

  it('what admit() prepays is used up by the charges that follow: over time, the work is paid once', () => {
    const now = 0;
    const budget = createShadowBudget({ share: 0.1, windowMs: 1000, now: () => now });
    // 100 ms in the bucket; 50 exchanges admitted prepay 5 ms, then each is charged 0.3 ms.
    for (let i = 0; i < 50; i++) expect(budget.admit()).toBe(true);
    for (let i = 0; i < 50; i++) budget.charge(0.3);
    expect(budget.spent()).toBeCloseTo(15, 6);
    // 100 - 15 = 85 ms left, not 80: the prepayment was not charged again; 850 more of 0.1 ms fit.
    let more = 0;
    while (more < 10_000 && budget.admit()) more += 1;
    expect(Math.abs(more - 850)).toBeLessThanOrEqual(1);
  });

  it('at light load every request is admitted, even when comparing them all costs more than the share (0 included)', () => {
    // 1000 requests a second, 60 µs of shadow work each: 6% of the time (4% timed), over a share of 3%.
    for (const share of [0, 0.03]) {
      for (const batch of [1, 16]) {
        const r = simulate({ share, requests: 20_000, requestMs: 0.03, timedMs: 0.04, untimedMs: 0.02, idleMs: 0.97, batch });
        expect(r.dropped).toBe(0);
        expect(r.admitted).toBe(20_000);
      }
    }
  });

  it(`below saturation shadow work may fill the clients' load up to ${LIGHT_LOAD} of the time, and no further`, () => {
    // The clients take 30% of the time; unlimited, shadowing would add 50% of theirs.
    const r = simulate({ share: 0.03, requests: 100_000, requestMs: 0.03, timedMs: 0.02, untimedMs: 0.03, idleMs: 0.07 });
    expect(r.dropped).toBeGreaterThan(0);
    expect(r.shadowShare).toBeGreaterThan(0.1);
    // Clients' share of the time plus shadow work's stays near LIGHT_LOAD (their time stretched by it).
    const clients = (100_000 * 0.03) / (r.steadyMs + 2000);
    expect(clients + r.shadowShare).toBeLessThan(LIGHT_LOAD + 0.05);
  });

  it('share 1 admits everything, even at saturation', () => {
    const r = simulate({ share: 1, requests: 10_000, requestMs: 0.03, timedMs: 0.04, untimedMs: 0.04 });
    expect(r.dropped).toBe(0);
  });

  it('at saturation the admissions come evenly, not a whole window\'s share at once', () => {
    let now = 0;
    let busy = 0;
    const budget = createShadowBudget({ share: 0.08, now: () => now, busy: () => busy });
    const perSlice = new Map<number, number>();
    for (let i = 0; i < 200_000; i++) {
      now += 0.03;
      busy += 0.03;
      budget.served();
      if (!budget.admit()) continue;
      perSlice.set(Math.floor(now / 100), (perSlice.get(Math.floor(now / 100)) ?? 0) + 1);
      now += 0.04;
      busy += 0.04;
      budget.charge(0.04);
    }
    // Past the first window's burst, every 100 ms has close to its 8 ms of shadow work (200 exchanges).
    const steady = [...perSlice].filter(([slice]) => slice >= 20 && slice < Math.floor(now / 100)).map(([, n]) => n);
    expect(steady.length).toBeGreaterThan(30);
    expect(Math.min(...steady)).toBeGreaterThan(180);
    expect(Math.max(...steady)).toBeLessThan(220);
  });

  it('a slice is charged its busy time less its requests at what a request costs: the timed part, the untimed part, no more', () => {
    let now = 0;
    let busy = 0;
    const budget = createShadowBudget({ share: 0.5, now: () => now, busy: () => busy });
    const request = (): void => {
      now += 0.03;
      busy += 0.03;
      budget.served();
      budget.admit();
    };
    // Requests alone first: what one costs is learnt (30 µs).
    for (let i = 0; i < 1000; i++) request();
    const before = budget.spent();
    // 0.2 ms timed and charged, 0.3 ms after it untimed, among ten requests; then idle.
    now += 0.2;
    busy += 0.2;
    budget.charge(0.2);
    now += 0.3;
    busy += 0.3;
    for (let i = 0; i < 10; i++) request();
    now += 5;
    request();
    expect(budget.spent() - before).toBeCloseTo(0.5, 6);
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
