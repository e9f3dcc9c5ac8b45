/**
 * Shadow mode's CPU budget: a new shadow exchange is admitted only while the event-loop time
 * shadow work has cost stays within its allowance of the time gone by: `share`
 * (`legacy.shadow.cpuShare`) when the clients keep the event loop busy, more at light load. The
 * clients' requests then keep at least 1 − share of the event loop whatever the load: at
 * saturation the throughput lost to shadowing is about `share`; at light load every sampled
 * request is compared.
 *
 * What shadow work costs is measured on the event loop's busy time, not only around the stretches
 * of it that can be timed. Timing those stretches (sending, reading the old service's answers,
 * comparing, keeping a difference) missed as much again or more: the system time of the socket
 * reads before the read callback runs, the promise plumbing between the stretches, garbage
 * collection, and the turns of the event loop an answer wakes, in which the clients' requests
 * are handled in smaller and dearer batches (bench/shadow-cost.mjs measured 2.5–4.5× the timed
 * time). So time is cut into slices of about SLICE_MS, and for each the event loop's busy time
 * (performance.eventLoopUtilization: all but its waits for I/O, whether running, in a system
 * call, collecting garbage, or waiting for a core another process has) and the clients' requests
 * answered in it are counted:
 *
 * - a slice without shadow work teaches what a request costs: busy time per request over the
 *   last few thousand requests of such slices;
 * - a slice with shadow work is charged its busy time less what its requests cost by that
 *   measure. Until a few requests have been seen in slices without shadow work, a slice with some
 *   is charged whole (at light load, where every request may be compared, that is well within
 *   the allowance below; under load the budget refuses sooner, and such slices come).
 *
 * Slices end only in admit(), which runs as a client's request has been answered: a slice with
 * a timed stretch also holds the untimed work after it (the promises it settled run before the
 * next request is answered). Shadow mode starts its exchanges in batches (shadow.ts), so its
 * work comes in a few slices among many without any.
 *
 * The allowance: `share` of the time, or, while the event loop was busy less than LIGHT_LOAD of
 * the last UTILISATION_MS (clients and shadow work together), what is left of LIGHT_LOAD. Shadow
 * work at light load runs in time the event loop would have spent waiting, and by its own busy
 * time closes the door on more of itself past LIGHT_LOAD; under load the allowance is `share`.
 * Busy time counts a wait for a core as busy: a process short of CPU (another process, a
 * container's quota) is not taken for lightly loaded. (Counting the clients' share alone, as the
 * busy time less what shadow work was charged, let 15.9% of the requests be compared at 16
 * saturating connections with a share of 0: the charges fall short of what shadow work costs.
 * With the whole busy time, 0.6% at 16 and 64: bench/shadow-cost.mjs --saturate, 2026-11-28.)
 *
 * The default share is 0: under load nothing new is compared (sampled requests are "dropped
 * under load", docs/cutover.md).
 * Any share of a saturated event loop showed in the clients' tail: at 0.03, ValidateUserToken's
 * p99 rose by 6.6 and 7.8 ms at 16 and 64 connections (`npm run bench -- --only shadow`,
 * 2026-11-28), for the few percent of requests compared then; the comparisons that matter are
 * made at the load most hours have.
 *
 * A token bucket: it fills at the allowance, up to `share` of the window (`windowMs`, 1 s; at
 * least MIN_BURST of it, so that a share of 0 still lets light load's comparisons through), and
 * each charge empties it (it may go below zero: a slice is charged once it is over, a timed
 * stretch as soon as it ends). A full bucket lets a burst after a quiet spell through whole; at
 * saturation the admissions come evenly, one as soon as the bucket is above zero again, rather
 * than a second's share at once (which would hold the clients back for that long).
 *
 * An exchange's cost arrives well after it is admitted: it waits for its batch (up to
 * BATCH_WAIT_MS), then for the old service's answer. Charged only then, the bucket stayed full
 * for that long while the clients' load rose, and every request sampled meanwhile was admitted:
 * the burst at the start of each saturating benchmark run was hundreds of comparisons, 0.2-0.6%
 * of the run's requests, all in its first tenth of a second, where they were the clients' p99
 * (bench/shadow-cost.mjs --saturate, 2026-11-28). So admit() prepays what an exchange costs
 * (ADMISSION_ESTIMATE_MS), the charges that follow use up what was prepaid first, and what they
 * leave flows back (PREPAID_RETURN_MS): a burst is at most about the bucket's worth of
 * exchanges, and over time the bucket pays for what shadow work cost, once.
 */
import { performance } from 'node:perf_hooks';

export interface ShadowBudget {
  /** May a new shadow exchange start now? */
  admit(): boolean;
  /** A client's request was answered (what the event loop's time is shared with). */
  served(): void;
  /** A stretch of shadow work took this many milliseconds (timed around it, on the event loop). */
  charge(ms: number): void;
  /** Milliseconds charged in all (for the metric, tests and reports). */
  spent(): number;
}

export interface ShadowBudgetOptions {
  /** Share of the event loop shadow work may use under load, 0 to 1; 1: no limit (nothing admitted is refused). */
  readonly share: number;
  /** The burst allowed after a quiet spell is `share` of this (default 1000 ms). */
  readonly windowMs?: number;
  /** For tests: the clock in milliseconds (default performance.now). */
  readonly now?: () => number;
  /**
   * For tests: the event loop's busy time so far, in milliseconds (default: the active time of
   * performance.eventLoopUtilization). Without it but with `now`, only the timed stretches are
   * charged and the allowance is `share`.
   */
  readonly busy?: () => number;
  /** For tests: the length of a slice (default SLICE_MS). */
  readonly sliceMs?: number;
}

/**
 * Length of a slice (ms): short against the gaps between shadow mode's batches, so that most
 * slices have no shadow work and those that have hold few client requests besides.
 */
export const SLICE_MS = 1;
/**
 * Below this share of the time taken by the clients' requests, shadow work may use what they
 * leave of it (and `share` above): half of an idle event loop is lent, the other half stays idle.
 */
export const LIGHT_LOAD = 0.5;
/**
 * The bucket holds at least this share of the window (a share of 0 included): at light load, a
 * batch of exchanges (16 at about 0.1 ms) with room for the first ones' code compiled on first
 * use; at the onset of saturation, the most shadow work let through at once.
 */
export const MIN_BURST = 0.01;
/** What admit() prepays for an exchange (ms; 66-100 µs measured a comparison, docs/fast-paths.md). */
export const ADMISSION_ESTIMATE_MS = 0.1;
/**
 * What was prepaid and not used up by charges flows back into the bucket with this time
 * constant (ms): longer than an exchange takes to be charged (a batch's wait and the old
 * service's answer), so that a burst stays bounded, and short enough that over time the share
 * is what the exchanges cost, not what was guessed.
 */
export const PREPAID_RETURN_MS = 200;
/** The event loop's busy share is measured over windows this long (ms). */
export const UTILISATION_MS = 50;
/** The window under way is judged too once this much of it is known (ms). */
const CURRENT_WINDOW_MS = 5;
/** A request's cost is learnt over about this many requests of slices without shadow work (the sums halve past twice this). */
const BASELINE_REQUESTS = 4096;
/** Requests seen in slices without shadow work before their cost is used. */
const MIN_BASELINE_REQUESTS = 16;

/** The event loop's busy time so far, in milliseconds: all but its waits for I/O. */
function loopBusyMs(): number {
  return performance.eventLoopUtilization().active;
}

export function createShadowBudget(options: ShadowBudgetOptions): ShadowBudget {
  const { share } = options;
  const now = options.now ?? ((): number => performance.now());
  const busy = options.busy ?? (options.now === undefined ? loopBusyMs : null);
  const capacity = Math.max(share, MIN_BURST) * (options.windowMs ?? 1000);
  const sliceMs = options.sliceMs ?? SLICE_MS;
  let tokens = capacity;
  let last = now();
  let spent = 0;
  // Prepaid by admit() and not yet used up by charges (or returned).
  let prepaid = 0;

  // The slice under way: when it began, the busy time then, the requests answered and the shadow
  // work timed since.
  let sliceStart = last;
  let sliceBusy = busy?.() ?? 0;
  let sliceRequests = 0;
  let sliceTimed = 0;
  let sliceShadow = false;
  // Slices without shadow work: busy time and requests, halved as they grow (recent ones weigh more).
  let plainBusy = 0;
  let plainRequests = 0;
  // The busy share of the last whole UTILISATION_MS window (null until one has passed), and the
  // window under way: when it began and the busy time then.
  let utilisation: number | null = null;
  let windowStart = last;
  let windowBusy = sliceBusy;

  /** Busy milliseconds a client's request costs, once learnt. */
  const perRequest = (): number | null => (plainRequests >= MIN_BASELINE_REQUESTS ? plainBusy / plainRequests : null);

  function take(ms: number): void {
    spent += ms;
    // What admit() prepaid covers a charge first (a negative one, a slice's overcount, gives back).
    const covered = ms > 0 ? Math.min(prepaid, ms) : 0;
    prepaid -= covered;
    tokens -= ms - covered;
  }

  function refill(t: number): void {
    if (busy !== null && t - windowStart >= UTILISATION_MS) {
      const b = busy();
      utilisation = (b - windowBusy) / (t - windowStart);
      windowStart = t;
      windowBusy = b;
    }
    // The window under way counts too, once CURRENT_WINDOW_MS of it are known (up to the last
    // slice's end): load that starts after a light spell closes the light allowance within a few
    // milliseconds, where the last whole window alone kept it open up to UTILISATION_MS into the
    // load (the step in test/compat/shadow-budget.test.ts: 201 exchanges admitted under load
    // against 154, of which the bucket's worth is 100).
    let judged = utilisation;
    const known = sliceStart - windowStart;
    if (busy !== null && known >= CURRENT_WINDOW_MS) {
      const current = (sliceBusy - windowBusy) / known;
      judged = judged === null ? current : Math.max(judged, current);
    }
    const allowance = judged === null ? share : Math.max(share, LIGHT_LOAD - judged);
    if (prepaid > 0) {
      const back = prepaid * (1 - Math.exp(-(t - last) / PREPAID_RETURN_MS));
      prepaid -= back;
      tokens += back;
    }
    tokens = Math.min(capacity, tokens + allowance * (t - last));
    last = t;
  }

  /** Ends the slice under way if it is over, charging it or learning from it. */
  function roll(t: number): void {
    const length = t - sliceStart;
    if (length < sliceMs) return;
    if (busy !== null) {
      const b = busy();
      const used = b - sliceBusy;
      sliceBusy = b;
      let shadow = 0;
      if (sliceShadow) {
        // Its requests at what a request costs without shadow work (until that is known, the
        // whole slice is shadow work's: the budget then refuses sooner, and slices without
        // shadow work come).
        shadow = Math.max(0, used - (perRequest() ?? 0) * sliceRequests);
        // The timed stretches were taken as they ended: the rest now (or back, what they overcounted).
        take(shadow - sliceTimed);
      } else if (sliceRequests > 0) {
        plainBusy += used;
        plainRequests += sliceRequests;
        if (plainRequests > 2 * BASELINE_REQUESTS) {
          plainBusy /= 2;
          plainRequests /= 2;
        }
      }
    }
    sliceStart = t;
    sliceRequests = 0;
    sliceTimed = 0;
    sliceShadow = false;
  }

  return {
    admit() {
      const t = now();
      // Slices end here too (share 1 included: what shadow work costs is still measured).
      roll(t);
      if (share >= 1) return true;
      refill(t);
      if (tokens <= 0) return false;
      tokens -= ADMISSION_ESTIMATE_MS;
      prepaid += ADMISSION_ESTIMATE_MS;
      return true;
    },
    served() {
      sliceRequests += 1;
    },
    charge(ms) {
      // The stretch ran in the slice under way, and what follows it untimed (the promises it
      // settled) too: slices end only in admit(), when a client's request has been answered.
      sliceShadow = true;
      sliceTimed += ms;
      take(ms);
    },
    spent: () => spent,
  };
}
