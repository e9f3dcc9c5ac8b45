/**
 * Shadow mode's CPU budget: the event-loop time spent on shadow work (sending to the old
 * service, reading its answers, comparing, keeping differences) is measured around that work and
 * charged here; a new shadow exchange is admitted only while the work charged stays within
 * `share` of the time gone by (`legacy.shadow.cpuShare`). The clients' requests then keep at
 * least 1 − share of the event loop whatever the load: at saturation the throughput lost to
 * shadowing is about `share` by construction, and below it every sampled request is compared.
 *
 * A token bucket: it fills at `share` milliseconds of work per millisecond, up to `share` of the
 * window (`windowMs`, 1 s), and each charge empties it (it may go below zero: an exchange's
 * reading is charged a round trip after it was admitted). A full bucket lets a burst of light
 * load through whole; at saturation the admissions come evenly, one as soon as the bucket is
 * above zero again, rather than a second's share at once (which would hold the clients back for
 * that long).
 */
import { performance } from 'node:perf_hooks';

export interface ShadowBudget {
  /** May a new shadow exchange start now? */
  admit(): boolean;
  /** Shadow work took this many milliseconds of the event loop. */
  charge(ms: number): void;
  /** Milliseconds charged in all (for tests and reports). */
  spent(): number;
}

export interface ShadowBudgetOptions {
  /** Share of the event loop shadow work may use, 0 to 1; 1: no limit (nothing admitted is refused). */
  readonly share: number;
  /** The burst allowed after a quiet spell is `share` of this (default 1000 ms). */
  readonly windowMs?: number;
  /** For tests: the clock in milliseconds (default performance.now). */
  readonly now?: () => number;
}

export function createShadowBudget(options: ShadowBudgetOptions): ShadowBudget {
  const { share } = options;
  const now = options.now ?? ((): number => performance.now());
  const capacity = share * (options.windowMs ?? 1000);
  let tokens = capacity;
  let last = now();
  let spent = 0;

  function refill(): void {
    const t = now();
    tokens = Math.min(capacity, tokens + share * (t - last));
    last = t;
  }

  return {
    admit() {
      if (share >= 1) return true;
      refill();
      return tokens > 0;
    },
    charge(ms) {
      spent += ms;
      if (share >= 1) return;
      refill();
      tokens -= ms;
    },
    spent: () => spent,
  };
}
