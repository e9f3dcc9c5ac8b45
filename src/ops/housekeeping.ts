/**
 * Scheduled housekeeping: deletes what is no longer needed in small batches, each its own short
 * transaction, with a pause between batches so requests interleave and none waits behind a long
 * delete (SQLite writes are serialised; better-sqlite3 runs on the event loop).
 *
 * Batches are sized by time, not only by rows (`batchBudgetMs`): what a row costs to delete
 * depends on the table. On 10 million tokens every expired row sits on its own pages of the
 * token table and of two of its indexes, and a batch of 500 held the event loop for tens of
 * milliseconds; token checks of a fleet waited behind each (bench:scale, the purge of a million
 * expired tokens: p99 ×10). So the time a batch took scales the next batch to fit the budget,
 * between 1 row and `batchSize`, and the pause after a batch is at least PAUSE_FACTOR times
 * that: the purge takes at most a fifth of the time however slow its rows are. The whole time
 * counts, not only the part on the event loop: a purge on a thread of its own (SQLite,
 * store/sqlite/purge-thread.ts) still shares the cores with the requests, and one on
 * PostgreSQL the database server (measured: a thread paced only by its event-loop part took
 * half the core from token checks, p99 ×2.6).
 *
 * Tasks are pluggable: tokens and tickets (tokenPurgeTask), audit events (auditPurgeTask).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import type { HousekeepingReport } from './metrics.js';

export interface HousekeepingTask {
  readonly name: string;
  /** Deletes at most `limit` rows; returns how many. */
  purgeBatch(limit: number): Promise<number>;
}

export interface HousekeepingOptions {
  readonly tasks: readonly HousekeepingTask[];
  readonly intervalMs: number;
  readonly batchSize: number;
  /** Pause between two batches of one run (default 10 ms); at least PAUSE_FACTOR × the batch's time with a budget. */
  readonly pauseMs?: number;
  /**
   * How long a batch should take, in ms (housekeeping.batchBudgetMs): the next batch's row count
   * is scaled to it, at most `batchSize`. 0 (the default here) deletes `batchSize` rows per batch
   * whatever they cost.
   */
  readonly batchBudgetMs?: number;
  /** Clock and pause, for tests (default performance.now and timers' setTimeout). */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly logger?: Logger;
  readonly onReport?: (report: HousekeepingReport) => void;
}

export interface Housekeeping {
  /** One run of every task now (also what the schedule does); resolves with what each deleted. */
  runOnce(): Promise<readonly HousekeepingReport[]>;
  /** Cancels the schedule and waits for a run in progress to finish its current batch. */
  stop(): Promise<void>;
}

/**
 * Expired tokens and tickets (used or not), kept `retentionMs` after their absolute expiry for
 * investigation, then deleted.
 */
export function tokenPurgeTask(store: Store, retentionMs: number, now: () => Date = () => new Date()): HousekeepingTask {
  return {
    name: 'tokens',
    purgeBatch: (limit) => store.purgeExpiredTokens(new Date(now().getTime() - retentionMs), limit),
  };
}

/** Audit events older than `retentionDays` (audit.retentionDays), deleted oldest first. */
export function auditPurgeTask(store: Pick<Store, 'purgeAudit'>, retentionDays: number, now: () => Date = () => new Date()): HousekeepingTask {
  return {
    name: 'audit',
    purgeBatch: (limit) => store.purgeAudit(new Date(now().getTime() - retentionDays * 86_400_000), limit),
  };
}

/**
 * Brute-force counters past their expiry, and known-good sources of logins whose last
 * success there is older than `knownSourceDays`.
 */
export function throttlePurgeTask(store: Pick<Store, 'purgeLoginThrottle'>, knownSourceDays: number, now: () => Date = () => new Date()): HousekeepingTask {
  return {
    name: 'throttle',
    purgeBatch: (limit) => {
      const at = now();
      return store.purgeLoginThrottle(at, new Date(at.getTime() - knownSourceDays * 86_400_000), limit);
    },
  };
}

/** With a batch budget, the pause after a batch is at least this many times the time it took. */
export const PAUSE_FACTOR = 4;

/** Starts the schedule: a first run right away, then one `intervalMs` after each run ends. */
export function startHousekeeping(options: HousekeepingOptions): Housekeeping {
  const pauseMs = options.pauseMs ?? 10;
  const budgetMs = Math.max(0, options.batchBudgetMs ?? 0);
  const now = options.now ?? ((): number => performance.now());
  const pause = options.sleep ?? ((ms: number): Promise<unknown> => sleep(ms));
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<readonly HousekeepingReport[]> | undefined;

  async function runTask(task: HousekeepingTask): Promise<HousekeepingReport> {
    let deleted = 0;
    let limit = options.batchSize;
    try {
      for (;;) {
        const started = now();
        const n = await task.purgeBatch(limit);
        const heldMs = now() - started;
        deleted += n;
        if (n < limit || stopped) break;
        let wait = pauseMs;
        if (budgetMs > 0) {
          // Scaled to the budget, growing at most twofold per batch so one quick batch does not overshoot.
          const fitted = heldMs > 0 ? Math.floor((limit * budgetMs) / heldMs) : options.batchSize;
          limit = Math.max(1, Math.min(options.batchSize, limit * 2, fitted));
          wait = Math.max(pauseMs, PAUSE_FACTOR * heldMs);
        }
        await pause(wait);
      }
      if (deleted > 0) options.logger?.info({ task: task.name, deleted }, 'housekeeping: purged');
      return { task: task.name, deleted, ok: true };
    } catch (error) {
      options.logger?.error({ err: error, task: task.name, deleted }, 'housekeeping failed');
      return { task: task.name, deleted, ok: false };
    }
  }

  async function run(): Promise<readonly HousekeepingReport[]> {
    const reports: HousekeepingReport[] = [];
    for (const task of options.tasks) {
      if (stopped) break;
      const report = await runTask(task);
      options.onReport?.(report);
      reports.push(report);
    }
    return reports;
  }

  function runOnce(): Promise<readonly HousekeepingReport[]> {
    // Never two runs at once: a second caller shares the run in progress.
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(delayMs: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void runOnce().then(() => schedule(options.intervalMs));
    }, delayMs);
    timer.unref();
  }

  schedule(0);
  return {
    runOnce,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
