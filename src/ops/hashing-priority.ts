/**
 * Password hashing at a low CPU priority ("during a ValidateUser flood,
 * ValidateUserToken p99 at most 2x its idle p99").
 *
 * argon2id runs on libuv's thread pool (the `argon2` package queues its work there), beside the
 * event loop that answers token checks. When the two want the same core, the kernel shares it
 * fairly, and a token check can wait a whole time slice behind a hash. A nice value on the pool
 * threads tells the kernel that hashing is the work to hold back: it still gets every cycle
 * nobody else wants (a login flood alone keeps its full rate), but when it has to share a core,
 * the event loop gets the larger part (about 10 to 1 at nice 10, what the deployment files set;
 * at 19, about 70 to 1, logins stalled for seconds on a machine kept busy by other work). The
 * value is the deployment's (hashing.nice, 0 by default): only the mechanism is here, as a nice
 * value for some threads of a process cannot be set from outside it.
 *
 * Linux only: the nice value is a per-thread attribute there (setpriority(2), "Notes"), and
 * /proc lists the threads. Node gives no handle on the pool's threads, so they are found:
 * - by name where libuv names them ("libuv-worker", libuv 1.50 and later, in recent Node releases);
 * - otherwise by watching them work: one short CPU job (PBKDF2) per pool thread, queued at once;
 *   the threads whose CPU time grew by most of a job are the pool, if exactly the pool's size of
 *   them did and no other thread came close; else another round, and after three, nothing.
 * Anything that cannot be proven is left as it was, and said in the result (expected failures
 * are values): a wrong guess would slow the garbage collector's helpers instead of hashing.
 */
import { pbkdf2, pbkdf2Sync } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { libuvPoolSize } from './hashing-threads.js';

export type HashingPriorityResult =
  | { readonly applied: true; readonly nice: number; readonly threads: readonly number[]; readonly found: 'name' | 'probe' }
  | { readonly applied: false; readonly reason: string };

/** The probe's inputs, replaceable by tests. */
export interface PoolProbeOptions {
  /** The pool's size as libuv computes it (default: from UV_THREADPOOL_SIZE, as libuv reads it). */
  readonly poolSize?: number;
  /** CPU milliseconds each probe job should take (default 30: well clear of background threads' noise). */
  readonly jobMs?: number;
  /** Probe rounds before giving up (default 3). */
  readonly rounds?: number;
}

const POOL_THREAD_NAME = 'libuv-worker';

/** The calling thread's id (/proc/thread-self is `<pid>/task/<tid>`). */
function ownThread(): number {
  return Number(readlinkSync('/proc/thread-self').split('/').pop());
}

/** This process's threads other than the main one (whose id is the process id) and the caller. */
function otherThreads(): number[] {
  const own = ownThread();
  return readdirSync('/proc/self/task').map(Number).filter((tid) => Number.isInteger(tid) && tid !== process.pid && tid !== own);
}

/** Nanoseconds a thread has run (schedstat), or null once it is gone. */
function runtimeNs(tid: number): number | null {
  try {
    const first = readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ')[0];
    const ns = Number(first);
    return Number.isFinite(ns) ? ns : null;
  } catch {
    return null;
  }
}

function threadName(tid: number): string | null {
  try {
    return readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').trim();
  } catch {
    return null;
  }
}

/**
 * PBKDF2-SHA256 iterations costing about `ms` of CPU here. Timed by the clock: the kernel's
 * per-thread CPU time moves in scheduler ticks (4 ms here), too coarse for a short sample. On a
 * busy machine the jobs come out shorter, which probeRound tolerates (it judges by what they took).
 */
function iterationsFor(ms: number): number {
  pbkdf2Sync('probe', 'svcapi-auth', 100, 32, 'sha256'); // warm up
  const sample = 5000;
  const started = performance.now();
  pbkdf2Sync('probe', 'svcapi-auth', sample, 32, 'sha256');
  const perIterationMs = Math.max(1e-6, (performance.now() - started) / sample);
  return Math.min(2_000_000, Math.max(1000, Math.round(ms / perIterationMs)));
}

function poolJob(iterations: number): Promise<void> {
  return new Promise((resolve, reject) => {
    pbkdf2('probe', 'svcapi-auth', iterations, 32, 'sha256', (error) => (error ? reject(error) : resolve()));
  });
}

/**
 * One job per pool thread, queued at once. The job's cost is read from the threads that ran one
 * (the median of the `size` busiest): the pool is the threads that ran at least half a job,
 * provided there are exactly `size` of them and every other thread ran under a quarter of one.
 * Otherwise (a job ran twice on one thread, a garbage collection helper was busy) null: try again.
 */
async function probeRound(size: number, iterations: number): Promise<number[] | null> {
  const before = new Map(otherThreads().map((tid) => [tid, runtimeNs(tid)] as const));
  await Promise.all(Array.from({ length: size }, () => poolJob(iterations)));
  const grew: Array<{ tid: number; ns: number }> = [];
  for (const [tid, ns] of before) {
    const after = runtimeNs(tid);
    if (ns !== null && after !== null) grew.push({ tid, ns: after - ns });
  }
  grew.sort((a, b) => b.ns - a.ns);
  const top = grew.slice(0, size);
  const job = top[Math.floor(top.length / 2)]?.ns ?? 0;
  if (top.length < size || job <= 0) return null;
  const busy = grew.filter((g) => g.ns >= job / 2);
  const blurred = grew.some((g) => g.ns >= job / 4 && g.ns < job / 2);
  return busy.length === size && !blurred ? busy.map((g) => g.tid) : null;
}

/** The thread pool's thread ids, by name or by probe; a reason when they cannot be told apart. */
export async function findPoolThreads(options: PoolProbeOptions = {}): Promise<{ threads: number[]; found: 'name' | 'probe' } | { reason: string }> {
  if (process.platform !== 'linux') return { reason: `thread priorities are only set on Linux (this is ${process.platform})` };
  const size = options.poolSize ?? libuvPoolSize();
  let threads: number[];
  try {
    threads = otherThreads();
  } catch {
    return { reason: '/proc/self/task cannot be read' };
  }
  const named = threads.filter((tid) => threadName(tid) === POOL_THREAD_NAME);
  if (named.length > 0) return { threads: named, found: 'name' };
  if (threads.length === 0 || runtimeNs(threads[0] ?? 0) === null) return { reason: 'per-thread CPU times (/proc/self/task/*/schedstat) are not available' };

  const iterations = iterationsFor(options.jobMs ?? 30);
  for (let round = 0; round < (options.rounds ?? 3); round++) {
    const ran = await probeRound(size, iterations);
    if (ran !== null) return { threads: ran.sort((a, b) => a - b), found: 'probe' };
  }
  return { reason: `the thread pool's ${size} threads could not be told apart from the others` };
}

/**
 * Sets `nice` (1-19; 0 changes nothing) on the libuv thread pool, where password hashing runs.
 * Never throws: what could not be done is the result's `reason`.
 */
export async function lowerHashingPriority(nice: number, options: PoolProbeOptions = {}): Promise<HashingPriorityResult> {
  if (nice === 0) return { applied: false, reason: 'hashing.nice is 0' };
  try {
    const pool = await findPoolThreads(options);
    if ('reason' in pool) return { applied: false, reason: pool.reason };
    for (const tid of pool.threads) {
      setPriority(tid, nice);
      if (getPriority(tid) !== nice) return { applied: false, reason: `thread ${tid} kept its priority` };
    }
    return { applied: true, nice, threads: pool.threads, found: pool.found };
  } catch (error) {
    return { applied: false, reason: `could not set thread priorities: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` };
  }
}
