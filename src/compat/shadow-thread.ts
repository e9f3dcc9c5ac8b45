/**
 * The shadow thread: shadow and front modes' comparisons (shadow-comparer.ts) on a worker thread
 * of their own, at a lower CPU priority than the event loop that serves the clients
 * (`performance.shadowThread`; shadow.ts starts it).
 *
 * Why a thread, and why a nice level rather than a budget counted on the event loop: on the
 * event loop, shadow work (sending, reading the old service's answers, comparing, and the garbage
 * it leaves) took the clients' time in stretches that a budget could only estimate after the
 * fact: charged ~0.4× of what it cost, and the clients' p99 rose by 7–14 ms at 100% sampling
 * (docs/fast-paths.md "Shadow thread"). Here, the kernel's scheduler shares the CPU: a thread at
 * nice N gets its weight's share of a core the event loop also wants (nice 16: 29/1053 ≈ 2.8%,
 * kernel/sched/core.c sched_prio_to_weight) and every idle cycle; its heap and collections are
 * its own. `legacy.shadow.cpuShare` picks N (niceForShare). Where a thread's priority cannot be
 * set (not Linux), it runs at the event loop's and says so in the log.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { NewShadowDifference } from '../store/store.js';
import { createShadowComparer, type ComparedJob, type ComparerSettings } from './shadow-comparer.js';
import type { ShadowOutcome } from './shadow-outcomes.js';

/** A job as it crosses: its id comes back with its outcome. */
export interface ThreadJob {
  readonly id: number;
  readonly job: ComparedJob;
}

export type ToThread =
  | { readonly kind: 'jobs'; readonly jobs: readonly ThreadJob[] }
  | { readonly kind: 'idle'; readonly id: number }
  | { readonly kind: 'close'; readonly timeoutMs: number };

export type FromThread =
  /** Outcomes since the last report ([job id, outcome]), and the thread's busy time so far. */
  | { readonly kind: 'report'; readonly results: readonly (readonly [number, ShadowOutcome])[]; readonly busyMs: number }
  | { readonly kind: 'difference'; readonly difference: NewShadowDifference }
  | { readonly kind: 'log'; readonly level: 'info' | 'warn' | 'error'; readonly fields: Record<string, unknown>; readonly message: string }
  | { readonly kind: 'idle'; readonly id: number }
  | { readonly kind: 'closed' };

export interface ThreadData {
  readonly settings: ComparerSettings;
  /** Nice levels below the event loop's (shadow.ts niceForShare). */
  readonly niceBelow: number;
}

/** Outcomes are reported together, at most this often: a message a job would cost the event loop more than the job's count. */
const REPORT_MS = 10;

/** The calling thread's id (/proc/thread-self is `<pid>/task/<tid>`), or null where there is none. */
function ownThreadId(): number | null {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return null;
  }
}

function start(port: NonNullable<typeof parentPort>, data: ThreadData): void {
  const send = (message: FromThread): void => port.postMessage(message);
  const log = (level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string): void => send({ kind: 'log', level, fields, message });

  // Linux sets a nice level per thread (setpriority(2) on a thread id, "NOTES": the nice value is
  // a per-thread attribute).
  const tid = ownThreadId();
  if (data.niceBelow > 0) {
    try {
      if (tid === null) throw new Error('no thread id');
      setPriority(tid, Math.min(19, getPriority(tid) + data.niceBelow));
    } catch (error) {
      log('warn', { err: { message: (error as Error).message } }, 'shadow: the comparison thread\'s CPU priority cannot be lowered; it runs at the service\'s');
    }
  }

  let results: Array<readonly [number, ShadowOutcome]> = [];
  let reportTimer: NodeJS.Timeout | null = null;
  const report = (): void => {
    if (reportTimer !== null) clearTimeout(reportTimer);
    reportTimer = null;
    send({ kind: 'report', results, busyMs: performance.eventLoopUtilization().active });
    results = [];
  };
  // Which job an outcome is of: its id goes back with it.
  const ids = new Map<ComparedJob, number>();
  const comparer = createShadowComparer(data.settings, {
    result(outcome, job) {
      const id = ids.get(job);
      if (id === undefined) return;
      ids.delete(job);
      results.push([id, outcome]);
      if (reportTimer === null) reportTimer = setTimeout(report, REPORT_MS);
    },
    difference: (difference) => send({ kind: 'difference', difference }),
    log,
  });

  port.on('message', (message: ToThread) => {
    if (message.kind === 'jobs') {
      for (const { id, job } of message.jobs) {
        ids.set(job, id);
        comparer.submit(job);
      }
    } else if (message.kind === 'idle') {
      void comparer.idle().then(() => {
        report();
        send({ kind: 'idle', id: message.id });
      });
    } else {
      void comparer.close(message.timeoutMs).then(() => {
        report();
        send({ kind: 'closed' });
        port.close();
      });
    }
  });
}

if (parentPort !== null) start(parentPort, workerData as ThreadData);
